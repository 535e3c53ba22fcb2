"""Turn the planner's estimates into monthly money: today's bill, and each candidate at the same load.

The planner (`silica.plan.compare`) says how fast each instance type runs the workload. Here that
speed becomes a fleet size at the workload's load and a monthly bill, with volume (instance-hours)
kept apart from price so that the sensitivity analysis can scale prices without re-planning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from silica.advise.inventory import WorkloadSpec
from silica.advise.results import CurrentCost, Group
from silica.advise.rules import Rules
from silica.cost import HOURS_PER_DAY, HOURS_PER_MONTH, usd, usd_per_hour, usd_per_month
from silica.errors import InputError
from silica.results import Estimate, InferenceEstimate, TrainingEstimate
from silica.workload import InferenceWorkload

__all__ = ["Candidate", "candidates", "current_cost", "group_of"]


def group_of(estimate: Estimate) -> Group | None:
    """Which family an instance belongs to, by its chip: Trainium, Inferentia or NVIDIA."""
    if estimate.chip.startswith("trainium"):
        return "trainium"
    if estimate.chip.startswith("inferentia"):
        return "inferentia"
    if estimate.vendor == "nvidia":
        return "nvidia"
    return None


@dataclass(frozen=True)
class Candidate:
    """One instance type's best layout for the workload, with what it needs per month."""

    estimate: Estimate
    group: Group
    usd_per_hour: float | None  # one instance, from the catalog (None: no public price)
    need_tok_s: float | None  # inference: output tokens/s the load asks for
    runs_per_month: float | None  # training

    @property
    def training(self) -> bool:
        return self.estimate.task == "training"

    def instances(self, utilisation: float) -> int | None:
        """Instances the load needs when each deployment sustains `utilisation` of its modelled peak."""
        e = self.estimate
        if not e.feasible:
            return None
        if not isinstance(e, InferenceEstimate) or not self.need_tok_s or not e.output_tokens_per_s:
            return e.count
        return math.ceil(self.need_tok_s / (e.output_tokens_per_s * utilisation) - 1e-9) * e.count

    def instance_hours(self, utilisation: float) -> float | None:
        """Instance-hours a month: a standing fleet for inference, runs x run length for training."""
        e = self.estimate
        if not e.feasible:
            return None
        if isinstance(e, TrainingEstimate):
            if e.train_days is None or self.runs_per_month is None:
                return None
            return e.count * e.train_days * HOURS_PER_DAY / utilisation * self.runs_per_month
        n = self.instances(utilisation)
        return None if n is None else n * HOURS_PER_MONTH

    def unit_cost(self) -> tuple[float | None, str]:
        e = self.estimate
        if isinstance(e, TrainingEstimate):
            return e.usd_per_run, "USD per run"
        if (
            isinstance(e, InferenceEstimate)
            and e.usd_per_1m_output_tokens is None
            and e.usd_per_1m_input_tokens
        ):
            return e.usd_per_1m_input_tokens, "USD per 1M prompt tokens"  # an encoder: it emits no tokens
        return e.usd_per_1m_output_tokens, "USD per 1M output tokens"

    @property
    def layout(self) -> str:
        e = self.estimate
        if not e.feasible:
            return "-"
        text = f"{e.count} x {e.instance}, tp{e.tp} pp{e.pp} x{e.dp}"
        return text if self.training else f"{text} batch {e.batch}"


def candidates(
    spec: WorkloadSpec, found: tuple[Estimate, ...], runs_per_month: float | None
) -> list[Candidate]:
    """Every instance type of the comparison that belongs to one of the three families."""
    need = spec.workload.output_tokens_per_s if isinstance(spec.workload, InferenceWorkload) else None
    out = []
    for e in found:
        group = group_of(e)
        if group is None:
            continue
        price = e.price.usd_per_hour if e.price is not None else None
        out.append(Candidate(e, group, price, need, runs_per_month))
    return out


def current_cost(spec: WorkloadSpec, estimate: Estimate | None, rules: Rules) -> CurrentCost:
    """Today's monthly bill, and for training how many runs a month it buys (so both sides do equal work).

    Training is costed on the same basis as the proposals: with `runs_per_month` given, today's bill is
    those runs at the modelled run length; without it, the cluster is held all month and runs back to back.
    """
    cur = spec.current
    goodput = rules["training_goodput"]
    run_hours = (
        estimate.train_days * HOURS_PER_DAY
        if isinstance(estimate, TrainingEstimate) and estimate.feasible and estimate.train_days
        else None
    )
    runs, runs_basis = None, None
    if spec.task == "training":
        if spec.runs_per_month is not None:
            runs, runs_basis = spec.runs_per_month, "runs_per_month from the inventory"
        elif run_hours is not None:
            runs = HOURS_PER_MONTH * goodput / run_hours
            runs_basis = (
                f"the current cluster runs back to back: {HOURS_PER_MONTH:g} h x {goodput:g} goodput / "
                f"{run_hours:,.0f} h per run (modelled)"
            )
        else:
            deadline = getattr(spec.workload, "deadline_days", None)
            runs = HOURS_PER_MONTH / HOURS_PER_DAY / deadline if deadline else 1.0
            runs_basis = "one run per deadline period" if deadline else "one run a month (no deadline given)"
    if cur.monthly_usd is not None:
        monthly, basis = cur.monthly_usd, "monthly_usd from the inventory"
    elif cur.usd_per_hour is None or cur.instance is None:
        raise InputError(f"Workload {spec.name!r} has no current cost.", "give current.monthly_usd.")
    elif spec.task == "training" and spec.runs_per_month is not None and run_hours is not None:
        hours = run_hours / goodput * spec.runs_per_month
        monthly = usd(usd_per_hour(cur.usd_per_hour, cur.count), hours)
        basis = (
            f"{cur.count} x {cur.instance} at ${cur.usd_per_hour:,.2f}/h for {spec.runs_per_month:g} runs of "
            f"{run_hours:,.0f} h (modelled) / {goodput:g} goodput"
        )
    else:
        monthly = usd_per_month(usd_per_hour(cur.usd_per_hour, cur.count))
        basis = f"{cur.count} x {cur.instance} at ${cur.usd_per_hour:,.2f}/h x {HOURS_PER_MONTH:g} h"
    return CurrentCost(cur.instance, cur.count, monthly, basis, runs, runs_basis, estimate)
