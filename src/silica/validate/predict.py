"""Predict published measurements through the planner's own fixed-layout functions.

Each row becomes what a user would ask `silica estimate` for: a model, a workload (prompt, output
and context lengths, dtypes; for training the global and micro batch), a deployment (instance or
chip domain and how many, tp, pp, batch), and it is evaluated by `plan.inference_search.
evaluate_inference` / `plan.training_search.evaluate_training`, the functions `estimate` and
`compare` call. Replicas are counted as the planner counts them. There is no second copy of the
planner's defaults here (dense width of MoE models, replica floor, training dtypes and ZeRO stage):
what differs between a row and an estimate is only what the row itself states.

Rows are prepared once (targets, grids, workloads, grouped by model and workload) so that the fit
can re-evaluate them under many candidate calibrations. Nothing here knows a measured value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from silica.catalog import chip_system, load_catalog
from silica.catalog.schema import DTYPES, Catalog, Chip, Dtype, Instance
from silica.catalog.systems import spread_system
from silica.errors import InputError, SilicaError
from silica.models import load_model
from silica.models.spec import ModelSpec
from silica.perf.calibration import DEFAULT_PARAMS, Calibration, FamilyParams, clip_band, load_calibration
from silica.perf.kernels import TrainStep
from silica.perf.precision import precision
from silica.perf.stacks import default_stack, load_stacks, release_stack, stack_of_source
from silica.plan.grid import BATCHES, Grid
from silica.plan.inference_search import evaluate_inference
from silica.plan.targets import Target
from silica.plan.training_search import evaluate_training
from silica.validate.benchmarks import TRAINING_METRICS, BenchmarkRow
from silica.validate.energy_rows import ENERGY_METRICS, predict_energy_row
from silica.workload import InferenceWorkload, TrainingWorkload

__all__ = ["Prediction", "Prepared", "deployment_for", "predict_rows", "prepare", "row_stack", "stack_group"]

Array = NDArray[np.float64]
DECODER_METRICS = {"ttft_ms", "tpot_ms", "output_tok_s"}
ENCODER_METRICS = {"encoder_seq_s", "encoder_latency_ms"}
TIME_METRICS = {"ttft_ms", "tpot_ms", "encoder_latency_ms"}  # lower is faster; the rest are rates
# A target's calibration object only supplies bands to a finished estimate; evaluation reads
# `Target.params`, which the fit replaces per candidate.
_NO_BANDS = Calibration(params={}, bands={}, fitted_rows={}, generated_by="validate", as_of="", source="")


@dataclass(frozen=True, slots=True)
class Prediction:
    row: BenchmarkRow
    predicted: float | None
    skipped: str | None  # why the row could not be predicted
    low: float | None = None  # p10-p90 band of the calibration, beside the prediction
    high: float | None = None

    @property
    def ape(self) -> float | None:
        if self.predicted is None:
            return None
        return abs(self.predicted - self.row.value) / abs(self.row.value)


def deployment_for(row: BenchmarkRow, chip: Chip, catalog: Catalog) -> tuple[Instance, int]:
    """The deployment the row ran on, as `estimate --on` would resolve it: (instance, count).

    A named instance type is used as named (a row on fewer chips than the instance holds is a part
    of it). Otherwise the chip's reference domain (DGX node, NVL72 rack) as `--on CHIPxCOUNT`
    resolves it; else the chip's largest instance type.
    """
    named = catalog.instances.get(row.instance)
    if named is None:
        try:
            found = chip_system(catalog, chip.id, row.chips)
        except InputError:  # not a whole number of domains: the row still ran on such domains
            found = spread_system(catalog, chip.id, row.chips)
        if found is not None:
            return found
        same = [i for i in catalog.instances.values() if i.chip == chip.id]
        if not same:
            if row.chips > 1:
                raise InputError(
                    f"no instance or system of {chip.id} in the catalog for {row.chips} chips.",
                    "describe the system in a --systems file.",
                )
            # One chip needs no links: the chip alone (GH200 rows measure one superchip).
            return _single_chip(chip), 1
        named = max(same, key=lambda i: i.chips)
    if row.chips < named.chips:
        part = replace(named, id=f"{named.id}[{row.chips}]", chips=row.chips)
        return part, 1
    count = max(round(row.chips / named.chips), 1)
    return named, count


def _single_chip(chip: Chip) -> Instance:
    return Instance(
        id=f"{chip.id}x1",
        chip=chip.id,
        chips=1,
        kind="system",
        vcpus=None,
        memory_gib=None,
        network_gbps=None,
        link_gb_per_s=None,
        status="available",
        source=chip.source,
        as_of=chip.as_of,
        notes="one chip on its own (no scale-up or scale-out links used)",
    )


def row_stack(row: BenchmarkRow) -> str:
    """The serving or training stack a row was measured on: its `engine` cell, else its source's; with
    an `engine_release` cell, the stack of that release's range (`--engine NAME@VERSION`)."""
    engine = row.engine.strip().lower()
    if engine and row.engine_release:
        return release_stack(engine, row.engine_release)
    return engine or stack_of_source(row.source)


def _balanced(row: BenchmarkRow) -> bool:
    """Whether the row's stack publishes MoE runs with force-balanced routing (`data/stacks.yaml`)."""
    stack = load_stacks().get(row_stack(row))
    return stack is not None and stack.balanced_benchmarks


def stack_group(row: BenchmarkRow) -> str:
    """The calibration group of the row's stack ("" when the stack is not one Silica knows)."""
    stack = load_stacks().get(row_stack(row))
    return stack.group if stack else ""


def _kind(metric: str) -> str | None:
    if metric in DECODER_METRICS:
        return "decoder"
    if metric == "max_output_tok_s":
        return "max"
    if metric in ENCODER_METRICS:
        return "encoder"
    if metric in TRAINING_METRICS:
        return "training"
    return None


def _check(row: BenchmarkRow, catalog: Catalog) -> str | None:
    """Why a row cannot be predicted, or None."""
    kind = _kind(row.metric)
    if kind is None:
        return f"unknown metric {row.metric!r}"
    if row.chip not in catalog.chips:
        return f"chip {row.chip!r} is not in the catalog"
    for dtype in (row.weight_dtype, row.compute_dtype):
        if dtype not in DTYPES:
            return f"unknown dtype {dtype!r}"
    chip = catalog.chips[row.chip]
    compute: Dtype = row.compute_dtype  # type: ignore[assignment]  # checked against DTYPES above
    weight: Dtype = row.weight_dtype  # type: ignore[assignment]
    if precision(weight, compute).flops_dtype not in ("bf16", "fp16") and chip.peak_tflops(compute) is None:
        return f"{row.chip} has no published {row.compute_dtype} peak"
    if kind in ("decoder", "encoder") and row.batch is None:
        return "no batch given"
    if kind in ("decoder", "max") and (row.input_len is None or row.output_len is None):
        return "no input/output length given"
    if kind == "encoder" and (row.seq_len or row.input_len) is None:
        return "no sequence length given"
    if kind == "training" and (row.seq_len is None or row.batch is None):
        return "no sequence length or global batch given"
    try:
        load_model(row.model)
        deployment_for(row, chip, catalog)
    except SilicaError as err:
        return f"{err.problem}"
    return None


def _workload(row: BenchmarkRow, kind: str) -> InferenceWorkload | TrainingWorkload:
    """The workload a user would give `estimate` for this row (static batch: how tables measure)."""
    if kind == "training":
        return TrainingWorkload(
            seq_len=row.seq_len or 1,
            global_batch=row.batch,
            micro_batch=row.micro_batch or 1,
            virtual_stages=row.vp or 1,
            compute_dtype=row.compute_dtype,  # type: ignore[arg-type]  # checked in _check
            balanced_experts=_balanced(row),
        )
    input_len = row.input_len or row.seq_len or 1
    output_len = 0 if kind == "encoder" else row.output_len or 0
    seq_len = row.seq_len if row.seq_len and row.seq_len >= input_len + output_len else None
    return InferenceWorkload(
        input_len=input_len,
        output_len=output_len,
        weight_dtype=row.weight_dtype,  # type: ignore[arg-type]
        compute_dtype=row.compute_dtype,  # type: ignore[arg-type]
        seq_len=seq_len,
        batching="static",
    )


@dataclass(frozen=True, slots=True)
class _Group:
    """Configurations of one model, kind and workload; configuration j serves row `rows[owner[j]]`."""

    model: ModelSpec
    kind: str
    workload: InferenceWorkload | TrainingWorkload
    rows: tuple[int, ...]
    metrics: tuple[str, ...]  # per row
    owner: NDArray[np.intp]  # per configuration: position in `rows`
    targets: tuple[Target, ...]
    families: tuple[str, ...]  # per target
    stack: str | None  # the serving or training stack the rows were measured on
    grid: Grid
    pp: Array
    ep: Array  # the row's expert-parallel degree (1 where it states none)
    cp: Array  # the row's context-parallel degree (1 where it states none)


def prepare(rows: Sequence[BenchmarkRow], catalog: Catalog | None = None) -> Prepared:
    catalog = catalog or load_catalog()
    skipped: dict[int, str] = {}
    buckets: dict[tuple[str, str, object, str], list[int]] = defaultdict(list)
    workloads: dict[tuple[str, str, object, str], InferenceWorkload | TrainingWorkload] = {}
    for i, row in enumerate(rows):
        reason = _check(row, catalog)
        if reason:
            skipped[i] = reason
            continue
        kind = _kind(row.metric) or ""
        try:
            wl = _workload(row, kind)
        except InputError as err:
            skipped[i] = err.problem
            continue
        key = (row.model, kind, wl, row_stack(row))
        buckets[key].append(i)
        workloads[key] = wl
    groups = [
        _build(load_model(model), kind, workloads[(model, kind, w, stack)], idx, rows, catalog, stack)
        for (model, kind, w, stack), idx in buckets.items()
    ]
    return Prepared(rows=list(rows), skipped=skipped, groups=groups)


def _build(
    model: ModelSpec,
    kind: str,
    wl: InferenceWorkload | TrainingWorkload,
    idx: list[int],
    rows: Sequence[BenchmarkRow],
    catalog: Catalog,
    stack: str,
) -> _Group:
    targets: dict[str, Target] = {}
    inst, tp, count, batch, pp, ep, cp, owner = [], [], [], [], [], [], [], []
    for k, i in enumerate(idx):
        row = rows[i]
        chip = catalog.chips[row.chip]
        instance, n = deployment_for(row, chip, catalog)
        if instance.id not in targets:
            targets[instance.id] = Target(
                instance=instance,
                chip=chip,
                params=DEFAULT_PARAMS,
                inherited_from=None,
                price=None,
                calibration=_NO_BANDS,
            )
        t = list(targets).index(instance.id)
        # An encoder row is data-parallel: one model copy per NeuronCore, `batch` each.
        row_tp = 1 if kind == "encoder" else row.tp or 1
        batches = list(BATCHES) if kind == "max" else [row.batch or 1]
        for b in batches:
            inst.append(t)
            tp.append(row_tp)
            count.append(n)
            batch.append(b)
            pp.append(row.pp or 1)
            ep.append(row.ep or 1)
            cp.append(row.cp or 1)
            owner.append(k)
    f64 = np.float64
    grid = Grid(
        inst=np.asarray(inst, dtype=np.int64),
        tp=np.asarray(tp, dtype=f64),
        count=np.asarray(count, dtype=f64),
        batch=np.asarray(batch, dtype=f64),
    )
    tlist = tuple(targets.values())
    return _Group(
        model=model,
        kind=kind,
        workload=wl,
        rows=tuple(idx),
        metrics=tuple(rows[i].metric for i in idx),
        owner=np.asarray(owner, dtype=np.intp),
        targets=tlist,
        families=tuple(t.chip.family for t in tlist),
        stack=stack or None,
        grid=grid,
        pp=np.asarray(pp, dtype=f64),
        ep=np.asarray(ep, dtype=f64),
        cp=np.asarray(cp, dtype=f64),
    )


def _evaluate(g: _Group, params: Sequence[FamilyParams], bound: bool = False) -> Array:
    """One predicted value per row of the group, under one parameter set per target.

    `bound`: instead, the physical limit of each row's metric (peak FLOPs, peak HBM bandwidth,
    100% MFU; `perf.kernels.PhaseSeconds.floor`): the least possible time of a time metric, the
    highest possible rate of a speed metric. No band may reach past it.
    """
    targets = [replace(t, params=p) for t, p in zip(g.targets, params, strict=True)]
    grid = g.grid
    units = np.asarray([t.units_per_instance for t in targets], dtype=np.float64)[grid.inst] * grid.count
    metric = np.asarray([_METRIC_CODE[g.metrics[k]] for k in g.owner])
    if isinstance(g.workload, TrainingWorkload):
        dp = np.round(units / (grid.tp * g.pp * g.cp))
        step = evaluate_training(g.model, g.workload, targets, grid.inst, grid.tp, g.pp, dp, ep=g.ep, cp=g.cp)
        prec = precision("bf16", g.workload.compute_dtype)
        peak = np.asarray([(t.chip.peak_tflops(prec.flops_dtype) or np.nan) for t in targets])[grid.inst]
        # The source's model TFLOP/s per chip is the MFU `estimate` reports times the chip's peak,
        # recounted as the source counts attention (`attention_flops` in data/stacks.yaml).
        counted = _counted_flops_ratio(g, step)
        value = np.where(metric == 6, step.tokens_per_s_per_chip, step.mfu * peak * counted)
        if bound:  # 100% MFU
            value = np.where(metric == 6, step.tokens_per_s_per_chip / step.mfu, peak * counted)
        value = np.where(dp >= 1, value, np.nan)
        return _per_row(g, value, "first")
    wl = g.workload
    perf = evaluate_inference(g.model, wl, targets, grid, g.pp, g.ep, g.cp)
    # Replicas as `search_inference` counts them (a serving cp group is cp tp groups); fewer than
    # one means the layout does not exist.
    replicas = np.floor(units / (grid.tp * g.pp * g.cp))
    replicas = np.where(replicas >= 1, replicas, np.nan)
    ttft, tpot, tok_s = perf.ttft_s, perf.tpot_s, perf.replica_output_tok_s
    if bound:
        ttft, tpot, tok_s = perf.ttft_floor_s, perf.tpot_floor_s, perf.replica_output_tok_s_ceiling
    if g.kind == "encoder":
        value = np.where(metric == 4, replicas * grid.batch / ttft, ttft * 1e3)
        return _per_row(g, value, "first")
    if g.kind == "max":
        value = np.where(perf.fits, replicas * tok_s, -np.inf)
        return _per_row(g, value, "max")
    value = np.where(metric == 0, ttft * 1e3, np.where(metric == 1, tpot * 1e3, replicas * tok_s))
    return _per_row(g, value, "first")


def _counted_flops_ratio(g: _Group, step: TrainStep) -> Array:
    """The source's model FLOPs per token over Silica's: 1, or with every query-key pair counted
    (twice the causal attention) where the row's stack publishes that count."""
    stack = load_stacks().get(g.stack or "")
    if stack is None or stack.attention_flops == "causal":
        return np.ones_like(step.mfu)
    causal = step.model_flops_per_token + step.attention_flops_per_token
    return (causal + step.attention_flops_per_token) / causal


_METRIC_CODE = {
    "ttft_ms": 0,
    "tpot_ms": 1,
    "output_tok_s": 2,
    "max_output_tok_s": 3,
    "encoder_seq_s": 4,
    "encoder_latency_ms": 5,
    "train_tok_s_per_chip": 6,
    "train_model_tflops_per_chip": 7,
}


def _per_row(g: _Group, value: Array, how: str) -> Array:
    if how == "first":
        return value  # one configuration per row, in row order
    best = np.full(len(g.rows), -np.inf)
    np.maximum.at(best, g.owner, value)
    return np.where(np.isfinite(best), best, np.nan)


@dataclass
class Prepared:
    rows: list[BenchmarkRow]
    skipped: dict[int, str]
    groups: list[_Group]

    def predict(self, calibration: Calibration, only: set[str] | None = None, bound: bool = False) -> Array:
        """Predicted value per row (nan where skipped or infeasible); with `bound`, each row's
        physical limit instead (`_evaluate`).

        Each row takes the calibration entry `Calibration.resolve` gives its chip family and stack.
        `only`: evaluate just the groups with a target on one of these entries (the fit's inner loop).
        """
        out = np.full(len(self.rows), np.nan)
        resolved: dict[tuple[str, str, str], tuple[FamilyParams, str]] = {}
        for g in self.groups:
            entries = []
            for t in g.targets:
                # A row that names no stack Silica knows is predicted as `estimate` would predict it:
                # on the vendor's recommended stack for the task.
                stack = g.stack or default_stack(t.chip.vendor, g.kind)[0].name
                f = t.chip.family
                task = "training" if g.kind == "training" else "inference"
                if (f, stack, task) not in resolved:
                    r = calibration.resolve(f, stack, task)
                    resolved[(f, stack, task)] = (r.params, r.key)
                entries.append(resolved[(f, stack, task)])
            if only is not None and not only.intersection(key for _, key in entries):
                continue
            with np.errstate(all="ignore"):
                out[list(g.rows)] = _evaluate(g, [p for p, _ in entries], bound)
        return out


def predict_rows(
    rows: Sequence[BenchmarkRow], calibration: Calibration | None = None, catalog: Catalog | None = None
) -> list[Prediction]:
    catalog = catalog or load_catalog()
    calibration = calibration or load_calibration()
    perf = [i for i, r in enumerate(rows) if r.metric not in ENERGY_METRICS]
    prepared = prepare([rows[i] for i in perf], catalog)
    values = prepared.predict(calibration)
    limits = prepared.predict(calibration, bound=True)
    at = {i: k for k, i in enumerate(perf)}  # row index -> index among the performance rows
    out = []
    for i, row in enumerate(rows):
        if i not in at:  # an energy row: the power model's, not the performance calibration's
            found = predict_energy_row(row, catalog)
            if found[0] is None:
                out.append(Prediction(row, None, found[1]))
            else:
                v, low, high = found
                out.append(Prediction(row, v, None, low, high))
            continue
        k = at[i]
        if k in prepared.skipped:
            out.append(Prediction(row, None, prepared.skipped[k]))
        elif not np.isfinite(values[k]) or values[k] <= 0:
            out.append(Prediction(row, None, "no configuration fits in memory"))
        else:
            low, high = calibration.band(catalog.chips[row.chip].family, row.metric)
            v, limit = float(values[k]), float(limits[k])
            # A time metric's band stops at its floor, a speed metric's at its ceiling.
            timed = row.metric in TIME_METRICS
            lo, hi = clip_band(v, low, high, floor=limit if timed else None, ceiling=None if timed else limit)
            out.append(Prediction(row, v, None, lo, hi))
    return out
