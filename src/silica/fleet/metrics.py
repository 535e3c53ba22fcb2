"""What a simulated run achieved: SLO attainment, utilisation, lending, jobs, cost; and over time.

Definitions (also in docs/fleet.md):
- SLO attainment: served / demanded output tokens, where a step serves at most the capacity of its
  replicas at the SLO; the rest of that step's demand is counted as missing the SLO.
- busy utilisation: (chips serving, scaled by how loaded they are, + chips training) / chips paid for;
  allocated utilisation counts every chip assigned to serving as busy.
- lent chip-hours: training chip-hours above each pool's floor (the chips inference never claims),
  that is, on capacity inference gave up for a while. A static split lends none by construction.
- cost: instance-hours billed x the hourly price; unknown (None) if any billed pool has no price.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from silica import cost
from silica.fleet.capacity import Pool
from silica.fleet.jobs import TrainingJob
from silica.fleet.policies import Allocation
from silica.fleet.scheduler import Schedule

__all__ = ["RunData", "compare_runs", "measure"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class RunData:
    pools: list[Pool]
    jobs: list[TrainingJob]
    step_s: float
    demand: FloatArray
    alloc: Allocation
    sched: Schedule


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def _bucket(values: FloatArray, size: int) -> FloatArray:
    starts = np.arange(0, len(values), size)
    counts = np.diff(np.append(starts, len(values)))
    return np.add.reduceat(values, starts) / counts


def measure(
    d: RunData, series_points: int
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, list[float | None]]]:
    step_h = d.step_s / 3600.0
    steps = len(d.demand)
    horizon_h = steps * step_h
    size = np.array([p.replica_chips for p in d.pools], dtype=np.float64)[:, None]
    per_inst = np.array([p.chips_per_instance for p in d.pools], dtype=np.float64)[:, None]
    served = np.minimum(d.demand, d.alloc.capacity)
    load = np.divide(served, d.alloc.capacity, out=np.zeros_like(served), where=d.alloc.capacity > 0)
    inf_chips = d.alloc.replicas * size
    train = d.sched.used.astype(np.float64)
    elastic = d.alloc.elastic[:, None]
    billed_inst = np.where(
        elastic,
        d.alloc.replicas * (size / per_inst) + np.ceil(train / per_inst),
        np.array([p.count for p in d.pools], dtype=np.float64)[:, None],
    )
    fleet_chips = (billed_inst * per_inst).sum(axis=0)
    lent = np.maximum(train - d.alloc.floor[:, None], 0.0).sum(axis=0)
    busy = (inf_chips.sum(axis=0) * load) + train.sum(axis=0)
    allocated = inf_chips.sum(axis=0) + train.sum(axis=0)
    idle = np.maximum(fleet_chips - allocated, 0.0)

    inst_hours = billed_inst.sum(axis=1) * step_h
    prices = [p.usd_per_instance_hour for p in d.pools]
    unpriced = [
        p.instance
        for p, h in zip(d.pools, inst_hours, strict=True)
        if h > 0 and p.usd_per_instance_hour is None
    ]
    rate = np.zeros(steps)  # USD per hour, per step
    for i, usd in enumerate(prices):
        rate += cost.usd_per_hour(usd or 0.0, billed_inst[i])
    total_usd = None if unpriced else cost.usd(float(rate.sum()), step_h)
    demanded = float(d.demand.sum() * d.step_s)
    served_tokens = float(served.sum() * d.step_s)

    hour = max(1, round(3600.0 / d.step_s))
    hourly = _bucket(served, hour) / np.maximum(_bucket(d.demand, hour), 1e-12)
    hourly = np.where(_bucket(d.demand, hour) > 0, hourly, 1.0)
    jobs, job_stats = _jobs(d, step_h, horizon_h)
    metrics: dict[str, Any] = {
        "horizon_hours": horizon_h,
        "slo_attainment": _ratio(served_tokens, demanded) if demanded > 0 else 1.0,
        "steps_meeting_slo": float(np.mean(d.alloc.capacity >= d.demand * (1 - 1e-9))),
        "worst_hour_attainment": float(hourly.min(initial=1.0)),
        "demand_output_tokens": demanded,
        "served_output_tokens": served_tokens,
        "utilisation_busy": _ratio(float(busy.sum()), float(fleet_chips.sum())),
        "utilisation_allocated": _ratio(float(allocated.sum()), float(fleet_chips.sum())),
        "fleet_chip_hours": float(fleet_chips.sum() * step_h),
        "inference_chip_hours": float(inf_chips.sum() * step_h),
        "training_chip_hours": float(train.sum() * step_h),
        "lent_chip_hours": float(lent.sum() * step_h),
        "idle_chip_hours": float(idle.sum() * step_h),
        "lost_chip_hours": d.sched.lost_chip_hours,
        **job_stats,
        "total_usd": total_usd,
        "usd_per_hour": None if total_usd is None else total_usd / horizon_h,
        "usd_per_1m_output_tokens": None
        if served_tokens <= 0
        else cost.usd_per_million(total_usd, served_tokens),
        "unpriced_pools": unpriced,
    }
    pools = [
        {
            "instance": p.instance,
            "purchase": p.purchase,
            "chips": p.chips,
            "instance_hours": float(inst_hours[i]),
            "usd": cost.usd(p.usd_per_instance_hour, float(inst_hours[i])),
            "inference_chip_hours": float(inf_chips[i].sum() * step_h),
            "training_chip_hours": float(train[i].sum() * step_h),
            "floor_chips": int(d.alloc.floor[i]),
        }
        for i, p in enumerate(d.pools)
    ]
    b = max(1, math.ceil(steps / max(1, series_points)))
    demand_b = _bucket(d.demand, b)
    series: dict[str, list[float | None]] = {
        "t_h": [float(x) for x in np.arange(0, steps, b) * step_h],
        "demand_tokens_per_s": demand_b.tolist(),
        "capacity_tokens_per_s": _bucket(d.alloc.capacity, b).tolist(),
        "attainment": np.where(demand_b > 0, _bucket(served, b) / np.maximum(demand_b, 1e-12), 1.0).tolist(),
        "inference_chips": _bucket(inf_chips.sum(axis=0), b).tolist(),
        "training_chips": _bucket(train.sum(axis=0), b).tolist(),
        "busy_chips": _bucket(busy, b).tolist(),
        "lent_chips": _bucket(lent, b).tolist(),
        "idle_chips": _bucket(idle, b).tolist(),
        "fleet_chips": _bucket(fleet_chips, b).tolist(),
        "usd_per_hour": _bucket(rate, b).tolist() if total_usd is not None else [None] * len(demand_b),
    }
    return metrics, pools, jobs, series


def _jobs(d: RunData, step_h: float, horizon_h: float) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = []
    jct: list[float] = []
    missed = open_ = 0
    for i, job in enumerate(d.jobs):
        finish = int(d.sched.finish_step[i])
        start = int(d.sched.first_start[i])
        finish_h = finish * step_h if finish >= 0 else None
        miss: bool | None = None
        if job.deadline_h is not None:
            if finish_h is not None:
                miss = finish_h > job.deadline_h + 1e-9
            elif job.deadline_h <= horizon_h:
                miss = True
            else:
                open_ += 1
        missed += bool(miss)
        if finish_h is not None:
            jct.append(finish_h - job.earliest_start_h)
        rows.append(
            {
                **job.to_dict(),
                "first_start_h": start * step_h if start >= 0 else None,
                "finish_h": finish_h,
                "jct_hours": None if finish_h is None else finish_h - job.earliest_start_h,
                "deadline_missed": miss,
                "preemptions": int(d.sched.preemptions[i]),
                "done_chip_hours": float(d.sched.done_chip_hours[i]),
            }
        )
    stats = {
        "jobs_total": len(d.jobs),
        "jobs_completed": len(jct),
        "jobs_deadline_missed": missed,
        "jobs_deadline_open": open_,
        "mean_jct_hours": float(np.mean(jct)) if jct else None,
        "median_jct_hours": float(np.median(jct)) if jct else None,
        "training_work_done_chip_hours": float(d.sched.done_chip_hours.sum()),
        "preemptions": int(d.sched.preemptions.sum()),
    }
    return rows, stats


def compare_runs(runs: list[tuple[str, dict[str, Any]]], jobs: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Each policy against the static split (or the first run): ratios on the same demand and jobs.

    Mean JCT is compared over the jobs every run completed, so a policy that finishes more (and
    longer) jobs is not penalised for it.
    """
    if len(runs) < 2:
        return {}
    names = [n for n, _ in runs]
    base = names.index("static") if "static" in names else 0
    done_everywhere = set.intersection(*({j["name"] for j in js if j["finish_h"] is not None} for js in jobs))
    common = {
        n: (
            float(np.mean([j["jct_hours"] for j in js if j["name"] in done_everywhere]))
            if done_everywhere
            else None
        )
        for n, js in zip(names, jobs, strict=True)
    }
    b = runs[base][1]
    out: dict[str, Any] = {"baseline": names[base], "common_jobs": len(done_everywhere), "vs_baseline": {}}
    for i, (name, m) in enumerate(runs):
        if i == base:
            continue
        jct_b, jct_n = common[names[base]], common[name]
        out["vs_baseline"][name] = {
            "slo_attainment_points": 100.0 * ((m["slo_attainment"] or 0.0) - (b["slo_attainment"] or 0.0)),
            "utilisation_busy_ratio": _opt_ratio(m["utilisation_busy"], b["utilisation_busy"]),
            "training_chip_hours_ratio": _opt_ratio(m["training_chip_hours"], b["training_chip_hours"]),
            "lent_chip_hours": m["lent_chip_hours"] - b["lent_chip_hours"],
            "jobs_completed_delta": m["jobs_completed"] - b["jobs_completed"],
            "deadlines_missed_delta": m["jobs_deadline_missed"] - b["jobs_deadline_missed"],
            "common_mean_jct_hours": {names[base]: jct_b, name: jct_n},
            "jct_speedup": _opt_ratio(jct_b, jct_n),
            "usd_per_1m_tokens_ratio": _opt_ratio(
                m["usd_per_1m_output_tokens"], b["usd_per_1m_output_tokens"]
            ),
        }
    return out


def _opt_ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b
