"""Apply the decision rules to costed candidates: which family, if any, a workload should move to.

`decide` is a pure function of the candidates, today's cost, the rules and two knobs (a price factor
on every proposed instance and the utilisation a fleet sustains), so the sensitivity analysis is the
same decision re-run on a grid, never a second implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from silica import cost
from silica.advise.costing import Candidate, group_of
from silica.advise.inventory import WorkloadSpec
from silica.advise.results import GROUPS, CurrentCost, FamilyBest, Group, Option, Status, Step, Verdict
from silica.advise.rules import Rules
from silica.advise.scanfile import ScanSummary
from silica.results import InferenceEstimate
from silica.text import money, months, percent, weeks

__all__ = ["IMPLEMENTED_RULES", "Decision", "decide", "migration_weeks"]

NEURON: tuple[Group, ...] = ("trainium", "inferentia")
# Every rule id in decision_rules.yaml must be implemented here (a test checks both directions).
IMPLEMENTED_RULES = frozenset(
    {
        "cuda-only-deps",
        "multi-cloud",
        "scan-blocked",
        "scan-failed",
        "scan-uncovered",
        "nonstandard-architecture",
        "inferentia-is-for-inference",
        "unpriced",
        "small-spend",
        "savings-too-small",
        "payback-too-long",
        "large-spend",
        "trainium-scale",
        "inferentia-fit",
        "gpu-fallback",
        "current-short",
    }
)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reasons: tuple[str, ...]
    proposed: Option | None
    best_alternative: Option | None
    best: dict[Group, FamilyBest]
    options: tuple[Option, ...]
    right_size: Option | None = None


def _tag(rules: Rules, rule_id: str, text: str | None = None) -> str:
    return f"{text or rules.rule(rule_id).says} [{rule_id}]"


def _scan(spec: WorkloadSpec) -> ScanSummary | None:
    """The workload's scan when it is an estimate of the model; a scan that failed is not one."""
    scan = spec.constraints.scan
    return scan if scan is not None and scan.failed is None else None


def family_disqualifiers(spec: WorkloadSpec, rules: Rules) -> dict[Group, list[str]]:
    """Reasons that rule a whole family out for this workload, whatever its price."""
    out: dict[Group, list[str]] = {g: [] for g in GROUPS}
    c = spec.constraints
    for group in NEURON:
        if c.cuda_only_deps:
            out[group].append(_tag(rules, "cuda-only-deps"))
        if c.multi_cloud:
            out[group].append(_tag(rules, "multi-cloud"))
        if c.scan is not None and c.scan.failed is not None:
            text = (
                f"the scan {c.scan.name} failed ({c.scan.failed}), so its verdicts and effort describe the "
                "failure, not the model; make `silica scan` succeed and give its output again"
            )
            out[group].append(_tag(rules, "scan-failed", text))
        elif c.scan is None and spec.model.model_type not in rules.standard_architectures:
            text = (
                f"{spec.model.model_type!r} is not a standard Neuron architecture and no scan was given; "
                "run `silica scan` and add `constraints: {scan: FILE}`"
            )
            out[group].append(_tag(rules, "nonstandard-architecture", text))
    if spec.task == "training":
        out["inferentia"].append(_tag(rules, "inferentia-is-for-inference"))
    return out


def migration_weeks(spec: WorkloadSpec, cand: Candidate, rules: Rules) -> tuple[float, str]:
    """Engineer-weeks to move this workload to `cand`: from the scan when it covers the chip, else defaults.

    Today's instance type, resized, is no migration: zero weeks.
    """
    if spec.current.instance is not None and cand.estimate.instance == spec.current.instance:
        return 0.0, f"resizing today's {spec.current.instance} fleet is no migration: 0 weeks"
    floor = rules[f"migration_weeks_{spec.task}_nvidia"]
    if cand.group == "nvidia":
        return floor, f"default migration_weeks_{spec.task}_nvidia"
    scan = _scan(spec)
    if scan is not None and scan.verdict(cand.estimate.chip) is not None:
        weeks = max(scan.effort(cand.estimate.chip), floor)
        return weeks, f"scan {scan.path.name}: {scan.verdict(cand.estimate.chip)}, {weeks:g} weeks"
    name = f"migration_weeks_{spec.task}_{cand.group}"
    if name not in rules.thresholds:
        return rules["migration_weeks_training_trainium"], "default migration_weeks_training_trainium"
    return rules[name], f"default {name}"


@dataclass(frozen=True)
class _Baseline:
    """What an option is judged against: today's bill, or the right-size a chip change must beat."""

    monthly_usd: float
    weeks: float
    label: str  # "today", or "right-size N x INSTANCE"

    @property
    def today(self) -> bool:
        return self.label == "today"


def _option(
    spec: WorkloadSpec,
    cand: Candidate,
    current: CurrentCost,
    rules: Rules,
    rate: float,
    disqualified: list[str],
    fallback_usd: float,
    price_factor: float,
    utilisation: float,
    base: _Baseline,
    step: Step,
    small_spend: str | None = None,
) -> Option:
    """One option judged as one step of the ladder: its saving and effort over `base`, and the rules."""
    e = cand.estimate
    effort, _ = migration_weeks(spec, cand, rules)
    migration_usd = effort * rate
    credited_weeks = max(effort - base.weeks, 0.0)
    credited_usd = credited_weeks * rate
    disq = list(disqualified)
    notes: list[str] = []
    scan = _scan(spec)
    neuron = cand.group in NEURON
    if neuron and scan is not None and scan.verdict(e.chip) == "blocked":
        disq.append(_tag(rules, "scan-blocked", f"the scan says {e.chip} is blocked"))
    elif neuron and scan is not None and scan.verdict(e.chip) is None:
        disq.append(_tag(rules, "scan-uncovered", f"the scan has no verdict for {e.chip}"))
    hours = cand.instance_hours(utilisation)
    n = cand.instances(utilisation)
    unit_cost, unit = cand.unit_cost()
    than = "today" if base.today else f"the {base.label}"

    def make(
        status: Status,
        reasons: tuple[str, ...],
        money: tuple[float | None, float | None, float | None, float | None] = (None, None, None, None),
        prices: tuple[float | None, float | None] = (None, None),
        credited: tuple[float | None, float | None] = (None, None),
    ) -> Option:
        return Option(
            instance=e.instance,
            group=cand.group,
            chip=e.chip,
            status=status,
            reasons=reasons,
            instances=n,
            chips=None if n is None else n * e.chips // e.count,
            layout=cand.layout,
            usd_per_hour=cand.usd_per_hour,
            monthly_usd=money[0],
            monthly_savings_usd=money[1],
            savings_fraction=money[2],
            payback_months=money[3],
            migration_weeks=effort,
            migration_usd=migration_usd,
            breakeven_usd_per_hour=prices[0],
            payback_price_usd_per_hour=prices[1],
            unit_cost=unit_cost,
            unit=unit,
            step=step,
            baseline=base.label,
            baseline_monthly_usd=base.monthly_usd,
            credited_savings_usd=credited[0],
            credited_fraction=credited[1],
            credited_migration_weeks=credited_weeks,
            credited_migration_usd=credited_usd,
        )

    if not e.feasible or hours is None:
        return make("infeasible", (*disq, *e.reasons))
    extra = 0.0
    if neuron and scan is not None and scan.unsupported_ops:
        extra = fallback_usd
        text = (
            f"keeps a GPU fallback for {len(scan.unsupported_ops)} unsupported op(s) (+${extra:,.0f}/month)"
        )
        notes.append(_tag(rules, "gpu-fallback", text))
    breakeven = cost.breakeven_price(base.monthly_usd - extra, hours)
    pays_back = cost.breakeven_price(
        base.monthly_usd - extra - credited_usd / rules["max_payback_months"], hours
    )
    prices = (breakeven, pays_back)
    if cand.usd_per_hour is None:
        below = f"below ${breakeven:,.2f}/h" if breakeven is not None else f"at no price ({than} costs less)"
        text = f"no public price; it costs less than {than} {below}"
        status: Status = "disqualified" if disq else "unpriced"
        return make(status, (*disq, *notes, _tag(rules, "unpriced", text)), prices=prices)
    monthly = cost.usd(cand.usd_per_hour * price_factor, hours) + extra
    savings = current.monthly_usd - monthly
    fraction = savings / current.monthly_usd
    credited = base.monthly_usd - monthly
    credited_fraction = credited / base.monthly_usd
    # A saving within rounding of its baseline is no saving: it has no payback period.
    negligible = credited_fraction < rules["negligible_savings_fraction"]
    payback = None if negligible else cost.payback_months(credited_usd, credited)
    status = "disqualified" if disq else "eligible"
    more = "" if base.today else f" more than the {base.label}"
    if status == "eligible" and negligible:
        status = "excluded"
        text = (
            f"costs {percent(-credited_fraction)} more than {than}"
            if credited_fraction < 0
            else f"saves {credited_fraction:.1%}{more}, below negligible_savings_fraction "
            f"{rules['negligible_savings_fraction']:.1%}: no saving"
        )
        notes.append(_tag(rules, "savings-too-small", text))
    elif status == "eligible" and credited_fraction < rules["min_savings_fraction"]:
        status = "excluded"
        text = (
            f"saves {money(credited)}/month ({credited_fraction:.0%}){more}, below min_savings_fraction "
            f"{rules['min_savings_fraction']:.0%}"
        )
        notes.append(_tag(rules, "savings-too-small", text))
    elif status == "eligible" and payback is not None and payback > rules["max_payback_months"]:
        status = "excluded"
        text = (
            f"{weeks(credited_weeks)} for {money(credited)}/month{more} pays back in "
            f"{months(payback)}, over max_payback_months {rules['max_payback_months']:g}"
        )
        notes.append(_tag(rules, "payback-too-long", text))
    if status == "eligible" and small_spend is not None:
        status = "excluded"
        notes.append(small_spend)
    return make(
        status,
        (*disq, *notes),
        (monthly, savings, fraction, payback),
        prices,
        (credited, credited_fraction),
    )


def _group_today(current: CurrentCost, cands: list[Candidate]) -> Group | None:
    """Today's family (vendor): from today's instance type, when the comparison knows it."""
    if current.instance is None:
        return None
    found = next((c.group for c in cands if c.estimate.instance == current.instance), None)
    if found is None and current.estimate is not None:
        found = group_of(current.estimate)
    return found


def _right_size(options: tuple[Option, ...], current: CurrentCost) -> Option | None:
    """The middle rung: the eligible same-vendor option saving most, else the cheapest that could run
    (priced, feasible, not ruled out) if it is cheaper than today; None when nothing is cheaper."""
    eligible = [o for o in options if o.status == "eligible"]
    if eligible:
        return max(eligible, key=lambda o: o.monthly_savings_usd or 0.0)
    runnable = [
        o
        for o in options
        if o.status == "excluded" and o.monthly_usd is not None and o.monthly_usd < current.monthly_usd
    ]
    return min(runnable, key=lambda o: o.monthly_usd or 0.0, default=None)


def decide(
    spec: WorkloadSpec,
    cands: list[Candidate],
    current: CurrentCost,
    rules: Rules,
    rate: float,
    *,
    price_factor: float = 1.0,
    utilisation: float | None = None,
) -> Decision:
    """The verdict for one workload under `rules`, with every option's status and reasons.

    One ladder: today's bill; the best right-size on today's vendor (no porting), judged against today;
    then each chip change judged on its increment over that right-size (saving, engineer-weeks, payback
    and thresholds). A chip change that passes wins; else a right-size that passes; else stay. The
    verdict, the summary figures and the reasons all read the same `Option` fields.
    """
    util = utilisation or rules["serving_utilisation" if spec.task == "inference" else "training_goodput"]
    groups = family_disqualifiers(spec, rules)
    nvidia = [c for c in cands if c.group == "nvidia" and c.usd_per_hour is not None and c.estimate.feasible]
    gpu_costs = [
        cost.usd((c.usd_per_hour or 0.0) * price_factor, c.instance_hours(util) or 0.0) for c in nvidia
    ]
    fallback = rules["gpu_fallback_fraction"] * min(gpu_costs) if gpu_costs else 0.0
    small: str | None = None
    if spec.task == "inference" and current.monthly_usd < rules["small_spend_usd_per_month"]:
        small = _tag(
            rules,
            "small-spend",
            f"inference spend ${current.monthly_usd:,.0f}/month is below small_spend_usd_per_month "
            f"${rules['small_spend_usd_per_month']:,.0f}: migration rarely pays",
        )
    today = _Baseline(current.monthly_usd, 0.0, "today")
    home = _group_today(current, cands)

    def judge(c: Candidate, base: _Baseline, step: Step) -> Option:
        return _option(
            spec, c, current, rules, rate, groups[c.group], fallback, price_factor, util, base, step, small
        )

    # Without today's instance type there is no "same vendor": every option is judged against today.
    first = {i: judge(c, today, "right-size") for i, c in enumerate(cands) if c.group == home}
    right = _right_size(tuple(first.values()), current)
    base = today
    if right is not None and right.monthly_usd is not None:
        base = _Baseline(
            right.monthly_usd, right.migration_weeks, f"right-size {right.instances} x {right.instance}"
        )
    options = tuple(first[i] if i in first else judge(c, base, "change chip") for i, c in enumerate(cands))
    best = {g: _family_best(g, options, groups[g]) for g in GROUPS}
    priced = [o for o in options if o.monthly_savings_usd is not None]
    alternative = max(priced, key=lambda o: o.monthly_savings_usd or 0.0, default=None)
    eligible = [o for o in options if o.status == "eligible"]
    moves = [o for o in eligible if o.step == "change chip"] or eligible
    chosen = max(moves, key=lambda o: o.monthly_savings_usd or 0.0, default=None)
    # When the model says today's deployment cannot carry the load, "stay" is not safe: say so first.
    reasons: list[str] = _short_today(spec, current, cands, rules)
    if chosen is None:
        if small is not None:
            reasons.append(small)
        else:
            reasons.append("no option passes the rules")
        return Decision(
            "stay",
            (*reasons, *_why_not(alternative, right), *_ruled_out(groups)),
            None,
            alternative,
            best,
            options,
            right,
        )
    warning = reasons
    reasons = [_move(current, chosen, right)]
    reasons.extend(warning)
    reasons.extend(_notes(spec, chosen, current, rules))
    if chosen.step == "right-size":
        reasons.extend(_chip_declined(options))
    reasons.extend(_ruled_out(groups))
    return Decision(chosen.group, tuple(reasons), chosen, alternative, best, options, right)


def _move(current: CurrentCost, chosen: Option, right: Option | None) -> str:
    """The verdict's first reason, from the chosen option's own figures."""
    if chosen.instance == current.instance:
        head = f"resize today's {_today(current)} to {chosen.instances} x {chosen.instance}"
    else:
        head = f"{_today(current)} -> {chosen.instances} x {chosen.instance}"
    head += f" saves {money(chosen.monthly_savings_usd)}/month ({percent(chosen.savings_fraction)})"
    if chosen.step == "change chip" and right is not None:
        return (
            f"{head}: the {chosen.baseline} saves {money(right.monthly_savings_usd)}/month without porting, "
            f"and the chip change adds {money(chosen.credited_savings_usd)}/month "
            f"({percent(chosen.credited_fraction)}) for {weeks(chosen.credited_migration_weeks)} more, "
            f"paying back in {months(chosen.payback_months)}"
        )
    effort = (
        "with no migration work"
        if chosen.migration_weeks == 0
        else f"for {weeks(chosen.migration_weeks)}, paying back in {months(chosen.payback_months)}"
    )
    return f"{head} {effort}"


def _chip_declined(options: tuple[Option, ...]) -> list[str]:
    """Why the best priced chip change was not taken, in its own incremental figures."""
    chips = [o for o in options if o.step == "change chip" and o.credited_savings_usd is not None]
    if not chips:
        return []
    o = max(chips, key=lambda o: o.credited_savings_usd or 0.0)
    head = (
        f"best chip change {o.instances} x {o.instance} adds {money(o.credited_savings_usd)}/month "
        f"({percent(o.credited_fraction)}) over the {o.baseline} for "
        f"{weeks(o.credited_migration_weeks)} more"
    )
    if o.payback_months is not None:
        head += f", paying back in {months(o.payback_months)}"
    return [head, *o.reasons]


def _short_today(spec: WorkloadSpec, current: CurrentCost, cands: list[Candidate], rules: Rules) -> list[str]:
    """A warning when the model finds that today's deployment cannot run or carry the stated load.

    Inference is judged like every proposal: today's instance type at its best layout (`compare`), as
    many replicas as today's count holds, at the model's peak throughput. Training, and an instance type
    the comparison does not cover, use the estimate of today's deployment as it is.
    """
    if current.instance is None:
        return []
    today = _today(current)
    tail = "; staying as is is not a safe choice until that is checked against production"
    same = next((c for c in cands if c.estimate.instance == current.instance), None)
    e = same.estimate if same is not None and spec.task == "inference" else current.estimate
    if e is None:
        return []
    if not e.feasible:
        why = (e.reasons[0] if e.reasons else "no layout fits").rstrip(".")
        return [
            _tag(
                rules,
                "current-short",
                f"warning: the model finds that {today} cannot run this workload ({why}){tail}",
            )
        ]
    if (
        same is None
        or not isinstance(e, InferenceEstimate)
        or not same.need_tok_s
        or not e.output_tokens_per_s
    ):
        return []
    capacity = current.count // e.count * e.output_tokens_per_s
    if capacity >= same.need_tok_s * (1 - 1e-9):
        return []
    needed = same.instances(1.0)
    text = (
        f"warning: at the model's peak throughput {today} carries {capacity / same.need_tok_s:.0%} of the "
        f"stated load ({needed} instances needed){tail}"
    )
    return [_tag(rules, "current-short", text)]


def _ruled_out(groups: dict[Group, list[str]]) -> list[str]:
    """One line per family that a rule keeps out, whatever its price."""
    return [f"{g} ruled out: {'; '.join(why)}" for g, why in groups.items() if why]


def _today(current: CurrentCost) -> str:
    return f"{current.count} x {current.instance}" if current.instance else "today's deployment"


def _why_not(alternative: Option | None, right: Option | None) -> tuple[str, ...]:
    """Why nothing was taken: the right-size's own figures, then the best alternative's, each once."""
    out: list[str] = []
    for label, o in (("right-size", right), ("best alternative", alternative)):
        if o is None or (label == "best alternative" and right is not None and o.instance == right.instance):
            continue
        head = (
            f"{label} {o.instances} x {o.instance} would save "
            f"{money(o.monthly_savings_usd)}/month ({percent(o.savings_fraction)})"
        )
        if o.step == "change chip":
            head += f", {money(o.credited_savings_usd)}/month over the {o.baseline}"
        if o.payback_months is not None:
            head += f", paying back in {months(o.payback_months)}"
        out.extend((head, *o.reasons))
    return tuple(out) or ("no priced, feasible alternative was found",)


def _notes(spec: WorkloadSpec, chosen: Option, current: CurrentCost, rules: Rules) -> list[str]:
    notes = []
    if (
        current.monthly_usd >= rules["large_spend_usd_per_month"]
        and (chosen.savings_fraction or 0.0) >= rules["large_spend_savings_fraction"]
    ):
        notes.append(_tag(rules, "large-spend"))
    if chosen.group == "trainium" and spec.task == "training":
        chips = current.estimate.chips if current.estimate is not None else None
        if chips is not None and chips >= rules["trainium_min_chips"]:
            notes.append(
                _tag(rules, "trainium-scale", f"transformer training at {chips} chips fits Trainium")
            )
    if chosen.group == "inferentia" and spec.model.model_type in rules.standard_architectures:
        notes.append(_tag(rules, "inferentia-fit"))
    scan = _scan(spec)
    if chosen.group in NEURON and scan is not None:
        notes.append(
            f"the scan {scan.name} says {chosen.chip} is {scan.verdict(chosen.chip)}: "
            f"{chosen.migration_weeks:g} engineer-week{'' if chosen.migration_weeks == 1 else 's'} to port"
        )
    if chosen.group in NEURON:
        notes.append(
            "keep the current NVIDIA deployment as the fallback until the Neuron one has served real load"
        )
    notes.extend(r for r in chosen.reasons if "[gpu-fallback]" in r)
    return notes


def _family_best(group: Group, options: tuple[Option, ...], disqualified: list[str]) -> FamilyBest:
    mine = [o for o in options if o.group == group]
    priced = [o for o in mine if o.monthly_usd is not None]
    unpriced = [o for o in mine if o.monthly_usd is None and o.breakeven_usd_per_hour and o.chips]
    # Unpriced options cannot be ranked on cost; the highest break-even price per chip uses its chips best.
    unpriced.sort(key=lambda o: -(o.breakeven_usd_per_hour or 0.0) * (o.instances or 1) / (o.chips or 1))
    if priced:
        best = min(priced, key=lambda o: o.monthly_usd or 0.0)
        notes = [
            f"{o.instance} has no public price: moving there saves money below ${o.breakeven_usd_per_hour:,.2f}/h"
            for o in unpriced[:2]
        ]
        return FamilyBest(group, best, (*disqualified, *notes))
    if unpriced:
        best = unpriced[0]
        return FamilyBest(group, best, (*disqualified, "no instance of this family has a public price"))
    why = (
        "no instance of this family can run this workload"
        if mine
        else "no instance of this family in the catalog"
    )
    return FamilyBest(group, None, (*disqualified, why))


def with_estimates(decision: Decision, cands: list[Candidate]) -> Decision:
    """Attach the planner's full estimate to the best option of each family and the proposal."""
    by_instance = {c.estimate.instance: c.estimate for c in cands}

    def fill(o: Option | None) -> Option | None:
        return replace(o, estimate=by_instance.get(o.instance)) if o is not None else None

    best = {g: replace(b, option=fill(b.option)) for g, b in decision.best.items()}
    return replace(
        decision, proposed=fill(decision.proposed), best=best, right_size=fill(decision.right_size)
    )
