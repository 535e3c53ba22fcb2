"""Enumerate deployments as arrays: instance x tensor parallelism x instance count x batch (inference)
or x pipeline degree (training).

Everything is built with numpy broadcasting, so the planner evaluates all configurations of the
catalog in a handful of array operations instead of a Python loop per configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from silica.legality import divisors

__all__ = [
    "BATCHES",
    "CP_DEGREES",
    "MAX_EP",
    "Grid",
    "TrainingGrid",
    "cp_choices",
    "divisors",
    "ep_choices",
    "expand_ep",
    "make_grid",
    "training_grid",
]

IntArray = NDArray[np.int64]
# Concurrent sequences tried when the workload does not fix the batch.
# Quarter-octave steps: an engine with paged KV runs as many sequences as fit, so a memory-bound
# batch must not be rounded down to a power of two (up to 2x too little throughput).
BATCHES: tuple[int, ...] = tuple(sorted({round(2 ** (k / 4)) for k in range(45)}))  # 1 .. 2048, 40 steps
# Largest expert-parallel degree searched: NVIDIA's published MoE recipes go up to 64 (DeepSeek-V3
# and gpt-oss on GB200 NVL72, Megatron-Bridge performance summary); wider groups are not published.
MAX_EP = 64


@dataclass(frozen=True, slots=True)
class _Layouts:
    """One entry per configuration; `inst` indexes the caller's instance list."""

    inst: IntArray
    tp: NDArray[np.float64]
    count: NDArray[np.float64]

    @property
    def size(self) -> int:
        return int(self.inst.shape[0])


@dataclass(frozen=True, slots=True)
class Grid(_Layouts):
    """Inference configurations: instance x tp x instance count x batch."""

    batch: NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class TrainingGrid(_Layouts):
    """Training layouts before data parallelism fills the rest: instance x tp x count x pp."""

    pp: NDArray[np.float64]


def _product(
    tp_options: Sequence[Sequence[int]], counts: Sequence[int], last: Sequence[int]
) -> tuple[IntArray, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The cross product, per instance, of its legal tp values with the counts and one more axis.

    `tp_options[i]` lists the legal tp values of instance i (it may be empty). Returns flat arrays
    (instance index, tp, count, last-axis value), instance-major.
    """
    width = max((len(t) for t in tp_options), default=0)
    if width == 0:
        empty = np.zeros(0)
        return np.zeros(0, dtype=np.int64), empty, empty, empty
    table = np.zeros((len(tp_options), width))
    for i, options in enumerate(tp_options):
        table[i, : len(options)] = options
    inst, slot, count, value = np.meshgrid(
        np.arange(len(tp_options)),
        np.arange(width),
        np.asarray(counts, dtype=np.float64),
        np.asarray(last, dtype=np.float64),
        indexing="ij",
    )
    tp = table[inst, slot]
    keep = tp > 0
    return inst[keep].astype(np.int64), tp[keep], count[keep], value[keep]


def make_grid(tp_options: Sequence[Sequence[int]], counts: Sequence[int], batches: Sequence[int]) -> Grid:
    """Every (instance, legal tp, instance count, batch) for the inference search."""
    inst, tp, count, batch = _product(tp_options, counts, batches)
    return Grid(inst=inst, tp=tp, count=count, batch=batch)


def training_grid(
    tp_options: Sequence[Sequence[int]], counts: Sequence[int], pp_degrees: Sequence[int]
) -> TrainingGrid:
    """Every (instance, legal tp, instance count, pipeline degree) for the training search."""
    inst, tp, count, pp = _product(tp_options, counts, pp_degrees)
    return TrainingGrid(inst=inst, tp=tp, count=count, pp=pp)


# Context-parallel degrees the training search tries, and the fewest tokens of each sequence a rank
# keeps: below a few thousand, the ring's chunks are too short for attention to hide its exchange
# (NeMo's long-sequence recipes start context parallelism at 32K tokens, cp 2).
CP_DEGREES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
MIN_CP_CHUNK_TOKENS = 8192


def cp_choices(seq_len: int, cp: int | None) -> list[int]:
    """Context-parallel degrees to try: the one given, else those that leave each rank at least
    `MIN_CP_CHUNK_TOKENS` of a sequence (1 always). Megatron-Core splits a sequence into 2 cp
    chunks, so cp must divide seq_len / 2."""
    if cp is not None:
        return [cp]
    return [
        c for c in CP_DEGREES if c == 1 or (seq_len // c >= MIN_CP_CHUNK_TOKENS and seq_len % (2 * c) == 0)
    ]


def ep_choices(n_experts: int, ep: int | None) -> list[int]:
    """Expert-parallel degrees to try: the one given, else every divisor of the expert count up to
    MAX_EP (a dense model has none: 1). A degree must divide the experts so that every rank holds
    the same number of whole experts."""
    if ep is not None:
        return [ep]
    return [d for d in divisors(n_experts) if d <= MAX_EP] if n_experts else [1]


def expand_ep(
    keep: NDArray[np.intp], stage_ranks: NDArray[np.float64], options: Sequence[int]
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Repeat each layout (`keep` rows) once per ep option that divides its `stage_ranks`.

    Megatron-Core carves the expert-parallel group out of the tp x dp ranks of one pipeline stage
    (MoE parallel folding), so ep must divide tp x dp; returns the rows and their ep.
    """
    rows, eps = [], []
    for e in options:
        ok = np.abs(np.mod(stage_ranks, e)) < 1e-9
        rows.append(keep[ok])
        eps.append(np.full(int(ok.sum()), float(e)))
    return np.concatenate(rows).astype(np.intp), np.concatenate(eps)
