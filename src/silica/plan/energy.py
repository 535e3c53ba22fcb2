"""Power, joules per token, tokens per megawatt and carbon of an estimate (serving or training).

The chip's average power comes from `perf.power` over the estimate's own phases: for serving, the
batch's prefill and then `output_len` decode steps, weighted by the time each takes; for training,
the training step. The instance adds its host (CPUs, memory, NICs, switches, fans) by the rule in
`data/energy/power.yaml`; the site adds its PUE. Carbon uses the region's location-based grid
intensity. Every figure carries a [low, high] band spanning the chip's TDP range, the host rule's
range, the power model's held-out error and the estimate's throughput band. A chip with no public
power figure gets `known=False`, not a number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from silica.perf.power import ChipPower, PowerData, PowerParams, load_power, mean_chip_watts
from silica.plan.targets import Target
from silica.results import EnergyUse, Estimate, InferenceEstimate, TrainingEstimate

__all__ = ["DEFAULT_REGION", "energy_of", "training_energy_of", "with_energy"]

# Where carbon is counted when neither the user nor the price names a region.
DEFAULT_REGION = "us-east-1"
J_PER_KWH = 3.6e6
MW = 1e6


@dataclass(frozen=True, slots=True)
class _Power:
    """Instance IT watts (central, low, high) and what they rest on."""

    data: PowerData
    chip: ChipPower
    params: PowerParams
    fit: str
    chip_w: float
    instance_w: tuple[float, float, float]
    pue: float
    region: str
    grid: float | None


def _unknown(target: Target) -> EnergyUse:
    return EnergyUse(
        known=False,
        reason=f"{target.chip.name} power is not published by its vendor and no third-party figure was found: "
        "energy, tokens per MW and carbon are unknown",
    )


def _power(
    e: Estimate,
    target: Target,
    phases: Sequence[tuple[Mapping[str, float], float]],
    region: str | None,
    pue: float | None,
) -> _Power | None:
    data = load_power()
    chip = data.chips.get(target.chip.id)
    if chip is None:
        return None
    params, fit = data.params_for(target.chip.family)
    share_low, share_high = data.host_share
    err_low, err_high = data.error

    def instance_w(tdp: float, share: float, err: float) -> float:
        per_chip = mean_chip_watts(phases, tdp, params) * err
        return (per_chip + share * tdp) * e.chips / e.count

    where = region or (e.price.region if e.price else DEFAULT_REGION)
    return _Power(
        data=data,
        chip=chip,
        params=params,
        fit=fit,
        chip_w=mean_chip_watts(phases, chip.tdp_w, params),
        instance_w=(
            instance_w(chip.tdp_w, data.host_central, 1.0),
            instance_w(chip.tdp_low_w, share_low, err_low),
            instance_w(chip.tdp_high_w, share_high, err_high),
        ),
        pue=data.pue if pue is None else pue,
        region=where,
        grid=data.grid.get(where),
    )


def _notes(p: _Power, target: Target, given_pue: bool, what: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(sources, assumptions) of a power figure."""
    d, params = p.data, p.params
    notes = [
        f"chip power = TDP x ({params.idle_share:.2f} + {1 - params.idle_share:.2f} x activity); compute-bound "
        f"time at activity {params.compute_activity:.2f}, the rest at {params.memory_activity:.2f} ({p.fit})",
        f"host (CPUs, memory, NICs, switches, fans) = {d.host_central:.2f} ({d.host_share[0]:.2f}-"
        f"{d.host_share[1]:.2f}) x the chips' TDP: a modelling rule, no per-instance figure is published",
        f"facility power = IT power x PUE {p.pue:g}" + (" (given)" if given_pue else ""),
        what,
    ]
    if p.grid is None:
        notes.append(f"no grid intensity for region {p.region}: carbon unknown")
    else:
        notes.append(f"grid {p.grid:.3f} kgCO2e/kWh in {p.region} (location-based)")
    if not p.chip.published:
        notes.append(
            f"{target.chip.name} TDP {p.chip.tdp_low_w:.0f}-{p.chip.tdp_high_w:.0f} W is a third-party estimate"
        )
    sources = (
        f"chip TDP: {p.chip.source} ({p.chip.as_of})",
        f"power model: {d.fit_note}",
        f"host: {d.host_source}",
        f"PUE: {d.pue_source}",
        f"grid: {d.grid_source}",
    )
    return sources, tuple(notes)


def _kg(p: _Power, joules: float | None) -> float | None:
    """kgCO2e of `joules` of IT energy drawn at the site (x PUE) in the estimate's region."""
    return None if p.grid is None or joules is None else joules * p.pue / J_PER_KWH * p.grid


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
    if not e.feasible or not e.output_tokens_per_s or len(e.time) < 2:
        return None
    prefill, decode = e.time[0], e.time[-1]
    # One request cycle of a replica: the batch's prefill, then `output_len` decode steps.
    phases = [(prefill.parts_ms, prefill.ms / 1e3), (decode.parts_ms, output_len * decode.ms / 1e3)]
    p = _power(e, target, phases, region, pue)
    if p is None:
        return _unknown(target)
    central, low, high = p.instance_w
    tok_s = e.output_tokens_per_s
    band = e.bands.get("output_tokens_per_s")
    tok_low, tok_high = (band.low, band.high) if band else (tok_s, tok_s)
    jpt = central * e.count / tok_s
    jpt_low, jpt_high = low * e.count / tok_high, high * e.count / tok_low
    sources, notes = _notes(
        p,
        target,
        pue is not None,
        "serving flat out at the planned batch; idle time between requests is not counted",
    )
    return EnergyUse(
        known=True,
        chip_power_w=p.chip_w,
        tdp_w=(p.chip.tdp_low_w, p.chip.tdp_high_w),
        instance_power_w=central,
        instance_power_w_low=low,
        instance_power_w_high=high,
        j_per_output_token=jpt,
        j_per_output_token_low=jpt_low,
        j_per_output_token_high=jpt_high,
        output_tokens_per_s_per_mw=MW / jpt,
        output_tokens_per_s_per_mw_low=MW / jpt_high,
        output_tokens_per_s_per_mw_high=MW / jpt_low,
        output_tokens_per_s_per_facility_mw=MW / (jpt * p.pue),
        pue=p.pue,
        region=p.region,
        grid_kg_co2e_per_kwh=p.grid,
        kg_co2e_per_1m_output_tokens=_kg(p, jpt * 1e6),
        kg_co2e_per_1m_output_tokens_low=_kg(p, jpt_low * 1e6),
        kg_co2e_per_1m_output_tokens_high=_kg(p, jpt_high * 1e6),
        usd_per_mwh=usd_per_mwh,
        energy_usd_per_1m_output_tokens=(
            None if usd_per_mwh is None else jpt * 1e6 * p.pue / J_PER_KWH / 1e3 * usd_per_mwh
        ),
        sources=sources,
        assumptions=notes,
    )


def training_energy_of(
    e: TrainingEstimate,
    target: Target,
    tokens: float | None,
    *,
    region: str | None = None,
    pue: float | None = None,
    usd_per_mwh: float | None = None,
) -> EnergyUse | None:
    """Joules per training token and the run's energy of a feasible training estimate."""
    if not e.feasible or not e.tokens_per_s_per_chip or not e.time:
        return None
    step = e.time[0]
    p = _power(e, target, [(step.parts_ms, step.ms / 1e3)], region, pue)
    if p is None:
        return _unknown(target)
    central, low, high = p.instance_w
    tok_s = e.tokens_per_s_per_chip * e.chips
    band = e.bands.get("tokens_per_s_per_chip")
    tok_low, tok_high = (band.low * e.chips, band.high * e.chips) if band else (tok_s, tok_s)
    jpt = central * e.count / tok_s
    mwh = None if tokens is None else jpt * tokens * p.pue / J_PER_KWH / 1e3
    sources, notes = _notes(
        p, target, pue is not None, "training steps back to back; checkpoints and restarts not counted"
    )
    return EnergyUse(
        known=True,
        chip_power_w=p.chip_w,
        tdp_w=(p.chip.tdp_low_w, p.chip.tdp_high_w),
        instance_power_w=central,
        instance_power_w_low=low,
        instance_power_w_high=high,
        pue=p.pue,
        region=p.region,
        grid_kg_co2e_per_kwh=p.grid,
        usd_per_mwh=usd_per_mwh,
        j_per_training_token=jpt,
        j_per_training_token_low=low * e.count / tok_high,
        j_per_training_token_high=high * e.count / tok_low,
        mwh_per_run=mwh,
        energy_usd_per_run=None if mwh is None or usd_per_mwh is None else mwh * usd_per_mwh,
        sources=sources,
        assumptions=notes,
    )


def with_energy(
    results: Sequence[Estimate],
    targets: Sequence[Target],
    output_len: int | None = None,
    *,
    tokens: float | None = None,
    region: str | None = None,
    pue: float | None = None,
    usd_per_mwh: float | None = None,
) -> list[Estimate]:
    """Each estimate with its energy figures: serving uses `output_len`, training `tokens` (the run)."""
    by_instance = {t.instance.id: t for t in targets}
    out: list[Estimate] = []
    for r in results:
        target = by_instance.get(r.instance)
        if target is not None and isinstance(r, InferenceEstimate) and output_len is not None:
            r = replace(
                r, energy=energy_of(r, target, output_len, region=region, pue=pue, usd_per_mwh=usd_per_mwh)
            )
        elif target is not None and isinstance(r, TrainingEstimate):
            u = training_energy_of(r, target, tokens, region=region, pue=pue, usd_per_mwh=usd_per_mwh)
            r = replace(r, energy=u)
        out.append(r)
    return out
