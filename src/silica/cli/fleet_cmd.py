"""`silica fleet simulate | plan | sweep`: thin wrappers over `silica.fleet`.

Only typer is imported at module level; numpy, the simulator, rich and Ray load inside the commands.
`--json` prints the library result (`to_dict()`); tables show the same numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from silica.cli._common import console, handle_errors, print_json

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
    from silica.fleet._svg import fmt

    return fmt(v, 4)


def _show_simulation(sim: Simulation) -> None:
    from rich.table import Table

    from silica.fleet.report import METRIC_ROWS

    f = sim.fleet
    out = console()
    out.print(
        f"[bold]{f['name']}[/]: {f['chips']:,} chips, {f['horizon_hours']:g} h in {f['steps']:,} steps; "
        f"demand {f['demand']['name']} (peak {_num(f['demand']['peak_output_tokens_per_s'])} output tokens/s); "
        f"{f['training_jobs']} training jobs"
    )
    for warning in sim.warnings:
        out.print(f"[bold yellow]warning:[/] {warning}", highlight=False)
    table = Table(title="Policies on the same demand and jobs")
    table.add_column("metric")
    for r in sim.runs:
        table.add_column(r.policy.name, justify="right")
    for key, label, kind in METRIC_ROWS:
        cells = []
        for r in sim.runs:
            v = r.metrics.get(key)
            cells.append(
                _pct(v) if kind == "pct" else "-" if v is None else f"{v:,}" if kind == "int" else _num(v)
            )
        table.add_row(label, *cells)
    out.print(table)
    for name, d in sim.comparison.get("vs_baseline", {}).items():
        out.print(
            f"{name} vs {sim.comparison['baseline']}: lends {_num(d['lent_chip_hours'])} more chip-hours, "
            f"busy utilisation x{_num(d['utilisation_busy_ratio'])}, training chip-hours "
            f"x{_num(d['training_chip_hours_ratio'])}, SLO attainment {d['slo_attainment_points']:+.2f} points, "
            f"{d['deadlines_missed_delta']:+d} deadlines missed."
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

    @fleet_app.command("simulate")
    @handle_errors
    def simulate_cmd(
        fleet_file: Path = _FILE,
        policy: list[str] = _POLICY,
        as_json: bool = _JSON,
        html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report here."),
        series: bool = typer.Option(False, "--series", help="Include time series in the JSON."),
    ) -> None:
        """Simulate the fleet step by step under each policy; compare them."""
        from silica._files import check_output
        from silica.fleet import simulate_file, write_report

        if html is not None:  # before the simulation: never over the fleet file
            check_output(html, inputs=(fleet_file,), option="--html")
        sim = simulate_file(fleet_file, policy or None)
        if html is not None:
            write_report(sim, html)
        if as_json:
            print_json(sim.to_dict(series=series))
            return
        _show_simulation(sim)
        if html is not None:
            console().print(f"Report written to {html}.")

    @fleet_app.command("plan")
    @handle_errors
    def plan_cmd(
        fleet_file: Path = _FILE,
        instances: str | None = typer.Option(
            None, "--instances", help="Candidate instance types, comma-separated."
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
        names = [n.strip() for n in instances.split(",") if n.strip()] if instances is not None else None
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

    @fleet_app.command("sweep")
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
