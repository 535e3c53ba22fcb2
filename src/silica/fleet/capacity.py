"""What one replica of each instance type can do, asked of the performance model once per scenario.

The simulator never calls the estimator per step: it asks, per instance type, for the output
tokens/s one replica sustains at the SLO for the demand's mean request, and (when training speeds
must be compared across chips) the training tokens/s per chip. A replica is the fewest instances
the model fits on at the SLO (1, 2, 4 or 8, with pipeline stages across instances when needed).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal

from silica.catalog import get_instance, price_for
from silica.catalog.schema import Catalog
from silica.errors import InputError
from silica.plan import estimate
from silica.results import InferenceEstimate, TrainingEstimate
from silica.workload import Deployment, InferenceWorkload, TrainingWorkload

__all__ = [
    "Pool",
    "PoolRequest",
    "can_train",
    "inference_capacity",
    "price_of",
    "replica_estimate",
    "resolve_pools",
    "training_speed",
]

Purchase = Literal["reserved", "on_demand"]
PRICE_OPTION = {"reserved": "reserved_1yr", "on_demand": "on_demand"}
REPLICA_LAYOUTS = ((1, 1), (2, 1), (2, 2), (4, 4), (8, 8))  # (instances, pipeline stages)
TRAINING_COUNTS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True, slots=True)
class PoolRequest:
    """A pool as the user writes it: `count` instances of one type, bought one way."""

    instance: str
    count: int
    purchase: Purchase = "reserved"
    price_usd_per_hour: float | None = None
    train: bool | None = None  # None: by chip (Inferentia does not train)


@dataclass(frozen=True, slots=True)
class Pool:
    """A pool with what the performance model and the price list say about it."""

    instance: str
    count: int
    purchase: Purchase
    chips_per_instance: int
    instances_per_replica: int
    replica_tokens_per_s: float | None  # output tokens/s of one replica at the SLO; None: cannot serve
    train_speed: float | None  # reference chip-hours done per chip-hour; None: does not train
    usd_per_instance_hour: float | None  # None: no public price and none given
    price_basis: str
    notes: tuple[str, ...] = field(default=())

    @property
    def chips(self) -> int:
        return self.count * self.chips_per_instance

    @property
    def replicas(self) -> int:
        return self.count // self.instances_per_replica

    @property
    def replica_chips(self) -> int:
        return self.instances_per_replica * self.chips_per_instance

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "count": self.count,
            "purchase": self.purchase,
            "chips": self.chips,
            "chips_per_instance": self.chips_per_instance,
            "instances_per_replica": self.instances_per_replica,
            "replica_output_tokens_per_s": self.replica_tokens_per_s,
            "train_speed": self.train_speed,
            "usd_per_instance_hour": self.usd_per_instance_hour,
            "price_basis": self.price_basis,
            "notes": list(self.notes),
        }


def can_train(catalog: Catalog, instance: str) -> bool:
    """Inferentia is an inference chip (AWS sells Inf1/Inf2 for inference only); the rest can train."""
    return not catalog.chips[get_instance(catalog, instance).chip].id.startswith("inferentia")


@functools.lru_cache(maxsize=512)
def _replica(
    model: str, workload: InferenceWorkload, instance: str
) -> tuple[int, InferenceEstimate | None, str]:
    """The first layout in REPLICA_LAYOUTS that serves `model` at the SLO, or why none does."""
    reason = "the performance model found no feasible layout"
    for count, pp in REPLICA_LAYOUTS:
        est = estimate(model, workload, Deployment(instance, count=count, tp=None, pp=pp))
        if isinstance(est, InferenceEstimate) and est.feasible and est.output_tokens_per_s:
            return count, est, ""
        reason = "; ".join(est.reasons) or reason
        if not any("memory" in r for r in est.reasons):
            break  # more instances only help a model that does not fit; an SLO miss stays a miss
    return 1, None, reason


def inference_capacity(
    model: str, workload: InferenceWorkload, instance: str
) -> tuple[int, float | None, str]:
    """(instances per replica, output tokens/s per replica at the SLO or None, why not)."""
    count, est, reason = _replica(model, workload, instance)
    return count, None if est is None else float(est.output_tokens_per_s or 0.0), reason


def replica_estimate(model: str, workload: InferenceWorkload, instance: str) -> InferenceEstimate | None:
    """The estimate behind a pool's replica (its layout: tp, pp, dp), None if it cannot serve."""
    return _replica(model, workload, instance)[1]


@functools.lru_cache(maxsize=512)
def training_speed(model: str, workload: TrainingWorkload, instance: str) -> float | None:
    """Training tokens/s per chip at the smallest instance count the model fits on, or None."""
    for count in TRAINING_COUNTS:
        est = estimate(model, workload, Deployment(instance, count=count))
        if isinstance(est, TrainingEstimate) and est.feasible and est.tokens_per_s_per_chip:
            return float(est.tokens_per_s_per_chip)
    return None


def price_of(
    catalog: Catalog, instance: str, purchase: Purchase, region: str | None, user_price: float | None = None
) -> tuple[float | None, str]:
    """(USD per instance-hour or None, where it came from). Never a guess: unknown stays None.

    A price given for the pool wins, then a user price in the catalog (`--price`), then the public
    price of the purchase option (1-year reserved or on-demand).
    """
    if user_price is not None:
        return user_price, "user price"
    user = price_for(catalog, instance, option="user")
    if user is not None:
        return user.usd_per_hour, f"user price ({user.source})"
    option = PRICE_OPTION[purchase]
    found = price_for(catalog, instance, option=option, region=region)  # type: ignore[arg-type]
    if found is None:
        return (
            None,
            f"no public {option} price for {instance}: set price_usd_per_hour (or --price) to cost it",
        )
    return found.usd_per_hour, f"{option} {found.region} {found.as_of}"


def resolve_pools(
    requests: list[PoolRequest],
    *,
    catalog: Catalog,
    model: str | None,
    workload: InferenceWorkload | None,
    training_model: str | None = None,
    training_workload: TrainingWorkload | None = None,
    reference_instance: str | None = None,
    region: str | None = None,
    has_jobs: bool = True,
) -> list[Pool]:
    """Each requested pool with its replica capacity, training speed and price resolved once.

    With no training jobs, speeds are not compared (1.0 marks a pool that could train).
    """
    trains = [r.train if r.train is not None else can_train(catalog, r.instance) for r in requests]
    if has_jobs:
        speeds = _relative_speeds(
            requests, trains, catalog, training_model, training_workload, reference_instance
        )
    else:
        speeds = [1.0 if t else None for t in trains]
    pools = []
    for req, speed in zip(requests, speeds, strict=True):
        inst = get_instance(catalog, req.instance)
        notes: list[str] = []
        per_replica, tokens = 1, None
        if model is not None and workload is not None:
            per_replica, tokens, why = inference_capacity(model, workload, req.instance)
            if tokens is None:
                notes.append(f"cannot serve {model}: {why}")
        usd, basis = price_of(catalog, req.instance, req.purchase, region, req.price_usd_per_hour)
        pools.append(
            Pool(
                instance=req.instance,
                count=req.count,
                purchase=req.purchase,
                chips_per_instance=inst.chips,
                instances_per_replica=per_replica,
                replica_tokens_per_s=tokens,
                train_speed=speed,
                usd_per_instance_hour=usd,
                price_basis=basis,
                notes=tuple(notes),
            )
        )
    return pools


def _relative_speeds(
    requests: list[PoolRequest],
    trains: list[bool],
    catalog: Catalog,
    model: str | None,
    workload: TrainingWorkload | None,
    reference: str | None,
) -> list[float | None]:
    """Training speed per pool relative to the reference instance's chip (1.0 on the same chip)."""
    trainable = [r.instance for r, t in zip(requests, trains, strict=True) if t]
    if not trainable:
        return [None] * len(requests)
    ref = reference or trainable[0]
    ref_chip = get_instance(catalog, ref).chip
    chips = {get_instance(catalog, i).chip for i in trainable}
    if model is None or workload is None:
        if chips != {ref_chip}:
            others = ", ".join(sorted(chips - {ref_chip}))
            raise InputError(
                f"the training jobs' hours are on {ref_chip} ({ref}), but they could also run on {others}, "
                "and without a training model their speeds cannot be compared.",
                f"set training.model (and seq_len) so the performance model can compare them, or plan over "
                f"{ref_chip} instances only (e.g. --instance {ref}).",
            )
        return [1.0 if t else None for t in trains]
    ref_speed = training_speed(model, workload, ref)
    if ref_speed is None:
        raise InputError(
            f"The performance model finds no feasible training layout for {model} on {ref}.",
            "choose another training.reference_instance or a smaller training.model.",
        )
    out: list[float | None] = []
    for req, t in zip(requests, trains, strict=True):
        speed = training_speed(model, workload, req.instance) if t else None
        out.append(None if speed is None else speed / ref_speed)
    return out
