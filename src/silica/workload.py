"""What the user wants to run (a workload) and how it is laid out on hardware (a deployment).

These are plain frozen values checked on construction: a bad value raises `InputError` with a fix,
so every interface rejects bad input the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from silica.catalog.schema import DTYPES, Dtype
from silica.cost.money import SECONDS_PER_MONTH
from silica.errors import InputError
from silica.limits import (
    MAX_BATCH,
    MAX_GLOBAL_BATCH,
    MAX_INSTANCES,
    MAX_PARALLEL,
    MAX_RATE,
    MAX_TOKENS,
    MAX_TOKENS_PER_MONTH,
    MAX_VIRTUAL_STAGES,
)

__all__ = ["DTYPE_BYTES", "Deployment", "InferenceWorkload", "TrainingWorkload", "check_dtype"]

# Bytes per value of each dtype; fp4 packs two values a byte (OCP MX / NVFP4 scales ignored).
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
}


def check_dtype(value: str, what: str) -> Dtype:
    if value not in DTYPES:
        raise InputError(f"Unknown {what} {value!r}.", f"use one of {', '.join(DTYPES)}.")
    return value


def _positive(name: str, value: float | None, flag: str, limit: float | None = None) -> None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise InputError(
            f"{name} must be a finite positive number, got {value}.", f"pass {flag} with a value above 0."
        )
    if value is not None and limit is not None and value > limit:
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"
        raise InputError(
            f"{name} {shown} is over the limit of {limit:,.0f}.", LIMITS_FIX.get(flag, "check the number.")
        )


# Upper bounds on what a user can ask for: `silica.limits` (every front door reads them there).
LIMITS_FIX = {
    "--input-len": "no model reads that many tokens; check the number.",
    "--output-len": "no model writes that many tokens; check the number.",
    "--seq-len": "no model has a context that long; check the number.",
    "--batch": "no deployment holds that many sequences; check the number.",
    "--global-batch": "no training step takes that many sequences; check the number.",
    "--micro-batch": "no chip holds that many sequences per micro-batch; check the number.",
    "--rate": "no service sees that load; give the requests per second you expect.",
    "--tokens-per-month": "no service sees that load; give the tokens per month you expect.",
    "INSTANCExCOUNT": f"plan at most {MAX_INSTANCES:,} instances (e.g. --on p5.48xlargex16).",
    "--tp": "tp is a tensor-parallel degree: at most the chips (NeuronCores) you deploy.",
    "--pp": "pp is the number of pipeline stages: at most the model's layers.",
    "--ep": "ep is the expert-parallel degree: at most the model's experts.",
}


@dataclass(frozen=True, slots=True)
class InferenceWorkload:
    """Requests of `input_len` prompt tokens that each generate `output_len` tokens.

    Load is either a request rate or output tokens per month (they describe the same thing; give one).
    `batch` fixes the concurrent sequences; None lets the planner choose the best batch under the SLOs.
    `seq_len` is a compiled maximum context (Neuron buckets); None means input_len + output_len.
    """

    input_len: int
    output_len: int
    batch: int | None = None
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    rate_req_per_s: float | None = None
    tokens_per_month: float | None = None
    weight_dtype: Dtype = "bf16"
    compute_dtype: Dtype = "bf16"
    seq_len: int | None = None
    batching: Literal["continuous", "static"] = "continuous"
    task: Literal["inference"] = field(default="inference", init=False)

    def __post_init__(self) -> None:
        _positive("Input length", self.input_len, "--input-len", MAX_TOKENS)
        if self.output_len < 0:
            raise InputError(
                f"Output length must be 0 or more, got {self.output_len}.", "pass --output-len >= 0."
            )
        if self.output_len > MAX_TOKENS:
            _positive("Output length", self.output_len, "--output-len", MAX_TOKENS)
        _positive("Sequence length", self.seq_len, "--seq-len", MAX_TOKENS)
        _positive("Batch", self.batch, "--batch", MAX_BATCH)
        _positive("The TTFT SLO", self.ttft_slo_ms, "--ttft-slo-ms")
        _positive("The TPOT SLO", self.tpot_slo_ms, "--tpot-slo-ms")
        _positive("The request rate", self.rate_req_per_s, "--rate", MAX_RATE)
        _positive("Tokens per month", self.tokens_per_month, "--tokens-per-month", MAX_TOKENS_PER_MONTH)
        if self.rate_req_per_s is not None and self.tokens_per_month is not None:
            implied = self.rate_req_per_s * self.output_len * SECONDS_PER_MONTH
            if abs(implied - self.tokens_per_month) > 0.05 * self.tokens_per_month:
                raise InputError(
                    f"The request rate ({self.rate_req_per_s:g}/s x {self.output_len} output tokens = "
                    f"{implied:.3g} tokens/month) contradicts tokens per month ({self.tokens_per_month:.3g}).",
                    "give only one of --rate and --tokens-per-month.",
                )
        check_dtype(self.weight_dtype, "weight dtype")
        check_dtype(self.compute_dtype, "compute dtype")
        if self.seq_len is not None and self.seq_len < self.input_len + self.output_len:
            raise InputError(
                f"seq_len {self.seq_len} is shorter than input + output ({self.input_len + self.output_len}).",
                "raise --seq-len or shorten the request.",
            )

    @property
    def output_tokens_per_s(self) -> float | None:
        """The sustained output token rate the load asks for, if a load was given."""
        if self.rate_req_per_s is not None:
            return self.rate_req_per_s * self.output_len
        if self.tokens_per_month is not None:
            return self.tokens_per_month / SECONDS_PER_MONTH
        return None


@dataclass(frozen=True, slots=True)
class TrainingWorkload:
    """Train on `tokens` tokens in sequences of `seq_len`, `global_batch` sequences a step.

    `tokens` may be None when only throughput is asked for (validation rows, step-time estimates).
    """

    seq_len: int
    tokens: float | None = None
    global_batch: int | None = None  # None: about 4M tokens a step (Llama 3 recipe scale)
    micro_batch: int = 1
    # Model chunks per pipeline stage (Megatron's interleaved 1F1B, `virtual_pipeline_model_parallel_size`):
    # the pipeline bubble shrinks by this factor, stage hand-offs grow by it. 1: plain 1F1B.
    virtual_stages: int = 1
    deadline_days: float | None = None
    compute_dtype: Dtype = "bf16"
    zero_stage: int = 1
    # Routing forced to an even load (benchmark runs: NVIDIA's MoE tables force-balance tokens);
    # otherwise the busiest expert rank carries `perf.moe.CAPACITY_FACTOR` times the mean.
    balanced_experts: bool = False
    task: Literal["training"] = field(default="training", init=False)

    def __post_init__(self) -> None:
        _positive("Sequence length", self.seq_len, "--seq-len", MAX_TOKENS)
        _positive("Tokens", self.tokens, "--tokens")
        _positive("Global batch", self.global_batch, "--global-batch", MAX_GLOBAL_BATCH)
        _positive("Micro batch", self.micro_batch, "--micro-batch", MAX_BATCH)
        _positive("Virtual pipeline stages", self.virtual_stages, "--vp", MAX_VIRTUAL_STAGES)
        _positive("The deadline", self.deadline_days, "--deadline-days")
        check_dtype(self.compute_dtype, "compute dtype")
        if self.zero_stage not in (0, 1, 2, 3):
            raise InputError(
                f"ZeRO stage must be 0-3, got {self.zero_stage}.", "set zero_stage to 0, 1, 2 or 3."
            )

    @property
    def batch_sequences(self) -> int:
        return self.global_batch or max(1, round(4 * 1024 * 1024 / self.seq_len))


@dataclass(frozen=True, slots=True)
class Deployment:
    """`count` instances of one type, split by tensor (tp), pipeline (pp) and data (dp) parallelism.

    tp counts tensor-parallel units: GPUs on NVIDIA, NeuronCores on Neuron (2 per Inferentia2 or
    Trainium1 chip, 4 logical cores per Trainium2/3 chip). None lets Silica choose.
    """

    instance: str
    count: int = 1
    tp: int | None = None
    pp: int | None = None  # None: the planner chooses (instances chained as stages for inference)
    ep: int | None = None  # expert parallelism; None: chosen for a mixture-of-experts model, else 1
    cp: int | None = None  # context parallelism; None: training chooses it for long sequences, serving 1

    def __post_init__(self) -> None:
        _positive("Instance count", self.count, "INSTANCExCOUNT", MAX_INSTANCES)
        _positive("tp", self.tp, "--tp", MAX_PARALLEL)
        _positive("pp", self.pp, "--pp", MAX_PARALLEL)
        _positive("ep", self.ep, "--ep", MAX_PARALLEL)
        _positive("cp", self.cp, "--cp", MAX_PARALLEL)

    def check_fits(
        self,
        model_id: str,
        n_layers: int,
        n_heads: int,
        n_kv_heads: int,
        *,
        chained: bool = False,
        n_experts: int = 0,
    ) -> None:
        """Refuse a layout the model cannot take: more pipeline stages than layers, a tp that splits heads,
        an expert-parallel degree that does not split the experts evenly (the rules: `silica.legality`).
        """
        from silica import legality

        legality.check_ep(model_id, self.ep, n_experts)
        legality.check_pp(model_id, self.pp, n_layers)
        if chained and self.pp is None:  # serving chains instances as stages
            legality.check_chained_stages(model_id, self.count, n_layers)
        legality.check_tp_heads(model_id, self.tp, n_heads, n_kv_heads)
