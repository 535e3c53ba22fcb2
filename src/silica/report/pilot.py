"""The `silica pilot compare` page: measured against predicted at each load step, with curves.

It presents a `PilotComparison` as the library returns it; nothing here computes a figure.
"""

from __future__ import annotations

from html import escape

from silica.pilot.compare import PilotComparison, StepCheck
from silica.report.page import Meta, figure, page, table
from silica.report.page import text as _t
from silica.report.svg import Line, line_charts

__all__ = ["pilot_html"]

EXTRA_CSS = """
.wide{overflow-x:auto;max-width:100%} .slower{color:#b00020;font-weight:600} .faster{color:#0072b2;font-weight:600}
.confirmed{color:#006b3c;font-weight:600}
@media (max-width:600px){body{margin:.5rem auto;padding:0 .5rem}table{font-size:.78rem}h1{font-size:1.3rem}}
"""
_TITLES = {
    "tpot_ms": ("Time per output token (p50) vs concurrency", "ms"),
    "ttft_ms": ("Time to first token (p50) vs concurrency", "ms"),
    "output_tokens_per_s": ("Output tokens per second vs concurrency", ""),
}
_CAPTION = (
    "Solid: measured at each closed-loop concurrency step. Dashed: Silica's prediction for the same "
    "step and its p10-p90 band. The axis starts at zero."
)


def _n(value: float | None, spec: str = ",.4g") -> str:
    return "-" if value is None else format(value, spec)


def _chart(checks: list[StepCheck], metric: str) -> str:
    rows = sorted((k for k in checks if k.metric == metric and not k.sweep), key=lambda k: k.concurrency)
    if not rows:
        return ""
    x = [float(k.concurrency) for k in rows]
    title, unit = _TITLES[metric]
    lines = [
        Line("measured", [k.measured for k in rows], "proposed"),
        Line("predicted", [k.predicted for k in rows], "current", dashed=True),
        Line("band low (p10)", [k.low for k in rows], "stay", dashed=True),
        Line("band high (p90)", [k.high for k in rows], "other", dashed=True),
    ]
    labels = [(float(k.concurrency), str(k.concurrency)) for k in rows]
    return figure(line_charts(x, lines, title=title, unit=unit, x_labels=labels), _CAPTION)


def _verdict_cell(verdict: str) -> str:
    css = verdict.split()[0]
    return f'<span class="{escape(css)}">{_t(verdict)}</span>'


def pilot_html(cmp: PilotComparison, meta: Meta | None = None) -> str:
    """The whole page, on the shared report shell (run date, version, command, price facts)."""
    checks = list(cmp.checks)
    name = cmp.model.rstrip("/").rsplit("/", 1)[-1]  # a model given as a folder: its name, not the path
    meta = meta or Meta(command="silica pilot compare", prices="as in the prediction")
    body = [
        f"<p><strong>Verdict:</strong> {_verdict_cell(cmp.verdict)}</p>",
        f"<p><strong>What it changes for advise:</strong> {_t(cmp.advise_effect)}</p>",
        f'<p class="small">Prediction: {_t(cmp.prediction_source)}; calibration: {_t(cmp.calibration)}. '
        "Measured latencies are p50 under closed-loop load, so they include queueing in the server.</p>",
    ]
    for metric in ("tpot_ms", "ttft_ms", "output_tokens_per_s"):
        body.append(_chart(checks, metric))
    rows = [
        [
            str(k.concurrency) + (f" (prompt {k.input_len})" if k.sweep else ""),
            _t(k.metric),
            _n(k.measured),
            _n(k.predicted),
            f"{_n(k.low)} - {_n(k.high)}",
            _n(k.ratio, ",.3g"),
            _verdict_cell(k.verdict),
        ]
        for k in sorted(checks, key=lambda k: (k.metric, k.concurrency))
    ]
    body.append("<h2>Every step</h2>")
    body.append(
        table(
            ["concurrency", "metric", "measured", "predicted", "band", "measured/predicted", "verdict"],
            rows,
            (0, 2, 3, 4, 5),
        )
    )
    if cmp.ttft_split:
        body.append("<h2>TTFT: client against the engine</h2>")
        body.append(
            '<p class="small">The engine\'s own histogram starts when its front end has the request; the '
            "client's TTFT also holds the network, HTTP handling and streaming. Mean client - mean engine "
            "is the mean time outside the engine.</p>"
        )
        split_rows = [
            [
                _t(t.step),
                _n(t.client_mean_ms),
                _n(t.engine_mean_ms),
                _n(t.client_p50_ms),
                _n(t.engine_p50_ms),
                _n(t.outside_engine_ms),
                f"{t.outside_share:.0%}" if t.outside_share is not None else "-",
            ]
            for t in cmp.ttft_split
        ]
        body.append(
            table(
                ["step", "client mean ms", "engine mean ms", "client p50 ms", "engine p50 ms",
                 "outside the engine ms", "share"],
                split_rows,
                (1, 2, 3, 4, 5, 6),
            )
        )  # fmt: skip
    return page(f"Pilot: {name} on {cmp.instance} ({cmp.engine})", body, meta, extra_css=EXTRA_CSS)
