"""Layout legality: which tensor (tp), pipeline (pp), expert (ep) and virtual-pipeline (vp) degrees a
model can be split by on a deployment, decided in one place.

The rules were checked in three places (`workload.Deployment.check_fits`, `plan/targets.py`,
`plan/inference_search.py`) with three wordings; each now calls these functions, so a layout is legal
or not, and said so, the same way whether it came from `--tp/--pp/--ep/--vp`, the HTTP API or the
planner's own enumeration. Only plain numbers come in (heads, layers, experts, units per instance),
so the module sits below the planner and the workload alike.

Context parallelism (cp) is not planned by Silica (only imported from pilot runs), so it has no rule
here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from silica.errors import InputError

__all__ = [
    "check_chained_stages",
    "check_ep",
    "check_pp",
    "check_serving_ep",
    "check_stages_fit",
    "check_tp_heads",
    "check_vp",
    "divisors",
    "ep_splits_experts",
    "legal_tp",
    "tp_problem",
]


def divisors(n: int) -> list[int]:
    """Every whole divisor of `n`, ascending (the degrees that split `n` things evenly)."""
    return [d for d in range(1, n + 1) if n % d == 0]


def check_ep(model_id: str, ep: int | None, n_experts: int) -> None:
    """Expert parallelism places whole experts on each rank, so ep divides the routed experts
    (Megatron-Core requires num_moe_experts % expert_model_parallel_size == 0); a dense model has
    no experts to split."""
    if ep is None or ep <= 1:
        return
    if n_experts == 0:
        raise InputError(
            f"ep {ep} needs a mixture-of-experts model; {model_id} is dense (no experts).",
            "drop --ep (or pass --ep 1).",
        )
    if ep > n_experts:
        raise InputError(
            f"ep {ep} is more expert-parallel ranks than {model_id}'s {n_experts} experts.",
            f"pass --ep {n_experts} or a smaller divisor of it.",
        )
    if n_experts % ep:
        options = ", ".join(str(d) for d in divisors(n_experts))
        raise InputError(
            f"ep {ep} does not split {model_id}'s {n_experts} experts evenly.",
            f"pass an --ep that divides {n_experts} ({options}).",
        )


def ep_splits_experts(n_experts: int, ep: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Where each degree in `ep` splits the experts evenly (the vector form of `check_ep`'s rule)."""
    return np.asarray(np.mod(n_experts, ep) == 0, dtype=bool)


def check_pp(model_id: str, pp: int | None, n_layers: int) -> None:
    """A pipeline stage holds at least one layer."""
    if pp is not None and pp > n_layers:
        raise InputError(
            f"pp {pp} is more pipeline stages than {model_id}'s {n_layers} layers.",
            f"pass --pp {n_layers} or fewer.",
        )


def check_chained_stages(model_id: str, count: int, n_layers: int) -> None:
    """Serving chains the instances of a replica as pipeline stages: one layer each at least."""
    if count > n_layers:
        raise InputError(
            f"{count} instances would be {count} pipeline stages, more than {model_id}'s {n_layers} layers.",
            f"deploy at most {n_layers} instances per replica (e.g. INSTANCEx{min(n_layers, 8)}); "
            "for more throughput, run replicas side by side.",
        )


def check_tp_heads(model_id: str, tp: int | None, n_heads: int, n_kv_heads: int) -> None:
    """Tensor parallelism shards attention by heads (Megatron-LM, Shoeybi et al. 2019, sec. 3): vLLM,
    TensorRT-LLM and NxD Inference all require tp to divide the query heads, and KV heads either
    divisible by tp or replicated (tp a multiple of the KV heads)."""
    if tp is None or tp <= 1:
        return
    if n_heads % tp:
        raise InputError(
            f"tp {tp} does not divide {model_id}'s {n_heads} attention heads.",
            "pass a --tp that divides the heads (e.g. 1, 2, 4, 8).",
        )
    if n_kv_heads % tp and tp % n_kv_heads:
        raise InputError(
            f"tp {tp} neither divides nor is a multiple of {model_id}'s {n_kv_heads} KV heads.",
            "pass a --tp that divides the KV heads or is a multiple of them.",
        )


def legal_tp(units: int, n_heads: int, *, splits_heads: bool) -> list[int]:
    """Tensor-parallel degrees on `units` GPUs or NeuronCores: the divisors of the units.

    GPUs split attention heads evenly (`splits_heads`), so tp must also divide the head count;
    Neuron pads heads up to a multiple of tp (a cost the performance model charges)."""
    options = divisors(units)
    return [t for t in options if n_heads % t == 0] if splits_heads else options


def tp_problem(model_id: str, tp: int, n_heads: int, units: int, unit: str, instance_id: str) -> str:
    """Why `tp` is not in `legal_tp(units, n_heads, ...)`, in the user's words."""
    if tp > units or units % tp:
        return f"tp={tp} does not divide the {units} {unit} of {instance_id}."
    return f"tp={tp} does not divide {model_id}'s {n_heads} attention heads (GPUs split heads evenly)."


def check_stages_fit(
    tp_options: Sequence[int], pp: int, units: int, unit: str, count: int, instance_id: str
) -> None:
    """A fixed pp with the smallest legal tp must fit on the units `count` instances have."""
    if all(o * pp > units for o in tp_options):
        raise InputError(
            f"tp x pp = {min(tp_options)} x {pp} needs more than the {units} {unit} of {count} x {instance_id}.",
            "lower --pp or --tp, or add instances (INSTANCExCOUNT).",
        )


def check_serving_ep(model_id: str, ep: int, tp_options: Sequence[Sequence[int]]) -> list[list[int]]:
    """Serving with ep > 1 runs attention data-parallel over the replica's ranks, so ep equals tp:
    the tp options left per target, refused when none is left anywhere."""
    left = [[t for t in options if t == ep] for options in tp_options]
    if not any(left):
        raise InputError(
            f"ep {ep} is not a tensor-parallel degree {model_id} can use here: serving with expert "
            "parallelism runs attention data-parallel over the replica's ranks, so ep equals tp.",
            "pass --ep equal to --tp (or leave --ep out).",
        )
    return left


def check_vp(vp: int, pp: int | None) -> None:
    """Interleaved 1F1B splits each stage into `vp` model chunks: it needs two stages or more."""
    if vp > 1 and pp == 1:
        raise InputError(
            f"--vp {vp} interleaves model chunks across pipeline stages, but --pp 1 has one stage.",
            "drop --vp, or pass --pp 2 or more.",
        )
