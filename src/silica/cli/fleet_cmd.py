"""`silica fleet simulate | plan | sweep`: thin wrappers over `silica.fleet`.

Only typer is imported at module level; numpy, the simulator, rich and Ray load inside the commands.
`--json` prints the library result (`to_dict()`); tables show the same numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from silica.cli._common import command_line, console, handle_errors, print_json, progress

if TYPE_CHECKING:
    from silica.fleet import FleetPlan, Simulation, SweepResult

__all__ = ["register"]

_FILE = typer.Argument(..., help="A fleet file (YAML); see examples/fleet.yaml.")
_JSON = typer.Option(False, "--json", help="Print the library result as JSON.")
_POLICY = typer.Option(
    [], "--policy", help="static, day_night or autoscale (repeatable; default: the file's)."
)


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


def _num(v: Any) -> str:
    from silica.report.svg import fmt

    return fmt(v, 4)


def _peak_note(fleet_file: Path, sim: Simulation) -> str:
    """Why the simulated peak differs from the file's, when burstiness moved it (66.43M for a 60M file)."""
    from silica.fleet import load_fleet_file

    demand = load_fleet_file(fleet_file).spec.inference.demand
    asked, peak = demand.peak_output_tokens_per_s, sim.fleet["demand"]["peak_output_tokens_per_s"]
    if asked is None or not demand.burstiness or abs(peak - asked) <= 1e-6 * asked:
        return ""
    change = 100 * (peak / asked - 1)
    return (
        f" (the file sets {_num(asked)}: minute-to-minute bursts resampled from {demand.burstiness} "
        f"put the busiest minute {abs(change):.1f}% {'above' if change > 0 else 'below'} it)"
    )


def _show_simulation(sim: Simulation, peak_note: str = "") -> None:
    from rich.table import Table

    from silica.report.fleet import METRIC_ROWS, cell, comparison_phrases

    f = sim.fleet
    out = console()
    out.print(
        f"[bold]{f['name']}[/]: {f['chips']:,} chips, {f['horizon_hours']:g} h in {f['steps']:,} steps; "
        f"demand {f['demand']['name']}, peak {_num(f['demand']['peak_output_tokens_per_s'])} output tokens/s"
        f"{peak_note}; "
        f"{f['training_jobs']} training jobs"
    )
    for warning in sim.warnings:
        out.print(f"[bold yellow]warning:[/] {warning}", highlight=False)
    table = Table(title="Policies on the same demand and jobs")
    table.add_column("metric")
    for r in sim.runs:
        table.add_column(r.policy.name, justify="right")
    for key, label, kind in METRIC_ROWS:
        table.add_row(label, *(cell(r.metrics.get(key), kind) for r in sim.runs))
    out.print(table)
    for name, d in sim.comparison.get("vs_baseline", {}).items():
        phrases = comparison_phrases(d, sim.comparison["common_jobs"])
        out.print(
            f"{name} against {sim.comparison['baseline']}: " + "; ".join(phrases) + ".", highlight=False
        )
    for pool in f["pools"]:
        for note in pool["notes"]:
            out.print(f"{pool['instance']}: {note}")
    unpriced = sorted({p for r in sim.runs for p in r.metrics["unpriced_pools"]})
    if unpriced:
        out.print(f"Cost unknown: no price for {', '.join(unpriced)}; set price_usd_per_hour on the pool.")


def _show_plan(plan: FleetPlan) -> None:
    from rich.table import Table

    out = console()
    b = plan.best
    out.print(
        f"[bold]Cheapest mix meeting {100 * plan.target:.2f}% SLO attainment and every deadline[/] "
        f"({plan.policy}, {plan.horizon_hours:g} h): [bold]{b.label}[/]: "
        + ", ".join(f"{p['count']:,} x {p['instance']} ({p['purchase']})" for p in b.pools)
        + f"; ${b.metrics['total_usd']:,.0f}, attainment {_pct(b.metrics['slo_attainment'])}, "
        f"USD per 1M output tokens {_num(b.metrics['usd_per_1m_output_tokens'])}"
    )
    table = Table(title="Runners-up and why each lost")
    for col in ("mix", "instances", "USD", "attainment", "deadlines missed", "why it lost"):
        table.add_column(col, justify="right" if col in ("instances", "USD", "attainment") else "left")
    for c in plan.runners_up:
        m = c.metrics
        table.add_row(
            c.label,
            f"{sum(p['count'] for p in c.pools):,}" if c.pools else "-",
            _num(m.get("total_usd")),
            _pct(m.get("slo_attainment")),
            str(m.get("jobs_deadline_missed", "-")),
            c.why_lost or "",
        )
    out.print(table)


def _show_sweep(res: SweepResult) -> None:
    from rich.table import Table

    table = Table(title=f"Sweep of {res.fleet_file} ({len(res.scenarios)} scenarios, {res.executor})")
    for col in (
        "scenario",
        "chips",
        "attainment",
        "busy util.",
        "lent chip-h",
        "deadlines missed",
        "USD",
        "USD/1M tok",
    ):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for s in res.scenarios:
        m = s["metrics"]
        table.add_row(
            s["name"],
            f"{s['chips']:,}",
            _pct(m["slo_attainment"]),
            _pct(m["utilisation_busy"]),
            _num(m["lent_chip_hours"]),
            str(m["jobs_deadline_missed"]),
            _num(m["total_usd"]),
            _num(m["usd_per_1m_output_tokens"]),
        )
    out = console()
    out.print(table)
    warned: dict[str, list[str]] = {}
    for s in res.scenarios:
        for warning in s.get("warnings", []):
            warned.setdefault(warning, []).append(s["name"])
    for warning, names in warned.items():
        out.print(f"[bold yellow]warning:[/] {', '.join(names)}: {warning}", highlight=False)
    if res.stored:
        out.print(f"Recorded {len(res.stored)} results in the store (kind fleet_sweep).")


def register(app: typer.Typer) -> None:
    fleet_app = typer.Typer(
        name="fleet",
        help="Simulate and plan fleets: inference by day, training by night.",
        no_args_is_help=True,
    )

    @fleet_app.command(
        "simulate",
        epilog="Examples:\n\n  silica fleet simulate examples/fleet.yaml\n\n"
        "  silica fleet simulate examples/rainier.yaml --policy static --policy day_night "
        "--html /tmp/rainier.html\n\n  silica fleet simulate examples/fleet.yaml --json --series",
    )
    @handle_errors
    def simulate_cmd(
        fleet_file: Path = _FILE,
        policy: list[str] = _POLICY,
        as_json: bool = _JSON,
        html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report here."),
        series: bool = typer.Option(False, "--series", help="Include time series in the JSON."),
    ) -> None:
        """Simulate the fleet step by step under each policy; compare them."""
        from silica.fleet import simulate_file
        from silica.report.fleet import write_fleet_report
        from silica.report.page import Meta

        with progress(f"simulating {fleet_file.name}", not as_json):
            sim = simulate_file(fleet_file, policy or None)
        if html is not None:
            bases = "; ".join(sorted({p["price_basis"] for p in sim.fleet["pools"]})) or "none"
            write_fleet_report(sim, html, Meta(command_line(), bases))
        if as_json:
            print_json(sim.to_dict(series=series))
            return
        _show_simulation(sim, _peak_note(fleet_file, sim))
        if html is not None:
            console().print(f"Report written to {html}.")

    @fleet_app.command(
        "plan",
        epilog="Examples:\n\n  silica fleet plan examples/rainier.yaml\n\n"
        "  silica fleet plan examples/fleet.yaml --instance trn2.48xlarge --instance p5.48xlarge --target 0.99\n\n"
        "  silica fleet plan examples/fleet.yaml --price trn2.48xlarge=30 --json",
    )
    @handle_errors
    def plan_cmd(
        fleet_file: Path = _FILE,
        instances: list[str] | None = typer.Option(
            None,
            "--instance",
            "--instances",
            help="Only these candidate instance types (repeatable, as in compare; commas also work).",
        ),
        target: float | None = typer.Option(None, "--target", help="SLO attainment to meet, e.g. 0.99."),
        policy: str | None = typer.Option(
            None, "--policy", help="Policy for the candidate fleets (default day_night)."
        ),
        price: list[str] = typer.Option(
            [], "--price", help="Your price: INSTANCE=USD_PER_HOUR (repeatable)."
        ),
        max_instances: int | None = typer.Option(
            None,
            "--max-instances",
            help="Largest pool size to try (default: the file's plan.max_instances, else 1,000,000).",
        ),
        as_json: bool = _JSON,
    ) -> None:
        """Choose the cheapest fleet mix meeting the SLO-attainment target and every training deadline."""
        from silica.catalog import load_catalog, parse_price_overrides
        from silica.errors import InputError
        from silica.fleet import load_fleet_file, plan_fleet

        if target is not None and not 0 < target <= 1:
            raise InputError(f"--target must be in (0, 1], got {target}.", "e.g. --target 0.99.")
        if max_instances is not None and max_instances < 1:
            raise InputError(
                f"--max-instances must be at least 1, got {max_instances}.", "e.g. --max-instances 1000."
            )
        overrides = parse_price_overrides(price) if price else None
        catalog = load_catalog(overrides=overrides)
        names = [n.strip() for v in instances or [] for n in v.split(",") if n.strip()] or None
        with progress(f"planning {fleet_file.name}", not as_json):
            plan = plan_fleet(
                load_fleet_file(fleet_file),
                instances=names,
                target=target,
                policy=policy,
                catalog=catalog,
                max_instances=max_instances,
            )
        if as_json:
            print_json(plan)
            return
        _show_plan(plan)

    @fleet_app.command(
        "sweep",
        epilog="Examples:\n\n  silica fleet sweep examples/fleet.yaml\n\n"
        "  silica fleet sweep examples/fleet.yaml --executor ray --workers 8 --no-store",
    )
    @handle_errors
    def sweep_cmd(
        fleet_file: Path = _FILE,
        policy: list[str] = _POLICY,
        executor: str = typer.Option(
            "local", "--executor", help="local (processes) or ray (RAY_ADDRESS or a local Ray)."
        ),
        workers: int | None = typer.Option(None, "--workers", help="Parallel workers (default: CPU count)."),
        no_store: bool = typer.Option(False, "--no-store", help="Do not record results in Silica's store."),
        as_json: bool = _JSON,
    ) -> None:
        """Run mixes x policies x demand scenarios from the file's sweep: section in parallel."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from silica.errors import InputError
        from silica.fleet import run_sweep

        if executor not in ("local", "ray"):
            raise InputError(f"Unknown executor {executor!r}.", "use --executor local or --executor ray.")
        progress = Progress(
            TextColumn("[bold]sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=console(),
            transient=as_json,
        )
        task_id = progress.add_task("", total=None)
        with progress:
            result = run_sweep(
                fleet_file,
                policies=policy or None,
                executor=executor,  # type: ignore[arg-type]
                workers=workers,
                store=not no_store,
                on_start=lambda n: progress.update(task_id, total=n),
                on_done=lambda r: progress.update(task_id, advance=1, description=r["name"]),
            )
        if as_json:
            print_json(result)
            return
        _show_sweep(result)

    app.add_typer(fleet_app, name="fleet")
