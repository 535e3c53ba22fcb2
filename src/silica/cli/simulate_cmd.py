"""`silica simulate`: request-level serving simulation of one deployment (a thin wrapper over
`silica.simulate`). Only typer is imported at module level."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from silica.cli._common import console, handle_errors, print_json

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command(
        epilog="Examples:\n\n"
        "  silica simulate llama-3.1-8b --on g6e.xlarge --rate 8 --input-len 1024 --output-len 256 --requests 2000\n\n"
        "  silica simulate llama-3.1-8b --on inf2.8xlarge --arrival gamma --cv 3 --rate 2 --json\n\n"
        "  silica simulate llama-3.1-8b --on g6e.xlarge --trace requests.csv --replicas 2 --out per_request.csv"
    )
    @handle_errors
    def simulate(
        model: str = typer.Argument(..., help="Registry model id or path to a config.json."),
        on: str = typer.Option(..., "--on", help="Instance type (one replica layout chosen by the planner)."),
        rate: float = typer.Option(
            4.0, "--rate", help="Requests per second (ignored with --trace unless --scale)."
        ),
        requests: int = typer.Option(
            2000, "--requests", help="Requests to simulate (or the first N of --trace)."
        ),
        input_len: int = typer.Option(1024, "--input-len", help="Prompt tokens per request (mean)."),
        output_len: int = typer.Option(256, "--output-len", help="Generated tokens per request (mean)."),
        lengths: str = typer.Option("fixed", "--lengths", help="fixed, uniform (mean +-50%) or exponential."),
        arrival: str = typer.Option("poisson", "--arrival", help="poisson, gamma (see --cv) or constant."),
        cv: float = typer.Option(1.0, "--cv", help="Coefficient of variation of gamma inter-arrival gaps."),
        trace: Path | None = typer.Option(
            None,
            "--trace",
            help="Replay a CSV (timestamp,input_tokens,output_tokens), Azure CSV or Mooncake JSONL.",
        ),
        replicas: int = typer.Option(1, "--replicas", help="Replicas behind the load balancer."),
        balancer: str = typer.Option("round-robin", "--balancer", help="round-robin or least-outstanding."),
        max_num_seqs: int = typer.Option(256, "--max-num-seqs", help="Max running sequences per replica."),
        max_batched_tokens: int = typer.Option(
            2048, "--max-batched-tokens", help="Token budget per engine step (chunked prefill)."
        ),
        tp: int | None = typer.Option(None, "--tp", help="Tensor parallelism (default: the planner's)."),
        ttft_slo_ms: float | None = typer.Option(None, "--ttft-slo-ms", help="TTFT SLO for goodput, ms."),
        tbt_slo_ms: float | None = typer.Option(
            None, "--tbt-slo-ms", help="Per-request time-per-token SLO, ms."
        ),
        prefix_hit: float = typer.Option(
            0.0, "--prefix-hit", help="Share of prompt tokens found in the prefix cache (not recomputed)."
        ),
        preemption: str = typer.Option(
            "recompute", "--preemption", help="recompute (vLLM's default) or swap (needs --swap-gbps)."
        ),
        swap_gbps: float = typer.Option(
            0.0, "--swap-gbps", help="Accelerator-host link for swap preemption, GB/s (e.g. PCIe)."
        ),
        step_cv: float = typer.Option(
            0.0, "--step-cv", help="Host noise: coefficient of variation of step times (0: none)."
        ),
        seed: int = typer.Option(0, "--seed", help="Random seed (same seed, same result)."),
        as_json: bool = typer.Option(False, "--json", help="Print the library result as JSON."),
        out: Path | None = typer.Option(None, "--out", help="Write one CSV row per request here."),
        html: Path | None = typer.Option(
            None, "--html", help="Write a self-contained HTML report with latency-vs-rate charts here."
        ),
    ) -> None:
        """Simulate requests arriving at a deployment: p50/p90/p99 TTFT, time between tokens, queueing."""
        from silica._files import check_outputs
        from silica.simulate import EngineSettings, from_trace, simulate, synthetic
        from silica.simulate.deploy import plan_replica
        from silica.workload import InferenceWorkload

        check_outputs([("--out", out), ("--html", html)], inputs=[trace])
        if trace is not None:
            reqs = from_trace(trace, limit=requests)
            wl = InferenceWorkload(
                input_len=max(int(reqs.prompt.mean()), 1), output_len=max(int(reqs.output.mean()), 1)
            )
        else:
            reqs = synthetic(
                rate=rate,
                n=requests,
                input_len=input_len,
                output_len=output_len,
                arrival=arrival,
                cv=cv,
                lengths=lengths,
                seed=seed,
            )
            wl = InferenceWorkload(input_len=input_len, output_len=output_len)
        settings = EngineSettings(
            max_num_seqs=max_num_seqs,
            max_batched_tokens=max_batched_tokens,
            step_cv=step_cv,
            seed=seed,
            prefix_hit=prefix_hit,
            preemption=preemption,
            swap_bytes_per_s=swap_gbps * 1e9,
        )
        from silica.simulate.run import check

        check(replicas, settings, balancer)
        planned = plan_replica(
            model, on, wl, tp=tp, max_num_seqs=max_num_seqs, max_batched_tokens=max_batched_tokens
        )
        result = simulate(
            reqs,
            planned.table,
            replicas=replicas,
            settings=settings,
            balancer=balancer,
            ttft_slo_ms=ttft_slo_ms,
            tbt_slo_ms=tbt_slo_ms,
        )
        if out is not None:
            _write_rows(out, result)
        curve = None
        if as_json or html is not None:
            from silica.simulate.curve import band_factors, latency_curve

            curve = latency_curve(
                reqs,
                planned.table,
                band=band_factors(planned.estimate),
                replicas=replicas,
                settings=settings,
                balancer=balancer,
                ttft_slo_ms=ttft_slo_ms,
                tbt_slo_ms=tbt_slo_ms,
            )
        if html is not None and curve is not None:
            from silica._files import write_text
            from silica.cli._common import command_line
            from silica.report.page import Meta
            from silica.report.simulate import simulate_html

            write_text(html, simulate_html(result, curve, Meta(command_line(), "none used (latency only)")))
        if as_json and curve is not None:
            body = result.to_dict()
            shape = curve.to_dict()
            body["latency_vs_rate"] = shape["points"]
            body["latency_vs_rate_band"] = shape["band_step_factors"]
            print_json(body)
            return
        _print(result)
        if html is not None:
            console().print(f"wrote {html}")


def _write_rows(out: Path, result: Any) -> None:
    import csv

    from silica._files import atomic_open
    from silica.simulate.run import per_request_rows

    rows = per_request_rows(result.records)
    with atomic_open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _print(r: Any) -> None:
    from rich.table import Table

    table = Table(title=f"{r.deployment} x {r.replicas}: {r.source}")
    for col in ("ms", "p50", "p90", "p99", "mean"):
        table.add_column(col, justify="right" if col != "ms" else "left")
    for name, p in (
        ("TTFT", r.ttft),
        ("time between tokens", r.tbt),
        ("end to end", r.e2e),
        ("queue", r.queue),
    ):
        table.add_row(name, *(f"{v:,.1f}" for v in (p.p50, p.p90, p.p99, p.mean)))
    out = console()
    out.print(table)
    out.print(
        f"{r.completed:,}/{r.requests:,} requests in {r.span_s:,.1f} s: {r.throughput_req_s:.2f} req/s, "
        f"{r.output_tok_s:,.0f} output tok/s; busy {100 * r.utilisation:.0f}%; KV cache {r.kv_tokens:,} tokens, "
        f"mean {100 * r.kv_mean:.0f}% peak {100 * r.kv_peak:.0f}%; {r.preemptions} preemptions"
    )
    if r.goodput_req_s is not None:
        out.print(f"goodput (met every SLO): {r.goodput_req_s:.2f} req/s")


def compare_by_slo(
    comparison: Any,
    *,
    rate: float | None,
    ttft_p90_ms: float | None,
    tbt_p99_ms: float | None,
    output: str | None,
    as_json: bool,
    **where: Any,
) -> None:
    """`compare ... --ttft-p90-ms X --tbt-p99-ms Y`: size each instance type by simulation and print
    that ranking after (JSON: beside) the average-based one. `where`: catalog, calibration, option,
    region, engine, as the comparison used them."""
    from silica.cli._output import comparison_listing, emit, resolve_format
    from silica.errors import InputError
    from silica.simulate.sizing import size_to_slo

    if rate is None or ttft_p90_ms is None or tbt_p99_ms is None:
        raise InputError(
            "Tail-latency sizing needs a request rate and both targets.",
            "pass --rate with --ttft-p90-ms and --tbt-p99-ms.",
        )
    sized = size_to_slo(comparison, rate=rate, ttft_p90_ms=ttft_p90_ms, tbt_p99_ms=tbt_p99_ms, **where)
    fmt = resolve_format(output, as_json)
    if fmt == "json":
        print_json({"comparison": comparison.to_dict(), "slo_sizing": sized.to_dict()})
        return
    emit(comparison_listing(comparison), fmt)
    emit(sizing_listing(sized), fmt)


def estimate_by_slo(
    estimate: Any,
    workload: Any,
    *,
    rate: float | None,
    ttft_p90_ms: float | None,
    tbt_p99_ms: float | None,
    as_json: bool,
    **where: Any,
) -> None:
    """`estimate ... --ttft-p90-ms X --tbt-p99-ms Y --rate R`: the estimate, then whether this
    deployment meets the tail targets in simulation and how many instances it needs."""
    from silica.cli._output import emit, resolve_format
    from silica.cli.estimate_cmd import _print_estimate
    from silica.errors import InputError
    from silica.results import InferenceEstimate
    from silica.simulate.sizing import size_estimate

    if rate is None or ttft_p90_ms is None or tbt_p99_ms is None:
        raise InputError(
            "Tail-latency sizing needs a request rate and both targets.",
            "pass --rate with --ttft-p90-ms and --tbt-p99-ms.",
        )
    if not isinstance(estimate, InferenceEstimate):
        raise InputError(
            "Tail-latency sizing is for serving.", "drop --ttft-p90-ms/--tbt-p99-ms for training."
        )
    sized = size_estimate(
        estimate, workload, rate=rate, ttft_p90_ms=ttft_p90_ms, tbt_p99_ms=tbt_p99_ms, **where
    )
    if as_json:
        print_json({"estimate": estimate.to_dict(), "slo_sizing": sized.to_dict()})
        return
    _print_estimate(estimate)
    emit(sizing_listing(sized), resolve_format(None, False))


def sizing_listing(s: Any) -> Any:
    """The SLO-sized deployments as a listing, cheapest meeting the targets first."""
    from silica.cli._output import Column, Listing

    def num(spec: str) -> Any:
        return lambda v: "-" if v is None else format(v, spec)

    columns = [
        Column("instance", keep=True),
        Column("mode"),
        Column("layout", drop=2),
        Column("meets"),
        Column("instances", num("d"), right=True),
        Column("P+D"),
        Column("chunk", num("d"), right=True, drop=3),
        Column("avg plan", num("d"), right=True, drop=1),
        Column("p90 TTFT ms", num(",.0f"), right=True),
        Column("p99 TBT ms", num(",.1f"), right=True),
        Column("KV xfer ms", num(",.1f"), right=True, drop=1),
        Column("$/month", num(",.0f"), right=True, keep=True),
    ]
    rows = [
        [
            o.instance,
            o.mode,
            o.layout,
            "yes" if o.meets else f"no: {o.reason}",
            o.instances,
            f"{o.prefill_instances}P+{o.decode_instances}D" if o.prefill_instances else "",
            o.max_batched_tokens,
            o.average_instances,
            o.ttft_p90_ms,
            o.tbt_p99_ms,
            o.kv_transfer.mean_ms if o.kv_transfer else None,
            o.usd_per_month,
        ]
        for o in s.options
    ]
    notes = [
        f"Sized by simulation: {s.traffic}; p90 TTFT <= {s.ttft_p90_ms:g} ms and p99 time between tokens "
        f"<= {s.tbt_p99_ms:g} ms; {s.simulations} simulations in {s.seconds:.1f} s.",
        *s.notes,
    ]
    return Listing(f"{s.model} at {s.rate:g} req/s sized to tail targets", columns, rows, notes)
