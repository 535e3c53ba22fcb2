"""What the plan promised, per deployment, read from a result Silica saved.

Accepted: an `estimate --json` result, a `compare --json` ranking (its best feasible deployment), an
`advise --json` recommendation (its proposed option, else the best alternative) or a `fleet plan --json`
result (one deployment per pool; a fleet plan holds sizes and prices, not latencies, and the report says
so). The deployment name is the one the telemetry carries in its `deployment` label: give it as
`NAME=PATH`, or Silica uses the workload name (advise), the pool's instance type (fleet) or the
instance type (estimate, compare).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from silica.errors import DataFileError, InputError

__all__ = ["Planned", "load_plan", "parse_plan_arg"]


@dataclass(frozen=True, slots=True)
class Planned:
    """One deployment as planned. Speeds are for `count` instances; None where the plan has no figure."""

    name: str
    model: str
    instance: str
    count: int  # instances the plan's figures are for
    chips_per_instance: int | None
    family: str
    usd_per_instance_hour: float | None
    output_tokens_per_s: float | None
    output_tokens_per_s_low: float | None
    output_tokens_per_s_high: float | None
    ttft_ms: float | None
    ttft_ms_low: float | None
    ttft_ms_high: float | None
    tpot_ms: float | None
    tpot_ms_low: float | None
    tpot_ms_high: float | None
    ttft_slo_ms: float | None
    tpot_slo_ms: float | None
    usd_per_1m_output_tokens: float | None
    source: str  # the file and the kind of result it was
    # Chip-only joules per output token the plan predicts (`plan.energy`: average chip power x chips /
    # output tokens/s), comparable with GPU power telemetry; None where the plan has no energy figure.
    chip_j_per_output_token: float | None = None
    tp: int | None = None  # the layout and engine the figures are for: expected latency at another load
    engine: str | None = None
    # The calibration the figures came from (`--calibration` file, user overlay file; None: shipped),
    # so the expectation at another load uses the same parameters as the plan.
    calibration: str | None = None
    calibration_overlay: str | None = None

    @property
    def tokens_per_s_per_instance(self) -> float | None:
        return None if self.output_tokens_per_s is None else self.output_tokens_per_s / self.count

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_plan_arg(value: str) -> tuple[str | None, Path]:
    """`NAME=PATH` or `PATH`."""
    name, sep, path = value.partition("=")
    if sep and name and "/" not in name and not Path(value).exists():
        return name, Path(path)
    return None, Path(value)


def load_plan(path: Path, name: str | None = None) -> list[Planned]:
    """The deployments one saved result describes."""
    from silica._files import parse_json, read_text

    hint = "a plan saved with `silica estimate|compare|advise|fleet plan ... --json > plan.json`"
    data = parse_json(read_text(path, "plan", hint), path, hint)  # size, binary, UTF-8, nesting
    if not isinstance(data, dict):
        raise DataFileError(f"Plan {path} is not a JSON object.", "pass a result saved with --json.")
    if "results" in data and "workload" in data:
        return [_from_compare(data, path, name)]
    if "best" in data and isinstance(data["best"], dict) and "pools" in data["best"]:
        return _from_fleet(data, path, name)
    if "verdict" in data and "options" in data:
        return [_from_advice(data, path, name)]
    if "instance" in data and "output_tokens_per_s" in data:
        return [_from_estimate(data, path, name or str(data["instance"]), "estimate", {})]
    raise DataFileError(
        f"Plan {path} is not an estimate, compare, advise or fleet plan result.",
        "save one with `silica estimate ... --json > plan.json` (or compare, advise, fleet plan).",
    )


def _num(d: dict[str, Any], key: str) -> float | None:
    value = d.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _from_estimate(e: dict[str, Any], path: Path, name: str, kind: str, slo: dict[str, Any]) -> Planned:
    if e.get("task", "inference") != "inference":
        raise InputError(
            f"Plan {path} is a {e.get('task')} estimate; monitor compares serving deployments.",
            "pass an inference estimate.",
        )
    if e.get("feasible") is False:
        raise InputError(
            f"Plan {path} is infeasible ({'; '.join(e.get('reasons') or [])}): nothing to compare.",
            "pass a feasible plan.",
        )
    count = int(e.get("count") or 1)
    price = e.get("price") or {}
    chips = e.get("chips")
    return Planned(
        name=name,
        model=str(e.get("model", "")),
        instance=str(e["instance"]),
        count=count,
        chips_per_instance=int(chips) // count if isinstance(chips, int) and chips else None,
        family=str(e.get("family", "")),
        usd_per_instance_hour=_num(price, "usd_per_hour"),
        output_tokens_per_s=_num(e, "output_tokens_per_s"),
        output_tokens_per_s_low=_num(e, "output_tokens_per_s_low"),
        output_tokens_per_s_high=_num(e, "output_tokens_per_s_high"),
        ttft_ms=_num(e, "ttft_ms"),
        ttft_ms_low=_num(e, "ttft_ms_low"),
        ttft_ms_high=_num(e, "ttft_ms_high"),
        tpot_ms=_num(e, "tpot_ms"),
        tpot_ms_low=_num(e, "tpot_ms_low"),
        tpot_ms_high=_num(e, "tpot_ms_high"),
        ttft_slo_ms=_num(slo, "ttft_slo_ms"),
        tpot_slo_ms=_num(slo, "tpot_slo_ms"),
        usd_per_1m_output_tokens=_num(e, "usd_per_1m_output_tokens"),
        source=f"{path} ({kind})",
        chip_j_per_output_token=_chip_joules(e),
        tp=int(e["tp"]) if isinstance(e.get("tp"), int) and not isinstance(e.get("tp"), bool) else None,
        engine=str(e["engine"]) if isinstance(e.get("engine"), str) and e.get("engine") else None,
        calibration=_setting(e, "calibration"),
        calibration_overlay=_setting(e, "calibration_overlay"),
    )


def _setting(e: dict[str, Any], key: str) -> str | None:
    """A file setting the estimate recorded (`settings.KEY.value`), or None."""
    settings = e.get("settings")
    entry = settings.get(key) if isinstance(settings, dict) else None
    value = entry.get("value") if isinstance(entry, dict) else None
    return value if isinstance(value, str) and value else None


def _chip_joules(e: dict[str, Any]) -> float | None:
    """Chip power x chips / output tokens/s of an estimate with known energy (None otherwise)."""
    energy = e.get("energy")
    if not isinstance(energy, dict) or energy.get("known") is not True:
        return None
    watts, chips, rate = _num(energy, "chip_power_w"), e.get("chips"), _num(e, "output_tokens_per_s")
    if watts is None or not isinstance(chips, int) or not rate:
        return None
    return watts * chips / rate


def _from_compare(data: dict[str, Any], path: Path, name: str | None) -> Planned:
    best = next((r for r in data.get("results") or [] if isinstance(r, dict) and r.get("feasible")), None)
    if best is None:
        raise InputError(
            f"Plan {path} ranks no feasible deployment.", "pass a comparison with a feasible result."
        )
    slo = data.get("workload") or {}
    return _from_estimate(best, path, name or str(best["instance"]), "compare, best deployment", slo)


def _from_advice(data: dict[str, Any], path: Path, name: str | None) -> Planned:
    option = data.get("proposed") or data.get("best_alternative")
    estimate = (option or {}).get("estimate")
    if not estimate:
        raise InputError(
            f"Advice {path} keeps no estimate for its proposed option.",
            "pass `silica advise --json` output of a workload that moves, or an estimate.",
        )
    planned = _from_estimate(
        estimate, path, name or str(data.get("name", estimate["instance"])), "advise", {}
    )
    instances = option.get("instances") if option else None
    if isinstance(instances, int) and instances > 0 and planned.output_tokens_per_s is not None:
        # Advice sizes a fleet for the workload's load; the estimate's figures stay per its `count`.
        return planned
    return planned


def _from_fleet(data: dict[str, Any], path: Path, name: str | None) -> list[Planned]:
    out = []
    for pool in data["best"]["pools"]:
        instance = str(pool.get("instance"))
        out.append(
            Planned(
                name=name or instance,
                model="",
                instance=instance,
                count=int(pool.get("count") or 1),
                chips_per_instance=(int(pool["chips"]) // int(pool["count"]))
                if pool.get("chips") and pool.get("count")
                else None,
                family="",
                usd_per_instance_hour=_num(pool, "usd_per_instance_hour"),
                output_tokens_per_s=None,
                output_tokens_per_s_low=None,
                output_tokens_per_s_high=None,
                ttft_ms=None,
                ttft_ms_low=None,
                ttft_ms_high=None,
                tpot_ms=None,
                tpot_ms_low=None,
                tpot_ms_high=None,
                ttft_slo_ms=None,
                tpot_slo_ms=None,
                usd_per_1m_output_tokens=None,
                source=f"{path} (fleet plan pool; sizes and prices only, no latency prediction)",
            )
        )
    if name and len(out) > 1:
        raise InputError(
            f"Fleet plan {path} has {len(out)} pools; one NAME cannot label them all.",
            "pass the plan without NAME=.",
        )
    return out
