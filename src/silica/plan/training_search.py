"""Search training deployments: instance x count x tp x pp x cp, data parallelism fills the rest.

Per instance type the best configuration is the cheapest run (fewest instance-hours) that fits in
memory and meets the deadline; ties go to the faster one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from silica import cost, legality
from silica.errors import InputError
from silica.models.spec import ModelSpec
from silica.perf.inputs import Layout, TrainingRun
from silica.perf.kernels import ModelCosts, TrainStep, train_step
from silica.perf.machine import GIB, RUNTIME_RESERVE_GIB, machine_arrays
from silica.perf.moe import CAPACITY_FACTOR
from silica.perf.precision import precision, widths
from silica.plan.grid import cp_choices, ep_choices, expand_ep, training_grid
from silica.plan.targets import Target, band, check_layout, price_used, tp_choices
from silica.results import PhaseTime, TrainingEstimate
from silica.workload import TrainingWorkload

__all__ = ["DEFAULT_DEADLINE_DAYS", "evaluate_training", "search_training"]

Array = NDArray[np.float64]
INSTANCE_COUNTS: tuple[int, ...] = tuple(2**k for k in range(13))  # 1 .. 4096 instances
PIPELINE_DEGREES: tuple[int, ...] = (1, 2, 4, 8, 16)
# With no deadline given, a run longer than this is not considered a plan.
DEFAULT_DEADLINE_DAYS = 90.0


def evaluate_training(
    model: ModelSpec,
    wl: TrainingWorkload,
    targets: Sequence[Target],
    inst: NDArray[np.int64],
    tp: Array,
    pp: Array,
    dp: Array,
    full_recompute: NDArray[np.bool_] | None = None,
    ep: Array | None = None,
    cp: Array | None = None,
) -> TrainStep:
    prec = precision("bf16", wl.compute_dtype)
    base = machine_arrays([(t.chip, t.instance, t.params) for t in targets], prec.flops_dtype)
    m = base.take(inst)
    n = inst.shape[0]
    static = np.asarray([t.is_neuron for t in targets])[inst]
    peak = np.asarray([(t.chip.peak_tflops(prec.flops_dtype) or np.nan) * 1e12 for t in targets])[inst]
    return train_step(
        ModelCosts.of(model),
        m,
        Layout(
            tp=tp, pp=pp, batch=np.full(n, float(wl.micro_batch)), static_shapes=static, dp=dp, ep=ep, cp=cp
        ),
        TrainingRun(
            global_batch=np.full(n, float(wl.batch_sequences)),
            seq_len=np.full(n, float(wl.seq_len)),
            zero_stage=wl.zero_stage,
            peak_flops=peak,
            full_recompute=full_recompute,
            expert_capacity=1.0 if wl.balanced_experts else None,
            virtual_stages=float(wl.virtual_stages),
        ),
        widths(prec, n, weight_bytes=2.0),
    )


def search_training(
    model: ModelSpec,
    wl: TrainingWorkload,
    targets: Sequence[Target],
    *,
    count: int | None = None,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    cp: int | None = None,
) -> list[TrainingEstimate]:
    legality.check_vp(wl.virtual_stages, pp)
    if wl.seq_len > model.max_positions:
        raise InputError(
            f"--seq-len {wl.seq_len:,} is beyond {model.id}'s {model.max_positions:,} positions "
            "(max_position_embeddings): the model cannot be trained at that length.",
            f"pass --seq-len {model.max_positions} or less, or a model with longer context.",
        )
    if cp is not None and wl.seq_len % (2 * cp):
        raise InputError(
            f"cp {cp} does not split --seq-len {wl.seq_len:,} into 2 x {cp} equal chunks (Megatron-Core's "
            "load-balanced context parallelism).",
            f"pass a --cp that divides {wl.seq_len // 2:,}, or a --seq-len that is a multiple of {2 * cp}.",
        )
    tp_options = tp_choices(model, targets, tp)
    if pp is not None and count is not None:
        check_layout(targets, tp_options, pp, count)
    counts = [count] if count is not None else list(INSTANCE_COUNTS)
    grid = training_grid(tp_options, counts, [pp] if pp is not None else list(PIPELINE_DEGREES))
    stages = grid.pp
    units = np.asarray([t.units_per_instance for t in targets], dtype=np.float64)[grid.inst] * grid.count
    ranks = units / (grid.tp * stages)  # data- and context-parallel ranks of one stage
    whole = (ranks >= 1) & (np.abs(ranks - np.round(ranks)) < 1e-9) & (stages <= model.n_layers)
    keep = np.flatnonzero(whole)
    # Every layout once per context-parallel degree that divides its ranks (`cp_choices`); the rest
    # are data-parallel, each taking whole micro-batches of the global batch.
    options = cp_choices(wl.seq_len, cp)
    keep, cpa = (
        np.concatenate([keep[np.round(ranks[keep]) % c == 0] for c in options]).astype(np.intp),
        np.concatenate([np.full(int((np.round(ranks[keep]) % c == 0).sum()), float(c)) for c in options]),
    )
    fill = np.round(ranks[keep]) / cpa * wl.micro_batch <= wl.batch_sequences
    keep, cpa = keep[fill], cpa[fill]
    filled = keep.size > 0
    # Every layout once per legal expert-parallel degree (MoE models only; `ep_choices`).
    at, epa = expand_ep(
        np.arange(keep.size), grid.tp[keep] * np.round(ranks[keep]), ep_choices(model.n_experts, ep)
    )
    keep, cpa = keep[at], cpa[at]
    if ep is not None and count is not None and keep.size == 0 and filled:
        raise InputError(
            f"ep {ep} divides none of the tp x dp layouts of {model.id} on {count} x "
            f"{targets[0].instance.id}: the expert-parallel group is carved from the tp x dp ranks "
            "of a pipeline stage (Megatron-Core's MoE parallel folding).",
            "pass an --ep that divides the GPUs (NeuronCores) per pipeline stage, or another --pp/--tp.",
        )
    # Every layout twice: selective recompute, and full recompute (slower, far less memory).
    keep, epa, cpa = np.concatenate([keep, keep]), np.concatenate([epa, epa]), np.concatenate([cpa, cpa])
    full = np.arange(keep.size) >= keep.size // 2
    inst, tpa, ppa, dpa, cnt = (
        grid.inst[keep],
        grid.tp[keep],
        stages[keep],
        np.round(ranks[keep]) / cpa,
        grid.count[keep],
    )
    with np.errstate(all="ignore"):  # missing figures (nan) mark configurations infeasible
        step = evaluate_training(model, wl, targets, inst, tpa, ppa, dpa, full, ep=epa, cp=cpa)
    capacity = np.asarray(
        [((t.chip.hbm_gib or np.nan) - RUNTIME_RESERVE_GIB) * GIB / t.chip.tp_cores_per_chip for t in targets]
    )[inst]
    fits = step.memory_per_unit <= capacity
    chips = cnt * np.asarray([t.instance.chips for t in targets], dtype=np.float64)[inst]
    with np.errstate(all="ignore"):
        days = (wl.tokens or 0.0) / (step.tokens_per_s_per_chip * chips) / cost.SECONDS_PER_DAY
    # A fixed deployment is reported however long it takes; a search needs a horizon.
    deadline = wl.deadline_days or (DEFAULT_DEADLINE_DAYS if count is None else np.inf)
    on_time = days <= deadline if wl.tokens else np.ones_like(fits)
    instance_hours = days * cost.HOURS_PER_DAY * cnt if wl.tokens else cnt / step.tokens_per_s_per_chip
    ok = fits & on_time & np.isfinite(step.step_s)
    results = []
    for i, target in enumerate(targets):
        if not target.chip.trains:
            reason = f"{target.chip.name} is an inference chip: the Neuron SDK trains on Trainium only."
            results.append(_infeasible_estimate(model, wl, target, reason, count, deadline))
            continue
        rows = np.flatnonzero(inst == i)
        good = rows[ok[rows]]
        if good.size == 0:
            results.append(_infeasible(model, wl, target, rows, fits, days, deadline, count))
            continue
        # Cheapest; within 2% of the cheapest, the fewest instances (then the fastest): with ideal
        # data parallelism a bigger cluster costs the same, and a smaller one is easier to get.
        near = good[instance_hours[good] <= 1.02 * instance_hours[good].min()]
        j = int(near[np.lexsort((days[near], cnt[near]))[0]])
        results.append(
            replace(
                _estimate(
                    model, wl, target, j, step, tpa, ppa, dpa, cnt, chips, days, capacity, bool(full[j])
                ),
                cp=int(cpa[j]),
            )
        )
        if model.is_moe:
            note = moe_note(int(epa[j]), 1.0 if wl.balanced_experts else CAPACITY_FACTOR)
            results[-1] = replace(results[-1], ep=int(epa[j]), assumptions=(*results[-1].assumptions, note))
    return results


def _infeasible(
    model: ModelSpec,
    wl: TrainingWorkload,
    target: Target,
    rows: NDArray[np.intp],
    fits: NDArray[np.bool_],
    days: Array,
    deadline: float,
    count: int | None,
) -> TrainingEstimate:
    if rows.size == 0:
        reason = f"no legal parallel layout of {model.id} on {target.instance.id} with this batch."
    elif not fits[rows].any():
        reason = "does not fit in memory: weights, gradients and optimizer states exceed HBM at every layout tried."
    else:
        finite = days[rows[fits[rows]]]
        finite = finite[np.isfinite(finite)]
        if finite.size == 0:
            return _infeasible_estimate(
                model,
                wl,
                target,
                "no layout tried has the link or network figures it needs.",
                count,
                deadline,
            )
        best = float(finite.min())
        source = "the deadline" if wl.deadline_days else f"the default {deadline:g}-day horizon"
        reason = f"misses {source}: the fastest layout tried takes {best:.0f} days."
    return _infeasible_estimate(model, wl, target, reason, count, deadline)


def _infeasible_estimate(
    model: ModelSpec, wl: TrainingWorkload, target: Target, reason: str, count: int | None, deadline: float
) -> TrainingEstimate:
    return TrainingEstimate(
        model=model.id,
        instance=target.instance.id,
        count=count or 1,
        chip=target.chip.id,
        vendor=target.chip.vendor,
        family=target.chip.family,
        feasible=False,
        reasons=(reason,),
        tp=None,
        pp=None,
        dp=None,
        batch=wl.batch_sequences,
        chips=target.instance.chips * (count or 1),
        price=price_used(target),
        calibration=target.calibration_note,
        engine=target.engine,
        assumptions=_assumptions(wl, target, deadline),
    )


def _assumptions(
    wl: TrainingWorkload, target: Target, deadline: float, full_recompute: bool = False
) -> tuple[str, ...]:
    recompute = (
        "full activation recompute (needed to fit)" if full_recompute else "selective activation recompute"
    )
    notes = [
        f"mixed precision: bf16 weights and gradients, fp32 Adam states, matmuls at {wl.compute_dtype} peak",
        f"ZeRO stage {wl.zero_stage}; {recompute}; "
        + (
            f"interleaved 1F1B pipeline schedule, {wl.virtual_stages} model chunks per stage"
            if wl.virtual_stages > 1
            else "1F1B pipeline schedule"
        ),
        f"global batch {wl.batch_sequences} sequences of {wl.seq_len} tokens, micro-batch {wl.micro_batch}",
        f"calibration: {target.calibration_note}",
    ]
    if wl.tokens and not wl.deadline_days and np.isfinite(deadline):
        notes.append(f"no deadline given: runs longer than {deadline:g} days are not considered")
    if target.price is None:
        notes.append(f"{target.instance.id} has no public price: cost is unknown; see break-even price")
    return tuple(notes)


def _estimate(
    model: ModelSpec,
    wl: TrainingWorkload,
    target: Target,
    j: int,
    step: TrainStep,
    tp: Array,
    pp: Array,
    dp: Array,
    cnt: Array,
    chips: Array,
    days: Array,
    capacity: Array,
    full_recompute: bool,
) -> TrainingEstimate:
    count = int(cnt[j])
    usd_h = cost.usd_per_hour(target.price.usd_per_hour if target.price else None, count)
    train_days = float(days[j]) if wl.tokens else None
    per_run = cost.usd_per_run(usd_h, train_days)
    tok = float(step.tokens_per_s_per_chip[j])
    # No band promises more than 100% MFU: the speed could at most be 1 / MFU times faster.
    mfu = float(step.mfu[j])
    fastest = 1.0 / mfu if mfu > 0 and math.isfinite(mfu) else None
    return TrainingEstimate(
        model=model.id,
        instance=target.instance.id,
        count=count,
        chip=target.chip.id,
        vendor=target.chip.vendor,
        family=target.chip.family,
        feasible=True,
        reasons=(),
        tp=int(tp[j]),
        pp=int(pp[j]),
        dp=int(dp[j]),
        batch=wl.batch_sequences,
        chips=int(chips[j]),
        step_s=float(step.step_s[j]),
        tokens_per_s_per_chip=tok,
        mfu=float(step.mfu[j]),
        train_days=train_days,
        memory_gib={"total": float(step.memory_per_unit[j] / GIB), "capacity": float(capacity[j] / GIB)},
        time=(PhaseTime.of("training step", float(step.step_s[j]), step.split.parts_at(j)),),
        price=price_used(target),
        usd_per_hour=usd_h,
        usd_per_run=per_run,
        usd_per_month=cost.usd_per_month(usd_h),
        bands={
            k: v
            for k, v in {
                "tokens_per_s_per_chip": band(target, "train_tok_s_per_chip", tok, fastest=fastest),
                "train_days": band(target, "train_tok_s_per_chip", train_days, invert=True, fastest=fastest),
                "usd_per_run": band(target, "train_tok_s_per_chip", per_run, invert=True, fastest=fastest),
            }.items()
            if v is not None
        },
        calibration=target.calibration_note,
        engine=target.engine,
        assumptions=_assumptions(wl, target, wl.deadline_days or DEFAULT_DEADLINE_DAYS, full_recompute)
        + _mfu_note(wl, target, float(step.mfu[j]), model.is_moe),
    )


def _mfu_note(wl: TrainingWorkload, target: Target, mfu: float, moe: bool) -> tuple[str, ...]:
    """Say so when the MFU is beyond every published measurement of the chip family (same kind of model)."""
    flops_dtype = precision("bf16", wl.compute_dtype).flops_dtype
    note = target.calibration.mfu_check(target.chip.family, flops_dtype, mfu, moe)
    return (note,) if note else ()


def moe_note(ep: int, capacity: float) -> str:
    """What the estimate assumed about experts, in a sentence."""
    if ep == 1:
        return "no expert parallelism (ep 1): every expert split by tp like the dense layers"
    return (
        f"expert parallelism ep {ep}: whole experts on each rank, dispatch and combine all-to-all per "
        f"MoE layer; the busiest expert rank carries {capacity:g}x the mean load"
    )
