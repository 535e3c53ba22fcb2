"""`silica fleet simulate | plan | sweep`: thin wrappers over `silica.fleet`.

Only typer is imported at module level; numpy, the simulator, rich and Ray load inside the commands.
`--json` prints the library result (`to_dict()`); tables show the same numbers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from silica.cli._common import command_line, console, handle_errors, print_json, progress
from silica.cli._energy import pue_option
from silica.cli._output import Column, Listing, emit, output_option, resolve_format

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


def _simulation_listing(sim: Simulation, peak_note: str = "", *, raw: bool = False) -> Listing:
    """One row per metric, one column per policy (raw values for TSV/CSV); the fleet, the warnings and
    the comparison in words go in the notes."""
    from silica.report.fleet import METRIC_ROWS, cell, comparison_phrases

    f = sim.fleet
    notes = [
        f"{f['name']}: {f['chips']:,} chips, {f['horizon_hours']:g} h in {f['steps']:,} steps; "
        f"demand {f['demand']['name']}, peak {_num(f['demand']['peak_output_tokens_per_s'])} output tokens/s"
        f"{peak_note}; {f['training_jobs']} training jobs"
    ]
    if sim.latency_model == "request":
        n = sum((r.request_level or {}).get("simulated_requests", 0) for r in sim.runs)
        fluid = ", ".join(f"{r.policy.name} {_pct(r.metrics.get('fluid_slo_attainment'))}" for r in sim.runs)
        notes.append(
            f"SLO attainment from the request-level simulator ({n:,} simulated requests, one engine per "
            f"pool); the fluid model gives {fluid}"
        )
    else:
        notes.append("SLO attainment from the fluid model (capacity against demand per step)")
    notes += [f"warning: {w}" for w in sim.warnings]
    for name, d in sim.comparison.get("vs_baseline", {}).items():
        phrases = comparison_phrases(d, sim.comparison["common_jobs"])
        notes.append(f"{name} against {sim.comparison['baseline']}: " + "; ".join(phrases) + ".")
    notes += [f"{pool['instance']}: {note}" for pool in f["pools"] for note in pool["notes"]]
    unpriced = sorted({p for r in sim.runs for p in r.metrics["unpriced_pools"]})
    if unpriced:
        notes.append(f"Cost unknown: no price for {', '.join(unpriced)}; set price_usd_per_hour on the pool.")
    kinds: dict[Any, str] = {label: kind for _, label, kind in METRIC_ROWS}
    columns = [Column("metric", keep=True)] + [Column(r.policy.name, right=True, keep=True) for r in sim.runs]
    rows = [[label, *(r.metrics.get(key) for r in sim.runs)] for key, label, _ in METRIC_ROWS]
    if not raw:  # the terminal shows each metric in its own unit; TSV/CSV keep the raw numbers
        rows = [[label, *(cell(v, kinds[label]) for v in vals)] for label, *vals in rows]
    return Listing("Policies on the same demand and jobs", columns, rows, notes)


def _plan_listing(plan: FleetPlan) -> Listing:
    """The best mix first, then every runner-up with why it lost (raw numbers for TSV/CSV)."""
    rows = []
    for c in (plan.best, *plan.runners_up):
        m = c.metrics
        rows.append(
            [
                c.label,
                sum(p["count"] for p in c.pools) if c.pools else None,
                m.get("total_usd"),
                m.get("slo_attainment"),
                m.get("jobs_deadline_missed"),
                "best" if c is plan.best else c.why_lost or "",
            ]
        )
    b = plan.best
    return Listing(
        f"Cheapest mix meeting {100 * plan.target:.2f}% SLO attainment and every deadline "
        f"({plan.policy}, {plan.horizon_hours:g} h): "
        + ", ".join(f"{p['count']:,} x {p['instance']} ({p['purchase']})" for p in b.pools),
        (
            Column("mix", keep=True),
            Column("instances", lambda v: f"{v:,}", right=True, drop=2),
            Column("USD", lambda v: f"${v:,.0f}", right=True, keep=True),
            Column("attainment", _pct, right=True, drop=3),
            Column("deadlines missed", str, right=True, drop=4),
            Column("why it lost", drop=1),
        ),
        rows,
    )


def _sweep_listing(res: SweepResult) -> Listing:
    rows = [
        [
            s["name"],
            s["chips"],
            s["metrics"]["slo_attainment"],
            s["metrics"]["utilisation_busy"],
            s["metrics"]["lent_chip_hours"],
            s["metrics"]["jobs_deadline_missed"],
            s["metrics"]["total_usd"],
            s["metrics"]["usd_per_1m_output_tokens"],
        ]
        for s in res.scenarios
    ]
    notes = []
    warned: dict[str, list[str]] = {}
    for s in res.scenarios:
        for warning in s.get("warnings", []):
            warned.setdefault(warning, []).append(s["name"])
    notes += [f"warning: {', '.join(names)}: {warning}" for warning, names in warned.items()]
    if res.stored:
        notes.append(f"Recorded {len(res.stored)} results in the store (kind fleet_sweep).")
    return Listing(
        f"Sweep of {res.fleet_file} ({len(res.scenarios)} scenarios, {res.executor})",
        (
            Column("scenario", keep=True),
            Column("chips", lambda v: f"{v:,}", right=True, drop=3),
            Column("attainment", _pct, right=True, keep=True),
            Column("busy util.", _pct, right=True, drop=2),
            Column("lent chip-h", _num, right=True, drop=4),
            Column("deadlines missed", str, right=True, drop=1),
            Column("USD", _num, right=True, keep=True),
            Column("USD/1M tok", _num, right=True, drop=5),
        ),
        rows,
        notes,
    )


_SITE_MW = typer.Option(
    None, "--site-mw", help="Site power budget in MW (facility power, PUE included): refuse a fleet over it."
)
_PUE = pue_option()


def _site_check(fleet_file: Path, site_mw: float | None, pue: float | None) -> Any:
    """Check the budget against the file's own pools before any simulation (one line if over), and
    return how to compute the simulation's power picture."""
    from silica.catalog import load_catalog
    from silica.fleet import load_fleet_file
    from silica.fleet.power import check_site_mw, refuse_over_budget, simulation_power

    budget, site_pue = check_site_mw(site_mw, pue)
    catalog = load_catalog()
    ff = load_fleet_file(fleet_file)
    if budget is not None:
        refuse_over_budget(catalog, [(p.instance, p.count) for p in ff.spec.pools], budget, site_pue)
    return lambda sim: simulation_power(catalog, sim, pue=site_pue, site_mw=budget)


def _power_listing(p: Any, policy: str) -> Listing:
    """MW drawn by hour (facility), one row per hour; the peak and the budget in the title."""
    budget = "" if p.site_mw is None else f" of a {p.site_mw:g} MW site"
    notes = [
        f"peak {p.peak_mw:,.1f} MW (band top {p.peak_mw_high:,.1f}){budget}; mean {p.mean_mw:,.1f} MW; "
        f"{p.energy_mwh:,.0f} MWh over the horizon; facility power at PUE {p.pue:g}"
    ]
    notes += [
        f"{d['instance']}: {d['chips']:,} chips, {d['chips_per_mw_at_peak']:,.0f} chips per facility MW at peak, "
        f"{d['peak_kw_per_instance']:,.1f} kW per instance at peak"
        for d in p.pools
    ]
    notes += [f"assumes: {a}" for a in p.assumptions]
    return Listing(
        f"MW by hour ({policy})",
        (
            Column("hour", lambda v: f"{v:g}", right=True, keep=True),
            Column("MW", _num, right=True, keep=True),
            Column("serving MW", _num, right=True, drop=1),
            Column("training MW", _num, right=True, drop=1),
        ),
        [
            list(row)
            for row in zip(p.hours, p.mw_by_hour, p.serving_mw_by_hour, p.training_mw_by_hour, strict=True)
        ],
        notes,
    )


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
        output: str | None = output_option(),
        site_mw: float | None = _SITE_MW,
        pue: float | None = _PUE,
        latency_model: str = typer.Option(
            "fluid",
            "--latency-model",
            help="fluid: SLO attainment from capacity against demand per step; request: from the "
            "request-level simulator (one engine per pool over the horizon; slower, sees tails and queues).",
        ),
    ) -> None:
        """Simulate the fleet step by step under each policy; compare them."""
        from silica._files import check_output
        from silica.context import plan_context
        from silica.fleet import simulate_file
        from silica.report.fleet import write_fleet_report
        from silica.report.page import Meta

        if html is not None:  # before the simulation: never over the fleet file or a file it names
            from silica.fleet import load_fleet_file

            check_output(html, inputs=(fleet_file,), option="--html")
            check_output(html, inputs=load_fleet_file(fleet_file).input_files(), option="--html")
        power = None
        if site_mw is not None or pue is not None:
            power = _site_check(fleet_file, site_mw, pue)
        with progress(f"simulating {fleet_file.name}", not as_json):
            sim = simulate_file(
                fleet_file, policy or None, catalog=plan_context().catalog, latency_model=latency_model
            )
        by_policy = power(sim) if power else None
        if html is not None:
            bases = "; ".join(sorted({p["price_basis"] for p in sim.fleet["pools"]})) or "none"
            write_fleet_report(sim, html, Meta(command_line(), bases))
        fmt = resolve_format(output, as_json)
        if fmt == "json":
            body = sim.to_dict(series=series)
            if by_policy is not None:
                body["power"] = {name: p.to_dict() for name, p in by_policy.items()}
            print_json(body)
            return
        emit(_simulation_listing(sim, _peak_note(fleet_file, sim), raw=fmt != "table"), fmt)
        for name, p in (by_policy or {}).items():
            emit(_power_listing(p, name), fmt)
        if fmt != "table":  # TSV/CSV carry no notes: warnings still reach the user, on stderr
            for warning in sim.warnings:
                sys.stderr.write(f"warning: {warning}\n")
        if html is not None:
            sys.stderr.write(f"Report written to {html}.\n")

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
        output: str | None = output_option(),
        site_mw: float | None = _SITE_MW,
        pue: float | None = _PUE,
    ) -> None:
        """Choose the cheapest fleet mix meeting the SLO-attainment target and every training deadline."""
        from silica.context import plan_context
        from silica.errors import InputError
        from silica.fleet import load_fleet_file, plan_fleet

        if target is not None and not 0 < target <= 1:
            raise InputError(f"--target must be in (0, 1], got {target}.", "e.g. --target 0.99.")
        if max_instances is not None and max_instances < 1:
            raise InputError(
                f"--max-instances must be at least 1, got {max_instances}.", "e.g. --max-instances 1000."
            )
        from silica.fleet.power import check_site_mw

        check_site_mw(site_mw, pue)  # a bad flag is refused before the file is read
        catalog = plan_context(price=price or None).catalog  # --price over the user's price settings
        # Given but empty (`--instance ""`) stays an empty list, which plan_fleet refuses; absent is all.
        names = [n.strip() for v in instances for n in v.split(",") if n.strip()] if instances else None
        ff = load_fleet_file(fleet_file)
        with progress(f"planning {fleet_file.name}", not as_json):
            plan = plan_fleet(
                ff,
                instances=names,
                target=target,
                policy=policy,
                catalog=catalog,
                max_instances=max_instances,
                site_mw=site_mw,
                pue=pue,
            )
        fmt = resolve_format(output, as_json)
        if plan.power is None or fmt == "json":
            emit(_plan_listing(plan), fmt, plan)
            return
        emit(_plan_listing(plan), fmt)
        emit(_power_listing(plan.power, plan.policy), fmt)

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
        output: str | None = output_option(),
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
        emit(_sweep_listing(result), resolve_format(output, as_json), result)

    app.add_typer(fleet_app, name="fleet")
