"""The user overlay: applied to its (family, engine) only, labelled, bounded, never inherited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.pilot.conftest import run

from silica.context import plan_context
from silica.plan import estimate
from silica.workload import Deployment, InferenceWorkload

WL = InferenceWorkload(input_len=512, output_len=128, batch=8)


def _write(path: Path, entries: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema": "silica.calibration_overlay/1", "entries": entries}))


def _entry(family: str, engine: str, **params: float) -> dict[str, object]:
    return {
        "family": family,
        "engine": engine,
        "params": params,
        "label": f"user calibration overlay ({engine}, test)",
    }


def test_overlay_moves_its_family_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h100 = estimate("llama-3.1-8b", WL, Deployment(instance="p5.48xlarge", tp=1), engine="vllm")
    trt = estimate("llama-3.1-8b", WL, Deployment(instance="p5.48xlarge", tp=1), engine="trtllm")
    b200 = estimate("llama-3.1-8b", WL, Deployment(instance="p6-b200.48xlarge", tp=1), engine="vllm")
    path = tmp_path / "overlay.json"
    # hopper at half the memory efficiency for vLLM; an sglang entry for ada that must not apply
    _write(path, [_entry("hopper", "vllm", memory_eff=0.4), _entry("ada", "sglang", memory_eff=0.3)])
    monkeypatch.setenv("SILICA_CALIBRATION_OVERLAY", str(path))
    ctx = plan_context()  # the overlay reaches a plan through the context built at the edge, by name
    h100_after = estimate("llama-3.1-8b", WL, Deployment("p5.48xlarge", tp=1), engine="vllm", context=ctx)
    trt_after = estimate("llama-3.1-8b", WL, Deployment("p5.48xlarge", tp=1), engine="trtllm", context=ctx)
    b200_after = estimate(
        "llama-3.1-8b", WL, Deployment("p6-b200.48xlarge", tp=1), engine="vllm", context=ctx
    )
    l40s = estimate("llama-3.1-8b", WL, Deployment(instance="g6e.xlarge"), context=ctx)
    assert h100_after.tpot_ms is not None and h100.tpot_ms is not None
    assert h100_after.tpot_ms > h100.tpot_ms * 1.3  # decode is bandwidth-bound: slower stream, slower token
    assert h100_after.calibration.endswith("user calibration overlay (vllm, test)")
    # the same chip under another engine keeps the shipped parameters: the overlay is per engine
    assert (trt_after.tpot_ms, trt_after.calibration) == (trt.tpot_ms, trt.calibration)
    # blackwell inherits hopper's shipped parameters, not the user's hopper pilot
    assert (b200_after.tpot_ms, b200_after.calibration) == (b200.tpot_ms, b200.calibration)
    assert "overlay" not in l40s.calibration


def test_out_of_bounds_overlay_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "overlay.json"
    _write(path, [_entry("hopper", "vllm", memory_eff=3.0)])
    monkeypatch.setenv("SILICA_CALIBRATION_OVERLAY", str(path))
    code, _, err = run("estimate", "llama-3.1-8b", "--on", "p5.48xlarge")
    assert code == 2 and "outside its bounds" in err and err.count("\n") == 1


def test_calibrate_needs_a_kit_run(tmp_path: Path) -> None:
    res = tmp_path / "r.json"
    res.write_text(json.dumps({"plan": {"schema": "silica.pilot.load_plan/1", "input_len": 8, "output_len": 8,
                                        "concurrency": [1], "requests_per_step": 1}, "steps": []}))  # fmt: skip
    code, _, err = run("calibrate", "--from-pilot", str(res))
    assert code == 2 and "without a kit" in err
    code, _, err = run("calibrate")
    assert code == 2 and "--from-pilot" in err
