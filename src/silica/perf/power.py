"""Average electrical power of a phase, from what the phase spends its time on.

A chip draws its idle power plus a share of the range up to its maximum board power (TDP) that
grows with how hard it is driven (DESIGN.md, energy):

    watts = TDP x (idle_share + (1 - idle_share) x activity)

`activity` follows the performance model's own time split (`results.PhaseTime.parts_ms`): time the
roofline charges to compute (tensor engines busy) is driven at `compute_activity`; every other part
(streaming weights and KV cache, collectives, per-layer and per-sequence overheads) at
`memory_activity`. Three fractions per chip family, fitted on measured GPU energy (ML.ENERGY
Leaderboard; `silica.validate.energy`, `scripts/energy_report.py`), never per-row lookups.

The facts (TDP per chip, host overhead, PUE, grid intensity) live in `data/energy/power.yaml` with
their sources; a chip without a public or third-party figure has no power, so its energy is unknown.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from silica._yaml import safe_load
from silica.errors import DataFileError

__all__ = [
    "ChipPower",
    "PowerData",
    "PowerParams",
    "activity",
    "chip_watts",
    "load_power",
    "mean_chip_watts",
]

_FACTS = "data/energy/power.yaml"
_PARAMS = "data/energy/power_params.json"


@dataclass(frozen=True, slots=True)
class PowerParams:
    """Fractions of a chip's TDP: idle floor, and how far compute- and memory-bound time drive it."""

    idle_share: float
    compute_activity: float
    memory_activity: float

    def to_dict(self) -> dict[str, float]:
        return {
            "idle_share": self.idle_share,
            "compute_activity": self.compute_activity,
            "memory_activity": self.memory_activity,
        }


@dataclass(frozen=True, slots=True)
class ChipPower:
    """Maximum board power of one chip, [low, high] watts (equal where the vendor publishes one)."""

    chip: str
    tdp_low_w: float
    tdp_high_w: float
    source: str
    as_of: str

    @property
    def published(self) -> bool:
        return self.tdp_low_w == self.tdp_high_w

    @property
    def tdp_w(self) -> float:
        return (self.tdp_low_w + self.tdp_high_w) / 2.0


@dataclass(frozen=True, slots=True)
class PowerData:
    """Everything the energy figures need besides the performance model."""

    chips: dict[str, ChipPower]
    host_share: tuple[float, float]  # non-accelerator power as a share of the accelerators' TDP
    host_central: float
    host_source: str
    pue: float
    pue_source: str
    grid: dict[str, float]  # kg CO2e per kWh, per AWS region
    grid_source: str
    params: dict[str, PowerParams]  # per chip family, and "default"
    error: tuple[float, float]  # p10/p90 of measured / predicted chip power, held out by source
    fit_note: str
    measured_families: tuple[str, ...] = ()  # chip families with rows in the fit

    def params_for(self, family: str) -> tuple[PowerParams, str]:
        """The family's fitted fractions, else the pooled fit (and which one was used)."""
        if family in self.params:
            return self.params[family], f"power fitted on {family} measurements"
        pooled = ", ".join(self.measured_families)
        if family in self.measured_families:
            return self.params["default"], f"power: one fit pooled over the measured GPU families ({pooled})"
        return self.params[
            "default"
        ], f"power: no measured energy for {family}; the fit pooled over {pooled} is assumed"


def activity(parts_ms: Mapping[str, float], params: PowerParams) -> float:
    """How hard a phase drives the chip, 0..1: compute-bound time at `compute_activity`, the rest at
    `memory_activity` (weights and KV streams, collectives, overheads)."""
    total = sum(parts_ms.values())
    if total <= 0.0:
        return 0.0
    compute = parts_ms.get("compute", 0.0) / total
    return compute * params.compute_activity + (1.0 - compute) * params.memory_activity


def chip_watts(tdp_w: float, params: PowerParams, busy: float) -> float:
    """Average watts of one chip driven at activity `busy` (0: idle, 1: TDP)."""
    busy = min(max(busy, 0.0), 1.0)
    return tdp_w * (params.idle_share + (1.0 - params.idle_share) * busy)


def mean_chip_watts(
    phases: Sequence[tuple[Mapping[str, float], float]], tdp_w: float, params: PowerParams
) -> float:
    """Time-weighted average watts over phases given as (parts_ms, seconds spent in that phase)."""
    seconds = sum(s for _, s in phases)
    if seconds <= 0.0:
        return chip_watts(tdp_w, params, 0.0)
    return sum(chip_watts(tdp_w, params, activity(parts, params)) * s for parts, s in phases) / seconds


def _read(name: str) -> str:
    return resources.files("silica").joinpath(name).read_text(encoding="utf-8")


def _params(raw: Mapping[str, Any]) -> PowerParams:
    return PowerParams(
        idle_share=float(raw["idle_share"]),
        compute_activity=float(raw["compute_activity"]),
        memory_activity=float(raw["memory_activity"]),
    )


@lru_cache(maxsize=1)
def load_power() -> PowerData:
    """Read the bundled power facts and the fitted fractions (a malformed file is a one-line error)."""
    try:
        facts = safe_load(_read(_FACTS))
        fitted = json.loads(_read(_PARAMS))
        chips = {
            cid: ChipPower(
                chip=cid,
                tdp_low_w=float(c["tdp_w"][0]),
                tdp_high_w=float(c["tdp_w"][1]),
                source=str(c["source"]),
                as_of=str(c["as_of"]),
            )
            for cid, c in facts["chips"].items()
        }
        host, facility, grid = facts["host"], facts["facility"], facts["grid_kg_co2e_per_kwh"]
        data = PowerData(
            chips=chips,
            host_share=(
                float(host["share_of_accelerator_tdp"][0]),
                float(host["share_of_accelerator_tdp"][1]),
            ),
            host_central=float(host["central"]),
            host_source=str(host["source"]),
            pue=float(facility["pue"]),
            pue_source=str(facility["pue_source"]),
            grid={str(k): float(v) for k, v in grid["regions"].items()},
            grid_source=str(grid["source"]),
            params={k: _params(v) for k, v in fitted["params"].items()},
            error=(float(fitted["error_p10"]), float(fitted["error_p90"])),
            fit_note=str(fitted["note"]),
            measured_families=tuple(str(f) for f in fitted.get("measured_families", ())),
        )
    except (KeyError, TypeError, ValueError, IndexError, yaml.YAMLError) as err:
        raise DataFileError(f"the bundled power data is malformed: {err!r}.", "reinstall silica.") from err
    bad = [
        c.chip for c in data.chips.values() if not 0 < c.tdp_low_w <= c.tdp_high_w or math.isnan(c.tdp_low_w)
    ]
    if bad or "default" not in data.params:
        raise DataFileError(
            f"the bundled power data is inconsistent ({', '.join(bad) or 'no default'}).", "reinstall silica."
        )
    return data
