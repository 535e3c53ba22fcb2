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


def _usd(v: float | None) -> str:
    return "unknown" if v is None else f"${v:,.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="replace the generated block in docs/monitor.md")
    args = ap.parse_args()
    block = report_block()
    if not args.write:
        sys.stdout.write(block)
        return
    text = DOC.read_text()
    if not BLOCK.search(text):
        raise SystemExit(f"{DOC} has no <!-- generated:monitor --> block")
    DOC.write_text(BLOCK.sub(lambda m: m.group(1) + block + m.group(3), text))
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
