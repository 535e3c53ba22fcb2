"""Neuron knowledge as data: operators, dtypes, architectures, lifecycle, code rules and effort rules.

Every row carries its `source` and `as_of`. The files live in `silica/data/neuron/` and are derived from
`../shared/reference/neuron_ops.csv`, `neuron_models.csv` and `neuron_notes.md`. Schemas reject unknown
and missing fields so that a typo in a data file fails the data test rather than a user's scan.
Nothing loads at import time; `knowledge()` reads the files once and caches them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from silica.errors import DataFileError
from silica.scan.report import TARGETS, Impact

__all__ = [
    "TASKS",
    "ArchRow",
    "CodeRule",
    "DtypeRow",
    "EffortRules",
    "Knowledge",
    "LifecycleRow",
    "OpRow",
    "Task",
    "TrainingRules",
    "WorkItem",
    "knowledge",
]

Support = Literal["production", "beta", "community", "legacy", "samples"]
Condition = Literal[
    "",
    "int_operands",
    "int64_operands",
    "int_dtype",
    "bool_index",
    "bool_index_or_int_accumulate",
    "non32_int_input",
    "conv_input_dilation",
    "pool_dilation",
]


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpRow(_Row):
    """One operator (or one limiting configuration of it, when `condition` is set)."""

    op: str
    condition: Condition
    status: Literal["supported", "limited", "unsupported", "ignored"]
    evidence: str
    note: str
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=10)


DtypeStatus = Literal["supported", "downcast", "limited", "unsupported"]


class DtypeRow(_Row):
    """Per-target status of one dtype.

    "downcast" means the toolchain converts it (int64 -> int32, fp64 -> fp32), which is informational.
    """

    dtype: str  # torch's name: "float64", "float8_e4m3fn"
    inferentia2: DtypeStatus
    trainium1: DtypeStatus
    trainium2: DtypeStatus
    trainium3: DtypeStatus
    note: str
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=10)

    def status(self, target: str) -> DtypeStatus:
        return getattr(self, target)  # type: ignore[no-any-return]


class ArchRow(_Row):
    """One library that runs one Hugging Face `model_type`, on the targets it names.

    `targets` is ";"-separated; "trainium1@<=2.28" means the path needs an SDK at or below that release.
    """

    model_type: str
    library: str
    support: Support
    targets: str
    sdk: str
    note: str
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=10)

    def pins(self) -> dict[str, str]:
        """Target -> SDK pin ("" when the current SDK works)."""
        out: dict[str, str] = {}
        for item in self.targets.split(";"):
            name, _, pin = item.strip().partition("@")
            out[name] = pin
        return out


class LifecycleRow(_Row):
    library: str
    targets: str
    status: Literal["maintenance", "pinned", "community", "beta", "closed-beta", "current"]
    since_sdk: str
    note: str
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=10)


Task = Literal["inference", "training"]
TASKS: tuple[Task, ...] = ("inference", "training")


class CodeRule(_Row):
    """One thing a code scan looks for. `work_item` names the effort item it sizes (effort.yaml);
    `tasks` are the tasks it matters for (elsewhere its findings are informational); `text` are regular
    expressions matched line by line in files whose name matches one of `files` (shell scripts,
    Dockerfiles, JSON configs, and Python sources for environment variable names)."""

    id: str
    title: str
    impact: Impact
    work_item: str
    tasks: tuple[Task, ...] = TASKS
    effort_weeks: float = Field(ge=0)
    effort_cap_weeks: float = Field(ge=0)
    alternative: str
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=10)
    packages: tuple[str, ...] = ()
    # distribution names that count only in a requirements list named for CUDA (requirements/runtime_cuda.txt):
    # libraries that also target other devices but are that build's CUDA kernels there
    cuda_list_packages: tuple[str, ...] = ()
    # other names the same library goes by: its repository (flash-attention, TransformerEngine), a build target or
    # image stage (punica); round 7: looked up with `packages` wherever a file names a library to install or build
    aliases: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    string_args: tuple[str, ...] = ()
    decorators: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    # substrings one of which every `text` match contains: a file with none of them is not searched
    text_literals: tuple[str, ...] = ()
    # how occurrences are sized: once per file (one change, however many call sites), or per finding
    # (each Triton kernel is its own port)
    counts: Literal["file", "finding"] = "file"


class _CodeRules(_Row):
    schema_version: Literal[1]
    rules: tuple[CodeRule, ...]


class WorkItem(_Row):
    """A named piece of porting work: base weeks once any finding needs it, plus the findings' weeks.

    Caps are knees, not ceilings (issue 30): weeks beyond a rule's or the item's cap count at `tail_share`
    (0 restores a hard cap, 1 removes it), so a package of 17 kernels costs more than one of 4.
    `target_extra_weeks` adds weeks on the targets where the rules say the work differs (FSDP/DTensor need
    TorchNeuron, which Trainium1 does not have)."""

    title: str
    base_weeks: float = Field(ge=0)
    cap_weeks: float = Field(ge=0)
    tail_share: float = Field(default=0.0, ge=0, le=1)
    target_extra_weeks: dict[str, float] = Field(default_factory=dict)
    target_extra_reasoning: str = ""
    reasoning: str = Field(min_length=1)


class TrainingRules(_Row):
    """What changes when the task is training: which chips train, and the numerics check every port needs."""

    targets: tuple[str, ...]
    targets_source: str = Field(min_length=1)
    validate_numerics_weeks: float = Field(ge=0)
    reasoning: str = Field(min_length=1)


class EffortRules(_Row):
    schema_version: Literal[1]
    source: str
    as_of: str
    path_weeks: dict[str, float]
    unsupported_op_weeks: float = Field(ge=0)
    limited_op_weeks: float = Field(ge=0)
    limited_dtype_weeks: float = Field(ge=0)
    unsupported_dtype_weeks: float = Field(ge=0)
    graph_break_weeks: float = Field(ge=0)
    cpu_partition_weeks: float = Field(ge=0)
    scan_failure_weeks: float = Field(ge=0)
    round_to_weeks: float = Field(gt=0)
    work_items: dict[str, WorkItem]
    # When the repository ships a Neuron path, the CUDA-path items count at this share (effort.yaml).
    neuron_path_share: float = Field(ge=0, le=1)
    # Round 6: a rule found only in dependency lists and install commands counts at this share of its weeks.
    declared_share: float = Field(ge=0, le=1)
    # Round 6: a file's second and later kernels (rule `counts: finding`) count at this share of the first's.
    same_file_kernel_share: float = Field(ge=0, le=1)
    training: TrainingRules


@dataclass(frozen=True)
class Knowledge:
    """All scan knowledge, indexed for lookup."""

    ops: Mapping[str, tuple[OpRow, ...]]  # "aten::mm" -> base row first, then conditional rows
    dtypes: Mapping[str, DtypeRow]
    archs: Mapping[str, tuple[ArchRow, ...]]
    lifecycle: tuple[LifecycleRow, ...]
    code_rules: tuple[CodeRule, ...]
    effort: EffortRules
    patterns: Mapping[str, OpRow]  # the reference's pattern:* rows, keyed by short name

    def rule(self, rule_id: str) -> CodeRule:
        for r in self.code_rules:
            if r.id == rule_id:
                return r
        raise KeyError(rule_id)


def _read(name: str) -> str:
    try:
        return resources.files("silica").joinpath("data", "neuron", name).read_text(encoding="utf-8")
    except OSError as err:
        raise DataFileError(
            f"Cannot read Silica data file neuron/{name}: {err}.", "reinstall silica."
        ) from err


def _rows(name: str, schema: type[_Row]) -> list[Any]:
    out = []
    for i, raw in enumerate(csv.DictReader(io.StringIO(_read(name))), start=2):
        try:
            out.append(schema.model_validate(raw))
        except ValidationError as err:
            raise DataFileError(f"neuron/{name} line {i} is invalid: {err}", "fix the data file.") from err
    return out


def _yaml(name: str, schema: type[_Row]) -> Any:
    try:
        return schema.model_validate(yaml.safe_load(_read(name)))
    except (ValidationError, yaml.YAMLError) as err:
        raise DataFileError(f"neuron/{name} is invalid: {err}", "fix the data file.") from err


@cache
def knowledge() -> Knowledge:
    """Load and index every neuron data file (once per process)."""
    ops: dict[str, list[OpRow]] = {}
    for row in _rows("ops.csv", OpRow):
        ops.setdefault(row.op, []).append(row)
    for rows in ops.values():
        rows.sort(key=lambda r: r.condition != "")  # the unconditional row first
    archs: dict[str, list[ArchRow]] = {}
    for arch in _rows("architectures.csv", ArchRow):
        unknown = set(arch.pins()) - set(TARGETS)
        if unknown:
            raise DataFileError(f"neuron/architectures.csv names unknown targets {sorted(unknown)}.")
        archs.setdefault(arch.model_type, []).append(arch)
    patterns = {
        row.op.split(":", 1)[1].split(" ", 1)[0]: row
        for row in _rows("patterns.csv", OpRow)
        if row.op.startswith("pattern:")
    }
    rules: tuple[CodeRule, ...] = _yaml("code_rules.yaml", _CodeRules).rules
    effort: EffortRules = _yaml("effort.yaml", EffortRules)
    unknown_items = sorted({r.work_item for r in rules} - set(effort.work_items))
    if unknown_items or set(effort.training.targets) - set(TARGETS):
        raise DataFileError(
            f"neuron/code_rules.yaml or effort.yaml names unknown work items or targets: {unknown_items}.",
            "fix the data file.",
        )
    return Knowledge(
        ops={k: tuple(v) for k, v in ops.items()},
        dtypes={r.dtype: r for r in _rows("dtypes.csv", DtypeRow)},
        archs={k: tuple(v) for k, v in archs.items()},
        lifecycle=tuple(_rows("lifecycle.csv", LifecycleRow)),
        code_rules=rules,
        effort=effort,
        patterns=patterns,
    )
