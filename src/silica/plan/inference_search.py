"""Search inference deployments: enumerate, estimate (vectorised), select, explain.

For each instance type the best configuration is the feasible one with the most output tokens per
instance-hour (hence the lowest cost per token at any price). An instance type with no feasible
configuration keeps the reason that rules it out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from silica import cost, legality
from silica.cost import Ranking
from silica.errors import InputError
from silica.models.spec import ModelSpec
from silica.perf.inference import InferencePerf, inference_perf
from silica.perf.inputs import Layout, Requests
from silica.perf.kernels import ModelCosts
from silica.perf.machine import GIB, machine_arrays
from silica.perf.precision import precision, widths
from silica.perf.stacks import context_parallel_stacks
from silica.plan.grid import BATCHES, Grid, make_grid
from silica.plan.targets import (
    Target,
    band,
    check_layout,
    check_shapes,
    price_used,
    ranking,
    requests_per_s,
    tp_choices,
)
from silica.results import InferenceEstimate, PhaseTime
from silica.workload import DTYPE_BYTES, InferenceWorkload

__all__ = ["evaluate_inference", "search_inference"]

Array = NDArray[np.float64]
PIPELINE_COUNTS: tuple[int, ...] = (1, 2, 4, 8)  # instances chained as pipeline stages
# The published metrics nearest to a planned serving throughput (the planner picks the batch, as an
# engine does for `max_output_tok_s`), nearest first.
SERVING_METRICS = ("max_output_tok_s", "output_tok_s")
# Pipeline stages on separate instances exchange activations every step: only instances with an
# EFA-class network (100 Gbps or more) are chained; smaller ones serve from one instance.
MIN_PIPELINE_NETWORK_GBPS = 100.0
INSTANCE_DOUBLING_HANDICAP = 0.05


def evaluate_inference(
    model: ModelSpec,
    wl: InferenceWorkload,
    targets: Sequence[Target],
    grid: Grid,
    pp: Array,
    ep: Array | None = None,
    cp: Array | None = None,
) -> InferencePerf:
    """Run the performance model on every configuration of the grid (`cp`: serving context
    parallelism, `perf.kernels.prefill_seconds`)."""
    prec = precision(wl.weight_dtype, wl.compute_dtype)
    base = machine_arrays([(t.chip, t.instance, t.params) for t in targets], prec.flops_dtype)
    m = base.take(grid.inst)
    static = np.asarray([t.is_neuron for t in targets])[grid.inst]
    n = grid.size
    seq_len = float(wl.seq_len or wl.input_len + wl.output_len)
    return inference_perf(
        ModelCosts.of(model),
        m,
        Layout(tp=grid.tp, pp=pp, batch=grid.batch, static_shapes=static, ep=ep, cp=cp),
        Requests(
            input_len=np.full(n, float(wl.input_len)),
            output_len=np.full(n, float(wl.output_len)),
            seq_len=np.full(n, seq_len),
        ),
        widths(prec, n),
        d_ff=float(model.d_ff or model.expert_params / max(model.d_model, 1) / 3),
        continuous=wl.batching == "continuous" and wl.output_len > 0,  # an encoder batch is one pass
    )


def search_inference(
    model: ModelSpec,
    wl: InferenceWorkload,
    targets: Sequence[Target],
    *,
    count: int | None = None,
    tp: int | None = None,
    pp: int | None = None,
    rank: Ranking | None = None,
    ep: int | None = None,
    cp: int | None = None,
) -> list[InferenceEstimate]:
    """The best configuration per target (or the reason there is none), in target order.

    With a load, the best layout is the one needing the fewest instances for it (cheapest per month
    at any price); without one, the most tokens per instance-hour. Encoders (no output) are judged
    on prompt tokens instead of generated ones. `rank` is the comparison's decision (`ranking(wl)`).

    Serving with ep > 1 runs attention data-parallel over the replica's ep = tp ranks with the
    routed experts spread over them (TensorRT-LLM `--tp n --ep n` with `enable_attention_dp`, SGLang
    `--enable-dp-attention`, vLLM `--data-parallel-size n --enable-expert-parallel`; `perf.kernels`):
    dense weights are replicated, each rank keeps its own sequences' KV cache, and the tp
    all-reduces give way to a dispatch and a combine per MoE layer. With ep = 1 attention and
    experts are split tp ways. Without a fixed `ep`, a mixture-of-experts model is searched both ways.

    `cp` > 1 serves with context parallelism (each replica tp x pp x cp units; `perf.kernels`),
    only on stacks that document it (`data/stacks.yaml` `context_parallel`). The search never picks
    cp by itself: it cuts one long prompt's TTFT but costs throughput per chip (every cp rank reads
    all of its weights each step), and the planner ranks by throughput, so cp is the user's call
    for a TTFT target on very long prompts (roughly 64K tokens and more, where the engines say it
    pays: TensorRT-LLM 'Helix Parallelism', vLLM 'Context Parallel Deployment').
    """
    rank = rank or ranking(wl)
    check_shapes(model, wl)
    cpn = 1 if cp is None else cp
    if cpn > 1:
        check_context_parallel(targets, cpn, tp=tp, pp=pp, count=count)
    tp_options = tp_choices(model, targets, tp)
    if ep is not None and ep > 1:
        legality.check_ep(model.id, ep, model.n_experts)
        tp_options = legality.check_serving_ep(model.id, ep, tp_options)
    if pp is not None:
        check_layout(targets, tp_options, pp, count or max(PIPELINE_COUNTS))
    counts = [count] if count is not None else list(PIPELINE_COUNTS)
    batches = [wl.batch] if wl.batch is not None else list(BATCHES)
    grid = make_grid(tp_options, counts, batches)
    if ep is not None:
        eps = np.full(grid.size, float(ep))
    elif model.is_moe:
        gpu = ~np.asarray([t.is_neuron for t in targets], dtype=bool)
        grid, eps = _with_attention_dp(grid, model.n_experts, gpu)
    else:
        eps = np.ones(grid.size)
    stages = grid.count if pp is None else np.full(grid.size, float(pp))
    with np.errstate(all="ignore"):  # missing figures (nan) mark configurations infeasible
        perf = evaluate_inference(model, wl, targets, grid, stages, eps, np.full(grid.size, float(cpn)))
    units = np.asarray([t.units_per_instance for t in targets], dtype=np.float64)[grid.inst]
    replicas = np.floor(units * grid.count / (grid.tp * stages * cpn))
    tok_s = replicas * perf.replica_output_tok_s
    # Prompt tokens the deployment prefills per second (each prompt once), the encoder's throughput.
    in_tok_s = replicas * stages * grid.batch * wl.input_len / perf.prefill_s
    network = np.asarray([t.instance.network_gbps or 0.0 for t in targets])[grid.inst]
    chainable = (grid.count == 1) | (network >= MIN_PIPELINE_NETWORK_GBPS)
    ok = perf.fits & np.isfinite(perf.ttft_s) & (replicas >= 1) & chainable
    slo_ok = ok.copy()
    if wl.ttft_slo_ms is not None:
        slo_ok &= perf.ttft_s * 1e3 <= wl.ttft_slo_ms
    if wl.tpot_slo_ms is not None:
        slo_ok &= perf.tpot_s * 1e3 <= wl.tpot_slo_ms
    if count is None:
        # Serving engines (vLLM, TensorRT-LLM, NxD Inference) run a model that fits one instance as
        # replicas of that instance; pipelines across instances are for models (or SLOs) one
        # instance cannot hold. A load is then met by more replicas of the one-instance unit.
        single = slo_ok & (grid.count == 1)
        fits_one = np.zeros(len(targets), dtype=bool)
        np.logical_or.at(fits_one, grid.inst[single], True)
        slo_ok &= (grid.count == 1) | ~fits_one[grid.inst]
    # Tokens per instance-hour, with a 5% handicap per doubling of instances: a smaller deployment is
    # simpler to run, so a bigger one must be clearly cheaper per token to be chosen.
    useful = in_tok_s if rank.encoder else tok_s
    per_instance = useful / grid.count * (1.0 - INSTANCE_DOUBLING_HANDICAP * np.log2(grid.count))
    needed = requests_per_s(wl)
    if rank.loaded and needed is not None:
        # Instances for the load, then throughput per instance to break ties.
        per_request = wl.input_len if rank.encoder else wl.output_len
        groups = np.ceil(needed * per_request / np.maximum(useful, 1e-300))
        per_instance = -(groups * grid.count) + per_instance / (np.nanmax(per_instance) + 1.0)
    score = np.where(slo_ok, per_instance, -np.inf)
    results = []
    for i, target in enumerate(targets):
        rows = np.flatnonzero(grid.inst == i)
        if rows.size == 0 or not np.isfinite(score[rows]).any():
            results.append(
                _infeasible(model, wl, target, rows[chainable[rows]], perf, ok, stages, grid, count)
            )
            continue
        best = int(rows[np.argmax(score[rows])])
        results.append(
            _estimate(model, wl, rank, target, best, grid, stages, perf, replicas, tok_s, in_tok_s, cpn)
        )
        if model.is_moe:
            e = int(eps[best])
            notes = results[-1].assumptions
            if e > 1:
                notes = (
                    *notes,
                    f"attention data-parallel over {e} ranks, routed experts spread over them (ep {e}): "
                    "each rank holds the dense weights and its own sequences' KV cache",
                )
            results[-1] = replace(results[-1], ep=e, assumptions=notes)
    return results


def check_context_parallel(
    targets: Sequence[Target], cp: int, *, tp: int | None, pp: int | None, count: int | None
) -> None:
    """Serving context parallelism only on stacks that document it, and only where a given tp x cp
    fits a pipeline stage (one instance unless `pp` spreads fewer stages over `count` instances):
    one clear line otherwise, rather than a layout that silently has no replica."""
    off = sorted(
        {t.engine or "the default stack" for t in targets if not (t.stack and t.stack.context_parallel)}
    )
    if off:
        engines = ", ".join(context_parallel_stacks())
        raise InputError(
            f"cp {cp} for inference needs an engine with context-parallel serving; {', '.join(off)} has none "
            f"modelled (engines that do: {engines}).",
            f"pass --engine one of {engines}, drop --cp, or pass --task training.",
        )
    if tp is None:
        return
    for t in targets:
        stage = t.units_per_instance * ((count or 1) / pp if pp is not None else 1)
        if tp * cp > stage:
            raise InputError(
                f"tp {tp} x cp {cp} needs {tp * cp} units per pipeline stage; a stage on {t.instance.id} "
                f"has {stage:g}.",
                "pass a smaller --tp or --cp, or INSTANCExN with --pp 1 for a cp group across instances.",
            )


def _with_attention_dp(grid: Grid, n_experts: int, gpu: NDArray[np.bool_]) -> tuple[Grid, Array]:
    """Every configuration with ep = 1, and again with ep = tp where tp > 1 divides the experts.

    Only GPU targets are searched with attention data-parallel: it is a documented layout of the
    GPU engines named in `search_inference`; on Neuron it is estimated only when asked for (--ep).
    """
    dep = np.flatnonzero(gpu[grid.inst] & (grid.tp > 1) & legality.ep_splits_experts(n_experts, grid.tp))
    both = np.concatenate([np.arange(grid.size), dep])
    eps = np.concatenate([np.ones(grid.size), grid.tp[dep]])
    return Grid(inst=grid.inst[both], tp=grid.tp[both], count=grid.count[both], batch=grid.batch[both]), eps


def _infeasible(
    model: ModelSpec,
    wl: InferenceWorkload,
    target: Target,
    rows: NDArray[np.intp],
    perf: InferencePerf,
    ok: NDArray[np.bool_],
    stages: Array,
    grid: Grid,
    count: int | None,
) -> InferenceEstimate:
    chip, prec = target.chip, precision(wl.weight_dtype, wl.compute_dtype)
    reasons: list[str] = []
    if chip.peak_tflops(prec.flops_dtype) is None and not (
        prec.flops_dtype in ("bf16", "fp16") and (chip.tflops_bf16 or chip.tflops_fp16)
    ):
        reasons.append(f"{chip.name} has no published {prec.flops_dtype} compute; choose another --dtype.")
    elif rows.size == 0:
        reasons.append(f"no legal tensor-parallel degree for {model.n_heads} heads on {target.instance.id}.")
    elif not ok[rows].any():
        biggest = rows[np.argmax(grid.tp[rows] * stages[rows])]
        n_inst = int(grid.count[biggest])
        capacity = float(perf.capacity_bytes[biggest] * grid.tp[biggest] * stages[biggest]) / GIB
        weights = float(perf.weights_bytes[biggest] * grid.tp[biggest] * stages[biggest]) / GIB
        if weights > capacity:
            where = f"{n_inst} x {target.instance.id}" if n_inst > 1 else target.instance.id
            reasons.append(
                f"does not fit in memory: weights need {weights:.0f} GiB but {where} offers "
                f"{capacity:.0f} GiB usable."
            )
        else:
            reasons.append(
                f"does not fit in memory: weights fit but the KV cache for one sequence of "
                f"{wl.input_len + wl.output_len} tokens does not."
            )
    else:
        fitting = rows[ok[rows]]
        best_ttft = float(perf.ttft_s[fitting].min() * 1e3)
        best_tpot = float(perf.tpot_s[fitting].min() * 1e3)
        if wl.ttft_slo_ms is not None and best_ttft > wl.ttft_slo_ms:
            reasons.append(f"misses the TTFT SLO: best TTFT {best_ttft:.0f} ms > {wl.ttft_slo_ms:g} ms.")
        if wl.tpot_slo_ms is not None and best_tpot > wl.tpot_slo_ms:
            reasons.append(f"misses the TPOT SLO: best TPOT {best_tpot:.1f} ms > {wl.tpot_slo_ms:g} ms.")
        if not reasons:
            reasons.append("no configuration meets both SLOs at once.")
    return InferenceEstimate(
        model=model.id,
        instance=target.instance.id,
        count=count or 1,
        chip=chip.id,
        vendor=chip.vendor,
        family=chip.family,
        feasible=False,
        reasons=tuple(reasons),
        tp=None,
        pp=None,
        dp=None,
        batch=wl.batch,
        chips=target.instance.chips * (count or 1),
        price=price_used(target),
        usd_per_hour=cost.usd_per_hour(target.price.usd_per_hour if target.price else None, count or 1),
        calibration=target.calibration_note,
        engine=target.engine,
        assumptions=_assumptions(wl, target),
    )


def _cp_note(cp: int) -> str:
    return (
        f"context parallel over {cp} ranks (each a tp group): the prompt's prefill split over them with "
        f"ring key/value exchange, the decode KV cache sharded over them; no measured rows, band widened"
    )


def _assumptions(wl: InferenceWorkload, target: Target) -> tuple[str, ...]:
    prec = precision(wl.weight_dtype, wl.compute_dtype)
    cast = DTYPE_BYTES[wl.weight_dtype] > prec.weight_bytes  # an fp32 checkpoint served in bf16
    weights = (
        f"weights {wl.weight_dtype}, cast to {wl.compute_dtype} at load ({prec.weight_bytes:g} B/param in HBM)"
        if cast
        else f"weights {wl.weight_dtype} ({prec.weight_bytes:g} B/param in HBM)"
    )
    notes = [
        f"{weights}, matmuls at {prec.flops_dtype} peak, KV cache {prec.kv_bytes:g} B/value",
        (
            "continuous batching: a request's TTFT is its own prefill plus one decode step"
            + (
                f" plus {target.params.request_overhead_us / 1e3:.3g} ms fixed per request (front end, calibration)"
                if target.params.request_overhead_us > 0
                else ""
            )
            if wl.batching == "continuous"
            else "static batch: TTFT is the prefill of the whole batch"
        ),
        f"calibration: {target.calibration_note}",
    ]
    if target.is_neuron:
        notes.append(
            "Neuron: static shapes (prompt and context padded to power-of-two buckets), heads padded to tp"
        )
    if target.chip.family == "neuron-v1":
        notes.append(
            "Inferentia1 has no tensor parallelism: its NeuronCore Pipeline sharding is modelled as tp "
            "(the same memory split; latency is optimistic)"
        )
    if target.price is None:
        notes.append(f"{target.instance.id} has no public price: cost is unknown; see break-even price")
    else:
        p = target.price
        notes.append(f"price: ${p.usd_per_hour:g}/h {p.option} {p.region} as of {p.as_of} ({p.source})")
    return tuple(notes)


def _phases(wl: InferenceWorkload, perf: InferencePerf, i: int) -> tuple[PhaseTime, ...]:
    """Prefill of the whole batch, and (for a decoder) the mean decode step, with their splits."""
    prefill = PhaseTime.of("prefill", float(perf.prefill_s[i]), perf.prefill_split.parts_at(i))
    if wl.output_len == 0:
        return (prefill,)
    return prefill, PhaseTime.of("decode step", float(perf.tpot_s[i]), perf.decode_split.parts_at(i))


def _estimate(
    model: ModelSpec,
    wl: InferenceWorkload,
    rank: Ranking,
    target: Target,
    i: int,
    grid: Grid,
    stages: Array,
    perf: InferencePerf,
    replicas: Array,
    tok_s: Array,
    in_tok_s: Array,
    cp: int = 1,
) -> InferenceEstimate:
    count = int(grid.count[i])
    # No measured row serves with context parallelism: its bands widen as an unmeasured stack's do.
    wide = cp > 1
    throughput = float(tok_s[i])
    usd_h = cost.usd_per_hour(target.price.usd_per_hour if target.price else None, count)
    per_1m_out = cost.usd_per_million_tokens(usd_h, throughput)
    input_tok_s = float(in_tok_s[i])
    per_1m_in = cost.usd_per_million_tokens(usd_h, input_tok_s)
    needed = requests_per_s(wl) if rank.loaded else None
    per_request, useful = (wl.input_len, input_tok_s) if rank.encoder else (wl.output_len, throughput)
    groups = math.ceil(needed * per_request / useful) if needed and useful > 0 else 1
    month = cost.usd_per_month(usd_h, groups)
    ttft_ms = float(perf.ttft_s[i] * 1e3)
    tpot_ms = float(perf.tpot_s[i] * 1e3) if wl.output_len > 0 else None
    # Physical bounds (`InferencePerf`): no band reaches past peak FLOPs or peak HBM bandwidth.
    replica = float(perf.replica_output_tok_s[i])
    fastest = float(perf.replica_output_tok_s_ceiling[i]) / replica if replica > 0 else None
    bands = {
        "ttft_ms": band(target, "ttft_ms", ttft_ms, floor=float(perf.ttft_floor_s[i] * 1e3), unmeasured=wide),
        "tpot_ms": band(target, "tpot_ms", tpot_ms, floor=float(perf.tpot_floor_s[i] * 1e3), unmeasured=wide),
        "output_tokens_per_s": band(target, SERVING_METRICS, throughput, fastest=fastest, unmeasured=wide),
        "usd_per_1m_output_tokens": band(
            target, SERVING_METRICS, per_1m_out, invert=True, fastest=fastest, unmeasured=wide
        ),
    }
    return InferenceEstimate(
        model=model.id,
        instance=target.instance.id,
        count=count,
        chip=target.chip.id,
        vendor=target.chip.vendor,
        family=target.chip.family,
        feasible=True,
        reasons=(),
        tp=int(grid.tp[i]),
        pp=int(stages[i]),
        dp=int(replicas[i]),
        batch=int(grid.batch[i]),
        chips=target.instance.chips * count,
        ttft_ms=ttft_ms,
        tpot_ms=tpot_ms,
        output_tokens_per_s=throughput,
        input_tokens_per_s=input_tok_s,
        memory_gib={
            "weights": float(perf.weights_bytes[i] / GIB),
            "kv_cache": float(perf.kv_bytes[i] / GIB),
            "activations": float(perf.activation_bytes[i] / GIB),
            "capacity": float(perf.capacity_bytes[i] / GIB),
        },
        time=_phases(wl, perf, i),
        price=price_used(target),
        usd_per_hour=usd_h,
        usd_per_1m_output_tokens=per_1m_out,
        usd_per_1m_input_tokens=per_1m_in,
        instances_for_load=groups * count if needed else None,
        usd_per_month=month,
        bands={k: v for k, v in bands.items() if v is not None},
        calibration=target.calibration_note,
        engine=target.engine,
        assumptions=(*_assumptions(wl, target), _cp_note(cp)) if cp > 1 else _assumptions(wl, target),
        cp=cp if cp > 1 else None,
    )
