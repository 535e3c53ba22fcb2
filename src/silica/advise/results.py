"""What `advise()` returns. The CLI, the HTML and the Markdown reports only serialise these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from silica.results import Estimate

__all__ = [
    "GROUPS",
    "Advice",
    "CurrentCost",
    "FamilyBest",
    "Group",
    "Option",
    "Sensitivity",
    "Status",
    "Step",
    "Verdict",
    "WorkloadAdvice",
]

Group = Literal["trainium", "inferentia", "nvidia"]
GROUPS: tuple[Group, ...] = ("trainium", "inferentia", "nvidia")
Verdict = Literal["trainium", "inferentia", "nvidia", "stay"]
Status = Literal["eligible", "excluded", "disqualified", "infeasible", "unpriced"]
# "right-size": on today's vendor, judged against today; "change chip": another vendor, judged on its
# increment over the right-size.
Step = Literal["right-size", "change chip"]


@dataclass(frozen=True)
class Option:
    """One instance type costed for one workload at its load, judged as one step of the decision ladder.

    The ladder: today's bill, then the best right-size on today's vendor (no porting), then each chip
    change judged on its increment over that right-size. `step` says which rung an option is on and
    `baseline` what it is judged against; `credited_*` are the saving and the effort the step itself
    adds (for a right-size, all of it against today; for a chip change, only what it adds over the
    right-size), and `payback_months` is `credited_migration_usd / credited_savings_usd` in months, so
    a port is never credited with a saving that resizing on today's vendor gets without porting.
    `monthly_savings_usd` and `savings_fraction` stay against today's bill, for the summary columns.

    Money is None where a price is unknown; then `breakeven_usd_per_hour` says at what hourly price
    (per instance) the option costs the same as its baseline, and `payback_price_usd_per_hour` at
    what price it would pay back its credited effort within the payback limit.
    """

    instance: str
    group: Group
    chip: str
    status: Status
    reasons: tuple[str, ...]
    instances: int | None  # instances needed for the load (inference) or in the cluster (training)
    chips: int | None
    layout: str
    usd_per_hour: float | None  # one instance
    monthly_usd: float | None
    monthly_savings_usd: float | None
    savings_fraction: float | None
    migration_weeks: float
    migration_usd: float
    payback_months: float | None  # None: never (no saving) or unknown (no price)
    breakeven_usd_per_hour: float | None
    payback_price_usd_per_hour: float | None
    unit_cost: float | None  # USD per 1M output (decoders) or prompt (encoders) tokens, or USD per run
    unit: str
    estimate: Estimate | None = None  # kept for the best option of each family
    step: Step = "right-size"
    baseline: str = "today"  # "today", or the right-size a chip change is judged against
    baseline_monthly_usd: float | None = None  # what the baseline costs a month
    credited_savings_usd: float | None = None  # baseline - this option: the saving this step earns
    credited_fraction: float | None = None  # credited_savings_usd / baseline_monthly_usd
    credited_migration_weeks: float = 0.0  # the engineer-weeks this step adds over its baseline
    credited_migration_usd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "estimate"}
        out["reasons"] = list(self.reasons)
        out["estimate"] = self.estimate.to_dict() if self.estimate is not None else None
        return out


@dataclass(frozen=True)
class FamilyBest:
    """The best option of one family (Trainium, Inferentia, NVIDIA), or why there is none."""

    group: Group
    option: Option | None
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "option": self.option.to_dict() if self.option else None,
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class CurrentCost:
    instance: str | None
    count: int
    monthly_usd: float
    basis: str  # how the monthly figure was obtained
    runs_per_month: float | None  # training only
    runs_basis: str | None
    estimate: Estimate | None  # the model's view of the current deployment, when an instance is known

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "count": self.count,
            "monthly_usd": self.monthly_usd,
            "basis": self.basis,
            "runs_per_month": self.runs_per_month,
            "runs_basis": self.runs_basis,
            "estimate": self.estimate.to_dict() if self.estimate else None,
        }


@dataclass(frozen=True)
class Sensitivity:
    """The verdict re-decided with every proposed price scaled and at other utilisations."""

    price_factors: tuple[float, ...]
    utilisations: tuple[float, ...]
    verdicts: tuple[tuple[Verdict, ...], ...]  # [price index][utilisation index]
    utilisation_name: str  # serving_utilisation or training_goodput

    def to_dict(self) -> dict[str, Any]:
        return {
            "price_factors": list(self.price_factors),
            "utilisations": list(self.utilisations),
            "verdicts": [list(row) for row in self.verdicts],
            "utilisation_name": self.utilisation_name,
        }


@dataclass(frozen=True)
class WorkloadAdvice:
    name: str
    model: str
    task: str
    verdict: Verdict
    reasons: tuple[str, ...]
    current: CurrentCost
    proposed: Option | None  # the option the verdict moves to; None when it stays
    best_alternative: Option | None  # the cheapest priced alternative, whether or not it qualified
    best: dict[Group, FamilyBest]
    options: tuple[Option, ...]
    sensitivity: Sensitivity
    assumptions: tuple[str, ...] = ()
    # The ladder's middle rung: the best option on today's vendor (the one the verdict takes when no chip
    # change pays for itself), or the cheapest one when none passes the rules; None when there is none
    # cheaper than today, or today's instance is unknown. Chip changes were judged against it.
    right_size: Option | None = None

    @property
    def monthly_savings_usd(self) -> float:
        return (self.proposed.monthly_savings_usd or 0.0) if self.proposed else 0.0

    @property
    def migration_weeks(self) -> float:
        return self.proposed.migration_weeks if self.proposed else 0.0

    @property
    def payback_months(self) -> float | None:
        return self.proposed.payback_months if self.proposed else None

    @property
    def proposed_monthly_usd(self) -> float:
        if self.proposed and self.proposed.monthly_usd is not None:
            return self.proposed.monthly_usd
        return self.current.monthly_usd

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "task": self.task,
            "verdict": self.verdict,
            "best": {g: b.to_dict() for g, b in self.best.items()},
            "current_monthly_usd": self.current.monthly_usd,
            "proposed_monthly_usd": self.proposed_monthly_usd,
            "monthly_savings_usd": self.monthly_savings_usd,
            "migration_weeks": self.migration_weeks,
            "payback_months": self.payback_months,
            "reasons": list(self.reasons),
            "current": self.current.to_dict(),
            "proposed": self.proposed.to_dict() if self.proposed else None,
            "best_alternative": self.best_alternative.to_dict() if self.best_alternative else None,
            "right_size": self.right_size.to_dict() if self.right_size else None,
            "options": [o.to_dict() for o in self.options],
            "sensitivity": self.sensitivity.to_dict(),
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True)
class Advice:
    """The advice for a whole inventory, with the rules (and overrides) it was decided under."""

    inventory: str
    workloads: tuple[WorkloadAdvice, ...]
    rules: dict[str, Any]
    engineer_usd_per_week: float
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "inventory": self.inventory,
            "workloads": [w.to_dict() for w in self.workloads],
            "engineer_usd_per_week": self.engineer_usd_per_week,
            "rules": self.rules,
            "assumptions": list(self.assumptions),
        }
