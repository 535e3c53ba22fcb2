"""What the library returns. Interfaces serialise these as they are (`to_dict`) and compute nothing."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

__all__ = [
    "Band",
    "EnergyUse",
    "Estimate",
    "EstimateBase",
    "InferenceEstimate",
    "PhaseTime",
    "PriceUsed",
    "TrainingEstimate",
    "sanity_problem",
]


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
class EnergyUse:
    """Power and energy of a deployment (`plan.energy`): figures with their [low, high] band.

    `known` is False where the chip's power is published nowhere: then every figure is None and
    `reason` says so. A band spans the chip's TDP range (a third-party estimate), the host-overhead
    rule's range, the power model's held-out error and the throughput band.
    """

    known: bool
    reason: str = ""
    chip_power_w: float | None = None  # average per chip while serving
    tdp_w: tuple[float, float] | None = None  # per chip, [low, high]
    instance_power_w: float | None = None  # average per instance, IT power (chips + host)
    instance_power_w_low: float | None = None
    instance_power_w_high: float | None = None
    j_per_output_token: float | None = None  # IT energy
    j_per_output_token_low: float | None = None
    j_per_output_token_high: float | None = None
    output_tokens_per_s_per_mw: float | None = None  # per MW of IT power
    output_tokens_per_s_per_mw_low: float | None = None
    output_tokens_per_s_per_mw_high: float | None = None
    output_tokens_per_s_per_facility_mw: float | None = None  # per MW drawn by the site (x PUE)
    pue: float | None = None
    region: str = ""
    grid_kg_co2e_per_kwh: float | None = None
    kg_co2e_per_1m_output_tokens: float | None = None
    kg_co2e_per_1m_output_tokens_low: float | None = None
    kg_co2e_per_1m_output_tokens_high: float | None = None
    usd_per_mwh: float | None = None
    energy_usd_per_1m_output_tokens: float | None = None  # facility energy at `usd_per_mwh`
    # Training: IT joules per training token, and the run's facility energy
    j_per_training_token: float | None = None
    j_per_training_token_low: float | None = None
    j_per_training_token_high: float | None = None
    mwh_per_run: float | None = None  # facility (x PUE)
    energy_usd_per_run: float | None = None  # at `usd_per_mwh`
    sources: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PhaseTime:
    """Why one phase (prefill, decode step, training step) takes as long as it does.

    `parts_ms` names what the time is spent on (compute, weights, kv, all_reduce, pipeline,
    overhead; for training also activations, bubble, gradient_sync, optimizer) and adds up to `ms`.
    The roofline term is charged to what binds it, so a memory-bound decode step shows its weights
    and KV streams and no compute (see `perf.inputs.TimeSplit`).
    """

    phase: str
    ms: float
    parts_ms: dict[str, float]

    @classmethod
    def of(cls, phase: str, seconds: float, parts_s: dict[str, float]) -> PhaseTime:
        return cls(phase, seconds * 1e3, {name: value * 1e3 for name, value in parts_s.items()})


@dataclass(frozen=True, slots=True)
class EstimateBase:
    """What every estimate says: one deployment of one model, its layout, memory, time, cost and why.

    Figures that cannot be known (an unpriced instance's cost) are None, never a guess.
    For an infeasible deployment, `reasons` says why and the speed figures are None.
    `InferenceEstimate` and `TrainingEstimate` add the figures of their question.
    """

    TASK: ClassVar[str] = ""
    BANDED: ClassVar[tuple[str, ...]] = ()  # figures with a p10-p90 band in `to_dict`

    model: str
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
    # Memory per tensor-parallel unit, GiB
    memory_gib: dict[str, float] = field(default_factory=dict)
    # Where the time goes, per phase
    time: tuple[PhaseTime, ...] = ()
    # Cost
    price: PriceUsed | None = None
    usd_per_hour: float | None = None  # whole deployment
    breakeven_usd_per_hour: float | None = None  # per instance, when unpriced
    usd_per_month: float | None = None  # at the stated load (or one deployment running all month)
    # Honesty
    bands: dict[str, Band] = field(default_factory=dict)
    calibration: str = ""  # "fitted on family X" or "inherited from Y: rule"
    engine: str = ""  # the serving or training stack assumed (data/stacks.yaml)
    assumptions: tuple[str, ...] = ()
    ep: int | None = None  # expert-parallel degree (mixture-of-experts models; None for dense)
    cp: int | None = None  # context-parallel degree (training; serving with --cp > 1; else None)
    # The effective settings the plan ran with (`silica.context`): {name: {value, origin}}.
    settings: dict[str, dict[str, str | None]] = field(default_factory=dict)
    energy: EnergyUse | None = None  # power, joules per token, tokens per MW, carbon (`plan.energy`)

    # Each figure a result may hold, and the range (limits.RESULT_RANGES) it must lie in.
    SANE: ClassVar[dict[str, str]] = {
        "usd_per_hour": "usd",
        "breakeven_usd_per_hour": "usd",
        "usd_per_month": "usd",
    }

    def __post_init__(self) -> None:
        """Every estimate is checked before anyone can print it (see `sanity_problem`)."""
        problem = sanity_problem(self)
        if problem is not None:
            from silica.errors import ImplausibleResultError

            raise ImplausibleResultError(
                f"The estimate for {self.model} on {self.instance} came out implausible: {problem}.",
                "check the numbers given to it (calibration file, prices, systems file, --set); if they "
                "are sound this is a bug: please report it with the command.",
            )

    @property
    def task(self) -> str:
        return self.TASK

    def to_dict(self) -> dict[str, Any]:
        body = asdict(self)
        out: dict[str, Any] = {"model": body.pop("model"), "task": self.task, **body}
        out["reasons"] = list(self.reasons)
        out["assumptions"] = list(self.assumptions)
        out["time"] = list(out["time"])
        if out.get("energy") is not None:
            out["energy"]["sources"] = list(self.energy.sources) if self.energy else []
            out["energy"]["assumptions"] = list(self.energy.assumptions) if self.energy else []
        bands = out.pop("bands")
        for name in self.BANDED:
            band = bands.get(name)
            out[f"{name}_low"] = band["low"] if band else None
            out[f"{name}_high"] = band["high"] if band else None
        return out


@dataclass(frozen=True, slots=True)
class InferenceEstimate(EstimateBase):
    """Serving: latency, throughput and what a token costs."""

    TASK: ClassVar[str] = "inference"
    BANDED: ClassVar[tuple[str, ...]] = (
        "ttft_ms",
        "tpot_ms",
        "output_tokens_per_s",
        "usd_per_1m_output_tokens",
    )

    SANE: ClassVar[dict[str, str]] = {
        **EstimateBase.SANE,
        "ttft_ms": "time_ms",
        "tpot_ms": "time_ms",
        "output_tokens_per_s": "rate",
        "input_tokens_per_s": "rate",
        "usd_per_1m_output_tokens": "usd",
        "usd_per_1m_input_tokens": "usd",
    }

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    output_tokens_per_s: float | None = None  # whole deployment
    input_tokens_per_s: float | None = None  # prompt tokens prefilled per second, whole deployment
    usd_per_1m_output_tokens: float | None = None
    usd_per_1m_input_tokens: float | None = None
    instances_for_load: int | None = None  # deployments x count needed for the stated load


@dataclass(frozen=True, slots=True)
class TrainingEstimate(EstimateBase):
    """Training: step time, speed per chip, and the time and cost of the run."""

    TASK: ClassVar[str] = "training"
    BANDED: ClassVar[tuple[str, ...]] = ("tokens_per_s_per_chip", "train_days", "usd_per_run")

    SANE: ClassVar[dict[str, str]] = {
        **EstimateBase.SANE,
        "step_s": "step_s",
        "tokens_per_s_per_chip": "rate",
        "mfu": "fraction",
        "train_days": "days",
        "usd_per_run": "usd",
    }

    step_s: float | None = None
    tokens_per_s_per_chip: float | None = None
    mfu: float | None = None
    train_days: float | None = None
    usd_per_run: float | None = None


def sanity_problem(est: EstimateBase) -> str | None:
    """What is physically impossible about an estimate (`name = value`, and why), or None.

    Checked: each headline figure of its kind, each band's ends, each phase time and memory figure.
    None (unknown, or infeasible) is never a problem; a number must be finite and in its range."""
    import math

    from silica.limits import RESULT_RANGES

    def bad(name: str, value: float | None, kind: str) -> str | None:
        if value is None:
            return None
        q = RESULT_RANGES[kind]
        if isinstance(value, int | float) and q.contains(float(value)):
            return None
        shown = f"{value:.4g}" if isinstance(value, int | float) and math.isfinite(value) else repr(value)
        return f"{name} = {shown} ({q.reason})"

    figures: list[tuple[str, float | None, str]] = [(n, getattr(est, n), k) for n, k in est.SANE.items()]
    figures += [(f"{n} band", end, est.SANE.get(n, "usd" if "usd" in n else "rate"))
                for n, b in est.bands.items() for end in (b.low, b.high)]  # fmt: skip
    figures += [(f"{t.phase} time_ms", t.ms, "time_ms") for t in est.time if t.ms]
    figures += [(f"memory {n}", v, "gib") for n, v in est.memory_gib.items()]
    for name, value, kind in figures:
        problem = bad(name, value, kind)
        if problem is not None:
            return problem
    return None


# What `estimate` and `compare` return, for callers that handle both questions.
Estimate = InferenceEstimate | TrainingEstimate
