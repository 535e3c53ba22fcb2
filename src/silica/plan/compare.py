"""`estimate` one deployment and `compare` the whole catalog: the library's front door."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from silica.catalog.schema import Catalog, PurchaseOption
from silica.errors import InfeasibleError
from silica.models import load_model
from silica.models.spec import ModelSpec
from silica.perf.calibration import Calibration
from silica.plan.inference_search import search_inference
from silica.plan.targets import resolve_targets
from silica.plan.training_search import search_training
from silica.results import Estimate
from silica.workload import SECONDS_PER_MONTH, Deployment, InferenceWorkload, TrainingWorkload

__all__ = ["Comparison", "compare", "estimate"]

Workload = InferenceWorkload | TrainingWorkload


def _model(model: ModelSpec | str | Path) -> ModelSpec:
    return model if isinstance(model, ModelSpec) else load_model(str(model))


def estimate(
    model: ModelSpec | str | Path,
    workload: Workload,
    deployment: Deployment,
    *,
    catalog: Catalog | None = None,
    calibration: Calibration | None = None,
    option: PurchaseOption | None = None,
    region: str | None = None,
) -> Estimate:
    """Speed, memory and cost of one deployment; unset knobs (tp, batch) are chosen for throughput."""
    spec = _model(model)
    chained = isinstance(workload, InferenceWorkload)  # serving chains instances as pipeline stages
    deployment.check_fits(spec.id, spec.n_layers, spec.n_heads, spec.n_kv_heads, chained=chained)
    targets = resolve_targets(
        [deployment.instance], catalog=catalog, calibration=calibration, option=option, region=region
    )
    search = search_inference if isinstance(workload, InferenceWorkload) else search_training
    (result,) = search(spec, workload, targets, count=deployment.count, tp=deployment.tp, pp=deployment.pp)  # type: ignore[arg-type]
    return result


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every instance type ranked: priced feasible by cost, then unpriced feasible, then infeasible."""

    model: str
    task: str
    workload: dict[str, Any]
    results: tuple[Estimate, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "task": self.task,
            "workload": self.workload,
            "results": [r.to_dict() for r in self.results],
        }

    @property
    def best(self) -> Estimate | None:
        """The cheapest priced option (the ranking puts it first)."""
        first = self.results[0] if self.results else None
        return first if first is not None and first.feasible and first.price is not None else None


def compare(
    model: ModelSpec | str | Path,
    workload: Workload,
    *,
    instances: Sequence[str] | None = None,
    catalog: Catalog | None = None,
    calibration: Calibration | None = None,
    option: PurchaseOption | None = None,
    region: str | None = None,
    include_announced: bool = False,
) -> Comparison:
    """Consider every instance type (or the ones named), choose each one's best layout, rank them."""
    spec = _model(model)
    targets = resolve_targets(
        instances,
        catalog=catalog,
        calibration=calibration,
        option=option,
        region=region,
        include_announced=include_announced,
    )
    if isinstance(workload, InferenceWorkload):
        found = search_inference(spec, workload, targets)
    else:
        found = search_training(spec, workload, targets)
    ranked = _with_breakeven(found, workload)
    if not any(r.feasible for r in ranked):
        fix = (
            "relax the SLOs, shorten the sequences, or use a narrower --dtype."
            if isinstance(workload, InferenceWorkload)
            else "extend --deadline-days, shorten the run (--tokens), or lower --global-batch."
        )
        raise InfeasibleError(
            f"No instance type can run {spec.id} for this workload; the closest: "
            + "; ".join(f"{r.instance}: {r.reasons[0]}" for r in _closest(ranked)),
            fix,
        )
    return Comparison(
        model=spec.id,
        task=workload.task,
        workload={k: getattr(workload, k) for k in workload.__slots__ if k != "task"},
        results=tuple(ranked),
    )


def _closest(infeasible: list[Estimate], n: int = 2) -> list[Estimate]:
    """The infeasible options that failed on an SLO rather than on memory, else any."""
    slo = [r for r in infeasible if r.reasons and "SLO" in r.reasons[0]]
    return (slo or infeasible)[:n]


def _cost_per_usd_hour(r: Estimate, wl: Workload) -> float | None:
    """What the ranking cost of `r` would be at $1 per instance-hour (cost is linear in price).

    The ranking cost is USD per run for training; for inference, USD per month when a load is
    given, else USD per 1M generated tokens (per 1M prompt tokens for encoders).
    """
    if isinstance(wl, TrainingWorkload):
        return r.train_days * 24.0 * r.count if r.train_days else None
    if wl.rate_req_per_s is not None or wl.tokens_per_month is not None:
        return (r.instances_for_load or r.count) * SECONDS_PER_MONTH / 3600.0
    rate = r.output_tokens_per_s if wl.output_len > 0 else r.input_tokens_per_s
    return r.count / (rate * 3600.0) * 1e6 if rate else None


def _with_breakeven(found: list[Estimate], wl: Workload) -> list[Estimate]:
    """Rank, and give each unpriced feasible option the hourly price at which it ties the cheapest."""

    def cost(r: Estimate) -> float | None:
        factor = _cost_per_usd_hour(r, wl)
        return None if r.price is None or factor is None else r.price.usd_per_hour * factor

    priced = sorted((r for r in found if r.feasible and cost(r) is not None), key=lambda r: cost(r) or 0.0)
    unpriced = [r for r in found if r.feasible and cost(r) is None]
    infeasible = [r for r in found if not r.feasible]
    cheapest = cost(priced[0]) if priced else None
    filled = []
    for r in unpriced:
        factor = _cost_per_usd_hour(r, wl)
        breakeven = cheapest / factor if cheapest is not None and factor else None
        filled.append(replace(r, breakeven_usd_per_hour=breakeven))
    filled.sort(key=lambda r: -(r.breakeven_usd_per_hour or 0.0))
    return priced + filled + sorted(infeasible, key=lambda r: r.instance)
