"""`silica calibrate --from-monitor` on the monitor's replayed production scenario (tests/monitor)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from tests.monitor import scenario
from tests.pilot.conftest import run

from silica.context import plan_context
from silica.plan import estimate
from silica.workload import Deployment, InferenceWorkload


def _plan(tmp: Path, instance: str) -> tuple[Path, dict]:  # type: ignore[type-arg]
    code, out, err = run(
        "estimate", "llama-3.1-8b", "--on", instance, "--input-len", "1024", "--output-len", "256", "--json"
    )
    assert code == 0, err
    path = tmp / f"plan-{instance}.json"
    path.write_text(out)
    return path, json.loads(out)


def test_steady_production_windows_move_the_overlay(tmp_path: Path) -> None:
    gpu_path, gpu = _plan(tmp_path, "g6e.xlarge")
    neuron_path, neuron = _plan(tmp_path, "inf2.xlarge")
    since = scenario.hour_aligned_start(time.time())
    om = tmp_path / "scrapes.om"
    om.write_text(
        scenario.openmetrics(
            since,
            scenario.Plan(gpu["tpot_ms"] / 1000, gpu["ttft_ms"] / 1000),
            scenario.Plan(neuron["tpot_ms"] / 1000, neuron["ttft_ms"] / 1000),
        )
    )
    code, out, err = run(
        "monitor", "report", "--plan", f"chat-gpu={gpu_path}", "--plan", f"chat-neuron={neuron_path}",
        "--from", str(om), "--since", str(since), "--until", str(since + scenario.STEP * scenario.SCRAPES),
        "--window", "1h", "--json", "--no-store",
    )  # fmt: skip
    assert code == 0, err
    report = tmp_path / "report.json"
    report.write_text(out)
    neuron_dep = next(d for d in json.loads(out)["deployments"] if d["name"] == "chat-neuron")
    # no running-requests gauge in the scenario: Little's law, tokens/s x s/token = sequences in flight
    points = [
        (max(1, round(w["output_tokens_per_s"] * w["tpot"]["p50_ms"] / 1000)), w["tpot"]["p50_ms"])
        for w in neuron_dep["windows"]
    ]
    assert len(points) == 2 and points[1][1] > 1.2 * points[0][1]  # hour 2 runs 30% slower
    # the monitor flags hour 2 as drift (out of the plan's band): it is not a measurement to fit
    flagged = {d["start"] for d in neuron_dep["drift"]}
    assert [w["start"] in flagged for w in neuron_dep["windows"]] == [False, True]

    def loss() -> tuple[float, str]:
        total, note = 0.0, ""
        for batch, observed in points[:1]:  # the window it fits
            wl = InferenceWorkload(input_len=1024, output_len=256, batch=batch)
            ctx = plan_context()  # the user's overlay, if any, comes in through the context
            e = estimate("llama-3.1-8b", wl, Deployment(instance="inf2.xlarge"), context=ctx)
            assert e.tpot_ms
            total += math.log(observed / e.tpot_ms) ** 2
            note = e.calibration
        return total, note

    before, _ = loss()

    code, out, err = run("calibrate", "--from-monitor", str(report), "--lengths", "1024:256")
    assert code == 0, err
    assert "neuron-v2 / vllm-neuron (1 steady windows)" in out, out  # hour 1; hour 2 drifted
    assert "windows left out: 1 flagged as drift by the monitor" in out, out
    # chat-gpu's DCGM gap (10 min in hour one) leaves that window out, not the deployment
    assert "ada / vllm (1 steady windows)" in out, out
    overlay = json.loads((tmp_path / "xdg-data" / "silica" / "calibration-overlay.json").read_text())
    neuron_entry = next(e for e in overlay["entries"] if e["family"] == "neuron-v2")
    assert "production windows of chat-neuron" in neuron_entry["label"]
    assert (
        neuron_entry["ttft_side"] == "engine" and "front_end" not in neuron_entry
    )  # no front end to take off
    assert neuron_entry["fitted_on"]["windows"] == 1
    assert any("flagged as drift" in why for why in neuron_entry["fitted_on"]["left_out"])
    # one window for the fitted decode parameters: no spread measured, the band says so
    assert (
        neuron_entry["bands"]["tpot_ms"] == [0.5, 2.0]
        and "unmeasured" in neuron_entry["band_notes"]["tpot_ms"]
    )
    after, note = loss()
    assert "production windows of chat-neuron" in note
    assert after < before  # the overlay's estimates sit closer to what production measured


def test_no_steady_window_is_one_line(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"deployments": [{"name": "x", "plan": {}, "windows": [], "gaps": []}]}))
    code, _, err = run("calibrate", "--from-monitor", str(report))
    assert code == 2 and "no steady window" in err and err.count("\n") == 1


def test_a_report_whose_every_window_drifted_says_so(tmp_path: Path) -> None:
    window = {"start": 0.0, "end": 3600.0, "tpot": {"p50_ms": 40.0}, "requests_running": 8}
    dep = {
        "name": "chat",
        "plan": {"model": "llama-3.1-8b", "instance": "g6e.xlarge", "family": "ada", "count": 1},
        "windows": [window, {**window, "start": 3600.0, "end": 7200.0}],
        "drift": [{"start": 0.0, "end": 3600.0}, {"start": 3600.0, "end": 7200.0}],
        "gaps": [],
    }
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"deployments": [dep]}))
    code, _, err = run("calibrate", "--from-monitor", str(report))
    assert code == 2 and err.count("\n") == 1
    assert "chat: 2 flagged as drift" in err and "silica pilot run" in err
