"""Simulate a fleet under one or more policies: allocate (arrays), schedule training (events), measure.

`Fleet` is a resolved scenario (pools with capacities and prices, demand per step, jobs); it is what
`scenario.build` makes from a fleet file, and what the planner and the sweep vary. `simulate` runs
each policy on the same fleet and demand, so their results differ only by the policy.

A training job the fleet can never serve as asked (more chips than any pool that trains has, or a
deadline no pool could meet even starting it on arrival) is not an input error: the same jobs run
on other mixes in plans and sweeps, where they may fit. It is simulated like any other (it never
starts, or misses its deadline) and named in `warnings` (`job_warnings`), which every result carries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from silica.errors import InputError
from silica.fleet.capacity import Pool
from silica.fleet.demand import InferenceDemand
from silica.fleet.engine_sim import LATENCY_MODELS, request_level
from silica.fleet.jobs import TrainingJob
from silica.fleet.metrics import RunData, compare_runs, measure
from silica.fleet.policies import Policy, allocate
from silica.fleet.scheduler import schedule
from silica.workload import InferenceWorkload

__all__ = ["Fleet", "FleetRun", "Simulation", "earliest_finish_h", "job_warnings", "run_policy", "simulate"]

MAX_NAMED = 3  # a warning names this many jobs, then counts the rest


@dataclass(frozen=True, slots=True)
class Fleet:
    """Everything one simulation needs, already resolved: no files, no catalog look-ups."""

    name: str
    pools: tuple[Pool, ...]
    demand: InferenceDemand
    jobs: tuple[TrainingJob, ...] = ()
    model: str | None = None
    restart_minutes: float = 10.0
    checkpoint_minutes: float = 30.0
    assumptions: tuple[str, ...] = ()
    workload: InferenceWorkload | None = None  # the mean request and the SLOs the capacity is at

    @property
    def chips(self) -> int:
        return sum(p.chips for p in self.pools)

    @property
    def steps(self) -> int:
        return self.demand.steps

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "chips": self.chips,
            "pools": [p.to_dict() for p in self.pools],
            "demand": self.demand.summary(),
            "training_jobs": len(self.jobs),
            "training_chip_hours": sum(j.chip_hours for j in self.jobs),
            "step_s": self.demand.step_s,
            "steps": self.steps,
            "horizon_hours": self.steps * self.demand.step_s / 3600.0,
            "restart_minutes": self.restart_minutes,
            "checkpoint_minutes": self.checkpoint_minutes,
        }


@dataclass(frozen=True, slots=True)
class FleetRun:
    """One policy's outcome: headline metrics, per-pool use and cost, per-job results, time series."""

    policy: Policy
    metrics: dict[str, Any]
    pools: list[dict[str, Any]]
    jobs: list[dict[str, Any]]
    series: dict[str, list[float | None]]
    request_level: dict[str, Any] | None = None  # what the simulated requests saw, per pool

    def to_dict(self, series: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "policy": self.policy.to_dict(),
            "metrics": self.metrics,
            "pools": self.pools,
            "jobs": self.jobs,
        }
        if self.request_level is not None:
            out["request_level"] = self.request_level
        if series:
            out["series"] = self.series
        return out


@dataclass(frozen=True, slots=True)
class Simulation:
    fleet: dict[str, Any]
    runs: tuple[FleetRun, ...]
    comparison: dict[str, Any]
    assumptions: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    latency_model: str = "fluid"  # or "request": SLO attainment from the request-level simulator

    def run(self, policy: str) -> FleetRun:
        for r in self.runs:
            if r.policy.name == policy:
                return r
        raise KeyError(policy)

    def to_dict(self, series: bool = True) -> dict[str, Any]:
        return {
            "fleet": self.fleet,
            "latency_model": self.latency_model,
            "runs": [r.to_dict(series) for r in self.runs],
            "comparison": self.comparison,
            "assumptions": list(self.assumptions),
            "warnings": list(self.warnings),
        }


def _named(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED:,} more" if len(names) > MAX_NAMED else "")


def earliest_finish_h(job: TrainingJob, speed: float, step_s: float, restart_minutes: float) -> float:
    """When `job` finishes if it starts on arrival at `speed` and is never preempted (scheduler's steps)."""
    step_min = step_s / 60.0
    step_h = step_min / 60.0
    arrival = math.ceil(job.earliest_start_h / step_h - 1e-9)
    restart = math.ceil(restart_minutes / step_min - 1e-9)
    return (arrival + restart + math.ceil(job.hours / (speed * step_h) - 1e-9)) * step_h


def job_warnings(fleet: Fleet) -> tuple[str, ...]:
    """Training jobs this fleet can never run as asked, whatever the policy (see the module docstring).

    A job is too big if it needs more chips than every pool that trains; it cannot meet its deadline
    if, started on arrival on the fastest pool that holds it and never preempted, it would still
    finish late (in whole steps, the restart included, exactly as the scheduler counts).
    """
    trainers = [p for p in fleet.pools if p.train_speed]
    if not fleet.jobs or not trainers:
        return ()  # "no pool can train" is already an assumption of the fleet
    largest = max(p.chips for p in trainers)
    too_big: list[str] = []
    late: list[str] = []
    example = ""
    for job in fleet.jobs:
        fits = [p for p in trainers if p.chips >= job.chips]
        if not fits:
            too_big.append(job.name)
            continue
        if job.deadline_h is None:
            continue
        speed = max(p.train_speed or 0.0 for p in fits)
        finish_h = earliest_finish_h(job, speed, fleet.demand.step_s, fleet.restart_minutes)
        if finish_h > job.deadline_h + 1e-9:
            if not late:
                example = (
                    f" ({job.name} needs {finish_h - job.earliest_start_h:.4g} h with its restart, "
                    f"its deadline leaves {job.deadline_h - job.earliest_start_h:.4g} h)"
                )
            late.append(job.name)
    out = []
    if too_big:
        out.append(
            f"{len(too_big):,} training job(s) need more chips than the largest pool that trains "
            f"({largest:,} chips), so they never start: {_named(too_big)}"
        )
    if late:
        out.append(
            f"{len(late):,} training job(s) cannot meet their deadline on this fleet even if started on "
            f"arrival on the fastest pool that holds them{example}: {_named(late)}"
        )
    return tuple(out)


def run_policy(
    fleet: Fleet, policy: Policy, *, series_points: int = 600, latency_model: str = "fluid"
) -> FleetRun:
    """Simulate one policy: inference allocation as arrays, then training jobs on what is left.

    `latency_model` "request" takes SLO attainment (overall, worst hour, the series) from the
    request-level simulator (`engine_sim.request_level`) instead of the fluid model; the fluid
    figure stays beside it as `fluid_slo_attainment`, and the run's `request_level` says what the
    simulated requests saw per pool."""
    pools = list(fleet.pools)
    demand = fleet.demand.output_tokens_per_s
    alloc = allocate(policy, pools, demand, fleet.demand.step_s)
    sched = schedule(
        list(fleet.jobs),
        alloc.train_cap,
        alloc.floor,
        [p.train_speed for p in pools],
        [bool(e) for e in alloc.elastic],
        fleet.demand.step_s,
        fleet.restart_minutes,
        fleet.checkpoint_minutes,
    )
    data = RunData(
        pools=pools,
        jobs=list(fleet.jobs),
        step_s=fleet.demand.step_s,
        demand=demand,
        alloc=alloc,
        sched=sched,
    )
    metrics, pool_rows, job_rows, series = measure(data, series_points)
    detail = None
    if latency_model == "request":
        if fleet.model is None or fleet.workload is None:
            raise InputError(
                "The request-level latency model needs the fleet's model and mean request.",
                "build the fleet from a fleet file with an inference model, or use the fluid model.",
            )
        rl = request_level(
            pools, alloc, fleet.demand.requests_per_s, fleet.demand.step_s, fleet.model, fleet.workload
        )
        metrics["fluid_slo_attainment"] = metrics["slo_attainment"]
        metrics["slo_attainment"] = rl.slo_attainment
        metrics["fluid_worst_hour_attainment"] = metrics["worst_hour_attainment"]
        metrics["worst_hour_attainment"] = rl.worst_hour_attainment
        b = max(1, math.ceil(len(demand) / max(1, series_points)))
        starts = np.arange(0, len(demand), b)
        met, offered = np.add.reduceat(rl.met, starts), np.add.reduceat(rl.offered, starts)
        series["attainment"] = np.divide(met, offered, out=np.ones_like(met), where=offered > 0).tolist()
        detail = rl.to_dict()
    elif latency_model != "fluid":
        raise InputError(
            f"Unknown latency model {latency_model!r}.", f"use one of {', '.join(LATENCY_MODELS)}."
        )
    return FleetRun(
        policy=policy, metrics=metrics, pools=pool_rows, jobs=job_rows, series=series, request_level=detail
    )


def simulate(
    fleet: Fleet, policies: list[Policy], *, series_points: int = 600, latency_model: str = "fluid"
) -> Simulation:
    """Run every policy on the same fleet, demand and jobs, and compare them.

    `latency_model`: "fluid" (capacity against demand, step by step) or "request" (the
    request-level simulator's SLO attainment; see `run_policy`)."""
    if fleet.steps == 0:
        raise InputError("The demand has no steps to simulate.", "give a longer horizon or trace.")
    runs = tuple(
        run_policy(fleet, p, series_points=series_points, latency_model=latency_model) for p in policies
    )
    if latency_model == "request":
        latency = (
            "SLO attainment: from the request-level simulator (one engine per pool replays Poisson "
            "arrivals following the step curve; demand whose simulated requests met the TTFT and "
            "time-per-output-token targets)"
        )
    else:
        latency = "SLO attainment: share of demanded output tokens served by replicas running within their SLO capacity"
    assumptions = (
        *fleet.assumptions,
        *fleet.demand.notes,
        "capacity: output tokens/s one replica sustains at the SLO for the mean request (performance model)",
        latency,
        "on-demand pools are billed every hour, except under autoscale, which starts and stops them",
    )
    return Simulation(
        fleet=fleet.summary(),
        runs=runs,
        comparison=compare_runs(runs_metrics(runs), [r.jobs for r in runs]),
        assumptions=assumptions,
        warnings=job_warnings(fleet),
        latency_model=latency_model,
    )


def runs_metrics(runs: tuple[FleetRun, ...]) -> list[tuple[str, dict[str, Any]]]:
    return [(r.policy.name, r.metrics) for r in runs]
