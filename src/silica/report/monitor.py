"""The `silica monitor report` page (HTML with time-series charts) and its Markdown twin.

Both present a `MonitorReport` as the library returns it; the only arithmetic here is unit conversion
for display (fractions to percent, seconds to clock times).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from silica import __version__
from silica.monitor.results import DeploymentReport, Latency, MonitorReport, Span
from silica.report.markdown import md_table
from silica.report.page import Meta, figure, page
from silica.report.page import table as _table
from silica.report.page import text as _t
from silica.report.svg import Line, line_charts

__all__ = ["monitor_html", "monitor_markdown"]

EXTRA_CSS = """
.wide{overflow-x:auto;max-width:100%} .flag{color:#b00020;font-weight:600} .ok{color:#006b3c;font-weight:600}
"""
CAPTIONS = (
    "Output tokens per second delivered (solid) against the plan's capacity (dashed), from zero.",
    "Mean time to first token and per output token in each step (solid) against the plan (dashed), in ms.",
    "Share of the time the chips were busy in each step, 0-100%.",
)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M")


def _n(value: float | None, spec: str = ",.0f", suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


def _lat(lat: Latency | None) -> str:
    if lat is None:
        return "-"
    return f"{_n(lat.p50_ms)} / {_n(lat.p90_ms)} / {_n(lat.p99_ms)}"


def _band(mid: float | None, low: float | None, high: float | None) -> str:
    if mid is None:
        return "-"
    return f"{mid:,.0f} ({_n(low)}-{_n(high)})"


def _slo(value: bool | None) -> str:
    return {True: "met", False: "missed", None: "-"}[value]


def _summary_rows(report: MonitorReport) -> Iterable[list[str]]:
    for d in report.deployments:
        o, p = d.overall, d.plan
        yield [
            _t(d.name),
            _t(f"{p.instance}: {p.model}" if p.model else p.instance),
            _t(d.verdict),
            _n(o.output_tokens_per_s),
            _n(d.peak_output_tokens_per_s),
            _n(
                None
                if p.tokens_per_s_per_instance is None
                else p.tokens_per_s_per_instance * (d.peak_instances or p.count)
            ),
            _n(None if o.utilisation is None else o.utilisation * 100, ".0f", "%"),
            _t(_lat(o.ttft)),
            _t(_band(p.ttft_ms, p.ttft_ms_low, p.ttft_ms_high)),
            _t(_lat(o.tpot)),
            _t(_band(p.tpot_ms, p.tpot_ms_low, p.tpot_ms_high)),
            _n(o.instance_hours, ",.1f") + ("" if d.instances_from == "telemetry" else " (plan)"),
            _n(o.usd_per_1m_output_tokens, ",.3f"),
            _n(p.usd_per_1m_output_tokens, ",.3f"),
        ]


SUMMARY_HEAD = (
    "deployment",
    "plan",
    "verdict",
    "tokens/s",
    "peak tokens/s",
    "planned capacity",
    "utilisation",
    "TTFT p50/p90/p99 ms",
    "TTFT plan (band)",
    "TPOT p50/p90/p99 ms",
    "TPOT plan (band)",
    "instance-hours",
    "$/1M actual",
    "$/1M plan",
)


def _ticks(steps: Sequence[Span]) -> list[tuple[float, str]]:
    if not steps:
        return []
    ends = [s.end for s in steps]
    every = max(1, len(ends) // 6)
    return [(t, _clock(t)) for t in ends[::every]]


def _charts(d: DeploymentReport) -> list[str]:
    x = [s.end for s in d.steps]
    ticks = _ticks(d.steps)
    p = d.plan
    charts = [
        line_charts(
            x,
            [
                Line("delivered", [s.output_tokens_per_s for s in d.steps], "proposed"),
                Line("planned capacity", list(d.capacity_tokens_per_s), "trainium", dashed=True),
            ],
            title=f"{d.name}: output tokens/s, planned vs actual",
            unit="tok/s",
            x_labels=ticks,
        ),
        line_charts(
            x,
            [
                Line("TTFT mean", [s.ttft.mean_ms if s.ttft else None for s in d.steps], "nvidia"),
                Line("TPOT mean", [s.tpot.mean_ms if s.tpot else None for s in d.steps], "proposed"),
                # Darker shades: a plan line that equals the measured one stays visible on top of it.
                Line("TTFT plan", [p.ttft_ms] * len(x), "#004d33", dashed=True),
                Line("TPOT plan", [p.tpot_ms] * len(x), "#00335c", dashed=True),
            ],
            title=f"{d.name}: latency vs time",
            unit="ms",
            x_labels=ticks,
        ),
        line_charts(
            x,
            [
                Line(
                    "chip utilisation",
                    [s.utilisation for s in d.steps],
                    "trainium",
                )
            ],
            title=f"{d.name}: utilisation vs time",
            x_labels=ticks,
            percent=True,
        ),
    ]
    return [figure(c, caption) for c, caption in zip(charts, CAPTIONS, strict=True)]


def _window_rows(d: DeploymentReport) -> Iterable[list[str]]:
    flagged = {x.start for x in d.drift}
    for w in d.windows:
        mark = '<span class="flag">drift</span>' if w.start in flagged else '<span class="ok">in band</span>'
        yield [
            _t(f"{_iso(w.start)} - {_clock(w.end)}"),
            _n(w.output_tokens_per_s),
            _n(None if w.utilisation is None else w.utilisation * 100, ".0f", "%"),
            _n(w.ttft.mean_ms if w.ttft else None, ",.1f"),
            _n(w.tpot.mean_ms if w.tpot else None, ",.1f"),
            _n(w.instance_hours, ",.2f"),
            _n(w.usd, ",.2f"),
            mark,
        ]


def _section(d: DeploymentReport) -> str:
    parts = [f"<section><h2>{_t(d.name)}</h2>", f'<p class="small">Plan: {_t(d.plan.source)}</p>']
    parts += _charts(d)
    parts.append('<h3>Windows</h3><div class="wide">')
    parts.append(
        _table(
            (
                "window",
                "tokens/s",
                "utilisation",
                "TTFT mean ms",
                "TPOT mean ms",
                "instance-hours",
                "cost $",
                "plan band",
            ),
            _window_rows(d),
            numeric=(1, 2, 3, 4, 5, 6),
        )
    )
    parts.append("</div>")
    if d.chips:
        parts.append('<h3>Utilisation per chip</h3><div class="wide">')
        parts.append(
            _table(("chip", "mean busy"), ([_t(c), f"{u * 100:.0f}%"] for c, u in d.chips), numeric=(1,))
        )
        parts.append("</div>")
    if d.gaps or d.missing or d.resets:
        parts.append(
            "<h3>Gaps in the data</h3><ul>"
            + "".join(f"<li>{_t(g)}</li>" for g in (*d.gaps, *d.resets, *d.missing))
            + "</ul>"
        )
    parts += [f'<p class="small">TTFT: {_t(n)}</p>' for n in d.ttft_notes]
    parts.append("</section>")
    return "".join(parts)


def monitor_html(report: MonitorReport, meta: Meta | None = None) -> str:
    """The `silica monitor report --html` page: self-contained, charts inline, readable at 400 px."""
    title = "Silica monitor: production against plan"
    meta = meta or Meta(command="silica monitor report", prices="as in the plan file")
    body = [
        f"<p>{_t(_iso(report.since))} to {_t(_iso(report.until))}; windows of {report.window_s / 3600:g} h; "
        f"sources: {_t(', '.join(report.sources))}.</p>",
        '<h2>Summary</h2><div class="wide">',
        _table(SUMMARY_HEAD, _summary_rows(report), numeric=(3, 4, 5, 6, 11, 12, 13)),
        "</div>",
    ]
    drift = [x.describe() for d in report.deployments for x in d.drift]
    body.append("<h2>Drift outside the plan's band</h2>")
    body.append(
        "<ul>" + "".join(f'<li class="flag">{_t(x)}</li>' for x in drift) + "</ul>"
        if drift
        else "<p>None: every window with data stayed inside the band.</p>"
    )
    body.append("<h2>Advice</h2>")
    body.append(
        "<ul>" + "".join(f"<li><b>{_t(a.kind)}</b>: {_t(a.text)}</li>" for a in report.advice) + "</ul>"
        if report.advice
        else "<p>Nothing to change.</p>"
    )
    body += [_section(d) for d in report.deployments]
    if report.notes:
        body.append(
            "<h2>Notes on the data</h2><ul>" + "".join(f"<li>{_t(n)}</li>" for n in report.notes) + "</ul>"
        )
    return page(title, body, meta, extra_css=EXTRA_CSS)


def monitor_markdown(report: MonitorReport) -> str:
    """The same figures as Markdown tables (no charts)."""
    lines = [
        "# Silica monitor: production against plan",
        "",
        f"{_iso(report.since)} to {_iso(report.until)}; windows of {report.window_s / 3600:g} h; "
        f"Silica {__version__}; sources: {', '.join(report.sources)}.",
        "",
        "## Summary",
        "",
    ]
    plain = [[_plain(c) for c in row] for row in _summary_rows(report)]
    lines += md_table(SUMMARY_HEAD, plain)
    lines += ["", "## Drift outside the plan's band", ""]
    drift = [x.describe() for d in report.deployments for x in d.drift]
    lines += [f"- {x}" for x in drift] or ["None."]
    lines += ["", "## Advice", ""]
    lines += [f"- **{a.kind}**: {a.text}" for a in report.advice] or ["Nothing to change."]
    for d in report.deployments:
        from silica.report.markdown import md_name

        lines += ["", f"## {md_name(d.name)}", "", f"Plan: {md_name(d.plan.source)}", ""]
        lines += md_table(
            (
                "window",
                "tokens/s",
                "utilisation",
                "TTFT mean ms",
                "TPOT mean ms",
                "instance-hours",
                "cost $",
                "plan band",
            ),
            [[_plain(c) for c in row] for row in _window_rows(d)],
        )
        lines += [f"- gap: {g}" for g in (*d.gaps, *d.missing)] + [f"- counter reset: {r}" for r in d.resets]
        lines += [f"- TTFT: {n}" for n in d.ttft_notes]
    if report.notes:
        lines += ["", "## Notes on the data", ""] + [f"- {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def _plain(cell: str) -> str:
    """A table cell without its HTML markup, for Markdown."""
    import re
    from html import unescape

    return unescape(re.sub(r"<[^>]+>", "", cell))
