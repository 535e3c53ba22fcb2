"""Production judged at its own load: a light-load window running as the model predicts for that load
shows no drift, though it is far faster than the full-batch plan; the same window slower than that
expectation is flagged against it. Without the engine's request-length histograms Silica cannot know
the load's shape and judges against the plan, as before (the control)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.monitor import scenario
from tests.monitor.conftest import run

from silica.plan import estimate
from silica.workload import Deployment, InferenceWorkload

STEP, SCRAPES, RUNNING, IN, OUT = 30.0, 120, 2, 1024, 256
REQ_PER_SCRAPE = 3  # requests finishing per scrape


def _telemetry(t0: float, tpot_s: float, ttft_s: float, lengths: bool) -> str:
    times = [t0 + k * STEP for k in range(SCRAPES + 1)]
    fams: dict[str, scenario._Family] = {}

    def fam(name: str, kind: str) -> scenario._Family:
        return fams.setdefault(name, scenario._Family(name, kind))

    lab = {"model_name": "meta-llama/Llama-3.1-8B-Instruct", "instance": "gpu-a:8000", "deployment": "chat"}
    for k, t in enumerate(times):
        fam("vllm:generation_tokens", "counter").add(
            "vllm:generation_tokens_total", lab, t, k * REQ_PER_SCRAPE * OUT
        )
        fam("vllm:prompt_tokens", "counter").add("vllm:prompt_tokens_total", lab, t, k * REQ_PER_SCRAPE * IN)
        fam("vllm:num_requests_running", "gauge").add("vllm:num_requests_running", lab, t, float(RUNNING))
    n_tok = REQ_PER_SCRAPE * (OUT - 1)
    p, q = tpot_s, ttft_s
    scenario._histogram(
        fam("vllm:inter_token_latency_seconds", "histogram"), "vllm:inter_token_latency_seconds", lab, times,
        [(0.5 * p, 0), (p, n_tok // 2), (1.5 * p, n_tok - n_tok // 2), (2 * p, 0)], lambda k: n_tok * p,
    )  # fmt: skip
    scenario._histogram(
        fam("vllm:time_to_first_token_seconds", "histogram"), "vllm:time_to_first_token_seconds", lab, times,
        [(0.5 * q, 0), (q, REQ_PER_SCRAPE), (2 * q, 0)], lambda k: REQ_PER_SCRAPE * q,
    )  # fmt: skip
    if lengths:  # vLLM's per-request length histograms
        for name, n in (("vllm:request_prompt_tokens", IN), ("vllm:request_generation_tokens", OUT)):
            scenario._histogram(
                fam(name, "histogram"), name, lab, times, [(n / 2, 0), (n, REQ_PER_SCRAPE)],
                lambda k, n=n: REQ_PER_SCRAPE * n,
            )  # fmt: skip
    return "\n".join(line for f in fams.values() for line in f.lines) + "\n# EOF\n"


def _report(tmp_path: Path, slow: float, lengths: bool, keep: Path | None = None) -> tuple[dict, dict]:  # type: ignore[type-arg]
    code, out, err = run(
        "estimate", "llama-3.1-8b", "--on", "g6e.xlarge", "--input-len", str(IN), "--output-len", str(OUT), "--json"
    )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)
    (tmp_path / "plan.json").write_text(out)
    light = estimate(
        "llama-3.1-8b",
        InferenceWorkload(input_len=IN, output_len=OUT, batch=RUNNING),
        Deployment(instance="g6e.xlarge", tp=plan["tp"]),
        engine=plan["engine"],
    )
    assert light.tpot_ms and light.ttft_ms and plan["tpot_ms"]
    assert light.tpot_ms < plan["tpot_ms_low"], "light load must run faster than the full-batch band"
    t0 = scenario.hour_aligned_start(1.9e9)
    om = tmp_path / "t.om"
    om.write_text(_telemetry(t0, slow * light.tpot_ms / 1000, light.ttft_ms / 1000, lengths))
    code, out, err = run(
        "monitor", "report", "--plan", f"chat={tmp_path / 'plan.json'}", "--from", str(om),
        "--since", str(t0), "--until", str(t0 + STEP * SCRAPES), "--window", "30m", "--json", "--no-store",
    )  # fmt: skip
    assert code == 0, err
    if keep is not None:
        keep.write_text(out)
    return json.loads(out)["deployments"][0], {"tpot": light.tpot_ms, "ttft": light.ttft_ms}


def test_a_light_load_window_running_as_predicted_shows_no_drift(tmp_path: Path) -> None:
    dep, light = _report(tmp_path, 1.0, lengths=True)
    assert dep["drift"] == []
    w = dep["windows"][0]
    assert w["concurrency"] == pytest.approx(RUNNING)
    assert (w["input_len"], w["output_len"]) == (pytest.approx(IN), pytest.approx(OUT))
    assert w["expected_tpot_ms"] == pytest.approx(light["tpot"])
    assert w["expected_ttft_ms"] == pytest.approx(light["ttft"])


def test_slower_than_expected_at_its_load_is_drift_against_the_load(tmp_path: Path) -> None:
    dep, light = _report(tmp_path, 1.5, lengths=True)
    tpot = [d for d in dep["drift"] if d["figure"] == "tpot_ms"]
    assert tpot and all(d["against"] == "load" and d["direction"] == "slower" for d in tpot)
    assert tpot[0]["planned"] == pytest.approx(light["tpot"])
    assert tpot[0]["ratio"] == pytest.approx(1.5, rel=0.02)


def test_without_request_lengths_the_window_is_judged_against_the_plan(tmp_path: Path) -> None:
    dep, _ = _report(tmp_path, 1.0, lengths=False)
    assert dep["windows"][0]["expected_tpot_ms"] is None
    assert any(d["against"] == "plan" and d["direction"] == "faster" for d in dep["drift"])


def test_calibrate_from_monitor_takes_the_lengths_the_engine_measured(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    _report(tmp_path, 1.0, lengths=True, keep=report)
    overlay = tmp_path / "overlay.json"
    code, _, err = run(
        "calibrate", "--from-monitor", str(report), "--lengths", "10:10", "--out", str(overlay)
    )
    assert code == 0, err
    [entry] = json.loads(overlay.read_text())["entries"]
    assert entry["fitted_on"]["lengths"] == f"{IN}:{OUT} from the engine's request-length histograms"
