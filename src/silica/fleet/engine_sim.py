"""SLO attainment of a fleet's day from simulated requests instead of the fluid model.

The fluid model (`metrics.measure`) serves each step's demand up to its replicas' capacity at the
SLO and counts the rest as missing it: a step with capacity to spare meets the SLO whatever the
arrivals do inside it, and a backlog never carries into the next step. That is too coarse where
headroom is thin or traffic bursty: tails grow well before capacity runs out, and a queue built in a
busy minute is still there in the next. `request_level` replays the policy's allocation through the
request-level simulator (`silica.simulate`) instead:

- each pool's replica is the layout the fleet's capacity came from (`capacity.replica_estimate`),
  tabulated into step times (`simulate.deploy.table_for`); a replica holding dp model copies and pp
  pipeline stages is dp x pp engines;
- each step's request rate is split over the pools in proportion to their serving capacity that
  step, and evenly over their engines (round robin); one engine per pool is simulated over the
  whole horizon, its arrivals a Poisson process whose rate follows the step curve (so bursts
  within a step, queues carried across steps and scale-downs all show), the demand's mean request
  as every request's lengths;
- each simulated request stands for the engines of its pool at its arrival; it meets the SLO when
  its TTFT and its mean time per output token are within the fleet's targets. Demand in a step
  with no serving replica misses.

The cost grows with the requests one engine per pool sees over the horizon (about 130,000 per
CPU-second); `max_requests` bounds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from silica.errors import InputError
from silica.fleet.capacity import Pool, replica_estimate
from silica.fleet.policies import Allocation
from silica.workload import InferenceWorkload

if TYPE_CHECKING:
    from silica.simulate.steptime import StepTable

__all__ = ["LATENCY_MODELS", "MAX_SIMULATED", "RequestLevel", "request_level"]

FloatArray = NDArray[np.float64]
LATENCY_MODELS = ("fluid", "request")
MAX_SIMULATED = 5_000_000  # simulated requests per policy (about half a CPU-minute)


@dataclass(frozen=True, slots=True)
class RequestLevel:
    """What the simulated requests saw: attainment overall, per step (as met / offered requests)
    and per pool, with the tails behind it."""

    slo_attainment: float
    worst_hour_attainment: float
    met: FloatArray  # per step: requests (real, not simulated) that met the SLO ...
    offered: FloatArray  # ... and that arrived
    pools: list[dict[str, Any]]
    simulated_requests: int
    cpu_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "slo_attainment": self.slo_attainment,
            "worst_hour_attainment": self.worst_hour_attainment,
            "pools": self.pools,
            "simulated_requests": self.simulated_requests,
            "cpu_s": self.cpu_s,
        }


def request_level(
    pools: list[Pool] | tuple[Pool, ...],
    alloc: Allocation,
    requests_per_s: FloatArray,
    step_s: float,
    model: str,
    workload: InferenceWorkload,
    *,
    seed: int = 0,
    max_requests: int = MAX_SIMULATED,
) -> RequestLevel:
    """Simulate one engine per serving pool over the horizon under `alloc` (see the module)."""
    from silica.models import load_model
    from silica.plan.targets import resolve_targets
    from silica.simulate import Requests, simulate
    from silica.simulate.deploy import table_for

    cpu0 = time.process_time()
    steps = len(requests_per_s)
    edges = np.arange(steps + 1, dtype=np.float64) * step_s
    cap = np.array([p.replica_tokens_per_s or 0.0 for p in pools])[:, None] * alloc.replicas
    total_cap = cap.sum(axis=0)
    share = np.divide(cap, total_cap, out=np.zeros_like(cap), where=total_cap > 0)
    offered = requests_per_s * step_s  # real requests arriving per step
    served = np.where(total_cap > 0, offered, 0.0)  # demand in a step with no replica misses
    met_w = np.zeros(steps)  # simulated requests that met the SLO, each weighted by what it stands for
    sampled_w = np.zeros(steps)
    rng = np.random.default_rng(seed)
    spec = load_model(model)
    plans: list[tuple[int, StepTable, int, FloatArray, FloatArray]] = []
    expected = 0.0
    for i, pool in enumerate(pools):
        if not pool.replica_tokens_per_s or not alloc.replicas[i].any():
            continue
        est = replica_estimate(model, workload, pool.instance)
        if est is None:
            continue
        target = resolve_targets([pool.instance])[0]
        table = table_for(spec, est, target, workload)
        engines = int(est.dp or 1) * table.pipeline
        reps = alloc.replicas[i].astype(np.float64)
        per_engine = np.divide(requests_per_s * share[i], reps * engines, out=np.zeros(steps), where=reps > 0)
        lam = np.concatenate(([0.0], np.cumsum(per_engine * step_s)))
        expected += float(lam[-1])
        plans.append((i, table, engines, reps, lam))
    if expected > max_requests:
        raise InputError(
            f"The request-level simulation would replay about {expected:,.0f} requests "
            f"(limit {max_requests:,}): one engine per pool over {steps * step_s / 3600:g} h.",
            "simulate a shorter horizon (hours: 24 in the fleet file) or use the fluid model.",
        )
    rows: list[dict[str, Any]] = []
    simulated = 0
    for i, table, engines, reps, lam in plans:
        pool = pools[i]
        n = int(rng.poisson(lam[-1]))
        if n == 0:
            continue
        u = np.sort(rng.uniform(0.0, lam[-1], n))
        arrival = np.interp(u, lam, edges)
        step = np.minimum(np.searchsorted(edges, arrival, side="right") - 1, steps - 1)
        reqs = Requests(
            arrival,
            np.full(n, float(workload.input_len)),
            np.full(n, float(max(workload.output_len, 1))),
            f"{pool.instance}: one of its engines",
        )
        res = simulate(reqs, table)
        rec = res.records
        first, finish = rec.array(rec.first_token), rec.array(rec.finish)
        ttft_ms = (first - arrival) * 1e3
        out = reqs.output
        tpot_ms = np.where(out > 1, (finish - first) / np.maximum(out - 1, 1) * 1e3, 0.0)
        ok = np.isfinite(finish)
        if workload.ttft_slo_ms is not None:
            ok &= ttft_ms <= workload.ttft_slo_ms
        if workload.tpot_slo_ms is not None:
            ok &= tpot_ms <= workload.tpot_slo_ms
        weight = reps[step] * engines  # real requests each simulated one stands for
        met_w += np.bincount(step, weights=weight * ok, minlength=steps)
        sampled_w += np.bincount(step, weights=weight, minlength=steps)
        simulated += n
        rows.append(
            {
                "instance": pool.instance,
                "engine": table.label,
                "engines_per_replica": engines,
                "simulated_requests": n,
                "slo_attainment": float(ok.mean()),
                "ttft_ms": res.ttft.to_dict(),
                "tpot_ms": res.tpot.to_dict(),
                "tbt_ms": res.tbt.to_dict(),
                "preemptions": res.preemptions,
            }
        )
    # Per hour: the share of the simulated requests that met the SLO (each weighted by the engines it
    # stands for) applied to the demand the pools served; an hour with no simulated request (a
    # trickle of demand) is taken as met. Per step the same share, so the steps add up to the hours.
    hour = max(1, round(3600.0 / step_s))
    idx = np.arange(steps) // hour
    met_h, sampled_h = np.bincount(idx, weights=met_w), np.bincount(idx, weights=sampled_w)
    share_h = np.divide(met_h, sampled_h, out=np.ones_like(met_h), where=sampled_h > 0)
    met = served * share_h[idx]
    off_h = np.bincount(idx, weights=offered)
    hourly = np.divide(np.bincount(idx, weights=met), off_h, out=np.ones_like(off_h), where=off_h > 0)
    total = float(offered.sum())
    return RequestLevel(
        slo_attainment=float(met.sum()) / total if total > 0 else 1.0,
        worst_hour_attainment=float(hourly.min(initial=1.0)),
        met=met,
        offered=offered,
        pools=rows,
        simulated_requests=simulated,
        cpu_s=time.process_time() - cpu0,
    )
