"""The `silica simulate --html` report and the latency-vs-rate charts the web app shows too.

It presents a `SimResult` and a `LatencyCurve` as the library returns them; nothing here computes a
figure. The charts are `report.svg` line charts (the one chart module), drawn wide and for a phone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from silica.report.page import Meta, figure, page, table, text
from silica.report.svg import PALETTE, Line, fmt, line_charts

if TYPE_CHECKING:
    from silica.simulate.curve import LatencyCurve
    from silica.simulate.run import SimResult

__all__ = ["latency_figures", "simulate_html"]

_TITLES = {"ttft_ms": "Time to first token", "tbt_ms": "Time between tokens"}
_COLORS = {"p50": PALETTE[0], "p90": PALETTE[2], "p99": PALETTE[1]}


def latency_lines(curve: LatencyCurve, metric: str) -> list[Line]:
    """p50, p90 and p99 of `metric` over the rates; with a band, p99's low and high ends in grey,
    dashed (an end equal to the central p99, where the band ends at 1.0x, is left out rather than
    drawn over it and hiding it)."""
    central = [Line(q, curve.series(metric, q), _COLORS[q]) for q in ("p50", "p90", "p99")]
    ends = []
    if curve.low is not None and curve.high is not None:
        for end, color in (("low", "#8c8c8c"), ("high", "#444444")):
            values = curve.series(metric, "p99", end)
            if values != central[2].values:
                ends.append(Line(f"p99, band {end}", values, color, dashed=True))
    return [*central, *ends]


def latency_figures(curve: LatencyCurve) -> list[str]:
    """Two figures (TTFT and time between tokens against the offered rate), wide and narrow SVG."""
    x = curve.rates
    ticks = [(r, f"{fmt(r, 2)}/s") for r in x]
    band = ""
    if curve.band is not None:
        p_lo, p_hi, d_lo, d_hi = curve.band
        band = (
            f" Grey, dashed: p99 with every prefill step x{p_lo:.2f} to x{p_hi:.2f} and every decode step "
            f"x{d_lo:.2f} to x{d_hi:.2f} (the chip family's p10-p90 validation band)."
        )
    out = []
    for metric in ("ttft_ms", "tbt_ms"):
        title = f"{_TITLES[metric]} vs request rate"
        out.append(
            figure(
                line_charts(x, latency_lines(curve, metric), title=title, unit="ms", x_labels=ticks),
                f"{_TITLES[metric]} of the same requests replayed at each offered rate (requests per "
                f"second, x axis) on {curve.deployment}; the axis starts at zero.{band}",
            )
        )
    return out


def _row(name: str, p: Any) -> list[str]:
    return [text(name), *(text(f"{v:,.1f}") for v in (p.p50, p.p90, p.p99, p.mean))]


def simulate_html(result: SimResult, curve: LatencyCurve, meta: Meta) -> str:
    """The whole report: the summary at the offered rate, then the latency-vs-rate charts and table."""
    r = result
    summary = table(
        ["ms", "p50", "p90", "p99", "mean"],
        [
            _row("TTFT", r.ttft),
            _row("time between tokens", r.tbt),
            _row("end to end", r.e2e),
            _row("queue", r.queue),
        ],
        numeric=range(1, 5),
    )
    facts = (
        f"<p>{r.completed:,} of {r.requests:,} requests in {r.span_s:,.1f} s: "
        f"{r.throughput_req_s:.2f} req/s, {r.output_tok_s:,.0f} output tokens/s; replicas busy "
        f"{100 * r.utilisation:.0f}%; KV cache {r.kv_tokens:,} tokens, mean {100 * r.kv_mean:.0f}%, "
        f"peak {100 * r.kv_peak:.0f}%; {r.preemptions} preemptions.</p>"
    )
    rows = []
    for k, p in enumerate(curve.points):
        cells = [text(f"{p['offered_req_s']:.2f}")]
        for metric in ("ttft_ms", "tbt_ms"):
            cells += [text(f"{p[metric][q]:,.1f}") for q in ("p50", "p90", "p99")]
            if curve.low is not None and curve.high is not None:
                cells.append(text(f"{curve.low[k][metric]['p99']:,.1f}-{curve.high[k][metric]['p99']:,.1f}"))
        cells.append(text(f"{100 * p['utilisation']:.0f}%"))
        rows.append(cells)
    band_col = ["p99 band"] if curve.low is not None else []
    head = [
        "req/s",
        *(f"TTFT {q}" for q in ("p50", "p90", "p99")),
        *band_col,
        *(f"TBT {q}" for q in ("p50", "p90", "p99")),
        *band_col,
        "busy",
    ]
    body = [
        f"<section><h2>At {r.request_rate:.2f} requests per second</h2>"
        f"<p>{text(r.deployment)} x {r.replicas}; traffic: {text(r.source)}.</p>{summary}{facts}</section>",
        "<section><h2>Latency against request rate</h2>",
        *latency_figures(curve),
        table(head, rows, numeric=range(len(head))),
        "</section>",
    ]
    return page(f"Request-level simulation: {r.deployment}", body, meta)
