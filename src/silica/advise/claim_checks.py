"""The checks behind `silica claims`: each re-derives one kind of claim from the planner and catalog.

Every figure comes from `silica.plan.compare` on the standard workloads of `data/claims.yaml` at on-demand
prices, or from the chip table. Where a price is missing a check computes the hourly price at which the
claim would hold instead of guessing one. Cost and price checks live here; generation and spec checks in
`silica.advise.claim_specs`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from silica.advise.claim_context import (
    CannotRun,
    Context,
    breakeven,
    cannot_run,
    divide,
    graded_figure,
    graded_result,
    holds_if,
    ratio_figure,
    reduction,
    result,
    summary,
)
from silica.advise.claim_energy import energy_generation, perf_per_watt
from silica.advise.claim_specs import (
    generation_throughput_latency,
    generation_training,
    trn3_figures,
    trn3_vs_blackwell,
)
from silica.advise.claims import (
    ClaimResult,
    ClaimSpec,
    ClaimsReport,
    ClaimVerdict,
    Figure,
    Grade,
    HoldsAt,
    combine,
    load_claims,
)
from silica.catalog import Catalog, get_instance
from silica.catalog.schema import PurchaseOption
from silica.errors import DataFileError, UnknownNameError

__all__ = ["CHECKS", "Context", "check_claims"]


def half_price_competitive(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    subject, ref = p["subject"], p["reference"]
    ref_price = ctx.price(ref)
    figures, holds = [], []
    for wid in p["workloads"]:
        s, r = ctx.pair(wid, subject, ref)
        perf = divide(ctx.per_instance(s), ctx.per_instance(r))
        # "competitive": at least 1 - competitive of the reference's throughput, counted from zero
        figures.append(
            graded_figure(
                f"throughput per instance, {subject} / {ref}, {wid}",
                perf,
                1.0,
                "ratio",
                1.0 - p["competitive"],
            )
        )
        cost_r, hours = ctx.unit_cost(r, wid), ctx.hours_per_mtok(s, wid)
        if cost_r and hours:
            holds += breakeven(
                subject, p["price_ratio"] * cost_r, hours, f"{wid}: half the cost per token of {ref}"
            )
    if ref_price:
        holds.insert(
            0,
            HoldsAt(
                subject, p["price_ratio"] * ref_price, f"half the hourly price of {ref} (${ref_price:,.2f})"
            ),
        )
    spot = ctx.price(subject, "spot")
    notes = (
        [f"the only {subject} price observed is a spot price, ${spot:,.2f}/h, not comparable with on-demand"]
        if spot
        else []
    )
    perf_verdict = combine([f.grade for f in figures])
    if ctx.price(subject) is None:
        verdict: ClaimVerdict = "cannot check" if perf_verdict != "not supported" else "not supported"
        reason = (
            f"{subject} has no public on-demand price; its performance is "
            f"{'competitive' if perf_verdict == 'supported' else 'not competitive on every workload'}"
        )
    else:
        verdict, reason = perf_verdict, "graded on performance; price compared below"
    return result(spec, verdict, summary(figures, "{name}: {value:.2f}x"), reason, figures, holds, notes)


def price_performance_breakeven(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    subject, ref = p["subject"], p["reference"]
    figures, holds = [], []
    for wid in p["workloads"]:
        s, r = ctx.pair(wid, subject, ref)
        if ctx.price(ref) is None:
            raise CannotRun(f"{subject} or {ref} on {wid}")
        cost_r, hours = ctx.unit_cost(r, wid), ctx.hours_per_mtok(s, wid)
        assert cost_r is not None and hours is not None
        for better in (p["better_low"], p["better_high"]):
            meaning = f"{wid}: {better:.0%} better price-performance than {ref}"
            holds += breakeven(subject, cost_r / (1 + better), hours, meaning)
        figures.append(
            Figure(
                f"throughput per instance, {subject} / {ref}, {wid}",
                divide(ctx.per_instance(s), ctx.per_instance(r)),
                None,
                "ratio",
                None,
            )
        )
        cost_s = ctx.unit_cost(s, wid)
        if cost_s:
            better = cost_r / cost_s - 1.0
            figures.append(
                graded_figure(
                    f"price-performance gain over {ref}, {wid}",
                    better,
                    p["better_low"],
                    "fraction",
                    ctx.tolerance,
                )
            )
    graded = [f.grade for f in figures if f.grade is not None]
    verdict = combine(graded) if graded else "cannot check"
    reason = "graded at catalog prices" if graded else f"{subject} has no public on-demand price"
    return result(spec, verdict, holds_if(holds), reason, figures, holds)


def cost_reduction(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    figures = []
    for wid in p["workloads"]:
        s, r = ctx.pair(wid, p["subject"], p["reference"])
        cost_s, cost_r = ctx.unit_cost(s, wid), ctx.unit_cost(r, wid)
        figures.append(
            graded_figure(
                f"{ctx.unit(wid)}: {p['subject']} ${cost_s:,.2f} vs {p['reference']} ${cost_r:,.2f}, {wid}",
                reduction(cost_s, cost_r),
                p["reduction"],
                "fraction lower",
                ctx.tolerance,
            )
        )
    return graded_result(spec, figures, "{value:.0%} lower ({name})", f"claimed {p['reduction']:.0%} lower")


def best_case_cost_ratio(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    figures, holds, ratios = [], [], []
    for wid in p["workloads"]:
        s, r, u = (
            ctx.best(wid, p["subject"]),
            ctx.best(wid, p["reference"]),
            ctx.best(wid, p["unpriced_subject"]),
        )
        cost_r = ctx.unit_cost(r, wid) if r else None
        ratio = divide(ctx.unit_cost(s, wid) if s else None, cost_r)
        if ratio is not None:
            ratios.append((ratio, wid))
            figures.append(
                Figure(
                    f"cost ratio {p['subject']} / {p['reference']}, {wid}",
                    ratio,
                    p["cost_ratio"],
                    "ratio",
                    None,
                )
            )
        hours = ctx.hours_per_mtok(u, wid) if u else None
        if cost_r and hours:
            meaning = f"{wid}: 25% of {p['reference']}'s cost"
            holds += breakeven(p["unpriced_subject"], p["cost_ratio"] * cost_r, hours, meaning)
    if not ratios:
        return cannot_run(spec, f"{p['subject']} or {p['reference']}")
    best, where = min(ratios)
    best_case = graded_figure(
        f"best case: cost lower on {p['subject']} than {p['reference']} ({where})",
        1.0 - best,
        1.0 - p["cost_ratio"],
        "fraction lower",
        ctx.tolerance,
    )
    figures.append(best_case)
    computed = f"at best {best:.0%} of {p['reference']}'s cost ({where}); claimed {p['cost_ratio']:.0%}"
    return result(
        spec,
        combine([best_case.grade]),
        computed,
        "graded on the best workload, as the claim says 'some workloads'",
        figures,
        holds,
    )


def throughput_and_cost(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    figures = []
    for wid in p["workloads"]:
        s, r = ctx.pair(wid, p["subject"], p["reference"])
        speed = divide(ctx.per_instance(s), ctx.per_instance(r))
        cut = reduction(ctx.unit_cost(s, wid), ctx.unit_cost(r, wid))
        figures.append(
            ratio_figure(
                f"throughput per instance, {p['subject']} / {p['reference']}, {wid}",
                speed,
                p["throughput_ratio"],
                ctx.tolerance,
            )
        )
        figures.append(
            graded_figure(
                f"cost per inference, lower on {p['subject']}, {wid}",
                cut,
                p["reduction"],
                "fraction lower",
                ctx.tolerance,
            )
        )
    return graded_result(spec, figures, "{name}: {value:.2f}", "both halves graded", notes=[p["note"]])


def best_of_family_price_performance(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    figures = []
    for wid in p["workloads"]:
        s, r = ctx.cheapest(wid, p["subject"]), ctx.cheapest(wid, p["reference"])
        if s is None or r is None:
            return cannot_run(spec, f"the Inf2 or the GPU instances on {wid}")
        better = r[0] / s[0] - 1.0
        figures.append(
            graded_figure(
                f"price-performance of {s[1]} (${s[0]:.3f}) over {r[1]} (${r[0]:.3f}), {wid}",
                better,
                p["better"],
                "fraction better",
                ctx.tolerance,
            )
        )
    note = f"comparable instances: the cheapest per token of {', '.join(p['reference'])}"
    return graded_result(
        spec, figures, "{value:+.0%} ({name})", "best Inf2 size vs best GPU instance", notes=[note]
    )


def unpriced_vs_best_gpu(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    gpus = [
        i
        for i, inst in ctx.catalog.instances.items()
        if ctx.catalog.chips[inst.chip].vendor == "nvidia" and ctx.price(i)
    ]
    figures, holds = [], []
    for wid in p["workloads"]:
        cheapest, s = ctx.cheapest(wid, gpus), ctx.best(wid, p["subject"])
        if cheapest is None or s is None:
            continue
        best, where = cheapest
        figures.append(
            Figure(f"cheapest GPU {ctx.unit(wid)}: {where}, {wid}", best, None, ctx.unit(wid), None)
        )
        hours = ctx.hours_per_mtok(s, wid)
        if hours:
            meaning = f"{wid}: {p['reduction']:.0%} below {where}"
            holds += breakeven(p["subject"], (1 - p["reduction"]) * best, hours, meaning)
    return result(
        spec, "cannot check", holds_if(holds), f"{p['subject']} has no public price", figures, holds
    )


def per_gpu_price(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    inst = get_instance(ctx.catalog, p["instance"])
    figures = []
    options: tuple[PurchaseOption, ...] = ("on_demand", "capacity_block", "spot")
    for option in options:
        price = ctx.price(p["instance"], option)
        if price is not None:
            per_gpu = price / inst.chips
            g: Grade | None = None
            if option == "on_demand":
                g = (
                    "supported"
                    if p["low"] <= per_gpu <= p["high"]
                    else "partly"
                    if per_gpu <= p["high"] * 1.25
                    else "not supported"
                )
            figures.append(
                Figure(
                    f"{p['instance']} {option} per GPU-hour",
                    per_gpu,
                    p["high"],
                    "USD per GPU-hour",
                    g,
                    lower_is_better=True,
                )
            )
    on_demand = next((f for f in figures if f.grade is not None), None)
    if on_demand is None:
        return result(spec, "cannot check", "-", f"no on-demand price for {p['instance']}", figures)
    computed = f"${on_demand.value:,.2f} per GPU-hour on demand ({p['instance']} / {inst.chips})"
    return result(spec, combine([on_demand.grade]), computed, f"claimed ${p['low']:g}-{p['high']:g}", figures)


CHECKS: dict[str, Callable[[ClaimSpec, Context], ClaimResult]] = {
    f.__name__: f
    for f in (
        half_price_competitive,
        price_performance_breakeven,
        cost_reduction,
        best_case_cost_ratio,
        throughput_and_cost,
        best_of_family_price_performance,
        generation_throughput_latency,
        generation_training,
        trn3_figures,
        trn3_vs_blackwell,
        unpriced_vs_best_gpu,
        per_gpu_price,
        energy_generation,
        perf_per_watt,
    )
}


def check_claims(
    ids: list[str] | None = None, *, path: Path | None = None, catalog: Catalog | None = None
) -> ClaimsReport:
    """Re-derive every claim (or the ones named) with Silica's model; returns one result per claim.

    `catalog` carries the user's own prices (`--price`, `--prices`), so a claim that cannot be checked
    for want of a public price (Trainium2) can be checked against the user's quote.
    """
    data = load_claims(path)
    wanted = list(data.claims)
    if ids:
        known = {c.id: c for c in data.claims}
        for claim_id in ids:
            if claim_id not in known:
                raise UnknownNameError("claim", claim_id, known, "run `silica claims` to list them.")
        wanted = [known[i] for i in ids]
    ctx = Context(data, catalog)
    results = []
    for spec in wanted:
        if spec.check not in CHECKS:
            raise DataFileError(
                f"Claim {spec.id}: unknown check {spec.check!r}.", f"use one of {', '.join(CHECKS)}."
            )
        try:
            results.append(CHECKS[spec.check](spec, ctx))
        except CannotRun as stop:
            results.append(cannot_run(spec, stop.what))
    return ClaimsReport(tuple(results), data.workloads, data.prices, data.tolerance, data.as_of)
