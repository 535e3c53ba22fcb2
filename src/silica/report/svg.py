"""The one chart module of every Silica report: horizontal bars, a verdict grid and time-series lines.

The reports must open offline and load nothing, so the charts are inline SVG written here rather than a
charting library from a CDN. Every chart has a viewBox and scales to its container (readable at 400 px),
every magnitude axis starts at zero, bars share one scale (a small bar is a small number), labels are
sized from their text so none is cut, and legends wrap instead of running off the edge. Identical
series stay visible: each line has its own dash pattern as well as its colour. The `xmlns` attribute is
left out on purpose (inline SVG in HTML5 does not need it, and the report then holds no URL).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

__all__ = [
    "COLORS",
    "PALETTE",
    "Bar",
    "Line",
    "bar_chart",
    "fmt",
    "grid_chart",
    "line_chart",
    "line_charts",
    "nice_ticks",
]

# One colour per family and verdict, distinct for common colour-vision deficiencies (Okabe-Ito).
COLORS = {
    "trainium": "#e69f00",
    "inferentia": "#56b4e9",
    "nvidia": "#009e73",
    "stay": "#8c8c8c",
    "current": "#666666",
    "proposed": "#0072b2",
    "other": "#cc79a7",
    "supported": "#009e73",
    "partly": "#e69f00",
    "not supported": "#d55e00",
    "cannot check": "#8c8c8c",
}
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")
DASHES = ("", "7 4", "2 3", "10 3 2 3", "4 4", "1 2")
INK, MUTED, REF = "#1a1a1a", "#444444", "#b3261e"
FONT = 'font-family="system-ui, sans-serif" font-size="13"'
CHAR_W = 7.4  # px per character at 13 px, generous so labels are never cut


def fmt(value: float | None, digits: int = 3) -> str:
    """A number short enough for a tick or a cell: 1.2k, 3.4M, 0.98 (None and NaN print as '-')."""
    if value is None or not math.isfinite(value):
        return "-"

    def short(v: float) -> str:  # never scientific notation: 130, not 1.3e+02
        return f"{v:.0f}" if abs(v) >= 10**digits else f"{v:.{digits}g}"

    mag = abs(value)
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if mag >= limit:
            return f"{short(value / limit)}{suffix}"
    return short(value)


def _value(value: float, unit: str) -> str:
    sign = "-" if value < 0 else ""
    if unit == "months":
        return "< 0.1 months" if 0 <= value < 0.1 else f"{value:,.1f} months"
    if unit == "$":
        whole = abs(value) >= 100 or value == 0
        return f"{sign}${abs(value):,.0f}" if whole else f"{sign}${abs(value):,.2f}"
    if unit == "x":
        return f"{value:.2f}"
    if abs(value) >= 100:
        return f"{value:,.0f} {unit}".strip()
    return f"{value:.2f} {unit}".strip() if abs(value) < 10 else f"{value:.1f} {unit}".strip()


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    color: str  # a key of COLORS or a #rrggbb colour
    note: str = ""  # printed after the value


def _color(key: str) -> str:
    return COLORS.get(key, key)


def _w(text: str) -> float:
    return len(text) * CHAR_W


def _text(
    x: float,
    y: float,
    text: str,
    *,
    anchor: str = "start",
    bold: bool = False,
    color: str = INK,
    size: int | None = None,
    halo: bool = False,
) -> str:
    weight = ' font-weight="600"' if bold else ""
    font = f' font-size="{size}"' if size else ""
    # A white outline under the glyphs keeps a label readable where a grid or reference line crosses it.
    ring = ' paint-order="stroke" stroke="#fff" stroke-width="4" stroke-linejoin="round"' if halo else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{color}"{weight}{font}{ring}>'
        f"{escape(text)}</text>"
    )


def _open(width: float, height: float, title: str) -> str:
    return (
        f'<svg viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(title)}" '
        f'preserveAspectRatio="xMinYMin meet" style="max-width:{width:.0f}px" {FONT}>'
        f"<title>{escape(title)}</title>"
    )


def _nice_step(span: float, count: int = 5) -> float:
    raw = span / count if span > 0 else 1.0
    step = 10.0 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * step:
            return mult * step
    return 10 * step


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round axis ticks (1, 2, 2.5, 5 x 10^n steps) from at or below `low` to at or above `high`."""
    out = _ticks(low, high, count)
    return out if out and out[-1] >= high else [*out, out[-1] + _nice_step(high - low, count)]


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    step = _nice_step(high - low, count)
    first = math.floor(low / step) * step
    out, v = [], first
    while v <= high + step * 1e-9:
        out.append(round(v, 12))
        v += step
    return out


def _legend(
    items: Sequence[tuple[str, str, str]], x0: float, y0: float, width: float
) -> tuple[list[str], float]:
    """Legend entries (name, colour, dash) that wrap onto new lines; returns the parts and the height."""
    parts, x, y = [], x0, y0
    for name, color, dash in items:
        need = 30 + _w(name) + 14
        if x > x0 and x + need > width:
            x, y = x0, y + 18
        d = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<line x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}" stroke="{color}" stroke-width="3"{d}/>'
        )
        parts.append(_text(x + 30, y, name))
        x += need
    return parts, (y - y0 + 18) if items else 0.0


def _label(bar: Bar, hi: float, unit: str) -> str:
    arrow = "\u25b8 " if bar.value > hi else ""  # the bar is cut at the axis end
    return f"{arrow}{_value(bar.value, unit)} {bar.note}".strip()


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    unit: str = "",
    reference: tuple[float, str] | None = None,
    cap: float | None = None,
    legend: Sequence[str] = (),
    width: int = 760,
    compact: bool = False,
) -> str:
    """Horizontal bars on one zero-based scale, one per label, with an optional reference line.

    Negative values draw to the left of zero. `cap` clips the axis so one outlier does not flatten the
    rest; a clipped bar ends in an arrow and still prints its value. The reference label sits above
    the plot, so it never crosses a bar label. `compact` (for phones, 380 px) puts each label and
    value on a line of their own above a full-width bar, so the text stays at reading size.
    """
    if compact:
        width = 380
    row, top = (42 if compact else 24), 44.0
    label_w = 8.0 if compact else max([_w(b.label) for b in bars] + [40.0]) + 12
    note_w = 8.0 if compact else max([_w(f"{_value(b.value, unit)} {b.note}") for b in bars] + [40.0]) + 10
    leg_parts, leg_h = _legend([(n, _color(n), "") for n in legend], 8, top, width)
    top += leg_h + (18 if reference else 0)
    values = [b.value for b in bars]
    hi = max([*values, reference[0] if reference else 0.0, 0.0])
    lo = min([*values, 0.0])
    if cap is not None:
        hi = min(hi, cap)
    if hi - lo <= 0:
        hi = 1.0
    plot_w = max(width - label_w - note_w - 8, 120.0 if compact else 320.0)
    width = int(label_w + plot_w + note_w + 8)

    def px(v: float) -> float:
        return label_w + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    # Compact labels wrap to the chart's width (never cut); each row is as tall as its lines need.
    per_line = int((width - 16) / CHAR_W)
    texts = [f"{b.label}: {_label(b, hi, unit)}" for b in bars]
    wrapped = [textwrap.wrap(t, per_line) or [""] for t in texts] if compact else [[""] for _ in bars]
    heights = [18 * len(w) + 24 if compact else row for w in wrapped]
    starts = [top + sum(heights[:i]) for i in range(len(bars))]
    bottom = top + (sum(heights) if bars else row)
    height = bottom + 24
    parts = [_open(width, height, title), _text(8, 18, title, bold=True), *leg_parts]
    for tick in _ticks(lo, hi, 4):
        if lo - 1e-9 <= tick <= hi + 1e-9:
            x = px(tick)
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 2}" y2="{bottom}" stroke="#e4e4e4"/>')
            tick_label = _value(tick, unit) if unit == "$" else fmt(tick)
            parts.append(_text(x, bottom + 16, tick_label, anchor="middle", color=MUTED, size=11))
    if reference is not None:
        x = px(reference[0])
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}" stroke="{REF}" '
            f'stroke-width="1.5" stroke-dasharray="5 3"/>'
        )
        parts.append(_text(x, top - 10, reference[1], anchor="middle", color=REF))
    zero = px(0.0)
    for i, bar in enumerate(bars):
        y = starts[i]
        end = px(bar.value)
        x0, length = min(zero, end), abs(end - zero)
        label = _label(bar, hi, unit)
        bar_y, bar_h = (y + 18 * len(wrapped[i]) + 4, 14) if compact else (y + 4, row - 8)
        if compact:
            parts += [_text(8, y + 16 + 18 * k, line, halo=True) for k, line in enumerate(wrapped[i])]
        else:
            parts.append(_text(label_w - 8, y + 16, bar.label, anchor="end"))
        parts.append(
            f'<rect x="{x0:.1f}" y="{bar_y}" width="{length:.1f}" height="{bar_h}" fill="{_color(bar.color)}">'
            f"<title>{escape(bar.label)}: {escape(_value(bar.value, unit))}</title></rect>"
        )
        if not compact:
            parts.append(_text(max(end, zero) + 5, y + 16, label, halo=True))
    if not bars:
        parts.append(_text(label_w, top + 16, "nothing to chart"))
    parts.append(f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="{top - 2}" y2="{bottom}" stroke="{MUTED}"/>')
    parts.append("</svg>")
    return "".join(parts)


def grid_chart(
    rows: Sequence[str],
    cols: Sequence[str],
    cells: Sequence[Sequence[str]],
    *,
    title: str,
    row_title: str,
    col_title: str,
    mark: tuple[int, int] | None = None,
) -> str:
    """A grid of categorical cells (verdicts) coloured by `COLORS`; `mark` outlines the base case."""
    words = [v for r in cells for v in r]
    cell_w = max([_w(v) for v in [*words, *cols]] + [60.0]) + 14
    cell_h, left, top = 26, max([_w(r) for r in rows] + [60.0]) + 14, 70
    width = left + cell_w * len(cols) + 12
    height = top + cell_h * len(rows) + 30
    parts = [_open(width, height, title), _text(8, 18, title, bold=True)]
    parts.append(
        _text(left + cell_w * len(cols) / 2, 42, "columns: " + col_title, anchor="middle", color=MUTED)
    )
    for j, col in enumerate(cols):
        parts.append(_text(left + j * cell_w + cell_w / 2, top - 8, col, anchor="middle"))
    for i, label in enumerate(rows):
        y = top + i * cell_h
        parts.append(_text(left - 8, y + 18, label, anchor="end"))
        for j, value in enumerate(cells[i]):
            x = left + j * cell_w
            stroke = f' stroke="{INK}" stroke-width="3"' if mark == (i, j) else ' stroke="#fff"'
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{cell_w:.1f}" height="{cell_h}" fill="{_color(value)}"{stroke}>'
                f"<title>{escape(label)}, {escape(cols[j])}: {escape(value)}</title></rect>"
            )
            parts.append(_text(x + cell_w / 2, y + 18, value, anchor="middle", color=INK, bold=True))
    parts.append(_text(8, top + cell_h * len(rows) + 20, row_title, color=MUTED))
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Line:
    """One series of a line chart; None values break the line (a gap in the data is not a zero)."""

    name: str
    values: Sequence[float | None]
    color: str  # a key of COLORS or a #rrggbb colour
    dashed: bool = False  # planned figures are dashed, measured ones solid


def line_chart(
    x: Sequence[float],
    lines: Sequence[Line],
    *,
    title: str,
    unit: str = "",
    x_labels: Sequence[tuple[float, str]] = (),
    percent: bool = False,
    stacked: bool = False,
    width: int = 760,
    height: int = 240,
) -> str:
    """Lines (or stacked areas) over a shared x axis; y always starts at zero (magnitudes compare).

    Each series gets its own dash pattern besides its colour, so two identical series are both seen
    (the later one draws thinner on top). `percent` reads fractions and labels ticks 0-100%.
    """
    left, right, bottom = 70, 14, 30
    leg, leg_h = _legend(
        [
            (
                ln.name,
                _color(ln.color),
                DASHES[1] if ln.dashed else ("" if stacked else DASHES[k % len(DASHES)]),
            )
            for k, ln in enumerate(lines)
        ],
        left,
        42,
        width,
    )
    top = 42 + leg_h + 6
    height = max(height, int(top + 140 + bottom))
    plot_w, plot_h = width - left - right, height - top - bottom
    cum = [0.0] * len(x)
    layers: list[tuple[Line, list[float | None], list[float]]] = []
    for ln in lines:
        base = list(cum)
        vals: list[float | None] = []
        for i, v in enumerate(ln.values):
            if v is None:
                vals.append(None)
                continue
            vals.append(cum[i] + v if stacked else v)
            if stacked:
                cum[i] += v
        layers.append((ln, vals, base))
    finite = [v for _, vals, _ in layers for v in vals if v is not None]
    hi = max([*finite, 1.0 if percent else 0.0]) or 1.0
    if not (percent and hi <= 1.0):
        step = _nice_step(hi * 1.02, 4)
        hi = math.ceil(hi * 1.02 / step) * step  # the top gridline is a round number above the data
    lo_x, hi_x = (x[0], x[-1]) if x else (0.0, 1.0)
    span_x = (hi_x - lo_x) or 1.0

    def px(v: float) -> float:
        return left + plot_w * (v - lo_x) / span_x

    def py(v: float) -> float:
        return top + plot_h * (1 - v / hi)

    parts = [_open(width, height, title), _text(8, 18, title, bold=True), *leg]
    for tick in _ticks(0.0, hi, 4):
        if tick > hi + 1e-9:
            continue
        y = py(tick)
        label = f"{tick * 100:.0f}%" if percent else f"{fmt(tick)} {unit}".strip()
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        parts.append(_text(left - 6, y + 4, label, anchor="end", color=MUTED, size=11))
    last = -1e9
    for xv, label in x_labels:
        at = px(xv)
        if at - last < _w(label) + 8:
            continue  # never overlap two tick labels
        parts.append(_text(at, height - 10, label, anchor="middle", color=MUTED, size=11))
        last = at
    parts.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{py(0):.1f}" y2="{py(0):.1f}" stroke="{MUTED}"/>'
    )
    for k, (ln, series, base) in enumerate(layers):
        color = _color(ln.color)
        if stacked:
            pts = [(px(x[i]), py(v)) for i, v in enumerate(series) if v is not None]
            back = [(px(x[i]), py(base[i])) for i in reversed(range(len(series))) if series[i] is not None]
            poly = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts + back)
            parts.append(f'<polygon points="{poly}" fill="{color}" fill-opacity="0.75" stroke="none"/>')
            continue
        dash = DASHES[1] if ln.dashed else DASHES[k % len(DASHES)]
        d = f' stroke-dasharray="{dash}"' if dash else ""
        stroke_w = max(3.0 - 0.6 * k, 1.4)
        for run in _runs(series):
            if len(run) == 1:
                i, v = run[0]
                parts.append(f'<circle cx="{px(x[i]):.1f}" cy="{py(v):.1f}" r="2.5" fill="{color}"/>')
                continue
            pts_s = " ".join(f"{px(x[i]):.1f},{py(v):.1f}" for i, v in run)
            parts.append(
                f'<polyline points="{pts_s}" fill="none" stroke="{color}" stroke-width="{stroke_w:.1f}"{d}/>'
            )
    parts.append("</svg>")
    return "".join(parts)


def line_charts(x: Sequence[float], lines: Sequence[Line], **options: Any) -> tuple[str, str]:
    """The same line chart wide (760 px) and for a phone (400 px, text at reading size)."""
    return line_chart(x, lines, **options), line_chart(x, lines, width=400, height=260, **options)


def hour_ticks(x_max: float) -> list[tuple[float, str]]:
    """Ticks for an axis in hours: at most about eight, at 1, 2, 6, 12, 24, 48 or 168 h steps."""
    for step in (1.0, 2.0, 6.0, 12.0, 24.0, 48.0, 168.0):
        if x_max / step <= 8:
            return [(i * step, f"{i * step:g} h") for i in range(int(x_max / step) + 1)]
    return [(t, f"{t:g} h") for t in _ticks(0.0, x_max)]


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
