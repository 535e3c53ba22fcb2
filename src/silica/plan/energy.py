"""Power, joules per token, tokens per megawatt and carbon of a serving estimate.

The chip's average power comes from `perf.power` over the estimate's own phases (prefill of the
batch, then `output_len` decode steps, weighted by the time each takes); the instance adds its host
(CPUs, memory, NICs, switches, fans) by the rule in `data/energy/power.yaml`; the site adds its PUE.
Carbon uses the region's location-based grid intensity. Every figure carries a [low, high] band
spanning the chip's TDP range, the host rule's range, the power model's held-out error and the
estimate's throughput band. A chip with no public power figure gets `known=False`, not a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from silica.perf.power import load_power, mean_chip_watts
from silica.plan.targets import Target
from silica.results import EnergyUse, Estimate, InferenceEstimate

__all__ = ["DEFAULT_REGION", "energy_of", "with_energy"]

# Where carbon is counted when neither the user nor the price names a region.
DEFAULT_REGION = "us-east-1"
J_PER_KWH = 3.6e6


def energy_of(
    e: InferenceEstimate,
    target: Target,
    output_len: int,
    *,
    region: str | None = None,
    pue: float | None = None,
    usd_per_mwh: float | None = None,
) -> EnergyUse | None:
    """The energy figures of a feasible serving estimate (None for an infeasible one)."""
    if not e.feasible or not e.output_tokens_per_s or len(e.time) < 2 or e.tp is None:
        return None
    data = load_power()
    chip = data.chips.get(target.chip.id)
    if chip is None:
        return EnergyUse(
            known=False,
            reason=f"{target.chip.name} power is not published by its vendor and no third-party figure was "
            "found: energy, tokens per MW and carbon are unknown",
        )
    params, fit = data.params_for(target.chip.family)
    prefill, decode = e.time[0], e.time[-1]
    # One request cycle of a replica: the batch's prefill, then `output_len` decode steps.
    phases = [(prefill.parts_ms, prefill.ms / 1e3), (decode.parts_ms, output_len * decode.ms / 1e3)]
    share_low, share_high = data.host_share
    err_low, err_high = data.error
    chips = e.chips

    def instance_w(tdp: float, share: float, err: float) -> float:
        per_chip = mean_chip_watts(phases, tdp, params) * err
        return (per_chip * chips + share * tdp * chips) / e.count

    central = instance_w(chip.tdp_w, data.host_central, 1.0)
    low = instance_w(chip.tdp_low_w, share_low, err_low)
    high = instance_w(chip.tdp_high_w, share_high, err_high)
    tok_s = e.output_tokens_per_s
    band = e.bands.get("output_tokens_per_s")
    tok_low, tok_high = (band.low, band.high) if band else (tok_s, tok_s)
    total = central * e.count
    jpt = total / tok_s
    jpt_low, jpt_high = low * e.count / tok_high, high * e.count / tok_low
    site_pue = data.pue if pue is None else pue
    where = region or (e.price.region if e.price else DEFAULT_REGION)
    grid = data.grid.get(where)

    def kg(j: float) -> float | None:
        return None if grid is None else j * site_pue * 1e6 / J_PER_KWH * grid

    notes = [
        f"chip power = TDP x ({params.idle_share:.2f} + {1 - params.idle_share:.2f} x activity); compute-bound "
        f"time at activity {params.compute_activity:.2f}, the rest at {params.memory_activity:.2f} ({fit})",
        f"host (CPUs, memory, NICs, switches, fans) = {data.host_central:.2f} "
        f"({share_low:.2f}-{share_high:.2f}) x the chips' TDP: a modelling rule, no per-instance figure is published",
        f"facility power = IT power x PUE {site_pue:g}" + (" (given)" if pue is not None else ""),
        "serving flat out at the planned batch; idle time between requests is not counted",
    ]
    if grid is None:
        notes.append(f"no grid intensity for region {where}: carbon unknown")
    else:
        notes.append(f"grid {grid:.3f} kgCO2e/kWh in {where} (location-based)")
    if not chip.published:
        notes.append(
            f"{target.chip.name} TDP {chip.tdp_low_w:.0f}-{chip.tdp_high_w:.0f} W is a third-party estimate"
        )
    mw = 1e6
    return EnergyUse(
        known=True,
        chip_power_w=mean_chip_watts(phases, chip.tdp_w, params),
        tdp_w=(chip.tdp_low_w, chip.tdp_high_w),
        instance_power_w=central,
        instance_power_w_low=low,
        instance_power_w_high=high,
        j_per_output_token=jpt,
        j_per_output_token_low=jpt_low,
        j_per_output_token_high=jpt_high,
        output_tokens_per_s_per_mw=mw / jpt,
        output_tokens_per_s_per_mw_low=mw / jpt_high,
        output_tokens_per_s_per_mw_high=mw / jpt_low,
        output_tokens_per_s_per_facility_mw=mw / (jpt * site_pue),
        pue=site_pue,
        region=where,
        grid_kg_co2e_per_kwh=grid,
        kg_co2e_per_1m_output_tokens=kg(jpt),
        kg_co2e_per_1m_output_tokens_low=kg(jpt_low),
        kg_co2e_per_1m_output_tokens_high=kg(jpt_high),
        usd_per_mwh=usd_per_mwh,
        energy_usd_per_1m_output_tokens=(
            None if usd_per_mwh is None else jpt * site_pue * 1e6 / J_PER_KWH / 1e3 * usd_per_mwh
        ),
        sources=(
            f"chip TDP: {chip.source} ({chip.as_of})",
            f"power model: {data.fit_note}",
            f"host: {data.host_source}",
            f"PUE: {data.pue_source}",
            f"grid: {data.grid_source}",
        ),
        assumptions=tuple(notes),
    )


def with_energy(
    results: Sequence[Estimate],
    targets: Sequence[Target],
    output_len: int,
    *,
    region: str | None = None,
    pue: float | None = None,
    usd_per_mwh: float | None = None,
) -> list[Estimate]:
    """Each serving estimate with its energy figures (training estimates are returned as they are)."""
    by_instance = {t.instance.id: t for t in targets}
    out: list[Estimate] = []
    for r in results:
        target = by_instance.get(r.instance)
        if isinstance(r, InferenceEstimate) and target is not None:
            r = replace(
                r, energy=energy_of(r, target, output_len, region=region, pue=pue, usd_per_mwh=usd_per_mwh)
            )
        out.append(r)
    return out
