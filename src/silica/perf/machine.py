"""Hardware and calibration as arrays, one entry per configuration under evaluation.

The performance formulas are written once over numpy arrays; a single estimate is a batch of one.
That keeps `estimate`, `compare` and `validate` on the same code path, and makes the planner's
search vectorised instead of a Python loop per configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from silica.catalog.schema import Chip, Dtype, Instance
from silica.perf.calibration import FamilyParams

__all__ = ["Efficiency", "Machine", "machine_arrays", "with_params"]

Array = NDArray[np.float64]
GIB = 2.0**30

# Device memory a runtime keeps for itself per chip (CUDA context and NCCL buffers, Neuron runtime).
RUNTIME_RESERVE_GIB = 1.0


@dataclass(frozen=True, slots=True)
class Efficiency:
    """Per-configuration calibration (`calibration.FamilyParams` as arrays, in seconds and shares)."""

    eff_max: Array
    half_tokens: Array  # tokens per matmul at half efficiency
    mem_eff: Array
    layer_s: Array
    coll_s: Array
    coll_bw_eff: Array
    attn_eff: Array
    seq_s: Array  # per sequence per forward step (serving engines; 0 in training)
    moe_layer_s: Array  # per mixture-of-experts layer per pass, beyond a dense layer's
    request_s: Array  # per served request, once before its first token (front end, admission)

    def take(self, index: NDArray[np.intp]) -> Efficiency:
        return Efficiency(**{name: getattr(self, name)[index] for name in self.__slots__})


@dataclass(frozen=True, slots=True)
class Machine:
    """Per-configuration hardware: what one tensor-parallel unit (a GPU, a NeuronCore) offers,
    and how close the calibration says it gets to that (`cal`)."""

    unit_flops: Array  # dense peak FLOP/s at the compute dtype (nan where the chip lacks that dtype)
    unit_flops_16: Array  # dense 16-bit peak FLOP/s: what attention runs at under fp8/fp4 training
    unit_bw: Array  # HBM bytes/s
    unit_mem: Array  # usable HBM bytes
    link_bw: Array  # chip-to-chip bytes/s inside an instance
    net_bw: Array  # instance-to-instance bytes/s (EFA), per instance
    units_per_chip: Array
    units_per_instance: Array
    cal: Efficiency

    @property
    def size(self) -> int:
        return int(self.unit_flops.shape[0])

    def take(self, index: NDArray[np.intp]) -> Machine:
        """The machine rows at `index`: used to expand per-instance rows to per-configuration rows."""
        rows = {name: getattr(self, name)[index] for name in self.__slots__ if name != "cal"}
        return Machine(**rows, cal=self.cal.take(index))


def _peak_tflops(chip: Chip, dtype: Dtype) -> float:
    peak = chip.peak_tflops(dtype)
    if peak is None and dtype == "fp16":
        peak = chip.tflops_bf16
    if peak is None and dtype == "bf16":
        peak = chip.tflops_fp16
    return float("nan") if peak is None else float(peak)


def machine_arrays(
    rows: Sequence[tuple[Chip, Instance | None, FamilyParams]], compute_dtype: Dtype | Sequence[Dtype]
) -> Machine:
    """Build a `Machine` from (chip, instance, calibration parameters) rows, at one or per-row dtypes."""
    dtypes = [compute_dtype] * len(rows) if isinstance(compute_dtype, str) else list(compute_dtype)

    def col(values: Sequence[float]) -> Array:
        return np.asarray(values, dtype=np.float64)

    units = col([chip.tp_cores_per_chip for chip, _, _ in rows])
    chips_per_instance = col([inst.chips if inst else 1 for _, inst, _ in rows])
    # Published link figures add up both directions; a ring all-reduce moves data one way at a time.
    link = col(
        [
            (inst.link_gb_per_s if inst and inst.link_gb_per_s else chip.link_gb_per_s or float("nan"))
            * 1e9
            / 2
            for chip, inst, _ in rows
        ]
    )
    net = col(
        [(inst.network_gbps if inst and inst.network_gbps else float("nan")) * 1e9 / 8 for _, inst, _ in rows]
    )
    params = [p for _, _, p in rows]
    return Machine(
        unit_flops=col([_peak_tflops(chip, d) * 1e12 for (chip, _, _), d in zip(rows, dtypes, strict=True)])
        / units,
        unit_flops_16=col([_peak_tflops(chip, "bf16") * 1e12 for chip, _, _ in rows]) / units,
        unit_bw=col([(chip.hbm_tb_per_s or float("nan")) * 1e12 for chip, _, _ in rows]) / units,
        unit_mem=col([((chip.hbm_gib or float("nan")) - RUNTIME_RESERVE_GIB) * GIB for chip, _, _ in rows])
        / units,
        link_bw=link,
        net_bw=net,
        units_per_chip=units,
        units_per_instance=units * chips_per_instance,
        cal=efficiency(params),
    )


def efficiency(params: Sequence[FamilyParams]) -> Efficiency:
    """Calibration parameters as arrays, one entry per configuration."""

    def col(name: str) -> Array:
        return np.asarray([getattr(p, name) for p in params], dtype=np.float64)

    return Efficiency(
        eff_max=col("compute_eff_max"),
        half_tokens=col("compute_half_tokens"),
        mem_eff=col("memory_eff"),
        layer_s=col("layer_overhead_us") * 1e-6,
        coll_s=col("collective_latency_us") * 1e-6,
        coll_bw_eff=col("collective_bw_eff"),
        attn_eff=col("attention_eff"),
        seq_s=col("sequence_overhead_us") * 1e-6,
        moe_layer_s=col("moe_layer_overhead_us") * 1e-6,
        request_s=col("request_overhead_us") * 1e-6,
    )


def with_params(m: Machine, params: Sequence[FamilyParams]) -> Machine:
    """The same hardware under other calibration parameters (one per entry): used by the fit."""
    return replace(m, cal=efficiency(params))
