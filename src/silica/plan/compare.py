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
from silica.workload import Deployment, InferenceWorkload, TrainingWorkload

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
    targets = resolve_targets(
        [deployment.instance], catalog=catalog, calibration=calibration, option=option, region=region
    )
    search = search_inference if isinstance(workload, InferenceWorkload) else search_training
    pp = deployment.pp if deployment.pp != 1 or isinstance(workload, TrainingWorkload) else None
    (result,) = search(spec, workload, targets, count=deployment.count, tp=deployment.tp, pp=pp)  # type: ignore[arg-type]
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
        priced = [r for r in self.results if r.feasible and _cost(r) is not None]
        return priced[0] if priced else None


def _cost(r: Estimate) -> float | None:
    return r.usd_per_1m_output_tokens if r.task == "inference" else r.usd_per_run


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
    ranked = _with_breakeven(found)
    if not any(r.feasible for r in ranked):
        raise InfeasibleError(
            f"No instance type can run {spec.id} for this workload; the closest: "
            + "; ".join(f"{r.instance}: {r.reasons[0]}" for r in _closest(ranked)),
            "relax the SLOs, shorten the sequences, or use a narrower --dtype.",
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


def _with_breakeven(found: list[Estimate]) -> list[Estimate]:
    """Rank, and give each unpriced feasible option the hourly price at which it ties the cheapest."""
    priced = sorted((r for r in found if r.feasible and _cost(r) is not None), key=lambda r: _cost(r) or 0.0)
    unpriced = [r for r in found if r.feasible and _cost(r) is None]
    infeasible = [r for r in found if not r.feasible]
    cheapest = _cost(priced[0]) if priced else None
    filled = []
    for r in unpriced:
        breakeven = None
        if cheapest is not None:
            if r.task == "inference" and r.output_tokens_per_s:
                breakeven = cheapest * r.output_tokens_per_s * 3600 / 1e6 / r.count
            elif r.task == "training" and r.train_days:
                breakeven = cheapest / (r.train_days * 24.0 * r.count)
        filled.append(replace(r, breakeven_usd_per_hour=breakeven))
    filled.sort(key=lambda r: -(r.breakeven_usd_per_hour or 0.0))
    return priced + filled + sorted(infeasible, key=lambda r: r.instance)
