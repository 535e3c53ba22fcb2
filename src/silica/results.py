"""What the library returns. Interfaces serialise these as they are (`to_dict`) and compute nothing."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Band", "Estimate", "PriceUsed"]


@dataclass(frozen=True, slots=True)
class PriceUsed:
    instance: str
    usd_per_hour: float  # for one instance
    region: str
    option: str
    as_of: str
    source: str


@dataclass(frozen=True, slots=True)
class Band:
    """The p10-p90 range the validation error of this chip family implies for one figure."""

    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Estimate:
    """One deployment of one model for one workload: speed, memory, cost and why.

    Figures that cannot be known (an unpriced instance's cost) are None, never a guess.
    For an infeasible deployment, `reasons` says why and the speed figures may be None.
    """

    model: str
    task: str
    instance: str
    count: int
    chip: str
    vendor: str
    family: str
    feasible: bool
    reasons: tuple[str, ...]
    tp: int | None
    pp: int | None
    dp: int | None
    batch: int | None
    chips: int
    # Inference
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    output_tokens_per_s: float | None = None  # whole deployment
    input_tokens_per_s: float | None = None  # prompt tokens prefilled per second, whole deployment
    # Training
    step_s: float | None = None
    tokens_per_s_per_chip: float | None = None
    mfu: float | None = None
    train_days: float | None = None
    # Memory per tensor-parallel unit, GiB
    memory_gib: dict[str, float] = field(default_factory=dict)
    # Cost
    price: PriceUsed | None = None
    usd_per_hour: float | None = None  # whole deployment
    breakeven_usd_per_hour: float | None = None  # per instance, when unpriced
    usd_per_1m_output_tokens: float | None = None
    usd_per_1m_input_tokens: float | None = None
    usd_per_run: float | None = None
    instances_for_load: int | None = None  # deployments x count needed for the stated load
    usd_per_month: float | None = None  # at the stated load (or one deployment running all month)
    # Honesty
    bands: dict[str, Band] = field(default_factory=dict)
    calibration: str = ""  # "fitted on family X" or "inherited from Y: rule"
    assumptions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["reasons"] = list(self.reasons)
        out["assumptions"] = list(self.assumptions)
        bands = out.pop("bands")
        for name in (
            "ttft_ms",
            "tpot_ms",
            "output_tokens_per_s",
            "tokens_per_s_per_chip",
            "usd_per_1m_output_tokens",
            "train_days",
            "usd_per_run",
        ):
            band = bands.get(name)
            out[f"{name}_low"] = band["low"] if band else None
            out[f"{name}_high"] = band["high"] if band else None
        return out
