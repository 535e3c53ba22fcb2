"""The `silica claims --html` report: each vendor claim, what Silica computes, and how much of it holds.

The chart draws the share of the claimed effect Silica finds (1 = as claimed, 0 = no effect, below 0 =
the opposite), because raw figures (1.94x, 30%, $/h) do not share a unit; the caption and each bar's
label say so, and the table beside it keeps the raw figures.
"""

from __future__ import annotations

from silica.advise.claims import ClaimsReport
from silica.report._format import price
from silica.report.page import Meta, badge, figure, page, table, text, ul
from silica.report.svg import Bar, bar_chart

__all__ = ["claims_html", "source_line"]


def source_line(made_by: str, where: str) -> str:
    """Who made the claim and where, without repeating a phrase that ends one and starts the other
    ("vendor marketing, as listed in project issue 5" + "listed in project issue 5; ...")."""
    a, b = made_by.strip(), where.strip()
    if b.lower().startswith(a.lower()):
        return b
    for size in range(min(len(a), len(b)), 9, -1):
        if a[-size:].lower() == b[:size].lower():
            return a + b[size:]
    return f"{a}: {b}"


def _raw(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.3g}{'x' if unit == 'x' else ''}"


def claims_html(report: ClaimsReport, meta: Meta) -> str:
    """The whole claims page."""
    body = [
        f"<p class='small'>Prices: {text(report.prices.replace('_', '-'))}; tolerance {report.tolerance:.0%}; "
        f"claims as of {text(report.as_of)}.</p>",
        table(
            ["claim", "verdict", "what Silica computes"],
            ([text(c.claim), badge(c.verdict), text(c.computed)] for c in report.claims),
        ),
    ]
    bars = [
        Bar(
            f"{c.id}: {f.name}",
            f.achieved,
            f.grade,
            f"(Silica {_raw(f.value, f.unit)} vs claimed {_raw(f.claimed, f.unit)})",
        )
        for c in report.claims
        for f in c.figures
        if f.grade is not None and f.achieved is not None
    ]
    body.append(
        figure(
            bar_chart(
                bars,
                title="Share of the claimed effect that Silica finds",
                unit="x",
                reference=(1.0, "as claimed"),
                cap=2.5,
            ),
            "Each bar is the share of the claimed gain that Silica's model finds: 1 means exactly as "
            "claimed, 0 no gain at all, below 0 the opposite effect (drawn left of zero). A claim of "
            "1.94x faster found at 1.26x is (1.26 - 1) / (1.94 - 1) = 0.28. Colour is the grade; the raw "
            "figures are in brackets and in each claim's table.",
            bar_chart(
                bars,
                title="Share of the claimed effect that Silica finds",
                unit="x",
                reference=(1.0, "as claimed"),
                cap=2.5,
                compact=True,
            ),
        )
    )
    for c in report.claims:
        body.append(f"<section><h2>{text(c.id)} {badge(c.verdict)}</h2><p><b>Claim:</b> {text(c.claim)}</p>")
        body.append(f"<p class='small'>Source: {text(source_line(c.made_by, c.where))}</p>")
        body.append(f"<p><b>Silica:</b> {text(c.computed)}<br><b>Verdict:</b> {text(c.reason)}</p>")
        body.append(
            table(
                ["figure", "Silica", "claimed", "unit", "share of claim", "grade"],
                (
                    [
                        text(f.name),
                        text("-" if f.value is None else f"{f.value:,.3g}"),
                        text("-" if f.claimed is None else f"{f.claimed:g}"),
                        text(f.unit),
                        text("-" if f.achieved is None else f"{f.achieved:.2f}"),
                        text(f.grade or "context"),
                    ]
                    for f in c.figures
                ),
                numeric=(1, 2, 4),
            )
        )
        if c.holds_at:
            body.append("<h3>Price at which the claim would hold</h3>")
            body.append(
                table(
                    ["instance", "at or below", "meaning"],
                    ([text(h.instance), price(h.usd_per_hour), text(h.meaning)] for h in c.holds_at),
                    numeric=(1,),
                )
            )
        body.append("<h3>Assumptions</h3>" + ul(c.assumptions) + "</section>")
    body.append("<h2>Standard workloads</h2>")
    body.append(table(["id", "definition"], ([text(k), text(v)] for k, v in report.workloads.items())))
    return page("Vendor claims, re-derived by Silica", body, meta)
