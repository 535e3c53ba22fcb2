"""Sizing a fleet mix by simulation, and how a candidate mix is recorded (for `plan.py`).

`Sizer` holds what every candidate shares (demand, jobs, per-type pool templates, the goal) and finds
the fewest instances meeting it: double from a first guess, then bisect to 0.5%. That search is sound
because the SLO attainment and the deadlines met only improve with more instances of a type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from silica.errors import InputError
from silica.fleet.capacity import Pool, Purchase
from silica.fleet.policies import Policy
from silica.fleet.power import SiteBudget
from silica.fleet.simulate import Fleet, FleetRun, run_policy

__all__ = ["DEFAULT_MAX_INSTANCES", "Candidate", "Sizer", "failed", "pct", "pools_out", "summary"]

# The most instances of one pool the search tries unless told otherwise: a plan that needs more is
# almost surely a mistaken peak or unit, and an answer of billions of instances would hide it.
DEFAULT_MAX_INSTANCES = 1_000_000


@dataclass(frozen=True, slots=True)
class Candidate:
    label: str
    policy: str
    pools: tuple[dict[str, Any], ...]
    meets: bool
    metrics: dict[str, Any]
    why_lost: str | None = None

    @property
    def cost(self) -> float | None:
        return self.metrics.get("total_usd")

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "policy": self.policy,
            "pools": list(self.pools),
            "meets": self.meets,
            "metrics": self.metrics,
            "why_lost": self.why_lost,
        }


def summary(run: FleetRun) -> dict[str, Any]:
    keys = (
        "slo_attainment",
        "jobs_completed",
        "jobs_deadline_missed",
        "utilisation_busy",
        "lent_chip_hours",
        "total_usd",
        "usd_per_1m_output_tokens",
        "unpriced_pools",
    )
    return {k: run.metrics[k] for k in keys}


class Sizer:
    """Holds what every candidate shares: demand, jobs, per-type templates, the goal."""

    def __init__(
        self,
        base: Fleet,
        templates: dict[tuple[str, Purchase], Pool],
        policy: Policy,
        target: float,
        limit: int | None,
        site: SiteBudget | None = None,
    ) -> None:
        self.base = base
        self.templates = templates
        self.policy = policy
        if limit is not None and limit < 1:
            raise InputError(f"max_instances must be at least 1, got {limit}.", "e.g. --max-instances 1000.")
        self.target = target
        self.site = site  # a power envelope: no pool is sized past what the site holds
        self.limit = limit
        self.max_instances = limit if limit is not None else DEFAULT_MAX_INSTANCES  # per pool
        self.need = float(base.demand.output_tokens_per_s.max(initial=0.0)) * (1 + policy.headroom)
        self.horizon_h = base.steps * base.demand.step_s / 3600.0

    def fleet(self, pools: Sequence[tuple[str, Purchase, int]], jobs: bool = True) -> Fleet:
        made = tuple(replace(self.templates[(i, p)], count=n) for i, p, n in pools if n > 0)
        return replace(self.base, pools=made, jobs=self.base.jobs if jobs else ())

    def ok(self, run: FleetRun) -> bool:
        return (run.metrics["slo_attainment"] or 0.0) >= self.target - 1e-12 and run.metrics[
            "jobs_deadline_missed"
        ] == 0

    def train_start(self, instance: str, purchase: Purchase) -> int:
        """Instances for the average training load or the biggest job, whichever is more."""
        t = self.templates[(instance, purchase)]
        if not self.base.jobs:
            return 1
        work = sum(j.chip_hours for j in self.base.jobs) / max(self.horizon_h, 1e-9)
        biggest = max(j.chips for j in self.base.jobs)
        return max(1, math.ceil(max(work, biggest) / (t.chips_per_instance * (t.train_speed or 1.0))))

    def start(self, instance: str, purchase: Purchase, training: bool) -> int:
        """A first size to try: the peak inference need, at least what training needs."""
        t = self.templates[(instance, purchase)]
        n = 1
        if t.replica_tokens_per_s:
            n = math.ceil(self.need / t.replica_tokens_per_s) * t.instances_per_replica
        return max(n, self.train_start(instance, purchase)) if training else max(1, n)

    def cap(self, instance: str, beside: Sequence[tuple[str, int]] = ()) -> int | None:
        """The most instances of `instance` the site's power holds beside `beside` (None: no budget).

        A chip whose power is unpublished gets no cap here; `over_budget` turns such a mix down."""
        return None if self.site is None else self.site.cap(instance, beside)

    def unpowered(self, *names: str) -> str | None:
        """Under a budget, why a mix of `names` cannot be chosen without sizing it: a chip whose power
        is published nowhere cannot be shown to fit (None when every chip's power is known)."""
        if self.site is None:
            return None
        return self.site.over([(n, 1) for n in names if self.site.peak_mw([(n, 1)]) is None])

    def over_budget(self, pools: Sequence[dict[str, Any]]) -> str | None:
        """Why a sized mix does not fit the site's power (None when it fits, or with no budget)."""
        if self.site is None:
            return None
        return self.site.over([(str(p["instance"]), int(p["count"])) for p in pools])

    def size(
        self,
        make: Callable[[int], Fleet],
        start: int,
        policy: Policy,
        ok: Callable[[FleetRun], bool],
        cap: int | None = None,
    ) -> tuple[int | None, FleetRun, int]:
        """(fewest instances meeting `ok` or None, its run, the size run): double, then bisect to 0.5%.
        `cap` (at least 1) bounds the search: the most instances a site's power budget holds."""
        limit = self.limit or min(max(64 * start, 1024), self.max_instances)
        if cap is not None:
            limit = min(limit, max(1, cap))
        n = min(start, limit)
        run = run_policy(make(n), policy, series_points=1)
        lo, hi, best = 0, None, run
        while not ok(run):
            lo = n
            if n >= limit:
                return None, run, n
            n = min(limit, n * 2)
            run = run_policy(make(n), policy, series_points=1)
        hi, best = n, run
        while hi - lo > max(1, hi // 200):
            mid = (lo + hi) // 2
            trial = run_policy(make(mid), policy, series_points=1)
            if ok(trial):
                hi, best = mid, trial
            else:
                lo = mid
        return hi, best, hi


def pools_out(fleet: Fleet) -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "instance": p.instance,
            "purchase": p.purchase,
            "count": p.count,
            "chips": p.chips,
            "usd_per_instance_hour": p.usd_per_instance_hour,
            "price_basis": p.price_basis,
        }
        for p in fleet.pools
    )


def pct(x: float) -> str:
    """Enough digits to tell 99.99% from 99.999%."""
    return f"{100 * x:.6g}%" if x > 0.999 else f"{100 * x:.2f}%"


def failed(pl: Sizer, label: str, policy: str, run: FleetRun, pools: tuple[dict[str, Any], ...]) -> Candidate:
    m = run.metrics
    size = sum(p["count"] for p in pools)
    if (m["slo_attainment"] or 0.0) < pl.target:
        why = (
            f"SLO attainment {pct(m['slo_attainment'] or 0.0)} < target {pct(pl.target)} "
            f"even at {size:,} instances"
        )
    else:
        why = f"misses {m['jobs_deadline_missed']} training deadline(s) even at {size:,} instances"
    budget = pl.over_budget(pools) if pools else None
    if budget is not None:
        why += f" ({budget})"
    elif pl.site is not None and pools and _at_cap(pl, pools):
        why += f", the most the {pl.site.site_mw:g} MW site holds (PUE {pl.site.pue:g})"
    elif at_limit(pl, pools):
        why += (
            f", the limit of {pl.max_instances:,} instances per pool "
            "(raise it with --max-instances or plan.max_instances if the demand is right)"
        )
    return Candidate(label, policy, pools, False, summary(run), why)


def _at_cap(pl: Sizer, pools: Sequence[dict[str, Any]]) -> bool:
    """Whether one more instance of the mix's last pool would not fit the site."""
    last = pools[-1]
    beside = [(str(p["instance"]), int(p["count"])) for p in pools[:-1]]
    cap = pl.cap(str(last["instance"]), beside)
    return cap is not None and int(last["count"]) >= cap


def at_limit(pl: Sizer, pools: Sequence[dict[str, Any]]) -> bool:
    """Whether a pool of the mix reached the most instances the search may try."""
    return any(p["count"] >= pl.max_instances for p in pools)
