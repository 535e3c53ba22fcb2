"""Readers against recorded samples of each exporter (tests/data/monitor/SOURCES.md says where each came
from), and the arithmetic rules on small hand-made series."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.monitor.conftest import DATA, Replay

from silica.errors import DataFileError
from silica.monitor import Series, build_report, load_plan, read_exposition, read_file
from silica.monitor import figures as fg

T0 = 1796112000.0


def _overall(path: Path, replay: Replay) -> object:
    tel = read_file(path, deployment="x")
    plans = load_plan(replay.gpu_plan, "x")
    return build_report(tel, plans, since=T0, until=T0 + 30).deployments[0]


@pytest.mark.parametrize(
    ("name", "tokens_per_s", "utilisation"),
    [
        ("vllm.prom", 3000 / 30, None),  # +3,000 generated tokens in 30 s
        ("sglang.prom", 6000 / 30, None),
        ("tgi.prom", 1500 / 30, None),  # generated tokens are the _sum of the length histogram
        ("dcgm-exporter.prom", None, (0.45 + 0.55) / 2),  # GPU_UTIL in percent, two scrapes
        ("neuron-monitor-prometheus.prom", None, (0.42 + 0.44 + 0.40 + 0.46) / 4),
    ],
)
def test_each_documented_exporter_is_read(
    name: str, tokens_per_s: float | None, utilisation: float | None, replay: Replay
) -> None:
    dep = _overall(DATA / name, replay)
    o = dep.overall  # type: ignore[attr-defined]
    if tokens_per_s is None:
        assert o.output_tokens_per_s is None and any("engine token counter" in m for m in dep.missing)  # type: ignore[attr-defined]
    else:
        assert o.output_tokens_per_s == pytest.approx(tokens_per_s)
    if utilisation is None:
        assert o.utilisation is None
    else:
        assert o.utilisation == pytest.approx(utilisation)


def test_vllm_latency_histograms_give_means_and_quantiles(replay: Replay) -> None:
    o = _overall(DATA / "vllm.prom", replay).overall  # type: ignore[attr-defined]
    # TTFT: +20 observations, sum +2.4 s -> mean 120 ms; 10 in (0.08, 0.1], 10 in (0.1, 0.25]:
    # p50 rank 10 -> top of (0.08, 0.1] = 100 ms.
    assert o.ttft.mean_ms == pytest.approx(2.4 / 20 * 1000)
    assert o.ttft.p50_ms == pytest.approx(100.0)
    # ITL: +1,500 observations, sum +45 s -> 30 ms; 600 in (0.01, 0.025], 900 in (0.025, 0.05]:
    # p90 rank 1,350 -> 0.025 + 0.025 x (1350 - 600) / 900.
    assert o.tpot.mean_ms == pytest.approx(30.0)
    assert o.tpot.p90_ms == pytest.approx((0.025 + 0.025 * 750 / 900) * 1000)


def test_tgi_has_no_ttft_and_the_report_says_so(replay: Replay) -> None:
    dep = _overall(DATA / "tgi.prom", replay)
    assert dep.overall.ttft is None  # type: ignore[attr-defined]
    assert any("TTFT histogram" in m for m in dep.missing)  # type: ignore[attr-defined]


def test_neuron_monitor_json_lines_cut_mid_line() -> None:
    tel = read_file(DATA / "neuron-monitor.jsonl", start=T0)
    util = [s for s in tel.series if s.name == "neuroncore_utilization_ratio"]
    assert {s.label("neuroncore") for s in util} == {"0", "1"}
    core0 = next(s for s in util if s.label("neuroncore") == "0")
    # Three whole reports, each with a 1.0 s period: placed at T0+1, T0+2, T0+3; percent -> ratio.
    assert core0.times == (T0 + 1, T0 + 2, T0 + 3)
    assert core0.values == pytest.approx((0.42, 0.44, 0.46))
    errors = next(
        s for s in tel.series if s.name == "execution_errors_total" and s.label("error_type") == "transient"
    )
    assert errors.values == (0.0, 1.0, 1.0)  # per-period counts summed into a counter
    assert any("line 4 is cut mid-line" in n for n in tel.notes)


def test_neuron_monitor_needs_a_start_time() -> None:
    with pytest.raises(DataFileError, match="give the time of its first report with --since"):
        read_file(DATA / "neuron-monitor.jsonl")


def test_neuron_monitor_of_an_unknown_version(tmp_path: Path) -> None:
    path = tmp_path / "nm.jsonl"
    path.write_text('{"runtime_data_v9": []}\n')
    with pytest.raises(DataFileError, match="no 'neuron_runtime_data'"):
        read_file(path, start=T0)
    good = (DATA / "neuron-monitor.jsonl").read_text().splitlines()[0]
    path.write_text(f"{good}\nnot json\n{good}\n")
    with pytest.raises(DataFileError, match="line 2 is not JSON"):
        read_file(path, start=T0)


def test_metrics_of_an_unknown_exporter_version_are_named() -> None:
    with pytest.raises(DataFileError, match=r"unknown vllm version \(vllm:first_token_time_seconds_bucket"):
        read_file(DATA / "vllm-unknown-version.prom")


def test_a_scrape_without_timestamps_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "scrape.prom"
    path.write_text("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")
    with pytest.raises(DataFileError, match="has no timestamp"):
        read_file(path)


def test_binary_and_garbage_files_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.prom"
    path.write_bytes(b"\x00\x01\x02")
    with pytest.raises(DataFileError, match="binary"):
        read_file(path)
    path.write_text('vllm:num_requests_running{model_name="a" 3 1\n')
    with pytest.raises(DataFileError, match="not valid Prometheus text exposition"):
        read_file(path)


def test_counter_reset_counts_the_new_value() -> None:
    s = Series("vllm:generation_tokens_total", (), (0.0, 30.0, 60.0, 90.0), (0.0, 100.0, 50.0, 150.0))
    sums, resets = fg.counter_sums([s], 0.0, 90.0, 1)
    assert sums == [100 + 50 + 100] and resets == 1  # 0->100, reset to 50 (counted), 50->150


def test_samples_out_of_order_are_sorted_and_noted() -> None:
    text = (
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 10 1796112030000\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 20 1796112000000\n'
    )
    tel = read_exposition(text, source="skewed")
    assert tel.series[0].times == (T0, T0 + 30) and tel.series[0].values == (20.0, 10.0)
    assert any("out of time order" in n for n in tel.notes)


def test_gaps_are_found() -> None:
    s = Series("DCGM_FI_DEV_GPU_UTIL", (), (0.0, 30.0, 60.0, 600.0, 630.0), (1, 1, 1, 1, 1))
    assert fg.gaps(s) == [(60.0, 600.0)]
    assert fg.covered_seconds(s, 0.0, 630.0, 1) == [90.0]


def test_histogram_quantile_follows_prometheus() -> None:
    buckets = [(0.1, 10.0), (0.2, 30.0), (float("inf"), 40.0)]
    assert fg.histogram_quantile(0.5, buckets) == pytest.approx(0.1 + 0.1 * (20 - 10) / 20)
    assert fg.histogram_quantile(0.2, buckets) == pytest.approx(0.1 * 8 / 10)
    assert fg.histogram_quantile(0.99, buckets) == pytest.approx(0.2)  # in +Inf: highest finite bound
    assert fg.histogram_quantile(0.5, [(float("inf"), 0.0)]) is None
