"""A fleet's power: MW drawn by hour, and whether it fits a site's power budget.

Per chip, by what the simulation says it does in each step (`FleetRun.series`):

- serving: the fitted memory-bound activity (decode dominates serving; `perf.power`);
- training: the fitted compute-bound activity (training steps are compute-bound);
- idle (neither): the chip's idle share of TDP.

Every chip of a pool is powered all the time (reserved capacity stays racked and on), and each adds
its host share (CPUs, memory, NICs, switches, fans: the rule in `data/energy/power.yaml`). The site
draws IT power x PUE. The budget check takes the fleet's peak: every chip at the higher of the two
activities plus its host, x PUE; a fleet over the budget is refused with the most instances that fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from silica.catalog.schema import Catalog
from silica.errors import InputError
from silica.perf.power import chip_watts, load_power

__all__ = ["FleetPower", "PoolPower", "SiteBudget", "check_site_mw", "fleet_power", "pool_power", "site_cap"]


@dataclass(frozen=True, slots=True)
class PoolPower:
    """Watts per chip of one pool by state, and per instance at peak (IT, central and band high)."""

    instance: str
    chip: str
    chips_per_instance: int
    serving_w: float  # per chip, host included
    training_w: float
    idle_w: float
    peak_instance_w: float  # every chip at its busiest activity, host included
    peak_instance_w_high: float  # at the TDP range's top and the host rule's top


def pool_power(catalog: Catalog, instance: str) -> PoolPower:
    """Power per state of one instance type; an unknown chip power is a one-line input error."""
    inst = catalog.instances[instance]
    chip = catalog.chips[inst.chip]
    data = load_power()
    known = data.chips.get(chip.id)
    if known is None:
        raise InputError(
            f"{chip.name} ({instance}) has no published power figure, so a site power budget cannot be checked.",
            "drop --site-mw, or plan without this instance type.",
        )
    params, _ = data.params_for(chip.family)
    tdp, host = known.tdp_w, data.host_central * known.tdp_w
    busiest = max(params.compute_activity, params.memory_activity)
    top = known.tdp_high_w * (params.idle_share + (1 - params.idle_share) * busiest + data.host_share[1])
    return PoolPower(
        instance=instance,
        chip=chip.id,
        chips_per_instance=inst.chips,
        serving_w=chip_watts(tdp, params, params.memory_activity) + host,
        training_w=chip_watts(tdp, params, params.compute_activity) + host,
        idle_w=chip_watts(tdp, params, 0.0) + host,
        peak_instance_w=inst.chips * (chip_watts(tdp, params, busiest) + host),
        peak_instance_w_high=inst.chips * top,
    )


def check_site_mw(site_mw: float | None, pue: float | None = None) -> tuple[float | None, float]:
    """A finite positive site budget (or None) and the PUE to use; anything else is a one-line error."""
    data = load_power()
    if site_mw is not None and not (math.isfinite(site_mw) and site_mw > 0):
        raise InputError(
            f"--site-mw must be a positive number of megawatts, got {site_mw!r}.", "e.g. --site-mw 100."
        )
    if pue is not None and not (math.isfinite(pue) and pue >= 1.0):
        raise InputError(f"--pue must be a finite number >= 1, got {pue!r}.", "e.g. --pue 1.2.")
    return site_mw, data.pue if pue is None else pue


def site_cap(catalog: Catalog, instance: str, site_mw: float, pue: float) -> int:
    """The most instances of `instance` whose peak facility power fits `site_mw`."""
    per = pool_power(catalog, instance).peak_instance_w * pue
    return int(site_mw * 1e6 // per)


@dataclass(frozen=True, slots=True)
class FleetPower:
    """MW drawn by hour (facility, PUE included), the peak, and the budget verdict."""

    pue: float
    site_mw: float | None
    peak_mw: float  # every chip at its busiest, host included, x PUE
    peak_mw_high: float
    hours: tuple[float, ...]  # start of each hour
    mw_by_hour: tuple[float, ...]  # mean facility MW in that hour (simulated)
    serving_mw_by_hour: tuple[float, ...]  # of which chips serving inference (with their host share)
    training_mw_by_hour: tuple[float, ...]  # of which chips training
    mean_mw: float
    energy_mwh: float  # over the horizon
    fits: bool | None  # None when no budget was given
    pools: tuple[dict[str, Any], ...]
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pue": self.pue,
            "site_mw": self.site_mw,
            "peak_mw": self.peak_mw,
            "peak_mw_high": self.peak_mw_high,
            "mean_mw": self.mean_mw,
            "energy_mwh": self.energy_mwh,
            "fits": self.fits,
            "mw_by_hour": [
                {"hour": h, "mw": mw, "serving_mw": s, "training_mw": t}
                for h, mw, s, t in zip(
                    self.hours,
                    self.mw_by_hour,
                    self.serving_mw_by_hour,
                    self.training_mw_by_hour,
                    strict=True,
                )
            ],
            "pools": list(self.pools),
            "assumptions": list(self.assumptions),
        }


def peak_of(catalog: Catalog, pools: Sequence[tuple[str, int]], pue: float) -> tuple[float, float]:
    """Peak facility MW (central, high) of (instance, count) pools."""
    each = [(pool_power(catalog, name), count) for name, count in pools]
    return (
        sum(p.peak_instance_w * n for p, n in each) * pue / 1e6,
        sum(p.peak_instance_w_high * n for p, n in each) * pue / 1e6,
    )


def refuse_over_budget(
    catalog: Catalog, pools: Sequence[tuple[str, int]], site_mw: float, pue: float
) -> None:
    """One-line error if the pools' peak draw exceeds the site; it names what would fit."""
    peak, _ = peak_of(catalog, pools, pue)
    if peak <= site_mw:
        return
    chips = sum(catalog.instances[name].chips * n for name, n in pools)
    names = dict.fromkeys(name for name, _ in pools)  # a type bought two ways is one type
    fits = ", ".join(f"{site_cap(catalog, name, site_mw, pue):,} x {name}" for name in names)
    raise InputError(
        f"the fleet ({chips:,} chips) draws up to {peak:,.1f} MW at peak (PUE {pue:g}), over the {site_mw:g} MW "
        f"site; {site_mw:g} MW holds at most {fits} on its own.",
        "shrink the pools (or raise --site-mw).",
    )


@dataclass(frozen=True, slots=True)
class SiteBudget:
    """A site's facility power budget as the planner uses it: the peak MW of a mix, and how many more
    instances of a type fit beside pools already chosen. A chip without a published power figure has
    no peak (None): a mix with it cannot be shown to fit, so the planner does not choose it."""

    catalog: Catalog
    site_mw: float
    pue: float

    def peak_mw(self, pools: Sequence[tuple[str, int]]) -> float | None:
        try:
            return peak_of(self.catalog, [(i, n) for i, n in pools if n > 0], self.pue)[0]
        except InputError:
            return None

    def cap(self, instance: str, beside: Sequence[tuple[str, int]] = ()) -> int | None:
        """The most instances of `instance` that fit beside `beside`; None when a chip's power is unknown."""
        used = self.peak_mw(beside)
        if used is None or self.peak_mw([(instance, 1)]) is None:
            return None
        per = pool_power(self.catalog, instance).peak_instance_w * self.pue
        return max(0, int((self.site_mw - used) * 1e6 // per))

    def over(self, pools: Sequence[tuple[str, int]]) -> str | None:
        """Why a mix does not fit the site (None when it fits)."""
        peak = self.peak_mw(pools)
        if peak is None:
            unknown = sorted({i for i, _ in pools if self.peak_mw([(i, 1)]) is None})
            return f"no published chip power for {', '.join(unknown)}, so it cannot be shown to fit the site"
        if peak > self.site_mw:
            return f"draws {peak:,.1f} MW at peak (PUE {self.pue:g}), over the {self.site_mw:g} MW site"
        return None


def fleet_power(
    catalog: Catalog,
    pools: Sequence[Mapping[str, Any]],
    series: Mapping[str, Sequence[float | None]],
    *,
    pue: float,
    site_mw: float | None = None,
) -> FleetPower:
    """Facility MW by hour from a simulated run's series (`inference_chips`, `training_chips`,
    `fleet_chips` per time bucket `t_h`). With several chip types, each state's watts per chip is the
    chip-weighted mean over pools (the series does not say which pool's chips serve)."""
    powers = [(pool_power(catalog, str(p["instance"])), int(p["count"])) for p in pools]
    chips = sum(pp.chips_per_instance * n for pp, n in powers)
    if chips == 0:
        raise InputError("the fleet has no chips.", "give its pools a count.")

    def mean(attr: str) -> float:
        return sum(float(getattr(pp, attr)) * pp.chips_per_instance * n for pp, n in powers) / chips

    serving_w, training_w, idle_w = mean("serving_w"), mean("training_w"), mean("idle_w")

    def arr(name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        return np.asarray([0.0 if v is None else float(v) for v in series[name]], dtype=np.float64)

    t_h, serving, training, fleet = (
        arr("t_h"),
        arr("inference_chips"),
        arr("training_chips"),
        arr("fleet_chips"),
    )
    idle = np.maximum(fleet - serving - training, 0.0) + np.maximum(
        chips - fleet, 0.0
    )  # unbilled chips stay racked
    serving_mw, training_mw = serving * serving_w * pue / 1e6, training * training_w * pue / 1e6
    mw = serving_mw + training_mw + idle * idle_w * pue / 1e6
    hour = np.floor(t_h).astype(np.int64)
    hours = np.unique(hour)

    def by_hour(x: np.ndarray[Any, np.dtype[np.float64]]) -> tuple[float, ...]:
        return tuple(float(x[hour == h].mean()) for h in hours)

    step_h = float(t_h[1] - t_h[0]) if len(t_h) > 1 else 1.0
    peak, high = peak_of(catalog, [(pp.instance, n) for pp, n in powers], pue)
    data = load_power()
    return FleetPower(
        pue=pue,
        site_mw=site_mw,
        peak_mw=peak,
        peak_mw_high=high,
        hours=tuple(float(h) for h in hours),
        mw_by_hour=by_hour(mw),
        serving_mw_by_hour=by_hour(serving_mw),
        training_mw_by_hour=by_hour(training_mw),
        mean_mw=float(mw.mean()) if len(mw) else 0.0,
        energy_mwh=float(mw.sum() * step_h),
        fits=None if site_mw is None else peak <= site_mw,
        pools=tuple(
            {
                "instance": pp.instance,
                "count": n,
                "chip": pp.chip,
                "chips": pp.chips_per_instance * n,
                "serving_w_per_chip": pp.serving_w,
                "training_w_per_chip": pp.training_w,
                "idle_w_per_chip": pp.idle_w,
                "peak_kw_per_instance": pp.peak_instance_w / 1e3,
                "chips_per_mw_at_peak": 1e6 / (pp.peak_instance_w / pp.chips_per_instance * pue),
            }
            for pp, n in powers
        ),
        assumptions=(
            "serving chips at the fitted memory-bound activity, training chips at the compute-bound one, "
            "others at idle (perf.power; fitted on NVIDIA GPUs, used for every chip)",
            f"host = {data.host_central:g} x chip TDP per chip, always on ({data.host_source})",
            f"facility = IT x PUE {pue:g}; every pool's chips stay powered the whole horizon",
            *(
                f"{c.chip} TDP {c.tdp_low_w:.0f}-{c.tdp_high_w:.0f} W: {c.source}"
                for c in {data.chips[pp.chip].chip: data.chips[pp.chip] for pp, _ in powers}.values()
            ),
        ),
    )


def simulation_power(
    catalog: Catalog, sim: Any, *, pue: float, site_mw: float | None = None
) -> dict[str, FleetPower]:
    """`fleet_power` of every policy's run of a `Simulation` (its series must be kept)."""
    pools = sim.fleet["pools"]
    return {r.policy.name: fleet_power(catalog, pools, r.series, pue=pue, site_mw=site_mw) for r in sim.runs}


def plan_power(
    ff: Any,
    pools: Sequence[Mapping[str, Any]],
    policy: str,
    catalog: Catalog,
    *,
    pue: float,
    site_mw: float | None = None,
) -> FleetPower:
    """A planned mix (`Candidate.pools`) simulated again under `policy`, as MW by hour."""
    from silica.fleet.scenario import build_fleet, make_policies
    from silica.fleet.simulate import run_policy
    from silica.fleet.spec import PoolSpec

    specs = [
        PoolSpec(instance=str(p["instance"]), count=int(p["count"]), purchase=p["purchase"]) for p in pools
    ]
    fleet = build_fleet(ff, catalog=catalog, pools=specs, pools_loc=("plan", "instances"))
    run = run_policy(fleet, make_policies(ff, [policy])[0])
    return fleet_power(catalog, [p.to_dict() for p in fleet.pools], run.series, pue=pue, site_mw=site_mw)
