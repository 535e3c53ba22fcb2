"""Inline SVG line and stacked-area charts, written by hand so reports work offline with no scripts.

Only what the fleet report needs: a shared x axis in hours, a few series, ticks at round values,
a legend. Missing values (None) break a line rather than drawing it through zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["PALETTE", "chart", "fmt"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
Series = tuple[str, Sequence[float | None], str]


def fmt(value: float | None, digits: int = 3) -> str:
    """A number short enough for a tick or a table cell: 1.2k, 3.4M, 0.98."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    mag = abs(value)
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if mag >= limit:
            return f"{value / limit:.{digits}g}{suffix}"
    return f"{value:.{digits}g}"


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * step:
            step *= mult
            break
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _x_ticks(x_max: float) -> list[float]:
    for step in (1.0, 2.0, 6.0, 12.0, 24.0, 48.0, 168.0):
        if x_max / step <= 8:
            return [i * step for i in range(int(x_max / step) + 1)]
    return _ticks(0.0, x_max)


def chart(
    title: str,
    x: Sequence[float],
    series: Sequence[Series],
    *,
    y_label: str,
    stacked: bool = False,
    percent: bool = False,
    y_min: float | None = None,
    width: int = 920,
    height: int = 230,
) -> str:
    """One SVG chart; `stacked` fills areas on top of each other (for chips by use)."""
    left, right, top, bottom = 64, 16, 44, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    cum = [0.0] * len(x)
    layers: list[tuple[str, list[float | None], list[float], str]] = []
    for name, ys, color in series:
        base = list(cum)
        vals: list[float | None] = []
        for i, y in enumerate(ys):
            if y is None:
                vals.append(None)
                continue
            v = (cum[i] + y) if stacked else y
            vals.append(v)
            if stacked:
                cum[i] = v
        layers.append((name, vals, base, color))
    finite = [v for _, vals, _, _ in layers for v in vals if v is not None]
    lo = (0.0 if stacked else min(finite, default=0.0)) if y_min is None else y_min
    hi = max(finite, default=1.0)
    if percent:
        lo, hi = (min(lo, 1.0) if y_min is None else y_min), max(hi, 1.0)
    if hi <= lo:
        hi = lo + 1.0
    if not percent:
        hi += 0.05 * (hi - lo)  # keep a line at the maximum off the frame
    x_max = max(x[-1] if x else 1.0, 1e-9)

    def px(v: float) -> float:
        return left + plot_w * v / x_max

    def py(v: float) -> float:
        return top + plot_h * (1 - (v - lo) / (hi - lo))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="{left}" y="16" class="t">{escape(title)}</text>',
    ]
    for tick in _ticks(lo, hi):
        label = f"{tick * 100:.0f}%" if percent else fmt(tick)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{py(tick):.1f}" y2="{py(tick):.1f}" class="g"/>'
            f'<text x="{left - 6}" y="{py(tick) + 4:.1f}" class="yl">{label}</text>'
        )
    for tick in _x_ticks(x_max):
        parts.append(f'<text x="{px(tick):.1f}" y="{height - 16}" class="xl">{tick:g}h</text>')
    parts.append(
        f'<text x="12" y="{top + plot_h / 2:.0f}" class="ax" transform="rotate(-90 12 {top + plot_h / 2:.0f})">'
        f"{escape(y_label)}</text>"
    )
    for _name, vals, base, color in layers:
        if stacked:
            pts = [(px(x[i]), py(v)) for i, v in enumerate(vals) if v is not None]
            back = [(px(x[i]), py(base[i])) for i in reversed(range(len(vals))) if vals[i] is not None]
            poly = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts + back)
            parts.append(f'<polygon points="{poly}" fill="{color}" fill-opacity="0.55" stroke="none"/>')
            continue
        for run in _runs(vals):
            line = " ".join(f"{px(x[i]):.1f},{py(v):.1f}" for i, v in run)
            parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.4"/>')
    lx = left
    for name, _, _, color in layers:
        parts.append(
            f'<rect x="{lx}" y="24" width="10" height="10" fill="{color}"/>'
            f'<text x="{lx + 14}" y="33" class="lg">{escape(name)}</text>'
        )
        lx += 24 + 7 * len(name)
    parts.append("</svg>")
    return "".join(parts)


def _runs(vals: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    out: list[list[tuple[int, float]]] = []
    cur: list[tuple[int, float]] = []
    for i, v in enumerate(vals):
        if v is None:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append((i, v))
    if cur:
        out.append(cur)
    return out
