"""Markdown reports for pull requests and wikis: the same content as the HTML, as tables and lists."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from silica.advise.claims import ClaimsReport
from silica.advise.results import Advice, WorkloadAdvice
from silica.report._format import money, months, pct, plain_reason, price
from silica.report.advice import payback_text, steps_text
from silica.report.claims import source_line
from silica.report.page import Meta

__all__ = ["advice_markdown", "claims_markdown", "md_name", "md_table"]

_MD_SPECIAL = str.maketrans(
    {c: "\\" + c for c in "\\`*_[]{}()#+!|~>"} | {"<": "&lt;", "&": "&amp;", "\n": " ", "\r": " "}
)


def md_name(value: object) -> str:
    """A name the user chose (workload, deployment, file), shown literally in Markdown: no emphasis,
    link, heading, table break or raw HTML (`<img onerror=...>`) can come from it."""
    return str(value).translate(_MD_SPECIAL)


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def md_table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return [*out, ""]


def advice_markdown(advice: Advice, meta: Meta) -> str:
    """The `silica advise --md` report."""
    lines = [
        "# Silica advice",
        "",
        meta.line(),
        "",
        f"Inventory: {md_name(advice.inventory)}",
        "",
        "## Summary",
        "",
    ]
    lines += md_table(
        [
            "workload",
            "verdict",
            "today / month",
            "right-size on today's vendor",
            "change chip",
            "proposed / month",
            "payback",
        ],
        (
            [
                md_name(a.name),
                f"**{a.verdict}**",
                money(a.current.monthly_usd),
                *steps_text(a),
                money(a.proposed_monthly_usd),
                payback_text(a),
            ]
            for a in advice.workloads
        ),
    )
    for a in advice.workloads:
        lines += _workload(a)
    lines += ["## Decision rules", ""]
    lines += md_table(
        ["threshold", "value", "source", "overridden by"],
        (
            [n, f"{t['value']:g} {t['unit']}", t["source"], t["overridden_by"] or "-"]
            for n, t in advice.rules["thresholds"].items()
        ),
    )
    lines += md_table(
        ["rule", "effect", "says", "source"],
        ([r["id"], r["effect"], r["says"], r["source"]] for r in advice.rules["rules"]),
    )
    lines += ["## Assumptions", "", *(f"- {a}" for a in advice.assumptions), ""]
    return "\n".join(lines)


def _workload(a: WorkloadAdvice) -> list[str]:
    lines = [
        f"## {md_name(a.name)}: {a.verdict}",
        "",
        f"{md_name(a.model)}, {a.task}. Today: {md_name(a.current.basis)}.",
        "",
    ]
    lines += [f"- {_reason(r)}" for r in a.reasons] + [""]
    rows = []
    for group, best in a.best.items():
        o = best.option
        if o is None:
            rows.append([group, "-", "-", "-", "-", "; ".join(map(_reason, best.reasons))])
            continue
        status = o.status + (
            f", break-even {price(o.breakeven_usd_per_hour)}" if o.status == "unpriced" else ""
        )
        rows.append(
            [
                group,
                f"{o.instances} x {o.instance}",
                money(o.monthly_usd),
                pct(o.savings_fraction),
                months(o.payback_months) if o.monthly_usd is not None else "-",
                "; ".join([status, *map(_reason, (*best.reasons, *o.reasons))]),
            ]
        )
    lines += md_table(
        ["family", "best deployment", "per month", "saving", "payback", "status and notes"], rows
    )
    s = a.sensitivity
    lines += [f"Sensitivity (rows: proposed prices scaled; columns: {s.utilisation_name}):", ""]
    lines += md_table(
        ["price", *(f"{u:g}" for u in s.utilisations)],
        ([f"x{f:g}", *row] for f, row in zip(s.price_factors, s.verdicts, strict=True)),
    )
    return lines


def _reason(reason: str) -> str:
    words, rule = plain_reason(reason)
    return words + (f" (rule `{rule}`)" if rule else "")


def claims_markdown(report: ClaimsReport, meta: Meta) -> str:
    """The `silica claims --md` report."""
    lines = [
        "# Vendor claims, re-derived by Silica",
        "",
        meta.line(),
        "",
        f"Prices: {report.prices} (catalog); tolerance {report.tolerance:.0%}.",
        "",
    ]
    lines += md_table(
        ["claim", "verdict", "Silica computes", "holds at"],
        (
            [
                c.claim,
                f"**{c.verdict}**",
                c.computed,
                "; ".join(f"{h.instance} <= {price(h.usd_per_hour)} ({h.meaning})" for h in c.holds_at)
                or "-",
            ]
            for c in report.claims
        ),
    )
    lines += ["## Sources", ""]
    lines += [f"- **{c.id}**: {source_line(c.made_by, c.where)}" for c in report.claims] + [""]
    return "\n".join(lines)
