"""How a policy divides each pool between inference and training, step by step, as whole arrays.

Inference is served in replicas (the performance model's capacity at the SLO). Every policy is
computed over all steps at once with numpy; only training jobs need the per-event scheduler.

- static: inference keeps the replicas its peak needs, every step; training gets the rest.
- day_night: inference takes what it needs, seen with a lag (reclaiming lent chips means checkpointing
  and reloading, `reclaim_minutes`) and released only after demand stayed low for `cooldown_minutes`;
  everything else is lent to checkpointable training, which is preempted when the peak returns.
- autoscale: reserved pools keep a base of inference replicas (a quantile of need); on-demand pools
  start when need exceeds it, after `launch_minutes`, and are billed only while running.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.ndimage import maximum_filter1d

from silica import cost
from silica.errors import InputError, UnknownNameError
from silica.fleet.capacity import Pool

__all__ = ["POLICIES", "Allocation", "Policy", "allocate"]

PolicyName = Literal["static", "day_night", "autoscale"]
POLICIES: tuple[PolicyName, ...] = ("static", "day_night", "autoscale")
IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy and its knobs; the defaults are stated assumptions, shown in every report."""

    name: PolicyName
    headroom: float = 0.1  # provision need x (1 + headroom)
    reclaim_minutes: float = 5.0  # day_night: lent chips back to serving (checkpoint + reload weights)
    cooldown_minutes: float = 30.0  # keep capacity this long after need falls before lending it
    launch_minutes: float = 10.0  # autoscale: an on-demand instance from request to serving
    base_quantile: float = 0.5  # autoscale: reserved inference base = this quantile of need
    lend_idle: bool = False  # autoscale: also lend idle reserved capacity, as day_night does
    inference_share: float | None = None  # static: fraction of each pool's replicas; None = peak need

    def __post_init__(self) -> None:
        if self.name not in POLICIES:
            raise UnknownNameError("policy", self.name, POLICIES, f"use one of {', '.join(POLICIES)}.")
        for knob in ("headroom", "reclaim_minutes", "cooldown_minutes", "launch_minutes"):
            if getattr(self, knob) < 0:
                raise InputError(f"Policy {self.name}: {knob} must be 0 or more.", None)
        if not 0.0 <= self.base_quantile <= 1.0:
            raise InputError(f"Policy {self.name}: base_quantile must be in [0, 1].", None)
        if self.inference_share is not None and not 0.0 <= self.inference_share <= 1.0:
            raise InputError(f"Policy {self.name}: inference_share must be in [0, 1].", None)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class Allocation:
    """Per pool (rows) and step (columns): replicas serving, chips training may use, what is billed."""

    replicas: IntArray  # inference replicas serving
    train_cap: IntArray  # chips checkpointable training may hold
    floor: IntArray  # per pool: chips inference never claims (non-checkpointable jobs run only here)
    elastic: NDArray[np.bool_]  # per pool: billed only while running (on-demand under autoscale)
    capacity: FloatArray  # output tokens/s serving, summed over pools, per step


def _trailing_max(a: FloatArray, k: int) -> FloatArray:
    """max(a[t-k .. t]) for every t (scipy's origin shifts the window left by k // 2)."""
    return a if k == 0 else maximum_filter1d(a, size=k + 1, origin=k // 2, mode="nearest")


def _leading_max(a: IntArray, k: int) -> IntArray:
    """max(a[:, t .. t+k]) for every t, along the step axis."""
    return a if k == 0 else maximum_filter1d(a, size=k + 1, axis=1, origin=-((k + 1) // 2), mode="nearest")


def _seen(demand: FloatArray, lag: int, hold: int) -> FloatArray:
    """Demand as a reactive controller sees it: `lag` steps late, held at its max for `hold` steps."""
    held = _trailing_max(demand, hold)
    lag = min(lag, len(held))  # a lag longer than the horizon sees only the first step
    if lag == 0:
        return held
    return np.concatenate([np.full(lag, held[0]), held[:-lag]])


def _fill(need: FloatArray, pools: list[Pool], limit: IntArray | list[int], order: list[int]) -> IntArray:
    """Replicas per pool serving `need` tokens/s, pools filled in `order`, each up to `limit`."""
    out = np.zeros((len(pools), len(need)), dtype=np.int64)
    left = need.copy()
    for p in order:
        cap = pools[p].replica_tokens_per_s
        if not cap or limit[p] <= 0:
            continue
        take = np.minimum(np.ceil(np.maximum(left, 0.0) / cap - 1e-9), limit[p]).astype(np.int64)
        out[p] = take
        left = left - take * cap
    return out


def _order(pools: list[Pool]) -> list[int]:
    """Inference fills inference-only pools first, then the cheapest per token, then as listed."""

    def key(p: int) -> tuple[bool, float, int]:
        pool = pools[p]
        usd_h = cost.usd_per_hour(pool.usd_per_instance_hour, pool.instances_per_replica)
        per_token = cost.usd_per_million_tokens(usd_h, pool.replica_tokens_per_s)
        return (pool.train_speed is not None, math.inf if per_token is None else per_token, p)

    return sorted(range(len(pools)), key=key)


def allocate(policy: Policy, pools: list[Pool], demand: FloatArray, step_s: float) -> Allocation:
    """Inference replicas and training room per pool and step for `demand` output tokens/s."""
    steps = len(demand)
    need = demand * (1.0 + policy.headroom)
    order = _order(pools)
    replicas = np.array([p.replicas for p in pools], dtype=np.int64)
    chips = np.array([p.chips for p in pools], dtype=np.int64)
    size = np.array([p.replica_chips for p in pools], dtype=np.int64)
    trains = np.array([p.train_speed is not None for p in pools])
    on_demand = np.array([p.purchase == "on_demand" for p in pools])
    hold = round(policy.cooldown_minutes * 60.0 / step_s)
    reclaim = round(policy.reclaim_minutes * 60.0 / step_s)
    elastic = on_demand if policy.name == "autoscale" else np.zeros(len(pools), dtype=bool)

    peak = _fill(np.array([need.max(initial=0.0)]), pools, replicas, order)[:, 0]
    if policy.name == "static":
        fixed = peak
        if policy.inference_share is not None:
            fixed = np.floor(replicas * policy.inference_share).astype(np.int64)
        serving = np.repeat(fixed[:, None], steps, axis=1)
        pre = serving
    elif policy.name == "day_night":
        serving = _fill(_seen(need, reclaim, hold), pools, replicas, order)
        # Chips being reclaimed are already gone from training but not yet serving.
        pre = _leading_max(serving, reclaim)
    else:
        serving, pre = _autoscale(policy, pools, need, replicas, order, elastic, step_s, hold, reclaim)
    cap_tokens = np.array([p.replica_tokens_per_s or 0.0 for p in pools])
    train_cap = np.where(trains[:, None], chips[:, None] - pre * size[:, None], 0)
    train_cap = np.maximum(train_cap, 0)
    return Allocation(
        replicas=serving,
        train_cap=train_cap,
        floor=train_cap.min(axis=1, initial=int(chips.max(initial=0))),
        elastic=elastic,
        capacity=(serving * cap_tokens[:, None]).sum(axis=0),
    )


def _autoscale(
    policy: Policy,
    pools: list[Pool],
    need: FloatArray,
    replicas: IntArray,
    order: list[int],
    elastic: NDArray[np.bool_],
    step_s: float,
    hold: int,
    reclaim: int,
) -> tuple[IntArray, IntArray]:
    """Reserved pools hold a base of replicas; elastic pools cover need above it after a launch lag."""
    base_need = float(np.quantile(need, policy.base_quantile)) if len(need) else 0.0
    fixed_limit = np.where(elastic, 0, replicas)
    base = _fill(np.array([base_need]), pools, fixed_limit, order)[:, 0]
    if policy.lend_idle:
        lent = _fill(np.minimum(_seen(need, reclaim, hold), base_need), pools, fixed_limit, order)
        fixed = _leading_max(lent, reclaim)
    else:
        lent = fixed = np.repeat(base[:, None], len(need), axis=1)
    base_tokens = sum(float(base[p]) * (pools[p].replica_tokens_per_s or 0.0) for p in range(len(pools)))
    launch = round(policy.launch_minutes * 60.0 / step_s)
    burst_need = np.maximum(_seen(need, launch, hold) - base_tokens, 0.0)
    burst = _fill(burst_need, pools, np.where(elastic, replicas, 0), order)
    return lent + burst, fixed + burst
