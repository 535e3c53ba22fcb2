"""The fleet file: its schema, and a loader whose every error names the file, the line and the field.

A fleet file says what runs (the inference model, its SLOs and demand; training jobs), on what
(pools of instances, reserved or on demand) and how (one or more policies); optionally what the
planner may choose from (`plan:`) and what a sweep varies (`sweep:`). See examples/fleet.yaml.
Unknown keys are errors, not ignored: a misspelt knob would otherwise silently take its default.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from silica.catalog.schema import Dtype
from silica.errors import DataFileError, SilicaError

__all__ = [
    "DemandSpec",
    "FleetFile",
    "FleetSpec",
    "JobSpec",
    "PhillySpec",
    "PlanSpec",
    "PolicySpec",
    "PoolSpec",
    "SweepSpec",
    "TrainingSpec",
    "load_fleet_file",
]

TRACES_ENV = "SILICA_TRACES"


class _Spec(BaseModel):
    # Non-finite numbers (YAML's .inf, .nan) are rejected everywhere: no horizon, rate or price is infinite.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DemandSpec(_Spec):
    """Inference demand: a shape scaled to a peak, or a replayed trace."""

    shape: str = (
        "diurnal"  # diurnal | flat | servegen:<m-large|m-mid|m-small> | azure:<code|conv> | mooncake:<...>
    )
    trace: str | None = None  # a raw trace file to replay instead of `shape`
    trace_format: Literal["csv", "azure", "mooncake"] = "csv"
    peak_requests_per_s: float | None = Field(default=None, gt=0)
    peak_output_tokens_per_s: float | None = Field(default=None, gt=0)
    scale: float = Field(default=1.0, gt=0)  # replays: multiply the trace's rate
    lengths: str | None = None  # bundled trace whose mean request shape to use
    input_len: float | None = Field(default=None, gt=0)
    output_len: float | None = Field(default=None, gt=0)
    burstiness: str | None = None  # bundled trace whose minute-to-minute factors to resample
    peak_to_trough: float = Field(default=2.0, ge=1)
    peak_hour: float = Field(default=14.0, ge=0, lt=24)
    weekend_factor: float = Field(default=1.0, gt=0, le=1)
    start_day: float = Field(default=0.0, ge=0)
    seed: int = 0


class InferenceSpec(_Spec):
    model: str
    ttft_slo_ms: float | None = Field(default=None, gt=0)
    tpot_slo_ms: float | None = Field(default=None, gt=0)
    dtype: Dtype = "bf16"
    demand: DemandSpec = DemandSpec()


class PoolSpec(_Spec):
    instance: str
    count: int = Field(ge=1, le=1_000_000)  # fleet.sizing.DEFAULT_MAX_INSTANCES: more is a typo
    purchase: Literal["reserved", "on_demand"] = "reserved"
    price_usd_per_hour: float | None = Field(default=None, gt=0)
    train: bool | None = None


class JobSpec(_Spec):
    name: str
    chips: int = Field(ge=1)
    hours: float = Field(gt=0)
    earliest_start_hours: float = Field(default=0.0, ge=0)
    deadline_hours: float | None = Field(default=None, gt=0)
    checkpointable: bool = True
    repeat: int = Field(default=1, ge=1)  # this many copies, named name-1, name-2, ...
    every_hours: float = Field(default=0.0, ge=0)  # copies arrive this far apart


class PhillySpec(_Spec):
    path: str
    start: date | None = None
    days: float = Field(default=7.0, gt=0)
    chips_per_gpu: float = Field(default=1.0, gt=0)
    speedup: float = Field(default=1.0, gt=0)
    deadline_slack: float | None = Field(default=None, ge=1)
    checkpointable: bool = True
    max_jobs: int | None = Field(default=None, ge=1)


class TrainingSpec(_Spec):
    model: str | None = None
    seq_len: int = Field(default=4096, ge=1)
    reference_instance: str | None = None
    restart_minutes: float = Field(default=10.0, ge=0)
    checkpoint_minutes: float = Field(default=30.0, ge=0)
    jobs: list[JobSpec] = []
    philly: PhillySpec | None = None


class PolicySpec(_Spec):
    name: Literal["static", "day_night", "autoscale"]
    headroom: float = Field(default=0.1, ge=0)
    reclaim_minutes: float = Field(default=5.0, ge=0)
    cooldown_minutes: float = Field(default=30.0, ge=0)
    launch_minutes: float = Field(default=10.0, ge=0)
    base_quantile: float = Field(default=0.5, ge=0, le=1)
    lend_idle: bool = False
    inference_share: float | None = Field(default=None, ge=0, le=1)


PolicyField = PolicySpec | Literal["static", "day_night", "autoscale"]


class PlanSpec(_Spec):
    instances: list[str] | None = None
    slo_attainment: float = Field(default=0.99, gt=0, le=1)
    purchases: list[Literal["reserved", "on_demand"]] = ["reserved", "on_demand"]
    policy: PolicyField = "day_night"
    max_instances: int | None = Field(default=None, ge=1, le=1_000_000)


class SweepSpec(_Spec):
    policies: list[PolicyField] | None = None
    mixes: dict[str, list[PoolSpec]] | None = None
    demands: dict[str, DemandSpec] | None = None


class FleetSpec(_Spec):
    name: str = "fleet"
    days: float | None = Field(default=None, gt=0)
    hours: float | None = Field(default=None, gt=0)
    step_minutes: float = Field(default=1.0, gt=0)
    region: str | None = None
    traces_dir: str | None = None
    inference: InferenceSpec
    pools: list[PoolSpec] = []
    training: TrainingSpec | None = None
    policy: PolicyField | list[PolicyField] = "day_night"
    plan: PlanSpec | None = None
    sweep: SweepSpec | None = None

    def policies(self) -> list[PolicySpec]:
        items = self.policy if isinstance(self.policy, list) else [self.policy]
        return [as_policy(p) for p in items]


def as_policy(item: PolicyField) -> PolicySpec:
    return item if isinstance(item, PolicySpec) else PolicySpec(name=item)


@dataclass(frozen=True, slots=True)
class FleetFile:
    """A validated fleet file, with what is needed to point later errors at its lines."""

    spec: FleetSpec
    path: Path
    lines: dict[tuple[str | int, ...], int]

    def line(self, loc: Sequence[str | int]) -> int:
        return _line(self.lines, loc)

    def error(self, loc: Sequence[str | int], problem: str, fix: str | None = None) -> DataFileError:
        where = ".".join(str(k) for k in loc)
        return DataFileError(f"{self.path}, line {self.line(loc)}, field {where!r}: {problem}", fix)

    def wrap(self, loc: Sequence[str | int], err: SilicaError) -> DataFileError:
        """Re-raise a library error (unknown model, bad value) with this file's line and field."""
        return self.error(loc, err.problem, err.fix)

    def input_files(self) -> tuple[Path, ...]:
        """The fleet file and every file it names (traces, Philly logs, model configs): a report
        written over any of them would destroy an input, so `--html` is checked against them all."""
        files = [self.path]
        stack: list[Any] = [self.spec.model_dump()]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                for key, value in item.items():
                    if isinstance(value, str) and key in ("trace", "path", "model"):
                        try:
                            found = self.resolve(value)
                        except (SilicaError, OSError, RuntimeError):
                            continue
                        if key != "model" or found.exists():
                            files.append(found)
                    else:
                        stack.append(value)
            elif isinstance(item, list):
                stack.extend(item)
        return tuple(files)

    def resolve(self, text: str) -> Path:
        """A path from the file: `traces:` paths under traces_dir (or $SILICA_TRACES), others beside it."""
        base = self.path.parent
        if text.startswith("traces:"):
            root = self.spec.traces_dir or os.environ.get(TRACES_ENV)
            if root is None:
                raise DataFileError(
                    f"{self.path}: {text!r} needs a traces folder.",
                    f"set traces_dir: in the fleet file or the {TRACES_ENV} environment variable.",
                )
            return (base / Path(root).expanduser() / text.removeprefix("traces:").lstrip("/")).resolve()
        return (base / Path(text).expanduser()).resolve()


def _line(lines: dict[tuple[str | int, ...], int], loc: Sequence[str | int]) -> int:
    """The line of `loc`, or of its nearest parent the file spells out."""
    key = tuple(loc)
    while key and key not in lines:
        key = key[:-1]
    return lines.get(key, 1)


def _clean_loc(loc: tuple[Any, ...], lines: dict[tuple[str | int, ...], int]) -> tuple[str | int, ...]:
    """pydantic adds union-member tags ("PolicySpec", "literal[...]") to a loc; keep the real keys."""
    out: tuple[str | int, ...] = ()
    for part in loc:
        if (*out, part) in lines or isinstance(part, int):
            out = (*out, part)
    return out


def load_fleet_file(path: Path) -> FleetFile:
    """Read and validate a fleet file; every problem is one DataFileError naming file, line, field."""
    from silica._yaml import load_located  # limits: size, nesting, aliases; lines of every field

    path = Path(path)
    doc = load_located(path)
    data = doc.value
    if not isinstance(data, dict):
        raise DataFileError(f"{path}: expected a mapping of fleet settings.", "see examples/fleet.yaml.")
    if "workloads" in data and "pools" not in data:
        raise DataFileError(
            f"{path} looks like an inventory (it has workloads:), not a fleet file.",
            "run `silica advise` on an inventory; a fleet file has pools: (see examples/fleet.yaml).",
        )
    lines: dict[tuple[str | int, ...], int] = dict(doc.lines)
    try:
        spec = FleetSpec.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        loc = _clean_loc(tuple(first["loc"]), lines)
        where = ".".join(str(k) for k in loc) or "(top)"
        got = first.get("input")
        shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
        fix = "remove or correct it; see examples/fleet.yaml." if first["type"] == "extra_forbidden" else None
        raise DataFileError(
            f"{path}, line {_line(lines, loc)}, field {where!r}: {first['msg']}{shown}.", fix
        ) from None
    return FleetFile(spec, path, lines)
