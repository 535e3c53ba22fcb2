"""`silica estimate` and `silica compare`: the core questions, as thin wrappers over `silica.plan`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from silica.cli._common import console, handle_errors, print_json
from silica.cli._output import comparison_listing, emit, output_option, resolve_format


class Task(StrEnum):
    inference = "inference"
    training = "training"


_INPUT = typer.Option(1024, "--input-len", help="Prompt tokens per request.")
_OUTPUT = typer.Option(256, "--output-len", help="Generated tokens per request.")
_BATCH = typer.Option(None, "--batch", help="Concurrent sequences (default: the best under SLOs and memory).")
_TTFT = typer.Option(None, "--ttft-slo-ms", help="Time-to-first-token limit, ms.")
_TPOT = typer.Option(None, "--tpot-slo-ms", help="Time-per-output-token limit, ms.")
_RATE = typer.Option(None, "--rate", help="Requests per second (sets the load).")
_TPM = typer.Option(None, "--tokens-per-month", help="Output tokens per month (sets the load).")
_DTYPE = typer.Option("bf16", "--dtype", help="Compute dtype: fp32, bf16, fp16, fp8, int8, fp4.")
_WDTYPE = typer.Option(None, "--weight-dtype", help="Weight dtype if narrower than compute (int8, fp8, fp4).")
_SEQ = typer.Option(
    None, "--seq-len", help="Inference: compiled max context (Neuron bucket). Training: sequence length."
)
_TOKENS = typer.Option(None, "--tokens", help="Training tokens (for time and cost to train).")
_GBATCH = typer.Option(None, "--global-batch", help="Training sequences per step (default ~4M tokens).")
_MBATCH = typer.Option(1, "--micro-batch", help="Training micro-batch per data-parallel rank.")
_DEADLINE = typer.Option(None, "--deadline-days", help="Training must finish within this many days.")
_PRICE = typer.Option(None, "--price", help="Your price: INSTANCE=USD_PER_HOUR (repeatable).")
_PRICES = typer.Option(
    None, "--prices", help="Prices file (CSV in the catalog schema, or YAML {instance: usd})."
)
_OPTION = typer.Option(
    None, "--option", help="Purchase option: on_demand, reserved_1yr, spot, capacity_block."
)
_REGION = typer.Option(None, "--region", help="Price region (default: where the catalog has one).")
_CAL = typer.Option(
    None, "--calibration", help="Calibration file from `silica calibrate` (default: bundled)."
)
_JSON = typer.Option(False, "--json", help="Print the library result as JSON.")
_SYSTEMS = typer.Option(
    None,
    "--systems",
    help="YAML file of your own systems (chip, chips per domain, link and network bandwidth, price).",
)


def _workload(kw: dict[str, Any]) -> Any:
    task = kw["task"]
    from silica.workload import InferenceWorkload, TrainingWorkload

    if task is Task.inference:
        return InferenceWorkload(
            input_len=kw["input_len"],
            output_len=kw["output_len"],
            batch=kw["batch"],
            ttft_slo_ms=kw["ttft_slo_ms"],
            tpot_slo_ms=kw["tpot_slo_ms"],
            rate_req_per_s=kw["rate"],
            tokens_per_month=kw["tokens_per_month"],
            weight_dtype=kw["weight_dtype"] or kw["dtype"],
            compute_dtype=kw["dtype"],
            seq_len=kw["seq_len"],
        )
    from silica.errors import InputError

    if kw["seq_len"] is None:
        raise InputError("Training needs a sequence length.", "pass --seq-len, e.g. --seq-len 8192.")
    return TrainingWorkload(
        seq_len=kw["seq_len"],
        tokens=kw["tokens"],
        global_batch=kw["global_batch"],
        micro_batch=kw["micro_batch"],
        deadline_days=kw["deadline_days"],
        compute_dtype=kw["dtype"],
    )


def _catalog(price: list[str] | None, prices: Path | None, systems: Path | None = None) -> Any:
    from silica.catalog import load_catalog, parse_price_overrides

    overrides = parse_price_overrides(price or [], load_catalog(systems_path=systems)) if price else None
    return load_catalog(prices_path=prices, overrides=overrides, systems_path=systems)


def _calibration(path: Path | None) -> Any:
    from silica.perf.calibration import load_calibration

    return load_calibration(path)


def _fmt(value: float | int | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def register(app: typer.Typer) -> None:
    @app.command()
    @handle_errors
    def estimate(
        model: str = typer.Argument(..., help="Registry model id or path to a config.json."),
        on: str = typer.Option(
            ...,
            "--on",
            help="INSTANCE[xCOUNT] (trn1.32xlarge, p5.48xlargex4), CHIPxCOUNT (gb300x72, h100x1024) "
            "or a system from --systems.",
        ),
        task: Task = typer.Option(Task.inference, "--task"),
        input_len: int = _INPUT,
        output_len: int = _OUTPUT,
        batch: int | None = _BATCH,
        ttft_slo_ms: float | None = _TTFT,
        tpot_slo_ms: float | None = _TPOT,
        rate: float | None = _RATE,
        tokens_per_month: float | None = _TPM,
        dtype: str = _DTYPE,
        weight_dtype: str | None = _WDTYPE,
        seq_len: int | None = _SEQ,
        tokens: float | None = _TOKENS,
        global_batch: int | None = _GBATCH,
        micro_batch: int = _MBATCH,
        deadline_days: float | None = _DEADLINE,
        tp: int | None = typer.Option(None, "--tp", help="Tensor parallelism (GPUs or NeuronCores)."),
        pp: int | None = typer.Option(None, "--pp", help="Pipeline stages (default: chosen)."),
        price: list[str] | None = _PRICE,
        prices: Path | None = _PRICES,
        option: str | None = _OPTION,
        region: str | None = _REGION,
        calibration: Path | None = _CAL,
        systems: Path | None = _SYSTEMS,
        as_json: bool = _JSON,
    ) -> None:
        """Estimate one deployment: TTFT, TPOT, throughput, memory and cost, or why it cannot run."""
        from silica.plan import estimate as run
        from silica.workload import Deployment

        wl = _workload(locals())
        from silica.catalog import resolve_on

        placement = resolve_on(_catalog(price, prices, systems), on)
        result = run(
            model,
            wl,
            Deployment(instance=placement.instance, count=placement.count, tp=tp, pp=pp),
            catalog=placement.catalog,
            calibration=_calibration(calibration),
            option=option,  # type: ignore[arg-type]
            region=region,
        )
        if as_json:
            print_json(result)
            return
        _print_estimate(result)

    @app.command()
    @handle_errors
    def compare(
        model: str = typer.Argument(..., help="Registry model id or path to a config.json."),
        task: Task = typer.Option(Task.inference, "--task"),
        input_len: int = _INPUT,
        output_len: int = _OUTPUT,
        batch: int | None = _BATCH,
        ttft_slo_ms: float | None = _TTFT,
        tpot_slo_ms: float | None = _TPOT,
        rate: float | None = _RATE,
        tokens_per_month: float | None = _TPM,
        dtype: str = _DTYPE,
        weight_dtype: str | None = _WDTYPE,
        seq_len: int | None = _SEQ,
        tokens: float | None = _TOKENS,
        global_batch: int | None = _GBATCH,
        micro_batch: int = _MBATCH,
        deadline_days: float | None = _DEADLINE,
        instances: list[str] | None = typer.Option(
            None, "--instance", help="Only these instance types (repeatable)."
        ),
        announced: bool = typer.Option(
            False, "--include-announced", help="Also rank announced, unreleased chips."
        ),
        price: list[str] | None = _PRICE,
        prices: Path | None = _PRICES,
        option: str | None = _OPTION,
        region: str | None = _REGION,
        calibration: Path | None = _CAL,
        systems: Path | None = _SYSTEMS,
        as_json: bool = _JSON,
        output: str | None = output_option(),
    ) -> None:
        """Rank every instance type for a model and workload by cost; infeasible ones keep their reason."""
        from silica.plan import compare as run

        wl = _workload(locals())
        result = run(
            model,
            wl,
            instances=instances,
            catalog=_catalog(price, prices, systems),
            calibration=_calibration(calibration),
            option=option,  # type: ignore[arg-type]
            region=region,
            include_announced=announced,
        )
        emit(comparison_listing(result), resolve_format(output, as_json), result)


def _print_estimate(r: Any) -> None:
    from rich.table import Table

    out = console()
    title = f"{r.model} on {r.count} x {r.instance} ({r.chip}), {r.task}"
    table = Table(title=title, show_header=False)
    if not r.feasible:
        table.add_row("feasible", "[red]no[/red]")
        for reason in r.reasons:
            table.add_row("why", reason)
    else:
        d = r.to_dict()
        table.add_row("layout", f"tp={r.tp} pp={r.pp} replicas/dp={r.dp} batch={r.batch}")
        for key, label, spec in (
            ("ttft_ms", "TTFT ms", ".1f"),
            ("tpot_ms", "TPOT ms", ".2f"),
            ("output_tokens_per_s", "output tokens/s", ",.0f"),
            ("tokens_per_s_per_chip", "train tokens/s/chip", ",.0f"),
            ("train_days", "days to train", ".1f"),
            ("usd_per_1m_output_tokens", "USD / 1M output tokens", ".3f"),
            ("usd_per_run", "USD per run", ",.0f"),
        ):
            if d.get(key) is not None:
                band = ""
                if d.get(f"{key}_low") is not None:
                    band = f"  (p10-p90 {format(d[key + '_low'], spec)} - {format(d[key + '_high'], spec)})"
                table.add_row(label, format(d[key], spec) + band)
        if r.mfu is not None:
            table.add_row("MFU", f"{r.mfu:.1%}")
        table.add_row("memory / unit GiB", ", ".join(f"{k} {v:.1f}" for k, v in r.memory_gib.items()))
        table.add_row(
            f"USD / hour ({r.count} x {r.instance})",
            _fmt(r.usd_per_hour, ",.2f") if r.usd_per_hour else "unknown (no public price)",
        )
        if r.usd_per_month is not None:
            n = getattr(r, "instances_for_load", None) or r.count
            table.add_row(f"USD / month ({n} x {r.instance} for the load)", f"{r.usd_per_month:,.0f}")
    for note in r.assumptions:
        table.add_row("assumes", note)
    out.print(table)


def _band(r: Any, key: str, spec: str) -> str:
    band = r.bands.get(key)
    return "-" if band is None else f"{format(band.low, spec)}-{format(band.high, spec)}"
