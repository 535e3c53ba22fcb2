"""Claim checks about generations and published specs: Inf2 vs Inf1, Trn2 vs Trn1, Trn3 vs Trn2, and Trn3
against Blackwell. They compare modelled throughput and the chip table; prices enter only as break-evens.
"""

from __future__ import annotations

from silica.advise.claim_context import Context, divide, graded_result, ratio_figure, result
from silica.advise.claims import ClaimResult, ClaimSpec, Figure, HoldsAt, combine
from silica.catalog import get_chip, get_instance
from silica.plan import estimate
from silica.results import InferenceEstimate
from silica.workload import Deployment, InferenceWorkload

__all__ = ["generation_throughput_latency", "generation_training", "trn3_figures", "trn3_vs_blackwell"]


def generation_throughput_latency(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    figures = []
    for wid in p["workloads"]:
        s, r = ctx.pair(wid, p["subject"], p["reference"])
        chips = {i: get_instance(ctx.catalog, i).chips for i in (p["subject"], p["reference"])}
        speed = divide(
            (ctx.per_instance(s) or 0) / chips[p["subject"]],
            (ctx.per_instance(r) or 0) / chips[p["reference"]],
        )
        model, wl = ctx.workload(wid)
        assert isinstance(wl, InferenceWorkload)
        single = InferenceWorkload(input_len=wl.input_len, output_len=wl.output_len, batch=1)
        lat = {}
        for inst in (p["subject"], p["reference"]):
            e = estimate(model, single, Deployment(inst), catalog=ctx.catalog, option=ctx.data.prices)
            served = e if isinstance(e, InferenceEstimate) and e.feasible else None
            lat[inst] = (served.ttft_ms or 0.0) + wl.output_len * (served.tpot_ms or 0.0) if served else None
        faster = divide(lat[p["reference"]], lat[p["subject"]])
        figures.append(
            ratio_figure(
                f"throughput per chip, {p['subject']} / {p['reference']}, {wid}",
                speed,
                p["throughput_ratio"],
                ctx.tolerance,
            )
        )
        figures.append(
            ratio_figure(
                f"request latency at batch 1, {p['reference']} / {p['subject']}, {wid}",
                faster,
                p["latency_ratio"],
                ctx.tolerance,
            )
        )
    return graded_result(spec, figures, "{name}: {value:.1f}x", "throughput and latency graded separately")


def generation_training(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    figures = []
    for wid in p["workloads"]:
        s, r = ctx.pair(wid, p["subject"], p["reference"])
        figures.append(
            ratio_figure(
                f"training tokens/s per chip, {p['subject']} / {p['reference']}, {wid}",
                divide(ctx.train_speed(s), ctx.train_speed(r)),
                p["ratio"],
                ctx.tolerance,
            )
        )
    a, b = (get_chip(ctx.catalog, get_instance(ctx.catalog, i).chip) for i in (p["subject"], p["reference"]))
    peak = divide(a.peak_tflops(p["dtype"]), b.peak_tflops(p["dtype"]))
    figures.append(
        Figure(
            f"peak dense {p['dtype']} TFLOP/s per chip, {a.id} / {b.id} (chip table)",
            peak,
            p["ratio"],
            "ratio",
            None,
        )
    )
    return graded_result(
        spec, figures, "{name}: {value:.2f}x", "graded on modelled training throughput per chip"
    )


def trn3_figures(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    chip, ref_chip = get_chip(ctx.catalog, p["chip"]), get_chip(ctx.catalog, p["reference_chip"])
    sys_s, sys_r = get_instance(ctx.catalog, p["subject"]), get_instance(ctx.catalog, p["reference"])
    per_chip = (chip.tflops_fp8 or 0.0) / 1000.0
    system = per_chip * sys_s.chips
    system_ratio = system / ((ref_chip.tflops_fp8 or 0.0) / 1000.0 * sys_r.chips)
    chip_ratio = divide(chip.tflops_fp8, ref_chip.tflops_fp8)
    exact = 0.02  # published spec figures must agree to 2%
    figures = [
        Figure(
            f"{chip.id} dense FP8 PFLOP/s per chip (chip table)",
            per_chip,
            p["chip_pflops_fp8"],
            "PFLOP/s",
            "supported" if abs(per_chip / p["chip_pflops_fp8"] - 1) <= exact else "not supported",
        ),
        Figure(
            f"{p['subject']} dense FP8 PFLOP/s ({sys_s.chips} chips)",
            system,
            p["system_pflops_fp8"],
            "PFLOP/s",
            "supported" if abs(system / p["system_pflops_fp8"] - 1) <= exact else "not supported",
        ),
        ratio_figure(
            f"FP8 compute, {p['subject']} / {p['reference']} ({sys_s.chips} vs {sys_r.chips} chips)",
            system_ratio,
            p["ratio"],
            ctx.tolerance,
        ),
        ratio_figure(
            f"FP8 compute per chip, {chip.id} / {ref_chip.id}", chip_ratio, p["ratio"], ctx.tolerance
        ),
    ]
    for wid in p["workloads"]:
        s, r = ctx.best(wid, p["subject"]), ctx.best(wid, p["reference"])
        if s and r:
            figures.append(
                ratio_figure(
                    f"modelled training tokens/s per chip, {chip.id} / {ref_chip.id}, {wid}",
                    divide(ctx.train_speed(s), ctx.train_speed(r)),
                    p["ratio"],
                    ctx.tolerance,
                )
            )
    computed = (
        f"{per_chip:.2f} PFLOP/s per chip, {system:.0f} PFLOP/s per {sys_s.chips}-chip UltraServer; "
        f"{system_ratio:.2f}x a {sys_r.chips}-chip Trn2 UltraServer but {chip_ratio:.2f}x per chip"
    )
    reason = "the 4.4x is an UltraServer total with 2.25x the chips; per chip the gain is smaller"
    return result(spec, combine([f.grade for f in figures]), computed, reason, figures)


def trn3_vs_blackwell(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    p = spec.params
    sys_s = get_instance(ctx.catalog, p["subject"])
    trn3 = (get_chip(ctx.catalog, sys_s.chip).tflops_fp8 or 0.0) * sys_s.chips / 1000.0
    gb300 = (get_chip(ctx.catalog, p["blackwell_chip"]).tflops_fp8 or 0.0) * p["blackwell_gpus"] / 1000.0
    figures = [
        Figure(f"{p['subject']} dense FP8 PFLOP/s", trn3, None, "PFLOP/s", None),
        Figure(
            f"GB300 NVL72 dense FP8 PFLOP/s ({p['blackwell_gpus']} x chip table)",
            gb300,
            p["claimed_blackwell_pflops"],
            "PFLOP/s",
            None,
        ),
    ]
    holds = []
    proxy = get_instance(ctx.catalog, p["proxy"])
    proxy_price = ctx.price(p["proxy"])
    if proxy_price:
        per_pf_hour = proxy_price / (
            (get_chip(ctx.catalog, proxy.chip).tflops_fp8 or 1.0) * proxy.chips / 1000.0
        )
        for less in (p["less_low"], p["less_high"]):
            holds.append(
                HoldsAt(
                    p["subject"],
                    (1 - less) * per_pf_hour * trn3,
                    f"{less:.0%} less than {p['proxy']} per FP8 PFLOP/s-hour (${per_pf_hour:,.2f})",
                )
            )
        for wid in p["workloads"]:
            s, r = ctx.best(wid, p["subject"]), ctx.best(wid, p["proxy"])
            cost_r, hours = (ctx.unit_cost(r, wid), ctx.hours_per_mtok(s, wid)) if s and r else (None, None)
            for less in (p["less_low"], p["less_high"]) if cost_r and hours else ():
                holds.append(
                    HoldsAt(
                        p["subject"],
                        (1 - less) * cost_r / hours,
                        f"{wid}: {less:.0%} less per token than {p['proxy']}",
                    )
                )
    computed = (
        f"{trn3:.0f} vs {gb300:.0f} PFLOP/s dense FP8 (the claim's ~540 matches no dense FP8 figure in the chip table); "
        "neither a Trn3 UltraServer nor a GB300 NVL72 has a public price"
    )
    notes = [f"{p['proxy']} (8 x B300, the priced Blackwell Ultra instance) stands in for GB300 pricing"]
    return result(spec, "cannot check", computed, "no public price for either side", figures, holds, notes)
