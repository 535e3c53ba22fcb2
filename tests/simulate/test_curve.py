"""The latency-vs-rate series (`simulate.curve`) and the chart the reports and the web app draw."""

from __future__ import annotations

import itertools

import pytest

from silica.errors import InputError
from silica.simulate import synthetic
from silica.simulate.curve import band_factors, latency_curve, scaled_table, simulate_load
from silica.simulate.deploy import plan_replica
from silica.workload import InferenceWorkload


@pytest.fixture(scope="module")
def planned():  # type: ignore[no-untyped-def]
    return plan_replica("llama-3.1-8b", "g6e.xlarge", InferenceWorkload(input_len=1024, output_len=256))


def test_tails_grow_with_the_rate_and_the_band_brackets_them(planned) -> None:  # type: ignore[no-untyped-def]
    reqs = synthetic(rate=2.0, n=600, input_len=1024, output_len=256, seed=0)
    band = band_factors(planned.estimate)
    assert band is not None and band[0] <= 1.0 <= band[1] and band[2] <= 1.0 <= band[3]
    curve = latency_curve(reqs, planned.table, band=band, factors=(0.5, 1.0, 2.0, 4.0))
    rates = curve.rates
    assert rates == sorted(rates) and rates[1] == pytest.approx(reqs.rate)
    p99 = curve.series("ttft_ms", "p99")
    assert all(v is not None for v in p99)
    assert p99[-1] > 2 * p99[0]  # a queue forms as the rate passes the replica's capacity
    assert all(b >= a for a, b in itertools.pairwise(p99))  # same requests, compressed: never lower
    assert curve.low is not None and curve.high is not None
    for metric in ("ttft_ms", "tbt_ms"):
        for q in ("p50", "p90", "p99"):
            # Below capacity (0.5x to 2x the rate here) faster steps never make a percentile slower
            # and slower steps never faster (small slack: the scheduler's step boundaries move with
            # the step times). Past it (4x) the queue decides, and the band is the envelope.
            for k in range(3):
                lo, m, hi = (sweep[k][metric][q] for sweep in (curve.low, curve.points, curve.high))
                assert lo <= m * 1.02 and m <= hi * 1.02, (metric, q, k, lo, m, hi)
            mid, low, high = (curve.series(metric, q, end) for end in ("value", "low", "high"))
            assert all(lo <= m <= hi for lo, m, hi in zip(low, mid, high, strict=True))  # type: ignore[operator]
            assert low[0] < mid[0] < high[0]  # type: ignore[operator]  # a band, not a line
    shape = curve.to_dict()
    assert shape["points"][0]["ttft_ms_low"]["p99"] == curve.low[0]["ttft_ms"]["p99"]  # type: ignore[index]
    assert set(shape["band_step_factors"]) == {"prefill_low", "prefill_high", "decode_low", "decode_high"}


def test_without_a_band_the_series_has_no_ends(planned) -> None:  # type: ignore[no-untyped-def]
    reqs = synthetic(rate=1.0, n=200, input_len=512, output_len=64, seed=1)
    curve = latency_curve(reqs, planned.table, factors=(1.0, 2.0))
    assert curve.series("tbt_ms", "p99", "low") == [None, None]
    assert "ttft_ms_low" not in curve.to_dict()["points"][0]
    with pytest.raises(ValueError):
        curve.series("e2e_ms", "p99")


def test_scaled_table_scales_steps_only(planned) -> None:  # type: ignore[no-untyped-def]
    t = planned.table
    s = scaled_table(t, 0.5, 2.0)
    assert s.prefill_s(1000) == pytest.approx(0.5 * t.prefill_s(1000))
    assert s.decode_s(8, 2048) == pytest.approx(2.0 * t.decode_s(8, 2048))
    assert s.kv_tokens == t.kv_tokens


def test_simulate_load_and_its_chart() -> None:
    from silica.report.simulate import latency_figures

    result, curve = simulate_load("llama-3.1-8b", "g6e.xlarge", rate=2.0, requests=300, max_requests=5000)
    assert result.requests == 300 and len(curve.points) == 6
    html = "".join(latency_figures(curve))
    assert html.count("<svg") == 4  # two charts, each wide and for a phone
    assert "Time to first token vs request rate" in html and "p99, band low" in html
    with pytest.raises(InputError, match="requests"):
        simulate_load("llama-3.1-8b", "g6e.xlarge", rate=2.0, requests=50_000, max_requests=5000)
    with pytest.raises(InputError, match="rate"):
        simulate_load("llama-3.1-8b", "g6e.xlarge", rate=0.0)
