"""Regenerate what docs/monitor.md quotes: the report of the synthetic replay that the monitor tests use.

    python scripts/monitor_docs.py           # print the quoted block (tests/monitor/test_docs.py checks it)
    python scripts/monitor_docs.py --write   # replace the block in docs/monitor.md

The replay is tests/monitor/scenario.py (two deployments, two hours of 30 s scrapes of the documented
DCGM, vLLM and neuron-monitor metrics), started at a fixed hour so the text is stable. Its latencies are
set relative to the plan, so a change to the performance model moves plan and replay together; the
dollar figures move with the prices. The screenshots (docs/img/monitor-*.png) are taken by
scripts/screenshots.py from the same replay.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "monitor.md"
BLOCK = re.compile(r"(<!-- generated:monitor -->\n)(.*?)(<!-- /generated:monitor -->)", re.S)
VLLM_BLOCK = re.compile(r"(<!-- generated:monitor-vllm -->\n)(.*?)(<!-- /generated:monitor-vllm -->)", re.S)
VLLM_RUN = ROOT / "tests" / "data" / "monitor" / "vllm-cpu"
START = 1_790_000_000.0  # any fixed time; the replay starts at the hour three hours before it


def report_block() -> str:
    """The report's summary, drift and advice lines, as `silica monitor report` prints them."""
    from tests.monitor import scenario

    from silica.monitor import build_report, load_plan, read_file
    from silica.plan import estimate
    from silica.results import InferenceEstimate
    from silica.workload import Deployment, InferenceWorkload

    wl = InferenceWorkload(input_len=1024, output_len=256)
    since = scenario.hour_aligned_start(START)
    until = since + scenario.STEP * scenario.SCRAPES
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        planned = {}
        for name, instance in (("chat-gpu", "g6e.xlarge"), ("chat-neuron", "inf2.xlarge")):
            est = estimate("llama-3.1-8b", wl, Deployment(instance))
            assert isinstance(est, InferenceEstimate) and est.tpot_ms and est.ttft_ms
            path = t / f"{name}.json"
            path.write_text(json.dumps(est.to_dict()))
            planned[name] = (path, scenario.Plan(est.tpot_ms / 1000, est.ttft_ms / 1000))
        om = t / "scrapes.om"
        om.write_text(scenario.openmetrics(since, planned["chat-gpu"][1], planned["chat-neuron"][1]))
        plans = [p for name, (path, _) in planned.items() for p in load_plan(path, name)]
        report = build_report(read_file(om), plans, since=since, until=until, window_s=3600)
    d = report.to_dict()
    lines = [
        "| deployment | verdict | tokens/s | utilisation | $/1M actual | $/1M plan |",
        "|---|---|---|---|---|---|",
    ]
    for dep in d["deployments"]:
        o = dep["overall"]
        actual, plan = o.get("usd_per_1m_output_tokens"), dep["plan"].get("usd_per_1m_output_tokens")
        lines.append(
            f"| {dep['name']} | {dep['verdict']} | {o['output_tokens_per_s']:,.0f} | "
            f"{o['utilisation']:.0%} | {_usd(actual)} | {_usd(plan)} |"
        )
    lines.append("")
    lines += [f"- drift: {text}" for text in d["drift"]]
    lines += [f"- advice ({a['kind']}): {a['text']}" for a in d["advice"]]
    return "\n".join(lines) + "\n"


def vllm_block() -> str:
    """The recorded real vLLM windows at 1 in flight, judged with overlays fitted by
    `calibrate --from-pilot` (as tests/monitor/test_real_vllm.py does): the window's TTFT, the model's
    expectation, their ratio, the overlay's TTFT band, and the window's note on how it was judged."""
    from silica.monitor import build_report, load_plan, read_file
    from silica.perf.calibration import load_calibration
    from silica.perf.overlay import with_user_overlay
    from silica.pilot.calibrate import fit_from_pilot, write_overlay
    from silica.plan import estimate
    from silica.workload import Deployment, InferenceWorkload

    meta = json.loads((VLLM_RUN / "recording.json").read_text())
    model = str(VLLM_RUN / "tiny-llama.json")
    cases = (  # (what, pilot result, steps kept, recording, window)
        ("first run, fitted on 2, 4, 8 in flight (no engine TTFT per step)", "pilot-steps.json",
         lambda s: s["mode"] == "closed" and s["concurrency"] in (2, 4, 8), "vllm-0.32.0-cpu.prom", "closed_c1"),
        ("engine run, fitted on all its steps", "pilot-engine.json",
         lambda s: True, "vllm-0.32.0-cpu-engine.prom", "engine_c1"),
        ("engine run, its 64-token step at 1 in flight held out", "pilot-engine.json",
         lambda s: not (s["concurrency"] == 1 and s["input_len"] == 64), "vllm-0.32.0-cpu-engine.prom",
         "engine_c1"),
    )  # fmt: skip
    rows = [
        "| overlay | TTFT band | window TTFT | expected | ratio | how the window's TTFT was judged |",
        "|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (what, name, keep, recording, window) in enumerate(cases):
            result = json.loads((VLLM_RUN / name).read_text())
            result["plan"]["deployed"]["model"] = model
            result["steps"] = [s for s in result["steps"] if keep(s)]
            overlay = write_overlay(fit_from_pilot(result, name), Path(tmp) / f"overlay{i}.json")
            entry = json.loads(overlay.read_text())["entries"][0]
            cal = with_user_overlay(load_calibration(), overlay)
            wl = InferenceWorkload(input_len=64, output_len=32)
            est = estimate(model, wl, Deployment(instance="g6e.xlarge", tp=1), engine="vllm", calibration=cal)
            plan = Path(tmp) / f"plan{i}.json"
            body = est.to_dict()
            body["model"] = model
            body.setdefault("settings", {})["calibration_overlay"] = {"value": str(overlay)}
            plan.write_text(json.dumps(body))
            a, b = meta["windows"][window]
            report = build_report(
                read_file(VLLM_RUN / recording), load_plan(plan, "tiny"), since=a, until=b, window_s=b - a
            )
            [w] = report.deployments[0].windows
            assert w.ttft is not None and w.expected_ttft_ms is not None
            p50 = w.ttft_front_end_ms is not None
            seen = w.ttft.p50_ms if p50 else w.ttft.mean_ms
            assert seen is not None
            lo, hi = entry["bands"]["ttft_ms"]
            rows.append(
                f"| {what} | {lo:.2f}-{hi:.2f}x | {seen:.2f} ms ({'p50' if p50 else 'mean'}) | "
                f"{w.expected_ttft_ms:.2f} ms | {seen / w.expected_ttft_ms:.2f}x | {w.ttft_note} |"
            )
    return "\n".join(rows) + "\n"


def _usd(v: float | None) -> str:
    return "unknown" if v is None else f"${v:,.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="replace the generated block in docs/monitor.md")
    args = ap.parse_args()
    block = report_block()
    vllm = vllm_block()
    if not args.write:
        sys.stdout.write(block + "\n" + vllm)
        return
    text = DOC.read_text()
    if not BLOCK.search(text):
        raise SystemExit(f"{DOC} has no <!-- generated:monitor --> block")
    if not VLLM_BLOCK.search(text):
        raise SystemExit(f"{DOC} has no <!-- generated:monitor-vllm --> block")
    text = BLOCK.sub(lambda m: m.group(1) + block + m.group(3), text)
    DOC.write_text(VLLM_BLOCK.sub(lambda m: m.group(1) + vllm + m.group(3), text))
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
