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

from silica.cli._common import command_line, handle_errors, print_json, progress
from silica.cli._output import Column, Listing, emit, output_option, resolve_format
from silica.cli._store import store_records

_JSON = typer.Option(False, "--json", help="Print the library result as JSON.")
_HTML = typer.Option(None, "--html", help="Write a self-contained HTML report (opens offline).")
_MD = typer.Option(None, "--md", help="Write a Markdown report.")
_NO_STORE = typer.Option(False, "--no-store", help="Do not keep the results in the store (SILICA_DB_URL).")


def register(app: typer.Typer) -> None:
    @app.command(
        epilog="Examples:\n\n  silica advise examples/inventory.yaml\n\n"
        "  silica advise examples/inventory.yaml --html /tmp/advice.html --md /tmp/advice.md\n\n"
        "  silica advise examples/inventory.yaml --set max_payback_months=6 --json",
    )
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
        output: str | None = output_option(),
    ) -> None:
        """Per workload: best deployment per family, savings, migration effort, payback and a verdict."""
        from silica.advise import advise as run
        from silica.advise import load_inventory, parse_settings
        from silica.advise.records import advice_records
        from silica.context import plan_context
        from silica.report import Meta

        _check_targets(html, md, inputs=(inventory,))  # before reading: never over the inventory
        inv = load_inventory(inventory, plan_context())
        # Before the work: nor over a file the inventory names (its prices file, a scan file).
        _check_targets(html, md, inputs=inv.input_files())
        with progress(f"advising on {len(inv.workloads)} workloads", not as_json):
            result = run(inv, settings=parse_settings(settings or []))
        from silica.report.page import price_facts

        meta = Meta(command_line(), price_facts(inv.catalog, inv.option))
        reports = _render(result, html, md, "advice", meta)
        if not no_store:
            store_records(advice_records(inv, result))
        _write(reports)
        emit(_advice_listing(result), resolve_format(output, as_json), result)

    @app.command(
        epilog="Examples:\n\n  silica claims\n\n"
        "  silica claims --price trn2.48xlarge=35.76     # check the unpriced claims with your quote\n\n"
        "  silica claims --id trn2-30-40-better-than-p5 --html /tmp/claims.html",
    )
    @handle_errors
    def claims(
        as_json: bool = _JSON,
        html: Path | None = _HTML,
        md: Path | None = _MD,
        ids: list[str] | None = typer.Option(None, "--id", help="Only this claim (repeatable)."),
        price: list[str] | None = typer.Option(
            None, "--price", help="Your price: INSTANCE=USD_PER_HOUR (repeatable); it always applies."
        ),
        prices: Path | None = typer.Option(None, "--prices", help="A prices CSV of your own (see catalog)."),
        no_store: bool = _NO_STORE,
        output: str | None = output_option(),
    ) -> None:
        """Re-derive the vendors' claims with Silica's own model: supported, partly, not supported or cannot check."""
        from silica.advise.claim_checks import check_claims
        from silica.context import plan_context
        from silica.report import Meta

        _check_targets(html, md, inputs=(prices,))  # before the work: never over the prices file
        catalog = plan_context(prices=prices, price=price or None).catalog
        with progress("re-deriving the vendors' claims", not as_json):
            result = check_claims(ids, catalog=catalog)
        from silica.report.page import price_facts

        reports = _render(result, html, md, "claims", Meta(command_line(), price_facts(catalog)))
        if not no_store:
            store_records([("claim", c.id, c.to_dict()) for c in result.claims])
        _write(reports)
        emit(_claims_listing(result), resolve_format(output, as_json), result)

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


def _render(result: Any, html: Path | None, md: Path | None, what: str, meta: Any) -> list[tuple[Path, str]]:
    """Every requested report as text, each with a checked destination; nothing is written yet."""
    from silica.errors import InputError
    from silica.report import advice_html, advice_markdown, claims_html, claims_markdown

    renderers: dict[str, tuple[Callable[[Any, Any], str], Callable[[Any, Any], str]]] = {
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
            out.append((path, fn(result, meta)))
    return out


def _same(a: Path, b: Path) -> bool:
    return os.path.abspath(a) == os.path.abspath(b) or a.resolve() == b.resolve()


def _check_targets(html: Path | None, md: Path | None, inputs: tuple[Path | None, ...]) -> None:
    """Refuse, before any work or store write, a report path that cannot be written or is an input."""
    from silica._files import check_outputs

    check_outputs([("--html", html), ("--md", md)], inputs=inputs)


def _write(reports: list[tuple[Path, str]]) -> None:
    """Write each report atomically: a temporary file in the same folder, renamed over the target."""
    from silica._files import write_text

    for path, text in reports:
        write_text(path, text)
        sys.stderr.write(f"wrote {path}\n")


def _advice_listing(advice: Any) -> Listing:
    """One row per workload; the two saving steps as the report shows them, money kept whole."""
    from silica.report._format import money, plain_reason
    from silica.report.advice import payback_text, steps_text

    rows = []
    for w in advice.workloads:
        right, chip = steps_text(w)
        rows.append(
            [
                w.name,
                w.verdict,
                w.current.monthly_usd,
                right,
                chip,
                w.proposed_monthly_usd,
                payback_text(w),
                plain_reason(w.reasons[0])[0] if w.reasons else "",
            ]
        )
    return Listing(
        f"Silica advice: {advice.inventory}",
        (
            Column("workload", keep=True),
            Column("verdict", keep=True),
            Column("today/mo", money, right=True, keep=True),
            Column("right-size (same vendor)", drop=2),
            Column("change chip", drop=3),
            Column("proposed/mo", money, right=True, keep=True),
            Column("payback", right=True, drop=1),
            Column("why", drop=4),
        ),
        rows,
        notes=("Full reasons, every option and the rules: --html FILE or --json.",),
    )


def _claims_listing(report: Any) -> Listing:
    return Listing(
        "Vendor claims, re-derived by Silica",
        (
            Column("id", keep=True),
            Column("verdict", keep=True),
            Column("claim", drop=2),
            Column("Silica computes"),
        ),
        [(c.id, c.verdict, c.claim, c.computed) for c in report.claims],
    )
