"""Predict published measurements with the same functions `estimate` and `compare` use.

Rows are prepared once (hardware, layout, shapes as arrays, grouped by model) so that the fit can
re-evaluate them under many candidate calibrations quickly. Nothing here knows a measured value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from silica.catalog import chip_system, load_catalog
from silica.catalog.schema import DTYPES, Catalog, Chip, Dtype, Instance
from silica.errors import InputError, SilicaError
from silica.models import load_model
from silica.models.spec import ModelSpec
from silica.perf.calibration import DEFAULT_PARAMS, Calibration, FamilyParams, load_calibration
from silica.perf.inference import inference_perf
from silica.perf.inputs import Layout, Requests, TrainingRun, Widths
from silica.perf.kernels import ModelCosts, train_step
from silica.perf.machine import Machine, machine_arrays, with_params
from silica.perf.precision import precision
from silica.plan.grid import BATCHES
from silica.validate.benchmarks import BenchmarkRow

__all__ = ["Prediction", "Prepared", "predict_rows", "prepare"]

Array = NDArray[np.float64]
DECODER_METRICS = {"ttft_ms", "tpot_ms", "output_tok_s"}
ENCODER_METRICS = {"encoder_seq_s", "encoder_latency_ms"}
TRAINING_METRICS = {"train_tok_s_per_chip", "train_model_tflops_per_chip"}


@dataclass(frozen=True, slots=True)
class Prediction:
    row: BenchmarkRow
    predicted: float | None
    skipped: str | None  # why the row could not be predicted

    @property
    def ape(self) -> float | None:
        if self.predicted is None:
            return None
        return abs(self.predicted - self.row.value) / abs(self.row.value)


@dataclass(frozen=True, slots=True)
class _Group:
    """Configurations of one model and one kind; `owner[j]` is the row index configuration j serves."""

    model: ModelSpec
    kind: str
    rows: tuple[int, ...]
    owner: NDArray[np.intp]
    families: tuple[str, ...]  # per configuration
    machine: Machine
    arrays: dict[str, Array]


def _instance_for(row: BenchmarkRow, chip: Chip, catalog: Catalog) -> Instance | None:
    """The named instance; else the chip's reference domain (DGX node, NVL72 rack); else its largest instance."""
    if row.instance in catalog.instances:
        return catalog.instances[row.instance]
    try:
        found = chip_system(catalog, chip.id, row.chips)
    except InputError:  # not a whole number of domains: the row still ran on such domains
        found = next(
            ((i, 1) for i in catalog.instances.values() if i.chip == chip.id and i.kind == "system"), None
        )
    if found is not None:
        return found[0]
    same = [i for i in catalog.instances.values() if i.chip == chip.id and i.kind == "instance"]
    return max(same, key=lambda i: i.chips) if same else None


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
    except SilicaError as err:
        return f"model: {err.problem}"
    return None


@dataclass
class Prepared:
    rows: list[BenchmarkRow]
    skipped: dict[int, str]
    groups: list[_Group]

    def predict(self, calibration: Calibration, only_families: set[str] | None = None) -> Array:
        """Predicted value per row (nan where skipped or infeasible)."""
        out = np.full(len(self.rows), np.nan)
        for g in self.groups:
            params: list[FamilyParams] = [calibration.for_family(f)[0] for f in g.families]
            with np.errstate(all="ignore"):
                out_g = _evaluate(g, with_params(g.machine, params))
            for j, row_index in enumerate(g.rows):
                out[row_index] = out_g[j]
        return out

    def predict_with(self, params_by_family: dict[str, FamilyParams], families: set[str]) -> Array:
        """Like `predict`, for rows of `families` only, with explicit parameters (used by the fit)."""
        out = np.full(len(self.rows), np.nan)
        for g in self.groups:
            if not families.intersection(g.families):
                continue
            # Rows of other families share the group; their values are not used, any parameters do.
            params = [params_by_family.get(f, DEFAULT_PARAMS) for f in g.families]
            with np.errstate(all="ignore"):
                out_g = _evaluate(g, with_params(g.machine, params))
            for j, row_index in enumerate(g.rows):
                out[row_index] = out_g[j]
        return out


def prepare(rows: Sequence[BenchmarkRow], catalog: Catalog | None = None) -> Prepared:
    catalog = catalog or load_catalog()
    skipped: dict[int, str] = {}
    buckets: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        reason = _check(row, catalog)
        if reason:
            skipped[i] = reason
        else:
            buckets[(row.model, _kind(row.metric) or "")].append(i)
    groups = [_build(load_model(model), kind, idx, rows, catalog) for (model, kind), idx in buckets.items()]
    return Prepared(rows=list(rows), skipped=skipped, groups=groups)


def _build(
    model: ModelSpec, kind: str, idx: list[int], rows: Sequence[BenchmarkRow], catalog: Catalog
) -> _Group:
    configs: list[tuple[int, int]] = []  # (row index, batch)
    for i in idx:
        row = rows[i]
        batches = list(BATCHES) if kind == "max" else [row.batch or 1]
        configs.extend((i, b) for b in batches)
    owner = np.asarray([i for i, _ in configs], dtype=np.intp)
    hw: list[tuple[Chip, Instance | None, FamilyParams]] = []
    dtypes: list[Dtype] = []
    for i, _ in configs:
        chip = catalog.chips[rows[i].chip]
        hw.append((chip, _instance_for(rows[i], chip, catalog), DEFAULT_PARAMS))
        dtypes.append(precision(rows[i].weight_dtype, rows[i].compute_dtype).flops_dtype)  # type: ignore[arg-type]
    machine = machine_arrays(hw, dtypes)

    def col(f: object) -> Array:
        return np.asarray([f(rows[i], b) for i, b in configs], dtype=np.float64)  # type: ignore[operator]

    precs = [precision(rows[i].weight_dtype, rows[i].compute_dtype) for i, _ in configs]  # type: ignore[arg-type]
    units_per_chip = machine.units_per_chip
    chips = col(lambda r, b: r.chips)
    arrays = {
        "batch": col(lambda r, b: b),
        "tp": col(lambda r, b: r.tp or 1),
        "pp": col(lambda r, b: r.pp or 1),
        "chips": chips,
        "units": chips * units_per_chip,
        "input_len": col(lambda r, b: r.input_len or r.seq_len or 1),
        "output_len": col(lambda r, b: r.output_len or 0),
        "seq_len": col(lambda r, b: r.seq_len or (r.input_len or 0) + (r.output_len or 0)),
        "micro_batch": col(lambda r, b: r.micro_batch or 1),
        "w_bytes": np.asarray([p.weight_bytes for p in precs]),
        "act_bytes": np.asarray([p.act_bytes for p in precs]),
        "kv_bytes": np.asarray([p.kv_bytes for p in precs]),
        "static": np.asarray(
            [catalog.chips[rows[i].chip].vendor == "aws" for i, _ in configs], dtype=np.float64
        ),
        "peak": np.asarray(
            [
                (catalog.chips[rows[i].chip].peak_tflops(p.flops_dtype) or np.nan) * 1e12
                for (i, _), p in zip(configs, precs, strict=True)
            ]
        ),
        "metric": np.asarray([_METRIC_CODE[rows[i].metric] for i, _ in configs], dtype=np.float64),
    }
    families = tuple(h[0].family for h in hw)
    return _Group(
        model=model,
        kind=kind,
        rows=tuple(idx),
        owner=owner,
        families=families,
        machine=machine,
        arrays=arrays,
    )


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


def _evaluate(g: _Group, m: Machine) -> Array:
    """One predicted value per row of the group."""
    a = g.arrays
    costs = ModelCosts.of(g.model)
    if g.kind == "training":
        dp = np.maximum(np.round(a["units"] / (a["tp"] * a["pp"])), 1.0)
        step = train_step(
            costs,
            m,
            Layout(tp=a["tp"], pp=a["pp"], batch=a["micro_batch"], static_shapes=a["static"] > 0, dp=dp),
            TrainingRun(global_batch=a["batch"], seq_len=a["seq_len"], zero_stage=1, peak_flops=a["peak"]),
            Widths(weight=np.full_like(a["tp"], 2.0), act=a["act_bytes"], kv=a["kv_bytes"]),
        )
        attention = 3.0 * costs.attention_flops(
            np.asarray(1.0), a["seq_len"] / 2.0, np.asarray(costs.n_heads)
        )
        tflops = step.tokens_per_s_per_chip * (step.model_flops_per_token + attention) / 1e12
        value = np.where(a["metric"] == 6, step.tokens_per_s_per_chip, tflops)
        return _per_row(g, value, "first")
    encoder = g.kind == "encoder"
    tp = np.ones_like(a["tp"]) if encoder else a["tp"]
    perf = inference_perf(
        costs,
        m,
        Layout(tp=tp, pp=a["pp"], batch=a["batch"], static_shapes=a["static"] > 0),
        Requests(input_len=a["input_len"], output_len=a["output_len"], seq_len=a["seq_len"]),
        Widths(weight=a["w_bytes"], act=a["act_bytes"], kv=a["kv_bytes"]),
        d_ff=float(g.model.d_ff or 4 * g.model.d_model),
    )
    replicas = np.maximum(np.floor(a["units"] / (tp * a["pp"])), 1.0)
    if encoder:
        value = np.where(a["metric"] == 4, replicas * a["batch"] / perf.ttft_s, perf.ttft_s * 1e3)
        return _per_row(g, value, "first")
    if g.kind == "max":
        value = np.where(perf.fits, replicas * perf.replica_output_tok_s, -np.inf)
        return _per_row(g, value, "max")
    metric = a["metric"]
    value = np.where(
        metric == 0,
        perf.ttft_s * 1e3,
        np.where(metric == 1, perf.tpot_s * 1e3, replicas * perf.replica_output_tok_s),
    )
    return _per_row(g, value, "first")


def _per_row(g: _Group, value: Array, how: str) -> Array:
    if how == "first":
        return value  # one configuration per row, in row order
    n = len(g.rows)
    local = np.searchsorted(np.asarray(g.rows), g.owner)
    best = np.full(n, -np.inf)
    np.maximum.at(best, local, value)
    return np.where(np.isfinite(best), best, np.nan)


def predict_rows(
    rows: Sequence[BenchmarkRow], calibration: Calibration | None = None, catalog: Catalog | None = None
) -> list[Prediction]:
    prepared = prepare(rows, catalog)
    values = prepared.predict(calibration or load_calibration())
    out = []
    for i, row in enumerate(rows):
        if i in prepared.skipped:
            out.append(Prediction(row, None, prepared.skipped[i]))
        elif not np.isfinite(values[i]) or values[i] <= 0:
            out.append(Prediction(row, None, "no configuration fits in memory"))
        else:
            out.append(Prediction(row, float(values[i]), None))
    return out
