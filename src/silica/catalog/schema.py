"""Typed rows of the hardware catalog. Loaders validate every data-file row into these.

Units are in the field names. Memory capacity is GiB (binary), bandwidth is decimal TB/s or GB/s,
compute is dense (no structured sparsity) TFLOP/s. A value nobody has published is `None`.

The rows are frozen standard-library dataclasses, not pydantic models: every command starts from the
catalog, and defining pydantic models costs about 80 ms of start-up (issue 23). The loader still
validates every data-file cell with pydantic's rules (`silica.catalog.loader`); a field's bounds sit in
its metadata (`ge`, `gt`), which the loader passes on to pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["DTYPES", "PURCHASE_OPTIONS", "Catalog", "Chip", "Dtype", "Instance", "Price", "PurchaseOption"]

Dtype = Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]
DTYPES: tuple[Dtype, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
PurchaseOption = Literal["on_demand", "reserved_1yr", "spot", "capacity_block", "user"]
PURCHASE_OPTIONS: tuple[PurchaseOption, ...] = ("on_demand", "reserved_1yr", "spot", "capacity_block", "user")


@dataclass(frozen=True, kw_only=True)
class Chip:
    id: str  # lower-case, as in published.csv: "trainium2", "h100", "a100-80gb"
    name: str  # the vendor's name
    vendor: Literal["aws", "nvidia"]
    family: str  # calibration family: "neuron-v2", "hopper", ... (see perf.calibration)
    status: Literal["available", "announced"]
    # Dense peak compute by dtype; None where the chip has no such unit or no figure is published.
    tflops_fp32: float | None
    tflops_tf32: float | None
    tflops_bf16: float | None
    tflops_fp16: float | None
    tflops_fp8: float | None
    tflops_int8: float | None  # TOP/s
    tflops_fp4: float | None
    hbm_gib: float | None  # device memory capacity
    hbm_tb_per_s: float | None
    link_gb_per_s: (
        float | None
    )  # chip-to-chip inside one instance (NVLink, NeuronLink), as published: all links, both directions
    tp_cores_per_chip: int = field(
        metadata={"ge": 1}
    )  # what one unit of tensor parallelism is (NeuronCores, 1 for GPUs)
    tasks: str  # space-separated: "training inference" or "inference" (what the vendor's software supports)
    confidence: Literal["published", "derived", "announced"]
    source: str
    as_of: str
    notes: str = ""

    @property
    def trains(self) -> bool:
        return "training" in self.tasks.split()

    def peak_tflops(self, dtype: Dtype) -> float | None:
        return getattr(self, f"tflops_{dtype}")  # type: ignore[no-any-return]


@dataclass(frozen=True, kw_only=True)
class Instance:
    id: str  # EC2 instance type or UltraServer name
    chip: str  # Chip.id
    chips: int = field(metadata={"ge": 1})
    kind: Literal[
        "instance", "ultraserver", "system"
    ]  # system: a vendor reference domain (DGX node, NVL72 rack), no EC2 type
    vcpus: int | None
    memory_gib: float | None
    network_gbps: float | None  # EFA / ENA bandwidth to other instances
    link_gb_per_s: float | None  # per-chip link inside the instance when it differs from the chip's
    status: Literal["available", "announced"]
    source: str
    as_of: str
    notes: str = ""


@dataclass(frozen=True, kw_only=True)
class Price:
    instance: str
    region: str
    option: PurchaseOption
    usd_per_hour: float = field(metadata={"gt": 0})
    source: str
    as_of: str
    notes: str = ""


@dataclass(frozen=True, kw_only=True)
class Catalog:
    """Everything the planner can choose from, with the prices known for it."""

    chips: dict[str, Chip]
    instances: dict[str, Instance]
    prices: tuple[Price, ...]
