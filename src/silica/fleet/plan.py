"""Choose the cheapest fleet mix that meets an SLO-attainment target and every training deadline.

Enumerate, size, simulate, rank, explain (the planner's pattern in silica.plan, one level up):

1. each candidate instance type gets its replica capacity and training speed once;
2. mixes: one type bought one way (reserved, or on demand); an inference type plus a training type;
   a reserved base with on-demand burst (autoscale) of the same type;
3. each mix is sized by simulation: doubling, then bisection, to the fewest instances that meet the
   target and miss no deadline (needs grow monotonically with demand, so the search is sound);
4. priced mixes that meet the goal are ranked by cost over the horizon; every other mix keeps the
   reason it lost. If none meets the goal, that is an error (exit 2) that says how close it came.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from silica import cost
from silica.catalog import load_catalog
from silica.catalog.schema import Catalog
from silica.errors import InfeasibleError, InputError
from silica.fleet.capacity import Pool, Purchase, price_of
from silica.fleet.policies import Policy
from silica.fleet.power import FleetPower, SiteBudget, check_site_mw, plan_power
from silica.fleet.scenario import build_fleet, check_instances, make_policies
from silica.fleet.simulate import Fleet, FleetRun, earliest_finish_h, run_policy
from silica.fleet.sizing import (
    DEFAULT_MAX_INSTANCES,
    Candidate,
    Sizer,
    at_limit,
    failed,
    pct,
    pools_out,
    summary,
)
from silica.fleet.spec import FleetFile, PoolSpec, as_policy

__all__ = ["DEFAULT_CANDIDATES", "DEFAULT_MAX_INSTANCES", "Candidate", "FleetPlan", "plan_fleet"]

DEFAULT_CANDIDATES = (
    "trn1.32xlarge",
    "trn2.48xlarge",
    "inf2.48xlarge",
    "inf2.24xlarge",
    "p4d.24xlarge",
    "p5.48xlarge",
    "p5en.48xlarge",
    "g6e.48xlarge",
)
PAIR_TOP = 3  # mixes pair the 3 cheapest inference types with the 3 cheapest training types
BASE_FRACTIONS = (0.5, 0.75)  # reserved base as a share of the all-reserved size, for base + burst


@dataclass(frozen=True, slots=True)
class FleetPlan:
    target: float
    policy: str
    horizon_hours: float
    best: Candidate
    runners_up: tuple[Candidate, ...]
    assumptions: tuple[str, ...] = ()
    power: FleetPower | None = None  # the best mix's MW by hour, when a site budget or PUE was given

    def to_dict(self) -> dict[str, Any]:
        out = {
            "target_slo_attainment": self.target,
            "policy": self.policy,
            "horizon_hours": self.horizon_hours,
            "best": self.best.to_dict(),
            "runners_up": [c.to_dict() for c in self.runners_up],
            "assumptions": list(self.assumptions),
        }
        if self.power is not None:
            out["power"] = self.power.to_dict()
        return out


def _candidates(pl: Sizer, names: list[str], purchases: list[Purchase]) -> list[Candidate]:
    out: list[Candidate] = []
    policy = pl.policy
    has_jobs = bool(pl.base.jobs)
    reserved_size: dict[str, int] = {}
    for name in names:
        for buy in purchases:
            t = pl.templates[(name, buy)]
            label = f"{name} {buy.replace('_', '-')}"
            if not t.replica_tokens_per_s:
                out.append(
                    Candidate(label, policy.name, (), False, {}, f"cannot serve: {'; '.join(t.notes)}")
                )
                continue
            if has_jobs and t.train_speed is None:
                out.append(
                    Candidate(
                        label,
                        policy.name,
                        (),
                        False,
                        {},
                        f"{name} cannot train and there are {len(pl.base.jobs)} training jobs",
                    )
                )
                continue

            unpowered = pl.unpowered(name)
            if unpowered is not None:
                out.append(Candidate(label, policy.name, (), False, {}, unpowered))
                continue

            def make(n: int, name: str = name, buy: Purchase = buy) -> Fleet:
                return pl.fleet([(name, buy, n)])

            n, run, tried = pl.size(make, pl.start(name, buy, True), policy, pl.ok, pl.cap(name))
            pools = pools_out(make(tried))
            if n is None:
                out.append(failed(pl, label, policy.name, run, pools))
                continue
            if buy == "reserved":
                reserved_size[name] = n
            out.append(Candidate(label, policy.name, pools, True, summary(run)))
    out += _pairs(pl, names, purchases)
    out += _bursts(pl, reserved_size, purchases)
    return [_within_site(pl, c) for c in out]


def _within_site(pl: Sizer, c: Candidate) -> Candidate:
    """A mix that meets the goal but not the site's power budget loses, saying so."""
    why = pl.over_budget(c.pools) if c.meets else None
    return c if why is None else replace(c, meets=False, why_lost=f"meets the goal but {why}")


def _per_unit(pl: Sizer, name: str, buy: Purchase, training: bool) -> float:
    """USD per 1M tokens (trained, or served by one replica) of a pool template; inf when unknown."""
    t = pl.templates[(name, buy)]
    if training:
        tok_s = t.chips_per_instance * t.train_speed if t.train_speed else None
        found = cost.usd_per_million_tokens(t.usd_per_instance_hour, tok_s)
    else:
        found = cost.usd_per_million_tokens(
            cost.usd_per_hour(t.usd_per_instance_hour, t.instances_per_replica), t.replica_tokens_per_s
        )
    return math.inf if found is None else found


def _pairs(pl: Sizer, names: list[str], purchases: list[Purchase]) -> list[Candidate]:
    """An inference type sized for the SLO alone, plus a training type sized for the deadlines."""
    if not pl.base.jobs:
        return []
    buy: Purchase = "reserved" if "reserved" in purchases else purchases[0]
    serve = sorted(
        (n for n in names if pl.templates[(n, buy)].replica_tokens_per_s),
        key=lambda n: _per_unit(pl, n, buy, False),
    )
    train = sorted(
        (n for n in names if pl.templates[(n, buy)].train_speed), key=lambda n: _per_unit(pl, n, buy, True)
    )
    # Under a site budget, only types whose power is known can be shown to fit (singles say why not).
    serve, train = [n for n in serve if not pl.unpowered(n)], [n for n in train if not pl.unpowered(n)]
    out = []

    def serves(run: FleetRun) -> bool:
        return (run.metrics["slo_attainment"] or 0.0) >= pl.target

    for s in serve[:PAIR_TOP]:

        def alone(n: int, s: str = s) -> Fleet:
            return pl.fleet([(s, buy, n)], jobs=False)

        n_s, run_s, tried_s = pl.size(alone, pl.start(s, buy, False), pl.policy, serves, pl.cap(s))
        for t in train[:PAIR_TOP]:
            if t == s:
                continue
            label = f"{s} serving + {t} training, {buy.replace('_', '-')}"
            if n_s is None:
                out.append(failed(pl, label, pl.policy.name, run_s, pools_out(pl.fleet([(s, buy, tried_s)]))))
                continue

            def make(n: int, s: str = s, t: str = t, n_s: int = n_s) -> Fleet:
                return pl.fleet([(s, buy, n_s), (t, buy, n)])

            n_t, run, tried = pl.size(make, pl.train_start(t, buy), pl.policy, pl.ok, pl.cap(t, [(s, n_s)]))
            pools = pools_out(make(tried))
            out.append(
                Candidate(label, pl.policy.name, pools, True, summary(run))
                if n_t is not None
                else failed(pl, label, pl.policy.name, run, pools)
            )
    return out


def _bursts(pl: Sizer, reserved_size: dict[str, int], purchases: list[Purchase]) -> list[Candidate]:
    """A reserved base (a share of the all-reserved size) with on-demand burst of the same type."""
    if not {"reserved", "on_demand"} <= set(purchases):
        return []
    policy = Policy(
        "autoscale",
        headroom=pl.policy.headroom,
        base_quantile=1.0,
        lend_idle=True,
        launch_minutes=pl.policy.launch_minutes,
        reclaim_minutes=pl.policy.reclaim_minutes,
        cooldown_minutes=pl.policy.cooldown_minutes,
    )
    out = []
    for name, full in reserved_size.items():
        best: Candidate | None = None
        for frac in BASE_FRACTIONS:
            base = max(1, math.ceil(full * frac))
            fleet = pl.fleet([(name, "reserved", base), (name, "on_demand", full)])
            run = run_policy(fleet, policy, series_points=1)
            cand = Candidate(
                f"{name} reserved base {base:,} + on-demand burst",
                policy.name,
                pools_out(fleet),
                pl.ok(run),
                summary(run),
            )
            if not cand.meets:
                cand = failed(pl, cand.label, policy.name, run, cand.pools)
            if best is None or (cand.meets, -(cand.cost or math.inf)) > (
                best.meets,
                -(best.cost or math.inf),
            ):
                best = cand
        if best is not None:
            out.append(best)
    return out


def _rank(pl: Sizer, found: list[Candidate]) -> tuple[Candidate, list[Candidate]]:
    priced = sorted((c for c in found if c.meets and c.cost is not None), key=lambda c: c.cost or 0.0)
    if not priced:
        close = max(
            (c for c in found if c.metrics),
            key=lambda c: c.metrics.get("slo_attainment") or 0.0,
            default=None,
        )
        hint = f" Closest: {close.label} ({close.why_lost or 'unpriced'})." if close else ""
        site = "" if pl.site is None else f" inside the {pl.site.site_mw:g} MW site (PUE {pl.site.pue:g})"
        unpriced = [c.label for c in found if c.meets]
        extra = f" {', '.join(unpriced)} would meet it but have no price." if unpriced else ""
        fix = "lower --target, relax deadlines, add instance types (--instances), or give prices (--price)."
        if pl.site is not None:
            fix = (
                "raise --site-mw, lower --target or the demand, relax deadlines, or add instance types that "
                + ("draw less per token (--instances).")
            )
        elif any(at_limit(pl, c.pools) for c in found if not c.meets):
            fix = (
                f"check the demand's peak and units: meeting it needs more than {pl.max_instances:,} "
                "instances per pool (raise --max-instances if that is right); or " + fix
            )
        raise InfeasibleError(
            f"No fleet mix meets {pct(pl.target)} SLO attainment and every training deadline "
            f"over {pl.horizon_h:g} h{site}.{hint}{extra}",
            fix,
        )
    best = priced[0]
    rest = []
    for c in found:
        if c is best:
            continue
        if c.meets and c.cost is None:
            c = replace(
                c,
                why_lost="meets the goal but has no price: "
                + "; ".join(p["price_basis"] for p in c.pools if p["usd_per_instance_hour"] is None),
            )
        elif c.meets and c.cost is not None and best.cost:
            c = replace(
                c,
                why_lost=f"costs ${c.cost:,.0f} over the horizon, {100 * (c.cost / best.cost - 1):.1f}% more",
            )
        rest.append(c)
    rest.sort(key=lambda c: (not c.meets, c.cost is None, c.cost or 0.0))
    return best, rest


def _check_deadlines(base: Fleet, templates: dict[tuple[str, Purchase], Pool]) -> None:
    """A deadline no candidate chip can meet, even started on arrival and never preempted, fails now.

    Any pool can be sized to hold any job, so only speed bounds how early a job can finish; without
    this check the search would double every mix up to its limit before saying the same.
    """
    speeds = {p.instance: p.train_speed for p in templates.values() if p.train_speed}
    if not speeds:
        return  # no candidate trains: every mix says so in why_lost
    fastest = max(speeds, key=lambda i: speeds[i])
    horizon_h = base.steps * base.demand.step_s / 3600.0
    for job in base.jobs:
        if job.deadline_h is None or job.deadline_h > horizon_h:
            continue  # a deadline past the horizon is never counted as missed
        finish = earliest_finish_h(job, speeds[fastest], base.demand.step_s, base.restart_minutes)
        if finish > job.deadline_h + 1e-9:
            raise InfeasibleError(
                f"Training job {job.name!r} cannot meet its deadline on any candidate: started on arrival "
                f"on the fastest, {fastest}, it needs {finish - job.earliest_start_h:.4g} h with its "
                f"restart, and its deadline leaves {job.deadline_h - job.earliest_start_h:.4g} h.",
                "relax its deadline_hours, shorten it, or add a faster training instance type (--instances).",
            )


def plan_fleet(
    ff: FleetFile,
    *,
    instances: Sequence[str] | None = None,
    target: float | None = None,
    purchases: Sequence[Purchase] | None = None,
    policy: str | None = None,
    catalog: Catalog | None = None,
    max_instances: int | None = None,
    site_mw: float | None = None,
    pue: float | None = None,
) -> FleetPlan:
    """The cheapest mix of `instances` meeting `target` SLO attainment and every deadline.

    With `site_mw`, only mixes whose peak facility power (at `pue`, default the power data's) fits
    the site are chosen: pools are sized no larger than the site holds, a mix over it loses saying
    so, and if none fits that is an InfeasibleError. With `site_mw` or `pue`, the plan carries the
    best mix's MW by hour (`power`), simulated again under its policy.

    No pool grows past `max_instances` (default: the file's plan.max_instances, else
    DEFAULT_MAX_INSTANCES, 1,000,000); a goal that needs more is an InfeasibleError saying so.
    """
    if instances is not None and not list(instances):
        raise InputError(
            "--instances names no instance type.", "e.g. --instances trn1.32xlarge,p4d.24xlarge."
        )
    spec = ff.spec.plan
    catalog = catalog or load_catalog()
    names = list(instances or (spec.instances if spec and spec.instances else DEFAULT_CANDIDATES))
    check_instances(ff, catalog, [(("plan", "instances", i), n) for i, n in enumerate(names)])
    buys: list[Purchase] = list(purchases or (spec.purchases if spec else ["reserved", "on_demand"]))
    goal = target if target is not None else spec.slo_attainment if spec else 0.99
    if policy is not None:
        pol = make_policies(ff, [policy])[0]
    elif spec is not None:
        pol = Policy(**as_policy(spec.policy).model_dump())
    else:
        pol = make_policies(ff, ["day_night"])[0]
    probe = [PoolSpec(instance=n, count=1) for n in names]
    base = build_fleet(ff, catalog=catalog, pools=probe, pools_loc=("plan", "instances"))
    templates: dict[tuple[str, Purchase], Pool] = {}
    for pool in base.pools:
        for buy in buys:
            usd, basis = price_of(catalog, pool.instance, buy, ff.spec.region)
            templates[(pool.instance, buy)] = replace(
                pool, purchase=buy, usd_per_instance_hour=usd, price_basis=basis
            )
    if max_instances is not None and not 1 <= max_instances <= DEFAULT_MAX_INSTANCES:
        raise InputError(
            f"--max-instances must be 1 to {DEFAULT_MAX_INSTANCES:,}, got {max_instances}.",
            "e.g. --max-instances 1000; a pool past a million instances is a mistaken peak or unit.",
        )
    limit = max_instances if max_instances is not None else spec.max_instances if spec else None
    _check_deadlines(base, templates)
    budget, site_pue = check_site_mw(site_mw, pue)
    site = None if budget is None else SiteBudget(catalog, budget, site_pue)
    planner = Sizer(base, templates, pol, goal, limit, site)
    best, rest = _rank(planner, _candidates(planner, names, buys))
    power = None
    if site_mw is not None or pue is not None:
        power = plan_power(ff, best.pools, best.policy, catalog, pue=site_pue, site_mw=budget)
    return FleetPlan(
        target=goal,
        policy=pol.name,
        horizon_hours=planner.horizon_h,
        best=best,
        runners_up=tuple(rest),
        assumptions=(
            *base.assumptions,
            "sizes are the fewest instances meeting the goal, found by simulation (doubling, then bisection to 0.5%)",
            "costs are instance-hours billed over the horizon x price; reserved is billed every hour",
            *(
                ()
                if site is None
                else (
                    f"only mixes whose peak draw fits the {budget:g} MW site at PUE {site_pue:g} are chosen",
                )
            ),
        ),
        power=power,
    )
