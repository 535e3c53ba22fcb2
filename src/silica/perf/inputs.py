"""The performance formulas' inputs and their time split, as frozen dataclasses of arrays.

Each array has one entry per configuration under evaluation (a single estimate is a batch of one).
Grouping them by what they describe (the layout of a replica, the bytes per value, the requests,
the training run) means two inputs of the same type cannot be swapped silently, as they could when
the kernels took a dozen positional arrays. The model shape is `kernels.ModelCosts`, the hardware
and its calibration `machine.Machine`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Layout", "Requests", "TimeSplit", "TrainingRun", "Widths"]

Array = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Layout:
    """How one model replica is laid out, per configuration.

    `batch` is the sequences one replica steps at once (inference: concurrent sequences; training:
    the micro-batch). `static_shapes` marks Neuron rows: prompt and context run as compiled
    power-of-two buckets and attention heads are padded up to a multiple of tp. `dp` is the
    data-parallel degree (training; a serving replica count is decided by the planner instead).
    `ep` is the expert-parallel degree of a mixture-of-experts model (None: 1); see `perf.moe`.
    `cp` is the context-parallel degree (None: 1): each of cp ranks holds 1/cp of every
    sequence, for every layer (Megatron-Core `context_parallel_size`), and attention exchanges keys
    and values around the cp ranks (`perf.kernels.train_step`). Serving reads it as context
    parallelism of a long prompt (`perf.kernels.prefill_seconds`: the prompt's tokens split over
    cp ranks, each a full tp group) with the decode KV cache sharded over the same ranks.
    """

    tp: Array
    pp: Array
    batch: Array
    static_shapes: BoolArray
    dp: Array | None = None
    ep: Array | None = None
    cp: Array | None = None


@dataclass(frozen=True, slots=True)
class Widths:
    """Bytes per value in HBM: weights, activations, KV cache (see `perf.precision`)."""

    weight: Array
    act: Array
    kv: Array


@dataclass(frozen=True, slots=True)
class Requests:
    """The serving requests: prompt tokens, generated tokens and the compiled maximum context."""

    input_len: Array
    output_len: Array
    seq_len: Array


@dataclass(frozen=True, slots=True)
class TrainingRun:
    """One optimizer step's shape and the settings that change its memory and time.

    `peak_flops` is the chip's dense peak that MFU is quoted against (nan where the chip has no
    published figure at the compute dtype). `full_recompute` marks layouts that keep only each
    layer's input and recompute the rest in the backward pass. `expert_capacity` is the busiest
    expert rank's load over the mean (None: `perf.moe.CAPACITY_FACTOR`; 1.0 for force-balanced
    benchmark routing). `virtual_stages` is the model chunks per pipeline stage of an interleaved
    1F1B schedule (1: plain 1F1B).
    """

    global_batch: Array
    seq_len: Array
    zero_stage: int
    peak_flops: Array
    full_recompute: BoolArray | None = None
    expert_capacity: float | None = None
    virtual_stages: Array | float = 1.0


@dataclass(frozen=True, slots=True)
class TimeSplit:
    """The terms of one phase's time (prefill, decode step, training step), per configuration.

    `parts_at(i)` names what configuration i spends its time on; the parts add up to the phase
    time. The roofline term max(compute, memory) goes to what binds it: a compute-bound phase
    charges `compute`, a memory-bound one `weights` and `kv` (bytes / achieved bandwidth), so a
    user sees which resource to buy more of. Decode averages several context lengths, so
    `compute_s` and `kv_bytes` hold one array per sample. Training runs the roofline, collectives
    and overheads once per micro-batch (`repeat`); `activations` is its non-matmul traffic,
    `bubble` the 1F1B fill and drain, `gradient_sync` the data-parallel reduction left exposed
    after overlap and `optimizer` the Adam update. The split is resolved per configuration on
    request, so the planner's search over a million configurations does not pay for it.
    """

    compute_s: tuple[Array, ...]
    weight_bytes: Array
    kv_bytes: tuple[Array, ...]  # empty where the phase streams no KV cache
    stream_rate: Array  # achieved HBM bytes/s
    all_reduce: Array
    pipeline: Array  # stage hand-offs
    overhead: Array
    repeat: Array | float = 1.0
    activations: Array | float = 0.0
    bubble: Array | float = 0.0
    gradient_sync: Array | float = 0.0
    optimizer: Array | float = 0.0
    all_to_all: Array | float = 0.0  # expert-parallel dispatch and combine (MoE)

    def parts_at(self, i: int) -> dict[str, float]:
        """The non-zero parts of configuration `i`, in seconds."""
        compute = weights = kv = 0.0
        rate = _at(self.stream_rate, i)
        for k, t_compute in enumerate(self.compute_s):
            t_weights = _at(self.weight_bytes, i) / rate
            t_kv = _at(self.kv_bytes[k], i) / rate if self.kv_bytes else 0.0
            if t_weights + t_kv > _at(t_compute, i):
                weights, kv = weights + t_weights, kv + t_kv
            else:
                compute += _at(t_compute, i)
        n, r = len(self.compute_s), _at(self.repeat, i)
        parts = {
            "compute": r * compute / n,
            "weights": r * weights / n,
            "kv": r * kv / n,
            "all_reduce": r * _at(self.all_reduce, i),
            "all_to_all": r * _at(self.all_to_all, i),
            "pipeline": r * _at(self.pipeline, i),
            "overhead": r * _at(self.overhead, i),
            "activations": r * _at(self.activations, i),
            "bubble": _at(self.bubble, i),
            "gradient_sync": _at(self.gradient_sync, i),
            "optimizer": _at(self.optimizer, i),
        }
        return {name: value for name, value in parts.items() if value > 0.0}


def _at(values: Array | float, i: int) -> float:
    """Element `i` of a per-configuration array, or the scalar shared by all (called ~2,000 times a
    compare: the ndarray test first, `np.ndim` only for other array-likes)."""
    if isinstance(values, np.ndarray):
        return float(values[i]) if values.ndim else float(values)
    return float(values) if np.ndim(values) == 0 else float(np.asarray(values)[i])
