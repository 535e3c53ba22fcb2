"""Enumerate deployments as arrays: instance x tensor parallelism x instance count x batch.

Everything is built with numpy broadcasting, so the planner evaluates all configurations of the
catalog in a handful of array operations instead of a Python loop per configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["BATCHES", "Grid", "divisors", "make_grid"]

IntArray = NDArray[np.int64]
# Concurrent sequences tried when the workload does not fix the batch.
BATCHES: tuple[int, ...] = tuple(2**k for k in range(12))  # 1 .. 2048


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass(frozen=True, slots=True)
class Grid:
    """One entry per configuration; `inst` indexes the caller's instance list."""

    inst: IntArray
    tp: NDArray[np.float64]
    count: NDArray[np.float64]
    batch: NDArray[np.float64]

    @property
    def size(self) -> int:
        return int(self.inst.shape[0])


def make_grid(
    tp_options: Sequence[Sequence[int]],
    counts: Sequence[int],
    batches: Sequence[int],
) -> Grid:
    """The cross product, per instance, of its legal tp values with the counts and batches.

    `tp_options[i]` lists the legal tp values of instance i (it may be empty).
    """
    width = max((len(t) for t in tp_options), default=0)
    if width == 0:
        empty = np.zeros(0)
        return Grid(inst=np.zeros(0, dtype=np.int64), tp=empty, count=empty, batch=empty)
    table = np.zeros((len(tp_options), width))
    for i, options in enumerate(tp_options):
        table[i, : len(options)] = options
    n_inst, n_count, n_batch = len(tp_options), len(counts), len(batches)
    inst, slot, count, batch = np.meshgrid(
        np.arange(n_inst),
        np.arange(width),
        np.asarray(counts, dtype=np.float64),
        np.asarray(batches, dtype=np.float64),
        indexing="ij",
    )
    tp = table[inst, slot]
    keep = tp > 0
    del n_count, n_batch
    return Grid(inst=inst[keep].astype(np.int64), tp=tp[keep], count=count[keep], batch=batch[keep])
