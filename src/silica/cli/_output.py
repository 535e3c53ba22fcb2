"""How a command prints a table: a rich table on a terminal, TSV when piped, or CSV/JSON on request.

Every listing command builds one `Listing` (columns with raw values) and calls `emit`. The same raw
values go to CSV/TSV/JSON, so `silica compare ... --output csv` loads in pandas with numbers as
numbers, while the terminal table shows them formatted. On a terminal the table folds long text
columns at the terminal's width but never a column marked `keep` (money, the instance name): at 80
columns the $/1M figure stays whole.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import typer

__all__ = [
    "FORMATS",
    "Column",
    "Listing",
    "OutputFormat",
    "comparison_listing",
    "emit",
    "output_option",
    "resolve_format",
]

OutputFormat = Literal["table", "json", "csv", "tsv"]
FORMATS: tuple[OutputFormat, ...] = ("table", "json", "csv", "tsv")


def output_option() -> Any:
    """The `--output/-o` option every listing command takes (typer option object)."""
    return typer.Option(
        None,
        "--output",
        "-o",
        help="table, json, csv or tsv. Default: table on a terminal, tsv when piped.",
        metavar="FORMAT",
    )


def resolve_format(output: str | None, as_json: bool = False, *, isatty: bool | None = None) -> OutputFormat:
    """The format to print: `--json` wins, then `--output`, then table on a terminal and TSV when piped."""
    from silica.errors import InputError

    if as_json:
        return "json"
    if output is not None:
        value = output.strip().lower()
        if value not in FORMATS:
            raise InputError(f"Unknown output format {output!r}.", f"pass --output {' | '.join(FORMATS)}.")
        return value
    tty = sys.stdout.isatty() if isatty is None else isatty
    return "table" if tty else "tsv"


@dataclass(frozen=True)
class Column:
    """One column: its header, how to show a raw value on a terminal, and how it may shrink."""

    name: str
    fmt: Callable[[Any], str] = str
    right: bool = False  # numbers align right
    keep: bool = False  # never folded or cut (money, ids)
    drop: int = 0  # on a narrow terminal, columns with drop > 0 are hidden, highest first; 0 never


@dataclass(frozen=True)
class Listing:
    """A titled table of raw values; `notes` print under the terminal table (and go to JSON)."""

    title: str
    columns: Sequence[Column]
    rows: Sequence[Sequence[Any]]
    notes: Sequence[str] = field(default_factory=tuple)


def _raw(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(round(value, 6)) if value == value else ""
    return value


def emit(listing: Listing, fmt: OutputFormat, result: Any = None) -> None:
    """Print `listing` in `fmt`; JSON prints `result` (the library's object) when given, else the rows."""
    if fmt == "json":
        from silica.cli._common import print_json

        if result is not None:
            print_json(result)
        else:
            names = [c.name for c in listing.columns]
            print_json(
                {"title": listing.title, "rows": [dict(zip(names, r, strict=True)) for r in listing.rows]}
            )
        return
    if fmt in ("csv", "tsv"):
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
        writer.writerow([c.name for c in listing.columns])
        for row in listing.rows:
            writer.writerow([_raw(v) for v in row])
        sys.stdout.write(buffer.getvalue())
        return
    from rich.console import Console

    console = Console()
    shown = list(range(len(listing.columns)))
    table = _table(listing, shown)
    # Hide optional columns (highest `drop` first) until the table fits without squeezing numbers.
    droppable = sorted(
        (i for i, c in enumerate(listing.columns) if c.drop > 0), key=lambda i: -listing.columns[i].drop
    )
    hidden: list[str] = []
    while droppable and _squeezed(console, table):
        i = droppable.pop(0)
        shown.remove(i)
        hidden.append(listing.columns[i].name)
        table = _table(listing, shown)
    console.print(table)
    for note in listing.notes:
        console.print(note, highlight=False)
    if hidden:
        console.print(
            f"(hidden at {console.width} columns: {', '.join(hidden)}; widen the terminal or use -o tsv)",
            style="dim",
            highlight=False,
        )


def _table(listing: Listing, shown: Sequence[int]) -> Any:
    from rich.table import Table

    table = Table(title=listing.title, title_justify="left")
    cells = [
        ["-" if row[i] is None else listing.columns[i].fmt(row[i]) for i in shown] for row in listing.rows
    ]
    for k, i in enumerate(shown):
        col = listing.columns[i]
        # Numbers and kept columns never wrap or shrink (a minimum width as wide as their widest
        # cell); only free text (notes, names of things) folds.
        whole = col.keep or col.right
        widest = max([len(col.name), *(len(r[k]) for r in cells)]) if whole else None
        table.add_column(
            col.name,
            justify="right" if col.right else "left",
            no_wrap=whole,
            overflow="fold",
            min_width=widest,
        )
    for r in cells:
        table.add_row(*r)
    return table


def _squeezed(console: Any, table: Any) -> bool:
    """True when rendering at this width would shrink a number or kept column at all, or fold some
    text column below a readable 10 characters."""
    wide = console.options.update_width(10_000)
    if console.measure(table, options=wide).maximum <= console.width:
        return False
    natural = table._calculate_column_widths(console, wide)
    widths = table._calculate_column_widths(console, console.options)
    if sum(widths) + len(widths) + 1 > console.width:  # cells plus one border between each
        return True
    for col, w, n in zip(table.columns, widths, natural, strict=True):
        if (col.no_wrap and w < n) or w < min(10, n):
            return True
    return False


def _num(spec: str) -> Callable[[Any], str]:
    return lambda v: format(v, spec)


def _basis(price: Any) -> str:
    option = "" if price.option == "on_demand" else f"{price.option}, "
    return f"{option}{price.region}, {price.as_of}"


def comparison_listing(c: Any) -> Listing:
    """The `silica compare` ranking as a `Listing` (raw numbers; the terminal view formats them).

    The title names what the ranking is ordered by, so `--rate` (ranked by $/month at that load) and a
    plain run (ranked by $/1M output tokens) are never confused. Prices from more than one region or
    date get a price-basis column; otherwise one note says where all the prices came from.
    """
    training = c.task == "training"
    wl = c.workload
    loaded = bool(not training and (wl.get("rate_req_per_s") or wl.get("tokens_per_month")))
    encoder = not training and wl.get("output_len") == 0
    money2, money0 = _num(",.2f"), _num(",.0f")
    head = [
        Column("#", right=True, keep=True),
        Column("instance", keep=True),
        Column("n", right=True, drop=4),
        Column("chip", drop=6),
        Column("layout", drop=5),
    ]
    metrics: list[tuple[Column, Callable[[Any], Any]]]
    if training:
        order = "USD per training run"
        metrics = [
            (Column("tok/s/chip", money0, right=True, drop=2), lambda r: r.tokens_per_s_per_chip),
            (Column("days", _num(".1f"), right=True, keep=True), lambda r: r.train_days),
            (Column("$/h", money2, right=True, drop=3), lambda r: r.usd_per_hour),
            (Column("$ per run", money0, right=True, keep=True), lambda r: r.usd_per_run),
        ]
    elif encoder:
        order = "$/month at this load" if loaded else "$/1M prompt tokens"
        metrics = [
            (Column("latency ms", _num(".1f"), right=True, drop=2), lambda r: r.ttft_ms),
            (Column("prompt tok/s", money0, right=True, drop=1), lambda r: r.input_tokens_per_s),
            (Column("$/h", money2, right=True, drop=3), lambda r: r.usd_per_hour),
            (Column("$/1M prompt", _num(",.4f"), right=True, keep=True), lambda r: r.usd_per_1m_input_tokens),
        ]
    else:
        order = "$/month at this load" if loaded else "$/1M output tokens"
        metrics = [
            (Column("TTFT ms", _num(",.1f"), right=True, drop=2), lambda r: r.ttft_ms),
            (Column("TPOT ms", _num(".2f"), right=True, drop=2), lambda r: r.tpot_ms),
            (Column("out tok/s", money0, right=True, drop=1), lambda r: r.output_tokens_per_s),
            (Column("$/h", money2, right=True, drop=3), lambda r: r.usd_per_hour),
            (Column("$/1M out", _num(",.3f"), right=True, keep=True), lambda r: r.usd_per_1m_output_tokens),
        ]
    if not training:
        # Energy (`plan.energy`): blank where the chip's power is unknown.
        def energy(name: str) -> Callable[[Any], Any]:
            return lambda r: getattr(r.energy, name) if r.energy is not None and r.energy.known else None

        ranked = getattr(c, "objective", "cost")

        def col(name: str, fmt: Callable[[Any], str], objective: str) -> Column:
            mine = ranked == objective  # the ranked figure is never hidden
            return Column(name, fmt, right=True, keep=mine, drop=0 if mine else 3)

        metrics += [
            (col("J/tok", _num(".3f"), "energy"), energy("j_per_output_token")),
            (col("tok/s/MW", money0, "tokens-per-mw"), energy("output_tokens_per_s_per_mw")),
            (col("kgCO2e/1M", _num(".3f"), "carbon"), energy("kg_co2e_per_1m_output_tokens")),
        ]
    if loaded:
        metrics += [
            (Column("instances", right=True, keep=True), lambda r: r.instances_for_load),
            (Column("$/month", money0, right=True, keep=True), lambda r: r.usd_per_month),
        ]
    bases = {(r.price.option, r.price.region, r.price.as_of) for r in c.results if r.price is not None}
    mixed = len(bases) > 1
    tail = [Column("price basis", keep=True)] if mixed else []
    tail.append(Column("note", drop=7))
    ties = {t.rank for t in c.ranked() if t.tie}
    rows: list[list[Any]] = []
    for rank, r in enumerate(c.results, 1):
        basis = None if r.price is None else _basis(r.price)
        if not r.feasible:
            note = "cannot run: " + "; ".join(r.reasons)
            rows.append([rank, r.instance, r.count, r.chip, None, *([None] * len(metrics))])
        else:
            experts = f" ep{r.ep}" if r.ep is not None and r.ep > 1 else ""
            experts += f" cp{r.cp}" if r.cp is not None and r.cp > 1 else ""
            layout = f"tp{r.tp} pp{r.pp}{experts} x{r.dp}" + ("" if training else f" b{r.batch}")
            if r.price is not None:
                note = "tie with #1 (p10-p90 bands overlap)" if rank in ties else ""
            elif r.breakeven_usd_per_hour:
                note = f"unpriced; ties at ${r.breakeven_usd_per_hour:,.2f}/h"
            else:
                note = "unpriced"
            rows.append([rank, r.instance, r.count, r.chip, layout, *(get(r) for _, get in metrics)])
        rows[-1] += ([basis] if mixed else []) + [note]
    notes = []
    if ties:
        notes.append(
            f"{len(ties)} option(s) marked 'tie with #1': their p10-p90 cost band overlaps the leader's, "
            "so the model cannot tell them apart."
        )
    if len(bases) == 1:
        option, region, as_of = next(iter(bases))
        notes.append(f"Prices: {option}, {region}, as of {as_of}.")
    elif mixed:
        notes.append("Prices come from more than one region, option or date: see the price basis column.")
    objective = getattr(c, "objective", "cost")
    if objective != "cost":
        order = {
            "energy": "joules per output token (IT power)",
            "carbon": "kgCO2e per 1M output tokens",
            "tokens-per-mw": "output tokens/s per MW of IT power",
        }.get(objective, objective)
        notes.append("Energy: unknown where the chip's power is published nowhere (ranked after known ones).")
    return Listing(
        title=f"{c.model}: {c.task}, every instance type ranked by {order}",
        columns=[*head, *(col for col, _ in metrics), *tail],
        rows=rows,
        notes=notes,
    )
