"""`silica advise`, `silica claims` and `silica history`: thin wrappers over `silica.advise`,
`silica.report` and `silica.store`.

Nothing is left half-done: results are computed and every report is rendered, and every output path is
checked (its folder exists and is writable), before anything is stored; then the records are stored in
one transaction; then each report is written to a temporary file in its folder and renamed into place.
A bad inventory, a bad output path or a failing database leaves no report file and no record behind.
Heavy imports stay inside the commands (`silica --help`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from silica.cli._common import console, handle_errors, plain, print_json
from silica.cli._output import Column, Listing, emit, output_option, resolve_format

_JSON = typer.Option(False, "--json", help="Print the library result as JSON.")
_HTML = typer.Option(None, "--html", help="Write a self-contained HTML report (opens offline).")
_MD = typer.Option(None, "--md", help="Write a Markdown report.")
_NO_STORE = typer.Option(False, "--no-store", help="Do not keep the results in the store (SILICA_DB_URL).")


def register(app: typer.Typer) -> None:
    @app.command()
    @handle_errors
    def advise(
        inventory: Path = typer.Argument(..., help="Inventory YAML (see examples/inventory.yaml)."),
        as_json: bool = _JSON,
        html: Path | None = _HTML,
        md: Path | None = _MD,
        settings: list[str] | None = typer.Option(
            None, "--set", help="Override a decision threshold: NAME=VALUE (repeatable)."
        ),
        no_store: bool = _NO_STORE,
    ) -> None:
        """Per workload: best deployment per family, savings, migration effort, payback and a verdict."""
        from silica.advise import advise as run
        from silica.advise import load_inventory, parse_settings

        _check_targets(html, md, inputs=(inventory,))  # before the work: never over the inventory
        inv = load_inventory(inventory)
        result = run(inv, settings=parse_settings(settings or []))
        reports = _render(result, html, md, "advice")
        if not no_store:
            _store(_advice_records(inv, result))
        _write(reports)
        if as_json:
            print_json(result)
        else:
            _print_advice(result)

    @app.command()
    @handle_errors
    def claims(
        as_json: bool = _JSON,
        html: Path | None = _HTML,
        md: Path | None = _MD,
        ids: list[str] | None = typer.Option(None, "--id", help="Only this claim (repeatable)."),
        no_store: bool = _NO_STORE,
    ) -> None:
        """Re-derive the vendors' claims with Silica's own model: supported, partly, not supported or cannot check."""
        from silica.advise.claims import check_claims

        _check_targets(html, md, inputs=())
        result = check_claims(ids)
        reports = _render(result, html, md, "claims")
        if not no_store:
            _store([("claim", c.id, c.to_dict()) for c in result.claims])
        _write(reports)
        if as_json:
            print_json(result)
        else:
            _print_claims(result)

    @app.command(
        epilog="Examples:\n\n  silica history\n\n  silica history --kind estimate --limit 10\n\n"
        "  silica history --id 42          # one record in full, as JSON",
    )
    @handle_errors
    def history(
        kind: str | None = typer.Option(
            None,
            "--kind",
            help="inventory, estimate, scan, recommendation, claim, fleet_sweep, pilot, monitor, ...",
        ),
        limit: int = typer.Option(50, "--limit", min=1, max=100_000, help="How many records, newest first."),
        record_id: int | None = typer.Option(
            None, "--id", min=1, help="Show this one record in full (JSON)."
        ),
        output: str | None = output_option(),
        as_json: bool = _JSON,
    ) -> None:
        """List what the store keeps (SQLite in your data directory, or SILICA_DB_URL), newest first."""
        from silica.store import open_store
        from silica.store.summary import summarize

        store = open_store()
        if record_id is not None:
            print_json(store.get(record_id).to_dict())
            return
        found = store.history(kind, limit)
        fmt = resolve_format(output, as_json)
        if not found and fmt == "table":
            what = f"no {kind} records" if kind else "no records yet"
            typer.echo(
                f"{store.display_url}: {what}. Runs of advise, claims, fleet sweep, pilot and monitor are kept here."
            )
            return
        listing = Listing(
            f"History: {store.display_url}",
            (
                Column("id", str, right=True, keep=True),
                Column("time (UTC)", lambda t: t.strftime("%Y-%m-%d %H:%M"), drop=2),
                Column("kind"),
                Column("name", drop=1),
                Column("summary"),
            ),
            [(r.id, r.created_at, r.kind, r.name, summarize(r.kind, r.payload)) for r in found],
            notes=("Show one record in full with --id N.",) if found else (),
        )
        emit(
            listing,
            fmt,
            {"database": store.display_url, "records": [r.to_dict() for r in found]}
            if fmt == "json"
            else None,
        )


def _advice_records(inv: Any, advice: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """The inventory, each scan it used, the best estimate per family, and each recommendation."""
    records: list[tuple[str, str, dict[str, Any]]] = [("inventory", str(inv.path), inv.to_dict())]
    for spec in inv.workloads:
        if spec.constraints.scan is not None:
            records.append(
                ("scan", f"{spec.name}: {spec.constraints.scan.path.name}", spec.constraints.scan.raw)
            )
    for w in advice.workloads:
        for group, best in w.best.items():
            if best.option is not None and best.option.estimate is not None:
                records.append(("estimate", f"{w.name}/{group}", best.option.estimate.to_dict()))
        records.append(("recommendation", w.name, w.to_dict()))
    return records


def _store(records: list[tuple[str, str, dict[str, Any]]]) -> None:
    """Keep `records` in one transaction; without the store extra, say so and go on."""
    from silica.errors import SilicaError

    try:
        from silica.store import open_store

        store = open_store()
    except SilicaError as err:
        if "not installed" not in err.problem:
            raise
        sys.stderr.write(f"note: results not stored: {err}\n")
        return
    # Stored as printed by --json: non-finite floats become null, as JSON requires.
    ids = store.record_many([(kind, name, plain(payload)) for kind, name, payload in records])
    sys.stderr.write(f"stored {len(ids)} records (#{ids[0]}-#{ids[-1]}) in {store.display_url}\n")


def _render(result: Any, html: Path | None, md: Path | None, what: str) -> list[tuple[Path, str]]:
    """Every requested report as text, each with a checked destination; nothing is written yet."""
    from silica.errors import InputError
    from silica.report import advice_html, advice_markdown, claims_html, claims_markdown

    renderers: dict[str, tuple[Callable[[Any], str], Callable[[Any], str]]] = {
        "advice": (advice_html, advice_markdown),
        "claims": (claims_html, claims_markdown),
    }
    render = renderers[what]
    if html is not None and md is not None and _same(html, md):
        raise InputError(f"--html and --md both name {html}.", "give the two reports different files.")
    out = []
    _check_targets(html, md, inputs=())
    for path, fn in ((html, render[0]), (md, render[1])):
        if path is not None:
            out.append((path, fn(result)))
    return out


def _same(a: Path, b: Path) -> bool:
    return os.path.abspath(a) == os.path.abspath(b) or a.resolve() == b.resolve()


def _check_targets(html: Path | None, md: Path | None, inputs: tuple[Path, ...]) -> None:
    """Refuse, before any work or store write, a report path that cannot be written or is an input."""
    from silica._files import check_output

    for path, option in ((html, "--html"), (md, "--md")):
        if path is not None:
            check_output(path, inputs=inputs, option=option)


def _write(reports: list[tuple[Path, str]]) -> None:
    """Write each report atomically: a temporary file in the same folder, renamed over the target."""
    for path, text in reports:
        _write_atomic(path, text)
        sys.stderr.write(f"wrote {path}\n")


def _write_atomic(path: Path, text: str) -> None:
    from silica._files import write_text

    write_text(path, text)


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def _print_advice(advice: Any) -> None:
    from rich.table import Table

    table = Table(title=f"Silica advice: {advice.inventory}")
    for col in ("workload", "verdict", "today/mo", "proposed/mo", "saving/mo", "weeks", "payback", "why"):
        table.add_column(col, justify="right" if col.endswith(("mo", "weeks", "payback")) else "left")
    for w in advice.workloads:
        payback = "-" if w.payback_months is None else f"{w.payback_months:.1f} mo"
        table.add_row(
            w.name,
            w.verdict,
            _money(w.current.monthly_usd),
            _money(w.proposed_monthly_usd),
            _money(w.monthly_savings_usd),
            f"{w.migration_weeks:g}",
            payback,
            w.reasons[0] if w.reasons else "",
        )
    console().print(table)


def _print_claims(report: Any) -> None:
    from rich.table import Table

    table = Table(title="Vendor claims, re-derived by Silica")
    for col in ("claim", "verdict", "Silica computes"):
        table.add_column(col)
    for c in report.claims:
        table.add_row(c.claim, c.verdict, c.computed)
    console().print(table)
