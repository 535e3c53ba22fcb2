"""The `silica advise --html` report: what to do per workload, in words a finance reader can trust.

The saving is shown in two steps, "right-size on today's vendor" and "change chip", each with its own
migration effort, because moving chip costs weeks of porting while right-sizing costs days. All money
is drawn on one scale (small multiples would hide that a $2.7k workload is small next to $2.5M).
Reasons are plain language; the rule each cites is a tooltip and a link to the rules table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from silica.advise.results import GROUPS, Advice, Option, WorkloadAdvice
from silica.report._format import money, months, pct, plain_reason, price, weeks
from silica.report.page import Meta, badge, figure, page, table, text, ul
from silica.report.svg import Bar, bar_chart, grid_chart

__all__ = ["advice_html", "reason_html", "saving_steps", "steps_text"]


def reason_html(reason: str, thresholds: Iterable[str]) -> str:
    """One reason: the rule id becomes a link to the rules table with the id as tooltip, and each
    threshold name reads as words with the name as tooltip."""
    words, rule = plain_reason(reason)
    out = text(words)
    for name in sorted(thresholds, key=len, reverse=True):
        spoken = name.replace("_usd_per_month", "").replace("_", " ") + " threshold"
        out = re.sub(rf"\b{re.escape(name)}\b", f'<abbr title="threshold {name}">{text(spoken)}</abbr>', out)
    if rule is not None:
        out += f' <a href="#rule-{text(rule)}" title="rule {text(rule)}" class="small">(rule)</a>'
    return out


def _effort(value: float) -> str:
    return "no porting work" if value == 0 else weeks(value)


def saving_steps(a: WorkloadAdvice) -> tuple[tuple[str, str], tuple[str, str]]:
    """The two saving steps as (amount, effort): right-size in today's family, then the extra from a
    chip change. The amount is "-" when there is no such step, "(same vendor)" when the proposal is
    itself a right-size."""
    r, p = a.right_size, a.proposed
    today = a.current.monthly_usd
    first = (
        ("-", "")
        if r is None or r.monthly_usd is None
        else (f"{money(today - r.monthly_usd)}/mo", _effort(r.migration_weeks))
    )
    if p is None or p.monthly_usd is None or (r is not None and p.group == r.group):
        second = ("-" if p is None else "(same vendor)", "")
    else:
        base = r.monthly_usd if r is not None and r.monthly_usd is not None else today
        second = (f"{money(base - p.monthly_usd)}/mo more", _effort(p.migration_weeks))
    return first, second


def steps_text(a: WorkloadAdvice) -> tuple[str, str]:
    """The two steps as plain text (Markdown, terminal)."""
    return tuple(f"{m}, {e}" if e else m for m, e in saving_steps(a))  # type: ignore[return-value]


def _steps_html(a: WorkloadAdvice) -> tuple[str, str]:
    return tuple(  # type: ignore[return-value]
        f"{text(m)}<br><span class='small'>{text(e)}</span>" if e else text(m) for m, e in saving_steps(a)
    )


def advice_html(advice: Advice, meta: Meta) -> str:
    """The whole advice page."""
    w = advice.workloads
    th = advice.rules["thresholds"]
    body = [f"<p class='small'>Inventory: {text(advice.inventory)}</p>", "<h2>Summary</h2>"]
    rows = []
    for a in w:
        first, second = _steps_html(a)
        rows.append(
            [
                text(a.name),
                text(a.task),
                badge(a.verdict),
                money(a.current.monthly_usd),
                first,
                second,
                money(a.proposed_monthly_usd),
                months(a.payback_months) if a.proposed else "-",
            ]
        )
    body.append(
        table(
            [
                "workload",
                "task",
                "verdict",
                "today / month",
                "right-size on today's vendor",
                "change chip",
                "proposed / month",
                "payback",
            ],
            rows,
            numeric=(3, 4, 5, 6, 7),
        )
    )
    bars = []
    for a in w:
        bars.append(Bar(f"{a.name}: today", a.current.monthly_usd, "current"))
        if a.proposed is not None:
            bars.append(Bar(f"{a.name}: proposed", a.proposed_monthly_usd, a.verdict))
    body.append(
        _bar_figure(
            bars,
            dict(title="Monthly cost, today and proposed", unit="$"),
            "Monthly cost in US dollars, all workloads on one scale starting at zero; grey is today, "
            "coloured is the proposed deployment (by family). Workloads that stay have one bar.",
        )
    )
    limit = th["max_payback_months"]["value"]
    body.append(
        _bar_figure(
            _payback_bars(w),
            dict(
                title="Payback of the migration (months)",
                unit="months",
                reference=(limit, f"longest payback allowed: {limit:g} months"),
                cap=2 * limit,
            ),
            "Months until the monthly saving repays the engineering effort, from zero; the dashed line "
            f"is the longest payback the rules accept ({limit:g} months). Grey bars are alternatives "
            "that were declined; an arrow marks a bar cut at twice the limit.",
        )
    )
    body.extend(_workload_section(a, advice) for a in w)
    body.append(_rules_section(advice))
    body.append("<h2>Assumptions</h2>" + ul(advice.assumptions))
    return page("Silica advice", body, meta)


def _bar_figure(bars: Sequence[Bar], options: dict[str, Any], caption: str) -> str:
    """A bar chart drawn wide and compact (phones), with its caption."""
    return figure(bar_chart(bars, **options), caption, bar_chart(bars, compact=True, **options))


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
        note = "today" if o.instance == a.current.instance else ""
        note = "proposed" if a.proposed and o.instance == a.proposed.instance else note
        bars.append(Bar(o.instance, o.unit_cost or 0.0, o.group, note))
    return bars


def _family_rows(a: WorkloadAdvice, names: Sequence[str]) -> Iterable[list[str]]:
    for group, best in a.best.items():
        o = best.option
        if o is None:
            yield [
                text(group),
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                "; ".join(reason_html(r, names) for r in best.reasons),
            ]
            continue
        notes = "; ".join(reason_html(r, names) for r in [*best.reasons, *o.reasons]) or "-"
        yield [
            text(group),
            text(f"{o.instances} x {o.instance}"),
            money(o.monthly_usd),
            money(o.monthly_savings_usd),
            _effort(o.migration_weeks),
            months(o.payback_months) if o.monthly_usd is not None else "-",
            text(o.status)
            + (f" (break-even {price(o.breakeven_usd_per_hour)})" if o.status == "unpriced" else ""),
            *_energy_cells(o),
            notes,
        ]


def _energy_cells(o: Option) -> list[str]:
    """W per instance, joules per token (output, or training) and kgCO2e per 1M output tokens of the
    option's estimate (`plan.energy`); a chip with no published power shows dashes, never a number."""
    e = o.estimate.energy if o.estimate is not None else None
    if e is None or not e.known:
        return ["-", "-", "-"]

    def fig(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    per_token = e.j_per_output_token if e.j_per_output_token is not None else e.j_per_training_token
    return [
        fig(e.instance_power_w, ",.0f"),
        fig(per_token, ",.3g"),
        fig(e.kg_co2e_per_1m_output_tokens, ",.3g"),
    ]


def _option_rows(options: Iterable[Option], names: Sequence[str]) -> Iterable[list[str]]:
    for o in options:
        yield [
            text(o.instance),
            text(o.group),
            text(o.status),
            text(o.instances if o.instances is not None else "-"),
            price(o.usd_per_hour),
            money(o.monthly_usd),
            pct(o.savings_fraction),
            price(o.breakeven_usd_per_hour),
            "; ".join(reason_html(r, names) for r in o.reasons) or "-",
        ]


def _workload_section(a: WorkloadAdvice, advice: Advice) -> str:
    names = list(advice.rules["thresholds"])
    unit = next((o.unit for o in a.options), "")
    s = a.sensitivity
    base_util = advice.rules["thresholds"][s.utilisation_name]["value"]
    mark = (
        (s.price_factors.index(1.0), s.utilisations.index(base_util)) if base_util in s.utilisations else None
    )
    first, second = map(text, steps_text(a))
    parts = [
        f"<section><h2>{text(a.name)} {badge(a.verdict)}</h2>",
        f"<p class='small'>{text(a.model)}, {text(a.task)}; today: {text(a.current.basis)} = "
        f"{money(a.current.monthly_usd)}/month</p>",
        f"<p><b>Right-size on today's vendor:</b> {first}. <b>Change chip:</b> {second}.</p>",
        "<h3>Why</h3>" + ul((reason_html(r, names) for r in a.reasons), escaped=True),
        "<h3>Best deployment per family</h3>",
        table(
            [
                "family",
                "deployment",
                "per month",
                "saving / month",
                "migration",
                "payback",
                "status",
                "W / instance",
                "J / output token" if a.task != "training" else "J / training token",
                "kgCO2e / 1M out",
                "notes",
            ],
            _family_rows(a, names),
            numeric=(2, 3, 4, 5, 7, 8, 9),
        ),
        _bar_figure(
            _cost_bars(a),
            dict(title=f"{unit} by instance type", unit="$", legend=GROUPS),
            f"{unit} in US dollars for each priced deployment that can run this workload, cheapest first, "
            "on one scale from zero; colour is the chip family.",
        ),
        figure(
            grid_chart(
                [f"price x{f:g}" for f in s.price_factors],
                [f"{u:g}" for u in s.utilisations],
                [list(r) for r in s.verdicts],
                title="Sensitivity of the verdict",
                row_title="rows: proposed prices scaled",
                col_title=s.utilisation_name.replace("_", " "),
                mark=mark,
            ),
            "The verdict if the proposed prices were scaled (rows) or the "
            f"{s.utilisation_name.replace('_', ' ')} were different (columns); the outlined cell is today's case.",
        ),
        "<details><summary>Every instance type considered</summary>",
        table(
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
            _option_rows(a.options, names),
            numeric=(3, 4, 5, 6, 7),
        ),
        "</details>",
        "<h3>Assumptions</h3>" + ul(a.assumptions) + "</section>",
    ]
    return "".join(parts)


def _rules_section(advice: Advice) -> str:
    r = advice.rules
    thresholds = (
        [
            text(n),
            text(f"{t['value']:g}"),
            text(t["unit"]),
            text(t["source"]),
            text(t["overridden_by"] or "-"),
        ]
        for n, t in r["thresholds"].items()
    )
    rules = (
        [
            f'<span id="rule-{text(x["id"])}">{text(x["id"])}</span>',
            text(x["effect"]),
            text(", ".join(x["applies_to"])),
            text(x["says"]),
            text(x["source"]),
        ]
        for x in r["rules"]
    )
    arch = r["standard_architectures"]
    return (
        "<section><h2>Decision rules</h2><h3>Thresholds</h3>"
        + table(["name", "value", "unit", "source", "overridden by"], thresholds, numeric=(1,))
        + "<h3>Rules</h3>"
        + table(["id", "effect", "applies to", "says", "source"], rules)
        + f"<p class='small'>Standard Neuron architectures: {text(', '.join(arch['value']))} "
        f"(source: {text(arch['source'])})</p></section>"
    )
