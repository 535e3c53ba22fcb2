"""Small SVG charts, written as text: horizontal bars, paired bars and a verdict grid.

The reports must open offline and load nothing, so the charts are inline SVG generated here rather than
a charting library pulled from a CDN. Each function takes plain labelled numbers and returns one
`<svg>` element; the `xmlns` attribute is left out on purpose (inline SVG in HTML5 does not need it,
and the report then contains no URL at all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["COLORS", "Bar", "Line", "bar_chart", "grid_chart", "line_chart", "paired_bar_chart"]

# One colour per family and verdict, chosen to stay distinct for common colour-vision deficiencies.
COLORS = {
    "trainium": "#e69f00",
    "inferentia": "#56b4e9",
    "nvidia": "#009e73",
    "stay": "#999999",
    "current": "#666666",
    "proposed": "#0072b2",
    "other": "#cc79a7",
}
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    color: str  # a key of COLORS or a #rrggbb colour
    note: str = ""  # printed after the value


def _color(key: str) -> str:
    return COLORS.get(key, key)


def _fmt(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:,.0f}" if abs(value) >= 100 else f"${value:,.2f}"
    if abs(value) >= 100:
        return f"{value:,.0f} {unit}".strip()
    return f"{value:.2f} {unit}".strip() if abs(value) < 10 else f"{value:.1f} {unit}".strip()


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    unit: str = "",
    reference: tuple[float, str] | None = None,
    cap: float | None = None,
    legend: Sequence[str] = (),
    label_width: int = 210,
    width: int = 760,
) -> str:
    """Horizontal bars, one per label, with an optional vertical reference line (a threshold).

    `cap` clips the axis so one outlier does not flatten the rest; clipped bars end in an arrow.
    """
    row, label_w, top = 22, label_width, 30
    values = [b.value for b in bars if b.value > 0]
    top_value = max([*values, reference[0] if reference else 0.0, 1e-9])
    if cap is not None:
        top_value = min(top_value, cap)
    plot_w = width - label_w - (400 if any(b.note for b in bars) and label_width > 210 else 190)
    height = top + row * max(len(bars), 1) + 30
    parts = [_open(width, height, title), _text(8, 18, title, bold=True), *_legend(width, legend)]
    for i, bar in enumerate(bars):
        y = top + i * row
        length = min(max(bar.value, 0.0) / top_value, 1.0) * plot_w
        clipped = bar.value > top_value
        parts.append(_text(label_w - 6, y + 14, bar.label, anchor="end"))
        parts.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{length:.1f}" height="{row - 6}" fill="{_color(bar.color)}">'
            f"<title>{escape(bar.label)}: {escape(_fmt(bar.value, unit))}</title></rect>"
        )
        arrow = "\u25b8 " if clipped else ""
        parts.append(
            _text(label_w + length + 4, y + 14, f"{arrow}{_fmt(bar.value, unit)} {bar.note}".strip())
        )
    if not bars:
        parts.append(_text(label_w, top + 14, "nothing to chart"))
    if reference is not None:
        x = label_w + reference[0] / top_value * plot_w
        bottom = top + row * max(len(bars), 1)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="#d55e00" stroke-dasharray="4 3"/>'
        )
        parts.append(_text(x + 3, bottom + 14, reference[1], color="#d55e00"))
    parts.append("</svg>")
    return "".join(parts)


def paired_bar_chart(
    rows: Sequence[tuple[str, float, float]],
    *,
    title: str,
    names: tuple[str, str] = ("current", "proposed"),
    unit: str = "$",
    width: int = 760,
) -> str:
    """Two bars per label (e.g. current and proposed monthly cost), with a legend.

    Each pair is scaled to its own larger value, so a $3k workload stays as readable as a $3M one;
    the printed values carry the absolute amounts.
    """
    row, label_w, top = 40, 210, 44
    plot_w = width - label_w - 150
    height = top + row * max(len(rows), 1) + 10
    parts = [_open(width, height, title), _text(8, 18, title, bold=True), *_legend(width, names, y=26)]
    for i, (label, first, second) in enumerate(rows):
        y = top + i * row
        parts.append(_text(label_w - 6, y + 20, label, anchor="end"))
        top_value = max(first, second, 1e-9)
        for k, (name, value) in enumerate(zip(names, (first, second), strict=True)):
            length = max(value, 0.0) / top_value * plot_w
            yy = y + 2 + k * 17
            parts.append(
                f'<rect x="{label_w}" y="{yy}" width="{length:.1f}" height="15" fill="{_color(name)}">'
                f"<title>{escape(label)} {escape(name)}: {escape(_fmt(value, unit))}</title></rect>"
            )
            parts.append(_text(label_w + length + 4, yy + 12, _fmt(value, unit)))
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
    cell_w, cell_h, left, top = 78, 24, 120, 54
    width = left + cell_w * len(cols) + 20
    height = top + cell_h * len(rows) + 24
    parts = [_open(width, height, title), _text(8, 18, title, bold=True)]
    parts.append(_text(left + cell_w * len(cols) / 2, 34, col_title, anchor="middle"))
    for j, col in enumerate(cols):
        parts.append(_text(left + j * cell_w + cell_w / 2, top - 4, col, anchor="middle"))
    for i, label in enumerate(rows):
        y = top + 4 + i * cell_h
        parts.append(_text(left - 6, y + 16, label, anchor="end"))
        for j, value in enumerate(cells[i]):
            x = left + j * cell_w
            stroke = ' stroke="#000" stroke-width="2"' if mark == (i, j) else ' stroke="#fff"'
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell_w}" height="{cell_h}" fill="{_color(value)}"{stroke}>'
                f"<title>{escape(label)}, {escape(cols[j])}: {escape(value)}</title></rect>"
            )
            parts.append(_text(x + cell_w / 2, y + 16, value, anchor="middle"))
    parts.append(_text(8, top + 4 + cell_h * len(rows) + 16, row_title))
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
    width: int = 760,
    height: int = 240,
) -> str:
    """Lines over a shared x axis, y from zero (magnitudes are compared), scaled to the page width.

    The SVG carries a viewBox and no fixed width in CSS terms, so a narrow screen shrinks it instead
    of clipping it; `x_labels` are (x, text) ticks chosen by the caller (times of day, hours).
    """
    left, right, top, bottom = 64, 12, 46, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    finite = [v for line in lines for v in line.values if v is not None]
    hi = max(finite, default=1.0) * 1.08 or 1.0
    lo_x, hi_x = (x[0], x[-1]) if x else (0.0, 1.0)
    span_x = (hi_x - lo_x) or 1.0

    def px(v: float) -> float:
        return left + plot_w * (v - lo_x) / span_x

    def py(v: float) -> float:
        return top + plot_h * (1 - v / hi)

    parts = [
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        f'style="width:100%;max-width:{width}px;height:auto" {FONT}>',
        _text(8, 18, title, bold=True),
    ]
    for k, line in enumerate(lines):
        lx = left + k * 150
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        parts.append(
            f'<line x1="{lx}" y1="31" x2="{lx + 22}" y2="31" stroke="{_color(line.color)}" stroke-width="2.5"{dash}/>'
        )
        parts.append(_text(lx + 26, 35, line.name))
    for i in range(5):
        v = hi * i / 4
        y = py(v)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(_text(left - 6, y + 4, _fmt(v, unit), anchor="end", color="#444"))
    for xv, label in x_labels:
        parts.append(_text(px(xv), height - 10, label, anchor="middle", color="#444"))
    for line in lines:
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        run: list[str] = []
        points: list[tuple[float | None, float | None]] = [*zip(x, line.values, strict=True), (None, None)]
        for at, value in points:
            if value is None or at is None:
                if len(run) > 1:
                    parts.append(
                        f'<polyline points="{" ".join(run)}" fill="none" stroke="{_color(line.color)}" '
                        f'stroke-width="2"{dash}/>'
                    )
                elif run:
                    cx, cy = run[0].split(",")
                    parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{_color(line.color)}"/>')
                run = []
                continue
            run.append(f"{px(at):.1f},{py(value):.1f}")
    parts.append("</svg>")
    return "".join(parts)


def _legend(width: int, names: Sequence[str], y: int = 8) -> list[str]:
    parts = []
    for k, name in enumerate(names):
        x = width - 110 * (len(names) - k)
        parts.append(f'<rect x="{x}" y="{y}" width="12" height="10" fill="{_color(name)}"/>')
        parts.append(_text(x + 16, y + 9, name))
    return parts


def _open(width: int, height: int, title: str) -> str:
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" {FONT}>'
    )


def _text(
    x: float, y: float, text: str, *, anchor: str = "start", bold: bool = False, color: str = "#222"
) -> str:
    weight = ' font-weight="600"' if bold else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{color}"{weight}>{escape(text)}</text>'
    )
