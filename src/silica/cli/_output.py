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

__all__ = ["FORMATS", "Column", "Listing", "OutputFormat", "emit", "output_option", "resolve_format"]

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
    for i in shown:
        col = listing.columns[i]
        # Numbers and kept columns never wrap; only free text (notes, names of things) folds.
        table.add_column(
            col.name, justify="right" if col.right else "left", no_wrap=col.keep or col.right, overflow="fold"
        )
    for row in listing.rows:
        table.add_row(*["-" if row[i] is None else listing.columns[i].fmt(row[i]) for i in shown])
    return table


def _squeezed(console: Any, table: Any) -> bool:
    """True when rendering at this width would fold some text column below a readable 8 characters."""
    wide = console.options.update_width(10_000)
    if console.measure(table, options=wide).maximum <= console.width:
        return False
    natural = table._calculate_column_widths(console, wide)
    widths = table._calculate_column_widths(console, console.options)
    return any(w < min(10, n) for w, n in zip(widths, natural, strict=True))
