"""Regenerate the figures docs/simulate.md quotes (tests/simulate/test_docs.py checks they match).

    python scripts/simulate_docs.py          # rewrite the generated blocks of docs/simulate.md
    python scripts/simulate_docs.py --check  # exit 1 if a block differs from what the code gives now

Every block is a plain-text table produced by the library with fixed seeds, so it changes only when
the simulator, the calibration or the catalog change.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DOC = ROOT / "docs" / "simulate.md"
SLO_INSTANCES = ("p4de.24xlarge", "p5.48xlarge", "p5en.48xlarge", "g6e.48xlarge", "trn1.32xlarge")


def rates_block() -> str:
    """p50/p90/p99 TTFT and time between tokens against the request rate (one g6e.xlarge replica)."""
    from silica.simulate import simulate, synthetic
    from silica.simulate.deploy import plan_replica
    from silica.workload import InferenceWorkload

    table = plan_replica(
        "llama-3.1-8b", "g6e.xlarge", InferenceWorkload(input_len=1024, output_len=256)
    ).table
    lines = [
        "rate/s  TTFT p50   p90      p99      | TBT p50  p90    p99    | out tok/s  busy  KV peak  preempted"
    ]
    for rate in (1, 2, 4, 6, 8):
        r = simulate(synthetic(rate=rate, n=2000, input_len=1024, output_len=256, seed=0), table)
        lines.append(
            f"{rate:<7} {r.ttft.p50:8,.0f} {r.ttft.p90:8,.0f} {r.ttft.p99:8,.0f} | "
            f"{r.tbt.p50:6.1f} {r.tbt.p90:6.1f} {r.tbt.p99:6.1f} | {r.output_tok_s:9,.0f} {100 * r.utilisation:4.0f}% "
            f"{100 * r.kv_peak:6.0f}%  {r.preemptions:9d}"
        )
    return "\n".join(lines)


CHART = ROOT / "docs" / "img" / "simulate-ttft-vs-rate.svg"


def ttft_chart() -> str:
    """SVG: p50/p90/p99 TTFT against the request rate, the setting of the rates table (one replica),
    with the p99 band's ends: the library's latency-vs-rate series (`simulate.curve.latency_curve`)
    drawn by the reports' chart (`report.simulate.latency_lines`), as `silica simulate --html` does."""
    from silica.report.simulate import latency_lines
    from silica.report.svg import line_chart
    from silica.simulate import synthetic
    from silica.simulate.curve import band_factors, latency_curve
    from silica.simulate.deploy import plan_replica
    from silica.workload import InferenceWorkload

    planned = plan_replica("llama-3.1-8b", "g6e.xlarge", InferenceWorkload(input_len=1024, output_len=256))
    reqs = synthetic(rate=0.5, n=2000, input_len=1024, output_len=256, seed=0)
    # 0.5 to 5/s (the same arrivals compressed): past it the queue grows without bound
    curve = latency_curve(
        reqs,
        planned.table,
        band=band_factors(planned.estimate),
        factors=tuple(float(k) for k in range(1, 11)),
    )
    rates = curve.rates
    return line_chart(
        rates,
        latency_lines(curve, "ttft_ms"),
        title="Simulated TTFT vs request rate: Llama 3.1 8B, one g6e.xlarge, 1,024 in / 256 out",
        unit="ms",
        x_labels=[(r, f"{r:.1f}/s") for r in rates[1::2]],
    )


def bursts_block() -> str:
    """The same mean rate with burstier arrivals (gamma gaps of growing CV)."""
    from silica.simulate import simulate, synthetic
    from silica.simulate.deploy import plan_replica
    from silica.workload import InferenceWorkload

    table = plan_replica(
        "llama-3.1-8b", "g6e.xlarge", InferenceWorkload(input_len=1024, output_len=256)
    ).table
    lines = ["arrivals          TTFT p50   p90      p99      | TBT p99"]
    cases = [("constant", 1.0), ("poisson", 1.0), ("gamma", 2.0), ("gamma", 4.0)]
    for arrival, cv in cases:
        reqs = synthetic(rate=3, n=2000, input_len=1024, output_len=256, arrival=arrival, cv=cv, seed=0)
        r = simulate(reqs, table)
        label = f"gamma CV {cv:g}" if arrival == "gamma" else arrival
        lines.append(
            f"{label:<17} {r.ttft.p50:8,.0f} {r.ttft.p90:8,.0f} {r.ttft.p99:8,.0f} | {r.tbt.p99:6.1f}"
        )
    return "\n".join(lines)


def slo_block() -> str:
    """Llama 3.1 70B at 20 req/s sized to p90 TTFT <= 800 ms and p99 TBT <= 80 ms, five instance types."""
    from silica.plan import compare
    from silica.simulate.sizing import size_to_slo
    from silica.workload import InferenceWorkload

    wl = InferenceWorkload(input_len=1024, output_len=256, rate_req_per_s=20)
    c = compare("llama-3.1-70b", wl, instances=list(SLO_INSTANCES))
    s = size_to_slo(c, rate=20, ttft_p90_ms=800, tbt_p99_ms=80)
    from silica.results import InferenceEstimate

    avg = {r.instance: r for r in c.results if isinstance(r, InferenceEstimate)}
    lines = ["average-based plan (compare without tail targets):"]
    for inst in s.average_order:
        r = avg[inst]
        lines.append(f"  {inst:<16} {r.instances_for_load} instances  ${r.usd_per_month:,.0f}/month")
    lines.append("sized by simulation (p90 TTFT <= 800 ms, p99 TBT <= 80 ms):")
    for o in s.options:
        if not o.meets:
            lines.append(f"  {o.instance:<16} {o.mode:<14} misses: {o.reason}")
            continue
        pools = f" ({o.prefill_instances}P+{o.decode_instances}D)" if o.prefill_instances else ""
        kv = f", KV transfer {o.kv_transfer.mean_ms:.1f} ms/request" if o.kv_transfer else ""
        month = f"${o.usd_per_month:,.0f}/month" if o.usd_per_month is not None else "unpriced"
        lines.append(
            f"  {o.instance:<16} {o.mode:<14} {o.instances} instances{pools}, chunk {o.max_batched_tokens}: "
            f"p90 TTFT {o.ttft_p90_ms:,.0f} ms, p99 TBT {o.tbt_p99_ms:.1f} ms, {month}{kv}"
        )
    lines += [f"  note: {n}" for n in s.notes]
    return "\n".join(lines)


LOAD_CURVE = (
    ROOT / "src" / "silica" / "data" / "benchmarks" / "load" / "nim_llama33_70b_h100_tp2_concurrency.csv"
)


def validation_block() -> str:
    """Simulated against NVIDIA's published NIM latency-vs-concurrency table (Llama 3.3 70B fp8,
    2 x H100, tp 2, 5,000 in / 500 out): closed-loop clients, the first `c` requests (the start-up
    burst) left out, 10 x c requests per level; the replica is an H100 pair of a p5.48xlarge."""
    import csv

    import numpy as np

    from silica.models import load_model
    from silica.plan.targets import resolve_targets
    from silica.simulate import EngineSettings
    from silica.simulate.run import simulate_closed_loop
    from silica.simulate.steptime import step_table

    with LOAD_CURVE.open() as handle:
        rows = list(csv.DictReader(handle))
    target = resolve_targets(["p5.48xlarge"])[0]
    table = step_table(
        load_model("llama-3.3-70b"), target, tp=2, max_tokens=22000, weight_dtype="fp8", compute_dtype="fp8"
    )
    settings = EngineSettings(max_num_seqs=256, max_batched_tokens=8192)
    lines = [
        "clients  TTFT ms published  simulated  error | ITL ms published  simulated  error | out tok/s error"
    ]
    errors: dict[str, list[float]] = {"ttft": [], "itl": [], "tok": []}
    for row in rows:
        c = int(row["concurrency"])
        r = simulate_closed_loop(
            table, concurrency=c, requests=10 * c, input_len=5000, output_len=500, settings=settings
        )
        ttft = float(np.mean((np.asarray(r.records.first_token) - r.records.arrival)[c:]) * 1e3)
        pub_ttft, pub_itl, pub_tok = float(row["ttft_ms"]), float(row["itl_ms"]), float(row["output_tok_s"])
        e_ttft, e_itl = 100 * (ttft / pub_ttft - 1), 100 * (r.tbt.mean / pub_itl - 1)
        e_tok = 100 * (r.output_tok_s / pub_tok - 1)
        errors["ttft"].append(abs(e_ttft))
        errors["itl"].append(abs(e_itl))
        errors["tok"].append(abs(e_tok))
        lines.append(
            f"{c:<8} {pub_ttft:15,.0f} {ttft:10,.0f} {e_ttft:+6.0f}% | {pub_itl:14.1f} {r.tbt.mean:10.1f} {e_itl:+6.0f}% | "
            f"{e_tok:+8.0f}%"
        )
    lines.append(
        "median |error|: TTFT {:.0f}%, ITL {:.0f}%, output tokens/s {:.0f}%".format(
            *(float(np.median(errors[k])) for k in ("ttft", "itl", "tok"))
        )
    )
    return "\n".join(lines)


def loopback_block() -> str:
    """The loopback validation: the saved measurements of `scripts/simulate_validation.py`, fitted
    and replayed in the simulator again (so the table follows the simulator, not a new measurement)."""
    import json

    sys.path.insert(0, str(ROOT / "scripts"))
    import simulate_validation

    return str(simulate_validation.table_text(json.loads(simulate_validation.DATA.read_text())))


def loopback_vllm_block() -> str:
    """The loopback validation against vLLM's CPU build: the saved measurements of
    `scripts/simulate_validation_vllm.py`, fitted and replayed in the simulator again."""
    import json

    sys.path.insert(0, str(ROOT / "scripts"))
    import simulate_validation_vllm

    return str(simulate_validation_vllm.table_text(json.loads(simulate_validation_vllm.DATA.read_text())))


def loopback_vllm_text_block() -> str:
    """The same for the run recorded before tokens were timed by their chunks (TTFT to first text)."""
    import json

    sys.path.insert(0, str(ROOT / "scripts"))
    import simulate_validation_vllm

    return str(simulate_validation_vllm.table_text(json.loads(simulate_validation_vllm.TEXT_RUN.read_text())))


def loopback_vllm_repeats_block() -> str:
    """The measured percentiles of the token-timed vLLM runs side by side, and their spread."""
    import json

    sys.path.insert(0, str(ROOT / "scripts"))
    import simulate_validation_vllm as v

    runs = [*json.loads(v.REPEATS.read_text())["runs"], json.loads(v.DATA.read_text())]
    return str(v.repeat_text(runs))


def loopback_vllm_small_block() -> str:
    """The same for the token-timed runs of 120 requests per rate recorded before the default became 500."""
    import json

    sys.path.insert(0, str(ROOT / "scripts"))
    import simulate_validation_vllm as v

    return str(v.repeat_text(json.loads(v.SMALL_RUNS.read_text())["runs"]))


BLOCKS = {
    "simulate-rates": rates_block,
    "simulate-bursts": bursts_block,
    "simulate-slo": slo_block,
    "simulate-validation": validation_block,
    "simulate-loopback": loopback_block,
    "simulate-loopback-vllm": loopback_vllm_block,
    "simulate-loopback-vllm-text": loopback_vllm_text_block,
    "simulate-loopback-vllm-repeats": loopback_vllm_repeats_block,
    "simulate-loopback-vllm-120": loopback_vllm_small_block,
}


def pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}:begin -->\n```\n)(.*?)(\n```\n<!-- {name}:end -->)", re.S)


def _filler(text: str) -> Callable[[re.Match[str]], str]:
    return lambda m: m.group(1) + text + m.group(3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    doc = DOC.read_text()
    new = doc
    for name, make in BLOCKS.items():
        text = make()
        new, n = pattern(name).subn(_filler(text), new)
        if n != 1:
            print(f"docs/simulate.md has no {name} block", file=sys.stderr)
            return 1
    chart = ttft_chart()
    if args.check:
        return 0 if new == doc and CHART.exists() and CHART.read_text() == chart else 1
    DOC.write_text(new)
    CHART.write_text(chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
