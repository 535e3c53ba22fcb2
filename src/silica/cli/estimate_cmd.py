"""`silica estimate` and `silica compare`: the core questions, as thin wrappers over `silica.plan`.

Both commands take the same workload, price and calibration options: they are declared once, for
every front door, in `silica.options`; `PlanOptions` holds the ones the CLI offers to both commands,
and `plan_options` adds them to a command's signature and hands the command one typed value.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, get_type_hints

import typer

from silica.cli._common import console, handle_errors, print_json
from silica.cli._energy import checked, energy_rows
from silica.cli._output import comparison_listing, emit, output_option, resolve_format
from silica.options import option

if TYPE_CHECKING:
    from silica.catalog.schema import Dtype
    from silica.context import PlanContext
    from silica.plan.compare import Workload


class Task(StrEnum):
    inference = "inference"
    training = "training"


def _opt(name: str) -> Any:
    """A `PlanOptions` field from the one declaration of plan options (`silica.options`): its
    default, and its CLI form (flag and help) in the field's metadata."""
    o = option(name)
    return field(default=o.default, metadata={"flag": o.flag, "help": o.help})


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """What `estimate` and `compare` both ask: the workload, whose prices, which calibration.

    One field per option `silica.options` offers on the command line to both commands, by the
    option's library name (`--rate` fills `rate_req_per_s`, `--price` fills `prices`)."""

    task: Task = _opt("task")  # noqa: RUF009 - a dataclass field()
    input_len: int = _opt("input_len")
    output_len: int = _opt("output_len")
    batch: int | None = _opt("batch")
    ttft_slo_ms: float | None = _opt("ttft_slo_ms")
    tpot_slo_ms: float | None = _opt("tpot_slo_ms")
    rate_req_per_s: float | None = _opt("rate_req_per_s")
    tokens_per_month: float | None = _opt("tokens_per_month")
    compute_dtype: str = _opt("compute_dtype")
    weight_dtype: str | None = _opt("weight_dtype")
    seq_len: int | None = _opt("seq_len")
    tokens: float | None = _opt("tokens")
    global_batch: int | None = _opt("global_batch")
    micro_batch: int = _opt("micro_batch")
    virtual_stages: int = _opt("virtual_stages")
    deadline_days: float | None = _opt("deadline_days")
    prices: list[str] | None = _opt("prices")  # noqa: RUF009 - a dataclass field()
    prices_file: Path | None = _opt("prices_file")  # noqa: RUF009 - a dataclass field()
    option: str | None = _opt("option")
    region: str | None = _opt("region")
    engine: str | None = _opt("engine")
    calibration: Path | None = _opt("calibration")  # noqa: RUF009 - a dataclass field()
    systems: Path | None = _opt("systems")  # noqa: RUF009 - a dataclass field()
    as_json: bool = _opt("as_json")

    def workload(self) -> Workload:
        """The inference or training workload these options describe (checked by its constructor)."""
        from silica.workload import InferenceWorkload, TrainingWorkload

        dtype = cast("Dtype", self.compute_dtype)  # the workload checks the dtype names
        if self.task == Task.inference:
            return InferenceWorkload(
                input_len=self.input_len,
                output_len=self.output_len,
                batch=self.batch,
                ttft_slo_ms=self.ttft_slo_ms,
                tpot_slo_ms=self.tpot_slo_ms,
                rate_req_per_s=self.rate_req_per_s,
                tokens_per_month=self.tokens_per_month,
                weight_dtype=cast("Dtype", self.weight_dtype) or dtype,
                compute_dtype=dtype,
                seq_len=self.seq_len,
            )
        from silica.errors import InputError

        if self.seq_len is None:
            raise InputError("Training needs a sequence length.", "pass --seq-len, e.g. --seq-len 8192.")
        return TrainingWorkload(
            seq_len=self.seq_len,
            tokens=self.tokens,
            global_batch=self.global_batch,
            micro_batch=self.micro_batch,
            virtual_stages=self.virtual_stages,
            deadline_days=self.deadline_days,
            compute_dtype=dtype,
        )

    def context(self) -> PlanContext:
        """The plan context: these flags over the environment and config file (`silica.context`)."""
        from silica.context import plan_context

        return plan_context(
            region=self.region,
            option=self.option,
            prices=self.prices_file,
            price=self.prices,
            systems=self.systems,
            engine=self.engine,
            calibration=self.calibration,
        )


def _cli(name: str) -> Any:
    """The typer option of a declared plan option that only one command takes (`silica.options`)."""
    o = option(name)
    return typer.Option(... if o.required else o.default, o.flag, help=o.help)


def plan_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command(..., opts: PlanOptions)` every `PlanOptions` field as a CLI option.

    Typer reads a command's options from its signature: the wrapper's signature is the command's own
    parameters followed by one keyword parameter per field, and the wrapper gathers those back into
    one `PlanOptions` before calling the command.
    """
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "opts"]
    hints = get_type_hints(PlanOptions)
    shared = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(f.default, f.metadata["flag"], help=f.metadata["help"]),
            annotation=hints[f.name],
        )
        for f in fields(PlanOptions)
    ]
    names = [f.name for f in fields(PlanOptions)]

    @wraps(command)
    def wrapper(**kwargs: Any) -> None:
        opts = PlanOptions(**{name: kwargs.pop(name) for name in names})
        command(**kwargs, opts=opts)

    params = [*own, *shared]
    setattr(wrapper, "__signature__", inspect.Signature(params))  # noqa: B010 - read by typer
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def _fmt(value: float | int | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def register(app: typer.Typer) -> None:
    @app.command()
    @handle_errors
    @plan_options
    def estimate(
        model: str = typer.Argument(..., help=option("model").help),
        on: str = _cli("on"),
        tp: int | None = _cli("tp"),
        pp: int | None = _cli("pp"),
        ep: int | None = _cli("ep"),
        cp: int | None = _cli("cp"),
        pue: float | None = _cli("pue"),
        usd_per_mwh: float | None = _cli("usd_per_mwh"),
        ttft_p90_ms: float | None = _cli("ttft_p90_ms"),
        tbt_p99_ms: float | None = _cli("tbt_p99_ms"),
        *,
        opts: PlanOptions,
    ) -> None:
        """Estimate one deployment: TTFT, TPOT, throughput, memory and cost, or why it cannot run."""
        from silica.catalog import resolve_on
        from silica.plan import estimate as run
        from silica.workload import Deployment

        wl = opts.workload()
        context = opts.context()
        placement = resolve_on(context.catalog, on)
        result = run(
            model,
            wl,
            Deployment(instance=placement.instance, count=placement.count, tp=tp, pp=pp, ep=ep, cp=cp),
            catalog=placement.catalog,
            context=context,
            pue=checked("--pue", pue, low=1.0),
            usd_per_mwh=checked("--usd-per-mwh", usd_per_mwh, low=0.0),
        )
        if ttft_p90_ms is not None or tbt_p99_ms is not None:
            from silica.cli.simulate_cmd import estimate_by_slo

            where: dict[str, Any] = {"calibration": context.calibration, "option": context.option}
            where |= {"catalog": placement.catalog, "region": context.region, "engine": context.engine}
            estimate_by_slo(
                result,
                wl,
                rate=opts.rate_req_per_s,
                ttft_p90_ms=ttft_p90_ms,
                tbt_p99_ms=tbt_p99_ms,
                as_json=opts.as_json,
                **where,
            )
            return
        if opts.as_json:
            print_json(result)
            return
        _print_estimate(result)

    @app.command()
    @handle_errors
    @plan_options
    def compare(
        model: str = typer.Argument(..., help=option("model").help),
        instances: list[str] | None = _cli("instances"),
        announced: bool = _cli("include_announced"),
        output: str | None = output_option(),
        rank: str = _cli("rank"),
        pue: float | None = _cli("pue"),
        usd_per_mwh: float | None = _cli("usd_per_mwh"),
        ttft_p90_ms: float | None = _cli("ttft_p90_ms"),
        tbt_p99_ms: float | None = _cli("tbt_p99_ms"),
        *,
        opts: PlanOptions,
    ) -> None:
        """Rank every instance type for a model and workload by cost (or energy); infeasible ones keep their reason."""
        from silica.plan import compare as run

        wl = opts.workload()
        result = run(
            model,
            wl,
            instances=instances,
            include_announced=announced,
            context=(context := opts.context()),
            objective=rank.strip().lower(),  # type: ignore[arg-type]  # checked by compare
            pue=checked("--pue", pue, low=1.0),
            usd_per_mwh=checked("--usd-per-mwh", usd_per_mwh, low=0.0),
        )
        if ttft_p90_ms is not None or tbt_p99_ms is not None:
            from silica.cli.simulate_cmd import compare_by_slo

            where: dict[str, Any] = {"calibration": context.calibration, "option": context.option}
            where |= {"catalog": context.catalog, "region": context.region, "engine": context.engine}
            compare_by_slo(
                result,
                rate=opts.rate_req_per_s,
                ttft_p90_ms=ttft_p90_ms,
                tbt_p99_ms=tbt_p99_ms,
                output=output,
                as_json=opts.as_json,
                **where,
            )
            return
        emit(comparison_listing(result), resolve_format(output, opts.as_json), result)


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
        experts = f" ep={r.ep}" if r.ep is not None else ""
        experts += f" cp={r.cp}" if r.cp is not None and r.cp > 1 else ""
        table.add_row("layout", f"tp={r.tp} pp={r.pp}{experts} replicas/dp={r.dp} batch={r.batch}")
        if r.engine:
            table.add_row("engine", r.engine)
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
        if d.get("mfu") is not None:
            table.add_row("MFU", f"{d['mfu']:.1%}")
        energy_rows(table, r.energy)
        table.add_row("memory / unit GiB", ", ".join(f"{k} {v:.1f}" for k, v in r.memory_gib.items()))
        for phase in r.time:
            table.add_row("time", _phase_line(phase, r.batch))
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


# How the parts of a phase's time read in a sentence (`results.PhaseTime.parts_ms` keys).
_PART_LABELS = {
    "compute": "compute",
    "weights": "weights",
    "kv": "KV",
    "activations": "activations",
    "all_reduce": "all-reduce",
    "all_to_all": "all-to-all",
    "pipeline": "pipeline hand-offs",
    "bubble": "pipeline bubble",
    "gradient_sync": "gradient sync",
    "optimizer": "optimizer",
    "overhead": "overhead",
}


def _ms(value: float, unit: float) -> str:
    scaled = value / unit
    return f"{scaled:.0f}" if scaled >= 10 else f"{scaled:.1f}" if scaled >= 1 else f"{scaled:.2g}"


def _phase_line(p: Any, batch: int | None) -> str:
    """'decode step 26 ms: weights 14, KV 3, all-reduce 7, overhead 2' (seconds past 1,000 ms)."""
    unit, name = (1e3, "s") if p.ms >= 1e3 else (1.0, "ms")
    label = f"{p.phase} of {batch} prompts" if p.phase == "prefill" and batch and batch > 1 else p.phase
    parts = ", ".join(f"{_PART_LABELS.get(k, k)} {_ms(v, unit)}" for k, v in p.parts_ms.items())
    return f"{label} {_ms(p.ms, unit)} {name}: {parts}"


def _band(r: Any, key: str, spec: str) -> str:
    band = r.bands.get(key)
    return "-" if band is None else f"{format(band.low, spec)}-{format(band.high, spec)}"
