"""Regenerate what docs/pilot.md shows: the kit layouts it quotes, and the report screenshots.

    python scripts/pilot_docs.py            # print the quoted block (tests/pilot/test_docs.py checks it)
    python scripts/pilot_docs.py --write    # replace both blocks in docs/pilot.md
    python scripts/pilot_docs.py --shots    # also run the loop on a tiny local model and screenshot

The screenshots come from a real run: `transformers serve` on this machine with the tiny random
Llama of tests/pilot/tiny_server.py, planned as if on a g6e.xlarge. The figures in them are a CPU's,
so they show the report, not an L40S; they are not quoted in the text.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))


def kit_block() -> str:
    """One line per kit the doc quotes: the layout `silica pilot plan` writes, and step 1's prediction."""
    from silica.pilot.kit import make_kit

    lines = []
    for instance in ("inf2.xlarge", "g6e.xlarge"):
        kit = make_kit("llama-3.1-8b", instance)
        dep = kit.plan.deployed
        assert dep is not None
        first = kit.prediction["steps"][0]
        lo, hi = first["bands"]["tpot_ms"]
        lines.append(
            f"{instance}: {dep.engine}, tp={dep.tp}, max-num-seqs={dep.max_batch}, max-model-len={dep.max_len}, "
            f"steps {','.join(map(str, kit.plan.concurrency))} ({kit.plan.warmup_s:g} s warm-up, "
            f"{kit.plan.duration_s:g} s steady, {kit.plan.cooldown_s:g} s cool-down), prompt sweep "
            f"{','.join(map(str, kit.plan.input_lens))} tokens at {kit.plan.sweep_concurrency} in flight; "
            f"at concurrency 1 TPOT {first['tpot_ms']:.1f} ms (band {lo:.1f}-{hi:.1f})"
        )
    return "\n".join(lines)


VLLM_RUN = ROOT / "tests" / "data" / "monitor" / "vllm-cpu"


def vllm_block() -> str:
    """The recorded pilot against vLLM 0.32.0's CPU build (tests/data/monitor/vllm-cpu/), one row a step:
    what the client held or sent, what vLLM's own gauges and counters said, and the latency."""
    import json

    rows = [
        "| step | client in flight | vLLM running mean / max | vLLM waiting max | requests/s achieved | TTFT p50 | TPOT p50 | prefix-cache hits / lookups | no-token answers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("pilot-steps.json", "pilot-light.json"):
        result = json.loads((VLLM_RUN / name).read_text())
        arrival = result["plan"].get("arrival", "poisson")
        for s in result["steps"]:
            e = s["engine"]
            label = (
                f"{s['rate']:g} requests/s ({arrival})"
                if s["mode"] == "open"
                else f"{s['concurrency']} in flight"
            )
            rows.append(
                f"| {label} | {s['mean_in_flight']:.2f} | {e['running_mean']:.2f} / {e['running_max']:g} | "
                f"{e['waiting_max']:g} | {s['achieved_rate']:.2f} | {s['ttft_ms']['p50']:.1f} ms | "
                f"{s['tpot_ms']['p50']:.2f} ms | {e['prefix_cache_hits']:,.0f} / {e['prefix_cache_queries']:,.0f} | "
                f"{s['failed']} of {s['requests']} |"
            )
    return "\n".join(rows)


def shots(out_dir: Path) -> None:
    from playwright.sync_api import sync_playwright
    from tests.pilot.tiny_server import build_tiny_model, start_server, stop_server

    os.environ["HF_HUB_OFFLINE"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        model = build_tiny_model(t / "tiny-llama")
        proc, url = start_server(model, t / "server.log")
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SILICA_DB_URL": f"sqlite:///{t}/db.sqlite"}
        silica = [sys.executable, "-m", "silica.cli"]
        try:
            for args in (
                [
                    "pilot",
                    "plan",
                    str(model),
                    "--on",
                    "g6e.xlarge",
                    "--out",
                    str(t / "kit"),
                    "--input-len",
                    "24",
                    "--output-len",
                    "12",
                    "--concurrency",
                    "1,2,4,8",
                    "--requests",
                    "8",
                    "--duration",
                    "0",
                ],
                [
                    "pilot",
                    "run",
                    "--endpoint",
                    url,
                    "--model",
                    str(model),
                    "--plan",
                    str(t / "kit"),
                    "--out",
                    str(t / "result.json"),
                    "--no-ignore-eos",
                ],
                [
                    "pilot",
                    "compare",
                    str(t / "result.json"),
                    "--plan",
                    str(t / "kit"),
                    "--html",
                    str(t / "before.html"),
                ],
                ["calibrate", "--from-pilot", str(t / "result.json")],
                # no --plan: predicted again through the overlay just written
                ["pilot", "compare", str(t / "result.json"), "--html", str(t / "report.html")],
            ):
                env["SILICA_CALIBRATION_OVERLAY"] = str(t / "overlay.json")
                subprocess.run(silica + args, env=env, check=True)
        finally:
            stop_server(proc)
        out_dir.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=os.environ["SILICA_TEST_CHROMIUM"])
            for name, width in (("desktop", 1280), ("400px", 400)):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto((t / "report.html").as_uri())
                page.screenshot(path=str(out_dir / f"pilot-report-{name}.png"), full_page=True)
            browser.close()


def ttft_block() -> str:
    """Client against engine TTFT at the recorded 1-in-flight step: the pilot's client figures, and
    vLLM's own histogram over the step's window of the recording (what `pilot compare` now shows)."""
    import json

    from silica.pilot.compare import ttft_split
    from silica.pilot.engine_metrics import read_recording, summarise

    meta = json.loads((VLLM_RUN / "recording.json").read_text())
    engine = summarise(
        read_recording((VLLM_RUN / "vllm-0.32.0-cpu.prom").read_text()), tuple(meta["windows"]["closed_c1"])
    )
    step = json.loads((VLLM_RUN / "pilot-steps.json").read_text())["steps"][0]
    assert engine is not None and step["concurrency"] == 1
    splits = [("first run (recording)", t) for t in ttft_split([{**step, "engine": engine}])]
    sweep = json.loads((VLLM_RUN / "pilot-sweep.json").read_text())
    splits += [
        ("later run (live scraper)", t) for t in ttft_split(sweep["steps"], sweep["plan"]["input_len"])
    ]
    engine_run = json.loads((VLLM_RUN / "pilot-engine.json").read_text())
    splits += [
        ("engine run (live scraper, recorded)", t)
        for t in ttft_split(engine_run["steps"], engine_run["plan"]["input_len"])
    ]
    rows = [
        "| run | step | client TTFT mean | vLLM TTFT mean (first tokens) | client p50 | vLLM p50 | outside the engine (mean) |",
        "|---|---|---|---|---|---|---|",
    ]
    for run, t in splits:
        assert (
            t.client_mean_ms is not None and t.outside_engine_ms is not None and t.outside_share is not None
        )
        rows.append(
            f"| {run} | {t.step} | {t.client_mean_ms:.2f} ms | {t.engine_mean_ms:.2f} ms ({t.engine_requests:.0f}) | "
            f"{t.client_p50_ms:.2f} ms | {t.engine_p50_ms:.2f} ms | {t.outside_engine_ms:.2f} ms ({t.outside_share:.0%}) |"
        )
    return "\n".join(rows)


def fit_block() -> str:
    """`calibrate --from-pilot` on the recorded closed-loop steps at 2, 4 and 8 in flight: what moved,
    the overlay's own bands, and the fitted model at 1 in flight (a load it never saw)."""
    import json
    from dataclasses import replace

    from silica.perf.calibration import load_calibration
    from silica.perf.overlay import without_user_overlay
    from silica.pilot.calibrate import fit_from_pilot
    from silica.pilot.kit import estimate_step
    from silica.pilot.loadplan import LoadPlan

    result = json.loads((VLLM_RUN / "pilot-steps.json").read_text())
    result["plan"]["deployed"]["model"] = str(VLLM_RUN / "tiny-llama.json")
    c1 = result["steps"][0]
    result["steps"] = [s for s in result["steps"] if s["mode"] == "closed" and s["concurrency"] in (2, 4, 8)]
    entry = fit_from_pilot(result, "pilot-steps.json (2, 4, 8 in flight)")
    plan = LoadPlan.from_dict(result["plan"], "pilot-steps.json")
    dep = plan.deployed
    assert dep is not None
    cal = without_user_overlay(load_calibration())
    fitted = cal.with_params(
        dep.family, replace(cal.resolve(dep.family, dep.engine).params, **entry["params"])
    )
    e = estimate_step(dep.model, dep, plan, 1, fitted)
    ttft1, tpot1 = e.ttft_ms, e.tpot_ms
    assert ttft1 is not None and tpot1 is not None
    moved = ", ".join(f"{k} {entry['shipped'][k]:.4g} -> {v:.4g}" for k, v in entry["params"].items())
    bands = "; ".join(f"{m} {lo:.2f}-{hi:.2f}x" for m, (lo, hi) in entry["bands"].items())
    return (
        f"fitted on 2, 4, 8 in flight: {moved}\n"
        f"overlay bands: {bands}\n"
        f"at 1 in flight (not fitted): TPOT {tpot1:.2f} ms predicted, {c1['tpot_ms']['p50']:.2f} ms client p50 "
        f"({c1['tpot_ms']['p50'] / tpot1:.2f}x); TTFT {ttft1:.2f} ms predicted, {c1['ttft_ms']['p50']:.2f} ms client p50 "
        f"({c1['ttft_ms']['p50'] / ttft1:.2f}x)"
    )


def write_blocks(doc: Path) -> None:
    """Put the kit block and the recorded vLLM table between their markers in `doc`."""
    text = doc.read_text(encoding="utf-8")
    for name, body in (
        ("pilot-kits", f"```\n{kit_block()}\n```"),
        ("pilot-vllm", vllm_block()),
        ("pilot-ttft", ttft_block()),
        ("pilot-fit", f"```\n{fit_block()}\n```"),
    ):
        begin, end = f"<!-- {name}:begin -->\n", f"\n<!-- {name}:end -->"
        head, rest = text.split(begin, 1)
        text = head + begin + body + end + rest.split(end, 1)[1]
    doc.write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shots", action="store_true", help="also regenerate the report screenshots")
    ap.add_argument("--write", action="store_true", help="replace the quoted blocks in docs/pilot.md")
    args = ap.parse_args()
    if args.write:
        write_blocks(ROOT / "docs" / "pilot.md")
    print(kit_block())
    print()
    print(vllm_block())
    print()
    print(ttft_block())
    print()
    print(fit_block())
    if args.shots:
        shots(ROOT / "docs" / "img")


if __name__ == "__main__":
    main()
