"""From a model and an instance type to a simulated replica: the planner chooses the layout.

The layout (tensor-parallel degree, pipeline stages, expert parallelism, replicas per instance) is
the one `estimate` chooses for the workload; the simulator then tabulates that replica's step times.
"""

from __future__ import annotations

from dataclasses import dataclass

from silica.catalog.schema import Catalog, PurchaseOption
from silica.errors import InfeasibleError
from silica.models import load_model
from silica.models.spec import ModelSpec
from silica.perf.calibration import Calibration
from silica.plan.targets import Target, resolve_targets
from silica.results import InferenceEstimate
from silica.simulate.steptime import StepTable, step_table
from silica.workload import Deployment, InferenceWorkload

__all__ = ["Planned", "plan_replica", "table_for"]


@dataclass(frozen=True, slots=True)
class Planned:
    """One instance type's chosen layout, its step table and its price."""

    estimate: InferenceEstimate
    target: Target
    table: StepTable

    @property
    def replicas_per_unit(self) -> int:
        """Replicas one deployment unit (`estimate.count` instances) holds."""
        return int(self.estimate.dp or 1)

    @property
    def usd_per_hour(self) -> float | None:
        """Price of one deployment unit (`estimate.count` instances), None when unpriced."""
        return self.estimate.usd_per_hour


def table_for(
    spec: ModelSpec,
    est: InferenceEstimate,
    target: Target,
    wl: InferenceWorkload,
    *,
    max_num_seqs: int = 256,
    max_batched_tokens: int = 2048,
) -> StepTable:
    """The step table of the replica `est` describes."""
    longest = max(wl.input_len + wl.output_len, max_batched_tokens) * 4
    return step_table(
        spec,
        target,
        tp=int(est.tp or 1),
        pp=int(est.pp or 1),
        ep=int(est.ep or 1),
        max_num_seqs=max_num_seqs,
        max_tokens=max(longest, 4096),
        weight_dtype=wl.weight_dtype,
        compute_dtype=wl.compute_dtype,
    )


def plan_replica(
    model: ModelSpec | str,
    instance: str,
    wl: InferenceWorkload,
    *,
    catalog: Catalog | None = None,
    calibration: Calibration | None = None,
    option: PurchaseOption | None = None,
    region: str | None = None,
    engine: str | None = None,
    tp: int | None = None,
    max_num_seqs: int = 256,
    max_batched_tokens: int = 2048,
) -> Planned:
    """Choose the layout with the planner, then tabulate its step times."""
    from silica.plan.compare import estimate

    spec = model if isinstance(model, ModelSpec) else load_model(model)
    est = estimate(
        spec,
        wl,
        Deployment(instance=instance, count=1, tp=tp),
        catalog=catalog,
        calibration=calibration,
        option=option,
        region=region,
        engine=engine,
    )
    if not isinstance(est, InferenceEstimate) or not est.feasible:
        reason = est.reasons[0] if est.reasons else "no feasible layout"
        raise InfeasibleError(
            f"{spec.id} cannot be served on {instance}: {reason}", "choose another --on instance."
        )
    target = resolve_targets(
        [instance], catalog=catalog, calibration=calibration, option=option, region=region, engine=engine
    )[0]
    table = table_for(spec, est, target, wl, max_num_seqs=max_num_seqs, max_batched_tokens=max_batched_tokens)
    return Planned(est, target, table)
