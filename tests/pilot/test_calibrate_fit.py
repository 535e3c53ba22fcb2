"""`calibrate --from-pilot` moves only what the measurement identifies, and the overlay reaches the
estimate of the engine that was measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.pilot.conftest import run

from silica.perf.calibration import load_calibration
from silica.pilot.calibrate import fit_from_pilot
from silica.pilot.kit import estimate_step, make_kit


def _result(input_len: int, ttft_x: float, tpot_x: float) -> dict[str, Any]:
    """A pilot result on g6e.xlarge whose measurements are the prediction scaled by the factors given."""
    kit = make_kit("llama-3.1-8b", "g6e.xlarge", input_len=input_len, output_len=64, concurrency=(1, 8))
    dep = kit.plan.deployed
    assert dep is not None
    steps = []
    for c in kit.plan.concurrency:
        e = estimate_step(dep.model, dep, kit.plan, c, None)
        assert e.ttft_ms and e.tpot_ms
        steps.append(
            {
                "concurrency": c,
                "completed": 8,
                "ttft_ms": {"p50": e.ttft_ms * ttft_x},
                "tpot_ms": {"p50": e.tpot_ms * tpot_x},
            }
        )
    return {"plan": kit.plan.to_dict(), "steps": steps}


def test_a_ttft_that_does_not_depend_on_compute_leaves_compute_unchanged() -> None:
    # 16-token prompts: prefill is weight streaming and per-layer time, not compute. A TTFT three times
    # the prediction says something is slow, but nothing about compute efficiency.
    entry = fit_from_pilot(_result(16, ttft_x=3.0, tpot_x=1.3), "test")
    assert "compute_eff_max" not in entry["params"]
    assert entry["why"]["compute_eff_max"].startswith("not identified")
    assert "memory_eff" in entry["params"] or "layer_overhead_us" in entry["params"]
    moved = [k for k in entry["params"] if k != "compute_eff_max"]
    assert all("fitted" in entry["why"][k] for k in moved)


def test_a_long_prompt_ttft_moves_compute() -> None:
    entry = fit_from_pilot(_result(512, ttft_x=1.5, tpot_x=1.0), "test")
    start = load_calibration().resolve(entry["family"], entry["engine"]).params.compute_eff_max
    assert entry["params"]["compute_eff_max"] < start  # slower prefill: less of the peak reached
    assert "TTFT changes" in entry["why"]["compute_eff_max"]


def test_a_vllm_pilot_overlay_reaches_estimate_with_engine_vllm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    res = tmp_path / "r.json"
    res.write_text(json.dumps(_result(512, ttft_x=1.0, tpot_x=1.6)))
    overlay = tmp_path / "overlay.json"
    code, out, err = run("calibrate", "--from-pilot", str(res), "--out", str(overlay))
    assert code == 0, err
    assert "--engine vllm" in out
    monkeypatch.setenv("SILICA_CALIBRATION_OVERLAY", str(overlay))
    code, vllm, err = run("estimate", "llama-3.1-8b", "--on", "g6e.xlarge", "--engine", "vllm", "--json")
    assert code == 0, err
    code, default, err = run("estimate", "llama-3.1-8b", "--on", "g6e.xlarge", "--json")
    assert code == 0, err
    assert "user calibration overlay (vllm" in json.loads(vllm)["calibration"]
    assert "overlay" not in json.loads(default)["calibration"]  # the NVIDIA default engine is not vLLM
