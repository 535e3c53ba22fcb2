"""Apply the decision rules to costed candidates: which family, if any, a workload should move to.

`decide` is a pure function of the candidates, today's cost, the rules and two knobs (a price factor
on every proposed instance and the utilisation a fleet sustains), so the sensitivity analysis is the
same decision re-run on a grid, never a second implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from silica import cost
from silica.advise.costing import Candidate
from silica.advise.inventory import WorkloadSpec
from silica.advise.results import GROUPS, CurrentCost, FamilyBest, Group, Option, Status, Verdict
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
) -> Option:
    e = cand.estimate
    weeks, _ = migration_weeks(spec, cand, rules)
    migration_usd = weeks * rate
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

    def make(
        status: Status,
        reasons: tuple[str, ...],
        money: tuple[float | None, float | None, float | None, float | None] = (None, None, None, None),
        prices: tuple[float | None, float | None] = (None, None),
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
            migration_weeks=weeks,
            migration_usd=migration_usd,
            breakeven_usd_per_hour=prices[0],
            payback_price_usd_per_hour=prices[1],
            unit_cost=unit_cost,
            unit=unit,
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
    breakeven = cost.breakeven_price(current.monthly_usd - extra, hours)
    pays_back = cost.breakeven_price(
        current.monthly_usd - extra - migration_usd / rules["max_payback_months"], hours
    )
    prices = (breakeven, pays_back)
    if cand.usd_per_hour is None:
        below = f"below ${breakeven:,.2f}/h" if breakeven is not None else "at no price (today costs less)"
        text = f"no public price; moving saves money {below}"
        status: Status = "disqualified" if disq else "unpriced"
        return make(status, (*disq, *notes, _tag(rules, "unpriced", text)), prices=prices)
    monthly = cost.usd(cand.usd_per_hour * price_factor, hours) + extra
    savings = current.monthly_usd - monthly
    fraction = savings / current.monthly_usd
    # A saving within rounding of today's bill is no saving: it has no payback period.
    negligible = fraction < rules["negligible_savings_fraction"]
    payback = None if negligible else cost.payback_months(migration_usd, savings)
    status = "disqualified" if disq else "eligible"
    if status == "eligible" and negligible:
        status = "excluded"
        text = (
            f"costs {percent(-fraction)} more than today"
            if fraction < 0
            else f"saves {fraction:.1%}, below negligible_savings_fraction "
            f"{rules['negligible_savings_fraction']:.1%}: no saving"
        )
        notes.append(_tag(rules, "savings-too-small", text))
    elif status == "eligible" and fraction < rules["min_savings_fraction"]:
        status = "excluded"
        text = f"saves {fraction:.0%}, below min_savings_fraction {rules['min_savings_fraction']:.0%}"
        notes.append(_tag(rules, "savings-too-small", text))
    elif status == "eligible" and payback is not None and payback > rules["max_payback_months"]:
        status = "excluded"
        text = f"pays back in {months(payback)}, over max_payback_months {rules['max_payback_months']:g}"
        notes.append(_tag(rules, "payback-too-long", text))
    return make(status, (*disq, *notes), (monthly, savings, fraction, payback), prices)


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
    """The verdict for one workload under `rules`, with every option's status and reasons."""
    util = utilisation or rules["serving_utilisation" if spec.task == "inference" else "training_goodput"]
    groups = family_disqualifiers(spec, rules)
    nvidia = [c for c in cands if c.group == "nvidia" and c.usd_per_hour is not None and c.estimate.feasible]
    gpu_costs = [
        cost.usd((c.usd_per_hour or 0.0) * price_factor, c.instance_hours(util) or 0.0) for c in nvidia
    ]
    fallback = rules["gpu_fallback_fraction"] * min(gpu_costs) if gpu_costs else 0.0
    options = tuple(
        _option(spec, c, current, rules, rate, groups[c.group], fallback, price_factor, util) for c in cands
    )
    best = {g: _family_best(g, options, groups[g]) for g in GROUPS}
    priced = [o for o in options if o.monthly_savings_usd is not None]
    alternative = max(priced, key=lambda o: o.monthly_savings_usd or 0.0, default=None)
    eligible = [o for o in options if o.status == "eligible"]
    chosen = max(eligible, key=lambda o: o.monthly_savings_usd or 0.0, default=None)
    # When the model says today's deployment cannot carry the load, "stay" is not safe: say so first.
    reasons: list[str] = _short_today(spec, current, cands, rules)
    if spec.task == "inference" and current.monthly_usd < rules["small_spend_usd_per_month"]:
        text = (
            f"inference spend ${current.monthly_usd:,.0f}/month is below small_spend_usd_per_month "
            f"${rules['small_spend_usd_per_month']:,.0f}: migration rarely pays"
        )
        reasons.append(_tag(rules, "small-spend", text))
        return Decision("stay", (*reasons, *_why_not(alternative)), None, alternative, best, options)
    if chosen is None:
        reasons.append("no option passes the rules")
        return Decision(
            "stay", (*reasons, *_why_not(alternative), *_ruled_out(groups)), None, alternative, best, options
        )
    if chosen.instance == current.instance:
        verb = "saves" if (chosen.monthly_savings_usd or 0.0) >= 0 else "costs"
        reasons.append(
            f"the cheapest qualifying option is the current type, resized to {chosen.instances} instances "
            f"({verb} ${abs(chosen.monthly_savings_usd or 0.0):,.0f}/month)"
        )
        return Decision("stay", tuple(reasons), None, alternative, best, options)
    warning = reasons
    reasons = [
        f"{_today(current)} -> {chosen.instances} x {chosen.instance} saves "
        f"{money(chosen.monthly_savings_usd)}/month ({percent(chosen.savings_fraction)}), "
        f"pays back {weeks(chosen.migration_weeks)} in {months(chosen.payback_months)}"
    ]
    reasons.extend(warning)
    reasons.extend(_notes(spec, chosen, current, rules))
    reasons.extend(_ruled_out(groups))
    return Decision(chosen.group, tuple(reasons), chosen, alternative, best, options)


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


def _why_not(alternative: Option | None) -> tuple[str, ...]:
    if alternative is None:
        return ("no priced, feasible alternative was found",)
    head = (
        f"best alternative {alternative.instances} x {alternative.instance} would save "
        f"{money(alternative.monthly_savings_usd)}/month ({percent(alternative.savings_fraction)})"
    )
    if alternative.payback_months is not None:
        head += f", paying back in {months(alternative.payback_months)}"
    return (head, *alternative.reasons)


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
    return replace(decision, proposed=fill(decision.proposed), best=best)
