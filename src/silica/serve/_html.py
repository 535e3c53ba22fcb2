"""HTML for the pages: the layout, tables and the ranked chart with its bands, as escaped text.

No template engine and no front-end build: a few functions that return strings, every value escaped.
The chart is inline SVG (it loads nothing) drawn from the numbers the library returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

__all__ = ["bar_band_chart", "esc", "num", "page", "table"]

_NAV = (("/compare", "Compare"), ("/advise", "Advise"), ("/claims", "Claims"), ("/history", "History"))


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
    head: Sequence[str], rows: Iterable[Sequence[str]], *, numeric: Iterable[int] = (), caption: str = ""
) -> str:
    """A table whose cells are already-escaped HTML; wide tables scroll inside their own box."""
    right, n = set(numeric), ' class="n"'
    cols = "".join(f'<th scope="col"{n if i in right else ""}>{esc(h)}</th>' for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f"<td{n if i in right else ''}>{c}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (
        f'<div class="scroll" role="region" aria-label="{esc(caption or "table")}" tabindex="0">'
        f"<table>{cap}<thead><tr>{cols}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def bar_band_chart(
    items: Sequence[tuple[str, float, float | None, float | None]],
    *,
    title: str,
    unit: str,
    key: str = "chart",
) -> str:
    """Horizontal bars (label, value) with a p10-p90 whisker (low, high) each, in the order given;
    `key` keeps the title's id unique when a page has more than one chart."""
    if not items:
        return ""
    label_w, bar_w, row_h, top = 190, 460, 26, 34
    width, height = label_w + bar_w + 90, top + row_h * len(items) + 30
    high = max(max(v, h or v) for _, v, _, h in items) or 1.0

    def x(v: float) -> float:
        return label_w + bar_w * v / high

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-labelledby="{key}-title">'
        f'<title id="{key}-title">{esc(title)}</title>'
        f'<text x="0" y="18" class="t">{esc(title)}</text>'
    ]
    for i, (label, value, lo, hi) in enumerate(items):
        y = top + i * row_h
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{esc(label)}</text>')
        parts.append(
            f'<rect x="{label_w}" y="{y + 4}" width="{max(1.0, x(value) - label_w):.1f}" height="16" class="bar"/>'
        )
        if lo is not None and hi is not None:
            mid = y + 12
            parts.append(
                f'<path d="M{x(lo):.1f} {mid}H{x(hi):.1f}M{x(lo):.1f} {mid - 6}V{mid + 6}M{x(hi):.1f} {mid - 6}V{mid + 6}" class="band"/>'
            )
        end = x(hi if hi is not None else value)
        parts.append(f'<text x="{end + 6:.1f}" y="{y + 16}">{esc(format(value, ".3g"))}</text>')
    axis_y = top + row_h * len(items) + 18
    parts.append(
        f'<text x="{label_w}" y="{axis_y}">0</text>'
        f'<text x="{label_w + bar_w}" y="{axis_y}" text-anchor="end">{esc(format(high, ".3g"))} {esc(unit)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)
