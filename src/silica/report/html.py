"""Self-contained HTML reports: one file, inline CSS and SVG, no scripts, no fonts, no URLs.

A FinOps lead should be able to mail the file or open it on a plane; nothing in it is fetched.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from silica.advise.claims import ClaimsReport
from silica.advise.results import GROUPS, Advice, Option, WorkloadAdvice
from silica.report._format import money, months, offline, pct, price, weeks
from silica.report.svg import Bar, bar_chart, grid_chart, paired_bar_chart

__all__ = ["advice_html", "claims_html"]

CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;line-height:1.4;padding:0 1rem}
table{border-collapse:collapse;margin:.6rem 0 1.2rem;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f2f2} td.num{text-align:right;white-space:nowrap}
.verdict{display:inline-block;padding:.1rem .5rem;border-radius:.3rem;color:#fff;font-weight:600}
.trainium{background:#e69f00}.inferentia{background:#56b4e9}.nvidia{background:#009e73}.stay{background:#999}
.supported{background:#009e73}.partly{background:#e69f00}.not-supported{background:#d55e00}.cannot-check{background:#999}
.small{font-size:.85rem;color:#555} section{margin-bottom:2.5rem} svg{display:block;margin:.5rem 0}
"""


def _page(title: str, body: Iterable[str]) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{CSS}</style></head><body>\n{''.join(body)}\n</body></html>\n"
    )


def _t(text: object) -> str:
    return escape(offline(str(text)))


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()) -> str:
    nums = set(numeric)
    out = ["<table><tr>", *(f"<th>{_t(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        cells = (f'<td class="num">{c}</td>' if i in nums else f"<td>{c}</td>" for i, c in enumerate(row))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _badge(verdict: str) -> str:
    return f'<span class="verdict {verdict.replace(" ", "-")}">{_t(verdict)}</span>'


def _list(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{_t(i)}</li>" for i in items) + "</ul>"


def advice_html(advice: Advice) -> str:
    """The `silica advise --html` report."""
    w = advice.workloads
    body = [f"<h1>Silica advice</h1><p class='small'>Inventory: {_t(advice.inventory)}</p>"]
    body.append("<h2>Summary</h2>")
    body.append(
        _table(
            [
                "workload",
                "task",
                "verdict",
                "today / month",
                "proposed / month",
                "saving / month",
                "migration",
                "payback",
            ],
            (
                [
                    _t(a.name),
                    _t(a.task),
                    _badge(a.verdict),
                    money(a.current.monthly_usd),
                    money(a.proposed_monthly_usd),
                    money(a.monthly_savings_usd),
                    weeks(a.migration_weeks),
                    months(a.payback_months) if a.proposed else "-",
                ]
                for a in w
            ),
            numeric=(3, 4, 5, 6, 7),
        )
    )
    body.append(
        paired_bar_chart(
            [(a.name, a.current.monthly_usd, a.proposed_monthly_usd) for a in w],
            title="Current vs proposed monthly cost",
            names=("current", "proposed"),
        )
    )
    limit = advice.rules["thresholds"]["max_payback_months"]["value"]
    body.append(
        bar_chart(
            _payback_bars(w),
            title="Payback of the migration",
            unit="months",
            reference=(limit, f"max_payback_months = {limit:g}"),
            cap=2 * limit,
        )
    )
    body.extend(_workload_section(a, advice) for a in w)
    body.append(_rules_section(advice))
    body.append("<h2>Assumptions</h2>" + _list(advice.assumptions))
    return _page("Silica advice", body)


def _payback_bars(workloads: Sequence[WorkloadAdvice]) -> list[Bar]:
    bars = []
    for a in workloads:
        if a.proposed is not None and a.proposed.payback_months is not None:
            bars.append(Bar(a.name, a.proposed.payback_months, a.verdict, f"-> {a.verdict}"))
        elif a.best_alternative is not None and a.best_alternative.payback_months is not None:
            bars.append(Bar(a.name, a.best_alternative.payback_months, "stay", "(declined: stays)"))
    return bars


def _cost_bars(a: WorkloadAdvice, limit: int = 14) -> list[Bar]:
    priced = sorted((o for o in a.options if o.unit_cost is not None), key=lambda o: o.unit_cost or 0.0)
    bars = []
    for o in priced[:limit]:
        note = "current" if o.instance == a.current.instance else ""
        note = "proposed" if a.proposed and o.instance == a.proposed.instance else note
        bars.append(Bar(o.instance, o.unit_cost or 0.0, o.group, note))
    return bars


def _family_rows(a: WorkloadAdvice) -> Iterable[list[str]]:
    for group, best in a.best.items():
        o = best.option
        if o is None:
            yield [_t(group), "-", "-", "-", "-", "-", "-", _t("; ".join(best.reasons))]
            continue
        notes = "; ".join([*best.reasons, *o.reasons]) or "-"
        yield [
            _t(group),
            _t(f"{o.instances} x {o.instance}"),
            money(o.monthly_usd),
            money(o.monthly_savings_usd),
            weeks(o.migration_weeks),
            months(o.payback_months) if o.monthly_usd is not None else "-",
            _t(o.status)
            + (f" (break-even {price(o.breakeven_usd_per_hour)})" if o.status == "unpriced" else ""),
            _t(notes),
        ]


def _option_rows(options: Iterable[Option]) -> Iterable[list[str]]:
    for o in options:
        yield [
            _t(o.instance),
            _t(o.group),
            _t(o.status),
            _t(o.instances if o.instances is not None else "-"),
            price(o.usd_per_hour),
            money(o.monthly_usd),
            pct(o.savings_fraction),
            price(o.breakeven_usd_per_hour),
            _t("; ".join(o.reasons) or "-"),
        ]


def _workload_section(a: WorkloadAdvice, advice: Advice) -> str:
    unit = next((o.unit for o in a.options), "")
    s = a.sensitivity
    base_util = advice.rules["thresholds"][s.utilisation_name]["value"]
    mark = (
        (s.price_factors.index(1.0), s.utilisations.index(base_util)) if base_util in s.utilisations else None
    )
    parts = [
        f"<section><h2>{_t(a.name)} {_badge(a.verdict)}</h2>",
        f"<p class='small'>{_t(a.model)}, {_t(a.task)}; today: {_t(a.current.basis)} = {money(a.current.monthly_usd)}/month</p>",
        "<h3>Why</h3>" + _list(a.reasons),
        "<h3>Best deployment per family</h3>",
        _table(
            ["family", "deployment", "per month", "saving", "migration", "payback", "status", "notes"],
            _family_rows(a),
            numeric=(2, 3, 4, 5),
        ),
        bar_chart(_cost_bars(a), title=f"{unit} by instance (priced, feasible)", unit="$", legend=GROUPS),
        grid_chart(
            [f"price x{f:g}" for f in s.price_factors],
            [f"{u:g}" for u in s.utilisations],
            [list(r) for r in s.verdicts],
            title="Sensitivity of the verdict",
            row_title="rows: proposed prices scaled",
            col_title=s.utilisation_name,
            mark=mark,
        ),
        "<details><summary>Every instance type considered</summary>",
        _table(
            [
                "instance",
                "family",
                "status",
                "instances",
                "price",
                "per month",
                "saving",
                "break-even",
                "why",
            ],
            _option_rows(a.options),
            numeric=(3, 4, 5, 6, 7),
        ),
        "</details>",
        "<h3>Assumptions</h3>" + _list(a.assumptions) + "</section>",
    ]
    return "".join(parts)


def _rules_section(advice: Advice) -> str:
    r = advice.rules
    thresholds = (
        [_t(n), _t(f"{t['value']:g}"), _t(t["unit"]), _t(t["source"]), _t(t["overridden_by"] or "-")]
        for n, t in r["thresholds"].items()
    )
    rules = (
        [_t(x["id"]), _t(x["effect"]), _t(", ".join(x["applies_to"])), _t(x["says"]), _t(x["source"])]
        for x in r["rules"]
    )
    arch = r["standard_architectures"]
    return (
        "<section><h2>Decision rules</h2><h3>Thresholds</h3>"
        + _table(["name", "value", "unit", "source", "overridden by"], thresholds, numeric=(1,))
        + "<h3>Rules</h3>"
        + _table(["id", "effect", "applies to", "says", "source"], rules)
        + f"<p class='small'>Standard Neuron architectures: {_t(', '.join(arch['value']))} (source: {_t(arch['source'])})</p>"
        + "</section>"
    )


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def claims_html(report: ClaimsReport) -> str:
    """The `silica claims --html` report."""
    body = ["<h1>Vendor claims, re-derived by Silica</h1>"]
    body.append(
        f"<p class='small'>Prices: {_t(report.prices)} (catalog); tolerance {report.tolerance:.0%}; "
        f"claims as of {_t(report.as_of)}.</p>"
    )
    body.append(
        _table(
            ["claim", "verdict", "what Silica computes"],
            ([_t(c.claim), _badge(c.verdict), _t(c.computed)] for c in report.claims),
        )
    )
    colors = {"supported": "#009e73", "partly": "#e69f00", "not supported": "#d55e00"}
    bars = [
        Bar(c.id, f.achieved, colors[f.grade], _short(f.name))
        for c in report.claims
        for f in c.figures
        if f.grade is not None and f.achieved is not None
    ]
    body.append(
        bar_chart(
            bars,
            title="Share of the claimed effect that Silica finds (1 = as claimed)",
            unit="x",
            reference=(1.0, "as claimed"),
            cap=2.5,
            label_width=260,
            width=1000,
        )
    )
    for c in report.claims:
        body.append(f"<section><h2>{_t(c.id)} {_badge(c.verdict)}</h2><p><b>Claim:</b> {_t(c.claim)}</p>")
        body.append(f"<p class='small'>Made by {_t(c.made_by)}: {_t(c.where)}</p>")
        body.append(f"<p><b>Silica:</b> {_t(c.computed)}<br><b>Verdict:</b> {_t(c.reason)}</p>")
        body.append(
            _table(
                ["figure", "Silica", "claimed", "unit", "grade"],
                (
                    [
                        _t(f.name),
                        _t("-" if f.value is None else f"{f.value:,.3g}"),
                        _t("-" if f.claimed is None else f"{f.claimed:g}"),
                        _t(f.unit),
                        _t(f.grade or "context"),
                    ]
                    for f in c.figures
                ),
                numeric=(1, 2),
            )
        )
        if c.holds_at:
            body.append("<h3>Price at which the claim would hold</h3>")
            body.append(
                _table(
                    ["instance", "at or below", "meaning"],
                    ([_t(h.instance), price(h.usd_per_hour), _t(h.meaning)] for h in c.holds_at),
                    numeric=(1,),
                )
            )
        body.append("<h3>Assumptions</h3>" + _list(c.assumptions) + "</section>")
    body.append("<h2>Standard workloads</h2>")
    body.append(_table(["id", "definition"], ([_t(k), _t(v)] for k, v in report.workloads.items())))
    return _page("Silica: vendor claims", body)
