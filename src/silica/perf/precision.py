"""Which bytes and which peak a choice of weight and compute dtype implies.

Rules (each is an assumption the estimate lists):
- Weights narrower than the compute dtype stay narrow in HBM (int8/fp8/fp4 weight-only
  quantisation halves or quarters the bytes streamed) and are widened on the fly.
- Weights wider than the compute dtype are cast once at load (fp32 checkpoints compiled to bf16).
- Matmuls run at the compute dtype's peak; fp8 and fp4 exist only where the chip has them.
- The KV cache is kept in fp8 when compute is fp8 (TensorRT-LLM FP8 recipes), else in 16 bits.
- Non-matmul work (norms, activations) runs in 16 bits even under fp8 compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from silica.catalog.schema import Dtype
from silica.perf.inputs import Widths
from silica.workload import DTYPE_BYTES

__all__ = ["Precision", "precision", "widths"]


@dataclass(frozen=True, slots=True)
class Precision:
    weight_bytes: float
    act_bytes: float
    kv_bytes: float
    flops_dtype: Dtype


def precision(weight_dtype: Dtype, compute_dtype: Dtype) -> Precision:
    compute = DTYPE_BYTES[compute_dtype]
    weight = min(DTYPE_BYTES[weight_dtype], compute)
    narrow_compute = compute_dtype in ("fp8", "int8", "fp4")
    return Precision(
        weight_bytes=weight,
        act_bytes=2.0 if narrow_compute else compute,
        kv_bytes=1.0 if narrow_compute else compute,
        flops_dtype=compute_dtype,
    )


def widths(prec: Precision, n: int, weight_bytes: float | None = None) -> Widths:
    """The bytes per value of `prec` for `n` configurations (training keeps bf16 weights: 2 B)."""
    weight = prec.weight_bytes if weight_bytes is None else weight_bytes
    return Widths(weight=np.full(n, weight), act=np.full(n, prec.act_bytes), kv=np.full(n, prec.kv_bytes))
