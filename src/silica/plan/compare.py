"""`estimate` one deployment and `compare` the whole catalog: the library's front door."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from silica import cost
from silica.catalog.schema import Catalog, PurchaseOption
from silica.context import PlanContext
from silica.cost import Ranking
from silica.errors import InfeasibleError, InputError
from silica.models import load_model
from silica.models.spec import ModelSpec
from silica.perf.calibration import Calibration
from silica.plan.energy import with_energy
from silica.plan.inference_search import search_inference
from silica.plan.targets import ranking, resolve_targets
from silica.plan.training_search import search_training
from silica.results import Estimate
from silica.workload import Deployment, InferenceWorkload, TrainingWorkload

__all__ = ["OBJECTIVES", "Comparison", "Objective", "RankedCost", "compare", "estimate"]

Workload = InferenceWorkload | TrainingWorkload
# What `compare` may rank by besides cost: joules per output token, carbon per 1M output tokens,
# output tokens per second per MW of IT power (highest first). Serving only.
Objective = Literal["cost", "energy", "carbon", "tokens-per-mw"]
OBJECTIVES: tuple[str, ...] = ("cost", "energy", "carbon", "tokens-per-mw")


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
    engine: str | Mapping[str, str] | None = None,
    context: PlanContext | None = None,
    pue: float | None = None,
    usd_per_mwh: float | None = None,
) -> Estimate:
    """Speed, memory and cost of one deployment; unset knobs (tp, batch) are chosen for throughput.

    An `InferenceWorkload` gives an `InferenceEstimate`, a `TrainingWorkload` a `TrainingEstimate`.
    `engine`: the serving or training stack (`data/stacks.yaml`); None: the vendor's recommended one;
    a mapping {vendor: stack}: per chip vendor (`resolve_targets`).
    `context`: the user's settings resolved once at the edge (`silica.context.plan_context`); its
    catalog, calibration, option, region and engine apply where the keyword is not given, and the
    result records its settings. Without one, only the bundled data is used.

    A serving estimate carries its power and energy (`plan.energy`); `pue` overrides the site's
    default PUE and `usd_per_mwh` prices the energy.
    """
    if context is not None:
        catalog, calibration = catalog or context.catalog, calibration or context.calibration
        option, region, engine = option or context.option, region or context.region, engine or context.engine
    spec = _model(model)
    chained = isinstance(workload, InferenceWorkload)  # serving chains instances as pipeline stages
    deployment.check_fits(
        spec.id, spec.n_layers, spec.n_heads, spec.n_kv_heads, chained=chained, n_experts=spec.n_experts
    )
    targets = resolve_targets(
        [deployment.instance],
        catalog=catalog,
        calibration=calibration,
        option=option,
        region=region,
        engine=engine,
        task=workload.task,
    )
    d = deployment
    found: Estimate
    if isinstance(workload, InferenceWorkload):
        served = search_inference(spec, workload, targets, count=d.count, tp=d.tp, pp=d.pp, ep=d.ep, cp=d.cp)
        found = with_energy(
            served[:1], targets, workload.output_len, region=region, pue=pue, usd_per_mwh=usd_per_mwh
        )[0]
    else:
        trained = search_training(spec, workload, targets, count=d.count, tp=d.tp, pp=d.pp, ep=d.ep, cp=d.cp)
        found = with_energy(
            trained[:1], targets, tokens=workload.tokens, region=region, pue=pue, usd_per_mwh=usd_per_mwh
        )[0]
    return found if context is None else replace(found, settings=context.settings_dict())


@dataclass(frozen=True, slots=True)
class RankedCost:
    """One priced, feasible option on the ranking's own cost (`Ranking.by`), with its p10-p90 band.

    `tie` is True when the band overlaps the leader's: within the model's validation error the two
    cannot be told apart, so a strict rank would overstate the difference.
    """

    rank: int  # 1-based position in `Comparison.results`
    instance: str
    count: int
    value: float
    low: float | None
    high: float | None
    tie: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "instance": self.instance,
            "count": self.count,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "tie": self.tie,
        }


def _band(e: Estimate, rank: Ranking) -> tuple[float | None, float | None]:
    """The p10-p90 band of the ranking cost. A cost a month at a fixed load is that load's tokens at
    the estimate's cost per token, so it carries the per-token band's relative width (the fleet's
    rounding up to whole instances aside)."""
    band = e.bands.get(rank.by)
    if band is not None:
        return band.low, band.high
    value = rank.usd(e)
    per_token = e.bands.get("usd_per_1m_output_tokens")
    mid = getattr(e, "usd_per_1m_output_tokens", None)
    if rank.loaded and value is not None and per_token is not None and mid:
        return value * per_token.low / mid, value * per_token.high / mid
    return None, None


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every instance type ranked: priced feasible by cost, then unpriced feasible, then infeasible.

    `ranking` says which cost the order follows (per run, per month at the load, per 1M tokens).
    """

    model: str
    task: str
    workload: dict[str, Any]
    results: tuple[Estimate, ...]
    ranking: Ranking
    settings: dict[str, dict[str, str | None]] = field(default_factory=dict)  # see `silica.context`
    objective: str = "cost"  # what the order follows (`OBJECTIVES`)

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "model": self.model,
            "task": self.task,
            "workload": self.workload,
            "ranking": self.ranking.to_dict(),
            "settings": self.settings,
            "results": [r.to_dict() for r in self.results],
            "ranked": [r.to_dict() for r in self.ranked()],
        }

    def ranked(self) -> tuple[RankedCost, ...]:
        """The priced, feasible options in rank order on the cost that ranks them, each marked as a
        tie when its p10-p90 band overlaps the leader's."""
        out: list[RankedCost] = []
        lead_high: float | None = None
        for i, e in enumerate(self.results, 1):
            value = self.ranking.usd(e)
            if not e.feasible or value is None:
                continue
            low, high = _band(e, self.ranking)
            if not out:
                lead_high = high if high is not None else value
                tie = False
            else:
                tie = (low if low is not None else value) <= (lead_high or value)
            out.append(RankedCost(i, e.instance, e.count, value, low, high, tie))
        return tuple(out)

    @property
    def best(self) -> Estimate | None:
        """The cheapest priced option (the ranking puts it first)."""
        if self.objective != "cost":
            priced = [r for r in self.results if r.feasible and self.ranking.usd(r) is not None]
            return min(priced, key=lambda r: self.ranking.usd(r) or 0.0) if priced else None
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
    engine: str | Mapping[str, str] | None = None,
    objective: Objective = "cost",
    pue: float | None = None,
    usd_per_mwh: float | None = None,
    context: PlanContext | None = None,
) -> Comparison:
    """Consider every instance type (or the ones named), choose each one's best layout, rank them.

    `objective` other than cost ranks serving options by their energy figures (`plan.energy`):
    known figures first (best first), then options whose chip power is unknown, then infeasible ones.
    `context` as for `estimate`: the user's settings, resolved once at the edge and recorded.
    """
    if context is not None:
        catalog, calibration = catalog or context.catalog, calibration or context.calibration
        option, region, engine = option or context.option, region or context.region, engine or context.engine
    spec = _model(model)
    targets = resolve_targets(
        instances,
        catalog=catalog,
        calibration=calibration,
        option=option,
        region=region,
        include_announced=include_announced,
        engine=engine,
        task=workload.task,
    )
    rank = ranking(workload)
    if objective not in OBJECTIVES:
        raise InputError(
            f"Unknown ranking objective {objective!r}.", f"pass --rank {' | '.join(OBJECTIVES)}."
        )
    found: Sequence[Estimate]
    if isinstance(workload, InferenceWorkload):
        found = with_energy(
            search_inference(spec, workload, targets, rank=rank),
            targets,
            workload.output_len,
            region=region,
            pue=pue,
            usd_per_mwh=usd_per_mwh,
        )
    else:
        if objective != "cost":
            raise InputError(
                f"--rank {objective} ranks serving options only.", "use --task inference or --rank cost."
            )
        found = with_energy(
            search_training(spec, workload, targets),
            targets,
            tokens=workload.tokens,
            region=region,
            pue=pue,
            usd_per_mwh=usd_per_mwh,
        )
    ranked = _with_breakeven(found, rank)
    if objective != "cost":
        ranked = _by_energy(ranked, objective)
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
        ranking=rank,
        settings=context.settings_dict() if context is not None else {},
        objective=objective,
    )


def _closest(infeasible: list[Estimate], n: int = 2) -> list[Estimate]:
    """The infeasible options that failed on an SLO rather than on memory, else any."""
    slo = [r for r in infeasible if r.reasons and "SLO" in r.reasons[0]]
    return (slo or infeasible)[:n]


def _with_breakeven(found: Sequence[Estimate], rank: Ranking) -> list[Estimate]:
    """Rank by the cost each estimate carries, and give each unpriced feasible option the hourly
    price at which it ties the cheapest (cost is linear in price)."""
    priced = sorted(
        (r for r in found if r.feasible and rank.usd(r) is not None), key=lambda r: rank.usd(r) or 0.0
    )
    unpriced = [r for r in found if r.feasible and rank.usd(r) is None]
    infeasible = [r for r in found if not r.feasible]
    cheapest = rank.usd(priced[0]) if priced else None
    filled = []
    for r in unpriced:
        hours = rank.instance_hours(r)
        breakeven = cost.breakeven_price(cheapest, hours) if cheapest is not None and hours else None
        filled.append(replace(r, breakeven_usd_per_hour=breakeven))
    filled.sort(key=lambda r: -(r.breakeven_usd_per_hour or 0.0))
    return priced + filled + sorted(infeasible, key=lambda r: r.instance)


def _energy_key(e: Estimate, objective: str) -> float | None:
    """The figure `objective` ranks on, lowest first (tokens per MW negated), None when unknown."""
    u = e.energy
    if not e.feasible or u is None or not u.known:
        return None
    if objective == "energy":
        return u.j_per_output_token
    if objective == "carbon":
        return u.kg_co2e_per_1m_output_tokens
    return None if u.output_tokens_per_s_per_mw is None else -u.output_tokens_per_s_per_mw


def _by_energy(ranked: list[Estimate], objective: str) -> list[Estimate]:
    """Known figures best first, then feasible options whose figure is unknown, then infeasible ones
    (each group in its cost order)."""
    known = [r for r in ranked if _energy_key(r, objective) is not None]
    known.sort(key=lambda r: _energy_key(r, objective) or 0.0)
    unknown = [r for r in ranked if r.feasible and _energy_key(r, objective) is None]
    return known + unknown + [r for r in ranked if not r.feasible]
