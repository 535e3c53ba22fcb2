"""HTML for the pages: the layout, tables and the ranked chart with its bands, as escaped text.

No template engine and no front-end build: a few functions that return strings, every value escaped.
The chart is inline SVG (it loads nothing) drawn from the numbers the library returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from silica.options import PLAN_OPTIONS, option
from silica.report.svg import fmt, nice_ticks
from silica.text import money_short

__all__ = ["bar_band_chart", "esc", "num", "page", "table"]

_NAV = (
    ("/estimate", "Estimate"),
    ("/compare", "Compare"),
    ("/simulate", "Simulate"),
    ("/catalog", "Catalog"),
    ("/advise", "Advise"),
    ("/claims", "Claims"),
    ("/jobs", "Jobs"),
    ("/history", "History"),
)


def esc(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def num(value: Any, spec: str = ",.2f") -> str:
    """A number for a cell; unknown stays a dash (never a made-up zero)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return format(value, spec)


def page(title: str, body: str, active: str = "") -> str:
    current = ' aria-current="page"'
    nav = "".join(f'<a href="{href}"{current if href == active else ""}>{label}</a>' for href, label in _NAV)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} - Silica</title>"
        '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/silica.css"><script src="/static/silica.js" defer></script>'
        '</head><body><a class="skip" href="#main">Skip to content</a>'
        f'<header><a class="brand" href="/">Silica</a><nav aria-label="Main">{nav}</nav></header>'
        f'<main id="main"><h1>{esc(title)}</h1>{body}</main>'
        "<footer><p>Figures from the Silica library, each with its source and date. "
        'API: <a href="/api/v1/openapi.json">OpenAPI schema</a>.</p></footer></body></html>'
    )


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    numeric: Iterable[int] = (),
    caption: str = "",
    sortable: bool = False,
) -> str:
    """A table whose cells are already-escaped HTML; wide tables scroll inside their own box.

    `sortable`: silica.js turns each header into a sort button; without the script the table reads
    the same, in the library's order."""
    right, n = set(numeric), ' class="n"'
    cols = "".join(f'<th scope="col"{n if i in right else ""}>{esc(h)}</th>' for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f"<td{n if i in right else ''}>{c}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    klass = ' class="sortable"' if sortable else ""
    return (
        f'<div class="scroll" role="region" aria-label="{esc(caption or "table")}" tabindex="0">'
        f"<table{klass}>{cap}<thead><tr>{cols}</tr></thead><tbody>{body}</tbody></table></div>"
    )


# Every typed-in form field a page offers: name -> (label, kind, hint), from the one declaration of
# plan options (`silica.options`). The label is what a field-level error names; kind is int, float or
# text. Each page picks its fields by name; choices (task, option, engine, ...) are selects.
FORM_FIELDS: dict[str, tuple[str, str, str]] = {
    o.name: (o.label, o.kind, o.hint or o.help)
    for o in PLAN_OPTIONS
    if "form" in o.doors and o.kind in ("int", "float", "text") and not o.required
}


def form_fields(*names: str) -> tuple[tuple[str, str, str, str], ...]:
    """(name, label, kind, hint) of the named fields, in the order given."""
    return tuple((n, *FORM_FIELDS[n]) for n in names)


# What an empty choice means, where the option has no default of its own.
_UNSET = {"option": "best available", "engine": "vendor default", "weight_dtype": "same as compute"}


def choices(name: str) -> list[tuple[str, str]]:
    """(value, text) of a choice option's select: the library's own list, so a form offers nothing
    the library would refuse; an option without a default first offers "" (Silica chooses)."""
    o = option(name)
    unset = [("", _UNSET.get(name, "default"))] if o.default is None else []
    return [*unset, *((c, c) for c in o.allowed())]


def bar_band_chart(
    items: Sequence[Mapping[str, Any]],
    *,
    title: str,
    unit: str,
    money: bool = True,
    compact: bool = False,
    key: str = "chart",
) -> str:
    """Horizontal bars in rank order on the ranking's own cost, each with its p10-p90 whisker.

    `items` are the library's `Comparison.ranked()` rows (value, low, high, tie). A row whose band
    overlaps the leader's is drawn pale and labelled "tie with #1": the model cannot tell them apart.
    The axis starts at zero with round ticks. `compact` stacks each label above its bar so the chart
    stays readable on a phone instead of being shrunk or cut. `key` keeps the title's id unique when
    a page has more than one chart.
    """
    if not items:
        return ""
    show = money_short if money else (lambda v: fmt(v))
    top = max(max(float(r["value"]), float(r.get("high") or r["value"])) for r in items) or 1.0
    ticks = nice_ticks(0.0, top, 3 if compact else 5)
    scale_max = ticks[-1]
    if compact:
        width, label_w, right, row_h, gap = 380, 16, 92, 40, 16
    else:
        width, label_w, right, row_h, gap = 760, 200, 130, 26, 0
    bar_w = width - label_w - right

    def x(v: float) -> float:
        return label_w + bar_w * v / scale_max

    lines: list[str] = []
    limit = 44 if compact else 100
    for word in title.split():  # the title wraps instead of running off the edge
        if lines and len(lines[-1]) + len(word) + 1 <= limit:
            lines[-1] += " " + word
        else:
            lines.append(word)
    head = 16 * len(lines) + 24
    height = head + row_h * len(items) + 40
    kind = "chart-narrow" if compact else "chart-wide"
    ident = f"{key}-title-{'n' if compact else 'w'}"
    parts = [
        f'<svg class="chart {kind}" viewBox="0 0 {width} {height}" role="img" aria-labelledby="{ident}">'
        f'<title id="{ident}">{esc(title)}</title>',
        *(f'<text x="0" y="{16 * (k + 1)}" class="t">{esc(t)}</text>' for k, t in enumerate(lines)),
    ]
    axis_y = head + row_h * len(items)
    for t in ticks:
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{head - 4}" x2="{x(t):.1f}" y2="{axis_y}" class="grid"/>'
            f'<text x="{x(t):.1f}" y="{axis_y + 14}" text-anchor="middle" class="tick">{esc(show(t))}</text>'
        )
    parts.append(
        f'<text x="{label_w + bar_w / 2:.1f}" y="{axis_y + 30}" text-anchor="middle">{esc(unit)}</text>'
    )
    for i, r in enumerate(items):
        y = head + i * row_h + gap
        value, lo, hi, tie = float(r["value"]), r.get("low"), r.get("high"), bool(r.get("tie"))
        count = f"{r['count']} x " if r.get("count", 1) != 1 else ""
        label = f"#{r['rank']} {count}{r['instance']}"
        if compact:
            parts.append(f'<text x="{label_w}" y="{y - 3}">{esc(label)}</text>')
        else:
            parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{esc(label)}</text>')
        cls = "bar tie" if tie else "bar"
        parts.append(
            f'<rect x="{label_w}" y="{y + 4}" width="{max(1.0, x(value) - label_w):.1f}" height="16" class="{cls}"/>'
        )
        if lo is not None and hi is not None:
            mid = y + 12
            parts.append(
                f'<path d="M{x(lo):.1f} {mid}H{x(hi):.1f}M{x(lo):.1f} {mid - 6}V{mid + 6}M{x(hi):.1f} {mid - 6}V{mid + 6}" class="band"/>'
            )
        end = x(float(hi) if hi is not None else value)
        note = "" if not tie else " (tie)" if compact else " tie with #1"
        parts.append(f'<text x="{end + 6:.1f}" y="{y + 16}">{esc(show(value) + note)}</text>')
    parts.append("</svg>")
    return "".join(parts)
