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

__all__ = ["advice_html", "payback_text", "reason_html", "saving_steps", "steps_text"]


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


def _payback(o: Option) -> str:
    return (
        "pays back at once" if o.credited_migration_weeks == 0 else f"pays back in {months(o.payback_months)}"
    )


def _saves(amount: float, more: str = "") -> str:
    """A monthly amount labelled for what it is: a saving, or a cost (never a bare figure)."""
    return f"saves {money(amount)}/mo{more}" if round(amount) >= 0 else f"costs {money(-amount)}/mo more"


def saving_steps(a: WorkloadAdvice) -> tuple[tuple[str, str], tuple[str, str]]:
    """The ladder's two steps as (amount, effort), read from the options' own credited figures.

    Right-size on today's vendor against today; change chip against that right-size. A step the
    verdict does not take says "declined" with its own figures; an absent step says why it is absent.
    """
    r, p = a.right_size, a.proposed
    if r is None or r.monthly_usd is None:
        first = (
            "nothing cheaper on today's vendor" if a.current.instance else "today's instance unknown",
            "",
        )
    else:
        effort = _effort(r.migration_weeks)
        if p is None or p.instance != r.instance:
            taken = p is not None and p.step == "change chip" and r.status == "eligible"
            effort += "; superseded by the chip change" if taken else "; declined (see why)"
        first = (_saves(a.current.monthly_usd - r.monthly_usd), effort)
    chips = [o for o in a.options if o.step == "change chip"]
    priced = [o for o in chips if o.credited_savings_usd is not None and o.status in ("eligible", "excluded")]
    if p is not None and p.step == "change chip" and p.credited_savings_usd is not None:
        more = "" if r is None else " more"
        second = (_saves(p.credited_savings_usd, more), f"{weeks(p.credited_migration_weeks)}, {_payback(p)}")
    elif priced:
        o = max(priced, key=lambda o: o.credited_savings_usd or 0.0)
        more = " more" if r is not None else ""
        text = f"{o.group}: {_saves(o.credited_savings_usd or 0.0, more)}"
        if o.payback_months is not None:
            detail = f"declined: {weeks(o.credited_migration_weeks)}, {_payback(o)}"
        else:
            detail = "declined"
        second = (text, detail)
    elif any(o.status == "unpriced" for o in chips):
        second = ("no public price", "break-even price in the details")
    elif any(o.status == "disqualified" for o in chips):
        second = ("ruled out", "see why")
    elif chips:
        second = ("cannot run it", "see the options")
    else:
        second = ("none in the catalog", "")
    return first, second


def payback_text(a: WorkloadAdvice) -> str:
    """The payback of the step the verdict takes (its credited effort over its credited saving)."""
    if a.proposed is None:
        return "none (stays)"
    if a.proposed.credited_migration_weeks == 0:
        return "at once (no effort)"
    return months(a.proposed.payback_months)


def steps_text(a: WorkloadAdvice) -> tuple[str, str]:
    """The two steps as plain text (Markdown, terminal)."""
    return tuple(f"{m}, {e}" if e else m for m, e in saving_steps(a))  # type: ignore[return-value]


def _steps_html(a: WorkloadAdvice) -> tuple[str, str]:
    return tuple(  # type: ignore[return-value]
        f"{text(m)}<br><span class='small'>{text(e)}</span>" if e else text(m) for m, e in saving_steps(a)
    )


def advice_html(advice: Advice, meta: Meta) -> str:
    """The whole advice page: one summary screen (verdicts, savings, payback, one cost chart), then
    each workload's details folded under its name, then the rules and assumptions, also folded."""
    w = advice.workloads
    th = advice.rules["thresholds"]
    today = sum(a.current.monthly_usd for a in w)
    proposed = sum(a.proposed_monthly_usd for a in w)
    moves = [a for a in w if a.proposed is not None]
    body = [
        f"<p class='small'>Inventory: {text(advice.inventory)}</p>",
        "<h2>Summary</h2>",
        f"<p><b>{len(moves)} of {len(w)} workloads should change</b>: "
        f"{money(today)}/month today, {money(proposed)}/month as proposed, "
        f"<b>saving {money(today - proposed)}/month</b>. Each saving is judged in two steps: right-size on "
        "today's vendor (no porting), then a chip change on what it adds over that right-size.</p>",
    ]
    rows = []
    for a in w:
        first, second = _steps_html(a)
        rows.append(
            [
                f'<a href="#w-{text(a.name)}">{text(a.name)}</a>',
                badge(a.verdict),
                money(a.current.monthly_usd),
                first,
                second,
                money(a.proposed_monthly_usd),
                money(a.monthly_savings_usd),
                text(payback_text(a)),
            ]
        )
    body.append(
        table(
            [
                "workload",
                "verdict",
                "today / month",
                "right-size on today's vendor",
                "change chip (over the right-size)",
                "proposed / month",
                "saves / month",
                "payback",
            ],
            rows,
            numeric=(2, 5, 6, 7),
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
        "<details><summary>Payback chart</summary>"
        + _bar_figure(
            _payback_bars(w),
            dict(
                title="Payback of the migration (months)",
                unit="months",
                reference=(limit, f"longest payback allowed: {limit:g} months"),
                cap=2 * limit,
            ),
            "Months until the saving a step earns repays the engineering effort that step adds, from "
            f"zero; the dashed line is the longest payback the rules accept ({limit:g} months). Grey bars "
            "are alternatives that were declined; an arrow marks a bar cut at twice the limit.",
        )
        + "</details>"
    )
    body.append(
        "<h2>Workloads</h2><p class='small'>Open a workload for its reasons, every option and how "
        "firm the verdict is.</p>"
    )
    body.extend(_workload_section(a, advice) for a in w)
    body.append("<details><summary>Decision rules</summary>" + _rules_section(advice) + "</details>")
    body.append("<details><summary>Assumptions</summary>" + ul(advice.assumptions) + "</details>")
    return page("Silica advice", body, meta, extra_css=_CSS)


_CSS = """
details{margin:.4rem 0;border:1px solid #ddd;border-radius:.3rem;padding:.3rem .6rem}
details>summary{cursor:pointer;font-weight:600;padding:.2rem 0}
details[open]>summary{margin-bottom:.4rem}
details.workload>summary .lead{font-weight:400;color:#333}
"""


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


def _missing(o: Option) -> str:
    """Why a money cell has no figure: it cannot run, or its instance has no public price."""
    return "cannot run" if o.status == "infeasible" or o.instances is None else "no public price"


def _saving_cell(o: Option) -> str:
    """The saving against today, and for a chip change what it adds over the right-size (the figure its
    payback and thresholds were judged on)."""
    if o.monthly_usd is None:
        if o.breakeven_usd_per_hour is None:
            return text(_missing(o))
        return text(f"saves money below {price(o.breakeven_usd_per_hour)}")
    out = money(o.monthly_savings_usd)
    if o.step == "change chip" and o.baseline != "today" and o.credited_savings_usd is not None:
        verb = "adds" if o.credited_savings_usd >= 0 else "loses"
        out += (
            f"<br><span class='small'>{verb} {money(abs(o.credited_savings_usd))} over the "
            f"{text(o.baseline)}</span>"
        )
    return out


def _payback_cell(o: Option) -> str:
    if o.monthly_usd is None:
        if o.payback_price_usd_per_hour is None:
            return text(_missing(o))
        return text(f"within the limit below {price(o.payback_price_usd_per_hour)}")
    if o.payback_months is None:
        return "never (no saving)"
    return text("at once" if o.credited_migration_weeks == 0 else months(o.payback_months))


def _family_rows(a: WorkloadAdvice, names: Sequence[str]) -> Iterable[list[str]]:
    for group, best in a.best.items():
        o = best.option
        if o is None:
            why = "; ".join(reason_html(r, names) for r in best.reasons)
            yield [text(group), "none", "n/a", "n/a", "n/a", "n/a", "no option", "n/a", "n/a", "n/a", why]
            continue
        notes = "; ".join(reason_html(r, names) for r in [*best.reasons, *o.reasons]) or "none"
        yield [
            text(group),
            text(f"{o.instances} x {o.instance}"),
            money(o.monthly_usd) if o.monthly_usd is not None else text(_missing(o)),
            _saving_cell(o),
            _effort(o.migration_weeks),
            _payback_cell(o),
            text(o.status)
            + (f" (break-even {price(o.breakeven_usd_per_hour)})" if o.status == "unpriced" else ""),
            *_energy_cells(o),
            notes,
        ]


def _energy_cells(o: Option) -> list[str]:
    """W per instance, joules per token (output, or training) and kgCO2e per 1M output tokens of the
    option's estimate (`plan.energy`); a chip with no published power says so, never shows a number."""
    e = o.estimate.energy if o.estimate is not None else None
    if e is None:
        return ["n/a", "n/a", "n/a"]
    if not e.known:
        return ["power unpublished"] * 3

    def fig(value: float | None, spec: str) -> str:
        return "n/a" if value is None else format(value, spec)

    per_token = e.j_per_output_token if e.j_per_output_token is not None else e.j_per_training_token
    return [
        fig(e.instance_power_w, ",.0f"),
        fig(per_token, ",.3g"),
        fig(e.kg_co2e_per_1m_output_tokens, ",.3g"),
    ]


def _option_rows(options: Iterable[Option], names: Sequence[str]) -> Iterable[list[str]]:
    for o in options:
        miss = text(_missing(o))
        yield [
            text(o.instance),
            text(o.group),
            text(o.status),
            text(o.instances if o.instances is not None else "n/a"),
            price(o.usd_per_hour) if o.usd_per_hour is not None else text("no public price"),
            money(o.monthly_usd) if o.monthly_usd is not None else miss,
            pct(o.savings_fraction) if o.savings_fraction is not None else miss,
            price(o.breakeven_usd_per_hour) if o.breakeven_usd_per_hour is not None else miss,
            "; ".join(reason_html(r, names) for r in o.reasons) or "none",
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
    lead = plain_reason(a.reasons[0])[0] if a.reasons else ""
    parts = [
        f'<details class="workload" id="w-{text(a.name)}"><summary>{text(a.name)} {badge(a.verdict)} '
        f'<span class="lead">{text(lead)}</span></summary><section>',
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
        "<h3>Assumptions</h3>" + ul(a.assumptions) + "</section></details>",
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
            text(t["overridden_by"] or "none"),
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
        "<section><h3>Thresholds</h3>"
        + table(["name", "value", "unit", "source", "overridden by"], thresholds, numeric=(1,))
        + "<h3>Rules</h3>"
        + table(["id", "effect", "applies to", "says", "source"], rules)
        + f"<p class='small'>Standard Neuron architectures: {text(', '.join(arch['value']))} "
        f"(source: {text(arch['source'])})</p></section>"
    )
