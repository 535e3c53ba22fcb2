"""Claim checks about energy: tokens per megawatt and energy efficiency between generations, and
performance per watt against GPU instances.

Every figure comes from the energy figures the planner attaches to its best layout of each instance
on the standard workloads (`plan.energy`): output tokens/s per MW of IT power for serving, training
tokens per joule for training. Where a chip's power is published nowhere the claim cannot be checked;
the check then says at what chip power it would hold.
"""

from __future__ import annotations

from silica.advise.claim_context import Context, cannot_run, divide, graded_result, ratio_figure, result
from silica.advise.claims import ClaimResult, ClaimSpec, Figure
from silica.catalog import get_chip, get_instance
from silica.perf.power import load_power, mean_chip_watts
from silica.results import Estimate, InferenceEstimate

__all__ = ["energy_generation", "perf_per_watt"]


def _work_per_joule(e: Estimate) -> tuple[float, float, float] | None:
    """(central, low, high) work per joule of IT energy: output tokens (serving) or training tokens."""
    u = e.energy
    if u is None or not u.known:
        return None
    if isinstance(e, InferenceEstimate):
        j, lo, hi = u.j_per_output_token, u.j_per_output_token_low, u.j_per_output_token_high
    else:
        j, lo, hi = u.j_per_training_token, u.j_per_training_token_low, u.j_per_training_token_high
    if not j or not lo or not hi:
        return None
    return 1.0 / j, 1.0 / hi, 1.0 / lo


def _power_notes(ctx: Context, *instances: str) -> list[str]:
    data = load_power()
    notes = []
    for inst in instances:
        chip = get_chip(ctx.catalog, get_instance(ctx.catalog, inst).chip)
        known = data.chips.get(chip.id)
        if known is None:
            notes.append(f"{chip.name}: no published power")
        elif not known.published:
            notes.append(f"{chip.name} power {known.tdp_low_w:.0f}-{known.tdp_high_w:.0f} W: {known.source}")
    notes.append(
        "IT power: chips by the power model fitted on NVIDIA GPUs (ML.ENERGY), plus the host rule of "
        "data/energy/power.yaml; the same rule for both sides, so it cancels only where chip counts match"
    )
    return notes


def energy_generation(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    """Work per joule of `subject` over `reference` on each workload, graded against `ratio`."""
    p = spec.params
    figures: list[Figure] = []
    ranges = []
    for wid in p["workloads"]:
        s, r = ctx.pair(wid, p["subject"], p["reference"])
        ws, wr = _work_per_joule(s), _work_per_joule(r)
        if ws is None or wr is None:
            return result(
                spec,
                "cannot check",
                "-",
                f"chip power of {p['subject']} or {p['reference']} is published nowhere",
                [],
                notes=_power_notes(ctx, p["subject"], p["reference"]),
            )
        label = "output tokens per MW" if isinstance(s, InferenceEstimate) else "training tokens per joule"
        figures.append(
            ratio_figure(
                f"{label}, {p['subject']} / {p['reference']}, {wid}", ws[0] / wr[0], p["ratio"], ctx.tolerance
            )
        )
        low, high = _tdp_span(ctx, p["subject"], p["reference"])
        ranges.append(f"{wid} {ws[0] / wr[0] * low:.2f}x-{ws[0] / wr[0] * high:.2f}x")
    notes = [
        f"{_unit_word(p)}: the ratio of work per joule of IT energy at each side's best layout",
        "across both chips' TDP ranges the ratio spans "
        + "; ".join(ranges)
        + " (the power model's error and the host rule apply to both sides alike)",
        "the standard workloads run at bf16, where Trainium3's dense rate equals Trainium2's "
        "(671 vs 667 TFLOP/s in the chip table); its FP8 rate is about twice Trainium2's",
        *_power_notes(ctx, p["subject"], p["reference"]),
    ]
    if p.get("conflicts_with"):
        notes.append(str(p["conflicts_with"]))
    return graded_result(
        spec,
        figures,
        "{name}: {value:.2f}x",
        "graded on the central power figures; see the band in the notes",
        notes,
    )


def _tdp_span(ctx: Context, subject: str, reference: str) -> tuple[float, float]:
    """Factors on a subject/reference work-per-joule ratio across both chips' TDP ranges (power is
    linear in TDP in the model, host included): (worst, best)."""
    data = load_power()
    s, r = (data.chips.get(get_instance(ctx.catalog, i).chip) for i in (subject, reference))
    if s is None or r is None:
        return 1.0, 1.0
    return (r.tdp_low_w / r.tdp_w) / (s.tdp_high_w / s.tdp_w), (r.tdp_high_w / r.tdp_w) / (
        s.tdp_low_w / s.tdp_w
    )


def _unit_word(p: dict[str, object]) -> str:
    return "energy efficiency" if p.get("metric") != "tokens_per_mw" else "tokens per megawatt"


def perf_per_watt(spec: ClaimSpec, ctx: Context) -> ClaimResult:
    """Best output tokens per joule of the `subject` family over the best `reference` instance.

    A subject whose chip power is unpublished cannot be graded: the check gives the chip power
    (watts, maximum board power) at or below which the claim would hold instead.
    """
    p = spec.params
    data = load_power()
    figures: list[Figure] = []
    for wid in p["workloads"]:
        refs = [(w[0], i) for i in p["reference"] if (e := ctx.best(wid, i)) and (w := _work_per_joule(e))]
        if not refs:
            return cannot_run(spec, f"any of {', '.join(p['reference'])} on {wid}")
        best_ref, ref_name = max(refs)
        figures.append(
            Figure(
                f"best reference output tokens per joule ({ref_name}), {wid}",
                best_ref,
                None,
                "tokens/J",
                None,
            )
        )
        subjects = [(i, e) for i in p["subject"] if (e := ctx.best(wid, i)) is not None]
        known = [(w[0], i) for i, e in subjects if (w := _work_per_joule(e))]
        if known:
            value, name = max(known)
            figures.append(
                ratio_figure(
                    f"tokens per joule, {name} / {ref_name}, {wid}",
                    divide(value, best_ref),
                    1.0 + p["better"],
                    ctx.tolerance,
                )
            )
            continue
        # Unknown subject power: the chip TDP at which the subject reaches the claimed tokens per joule.
        holds = []
        model, wl = ctx.workload(wid)
        for name, e in subjects:
            if not isinstance(e, InferenceEstimate) or not e.output_tokens_per_s or len(e.time) < 2:
                continue
            chip = get_chip(ctx.catalog, get_instance(ctx.catalog, name).chip)
            params, _ = data.params_for(chip.family)
            out_len = getattr(wl, "output_len", 1)
            phases = [
                (e.time[0].parts_ms, e.time[0].ms / 1e3),
                (e.time[-1].parts_ms, out_len * e.time[-1].ms / 1e3),
            ]
            watts_per_tdp_watt = mean_chip_watts(phases, 1.0, params) + data.host_central
            needed_w = e.output_tokens_per_s / ((1.0 + p["better"]) * best_ref)  # IT watts of the deployment
            holds.append((needed_w / (e.chips * watts_per_tdp_watt), name))
        if not holds:
            return cannot_run(spec, f"{', '.join(p['subject'])} on {wid}")
        tdp, name = max(holds)
        chip = get_chip(ctx.catalog, get_instance(ctx.catalog, name).chip)
        return result(
            spec,
            "cannot check",
            f"holds if an {chip.name} draws at most {tdp:,.0f} W at full load (its TDP) on {name}, {wid}",
            f"{chip.name} power is published nowhere, so its performance per watt cannot be computed",
            figures,
            notes=[
                f"{model}: the {chip.name} TDP at which {name} reaches {1 + p['better']:.2f}x the best reference's "
                "output tokens per joule, by the same power model and host rule",
                *_power_notes(ctx, name, ref_name),
            ],
        )
    return graded_result(
        spec,
        figures,
        "{name}: {value:.3g}",
        "graded on the best of each family",
        _power_notes(ctx, *p["subject"][:1]),
    )
