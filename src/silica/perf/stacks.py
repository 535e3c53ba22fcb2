"""Serving and training stacks (`--engine`) as the performance model sees them.

One calibration per chip family cannot be both an old vLLM and a current TensorRT-LLM: the stack
sets the launch overheads, the collectives and the attention kernels. So the calibration is fitted
per (family, stack group) where measurements exist, and an estimate names the stack it assumes.
The names, the vendor defaults (with their sources) and the inheritance rules are data
(`data/stacks.yaml`); this module only reads and checks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from silica._yaml import safe_load
from silica.errors import DataFileError, InputError, UnknownNameError

__all__ = [
    "Stack",
    "default_stack",
    "load_stacks",
    "resolve_stack",
    "stack_of_source",
]

_WHERE = "data/stacks.yaml"


@dataclass(frozen=True, slots=True)
class Stack:
    name: str
    vendor: str  # "nvidia" or "aws"
    tasks: tuple[str, ...]
    label: str
    group: str  # stacks fitted together: one code base under several names
    inherits: str | None  # the stack an unmeasured one takes its parameters from
    why: str
    balanced_benchmarks: bool = False  # its published MoE runs force-balance expert routing


@dataclass(frozen=True, slots=True)
class _Data:
    stacks: dict[str, Stack]
    defaults: dict[tuple[str, str], tuple[str, str]]  # (vendor, task) -> (stack, source)
    sources: tuple[tuple[str, str], ...]  # (source prefix, stack)


@lru_cache(maxsize=1)
def _data() -> _Data:
    raw: Any = safe_load(resources.files("silica").joinpath(_WHERE).read_text())
    try:
        stacks = {
            name: Stack(
                name=name,
                vendor=str(e["vendor"]),
                tasks=tuple(str(t) for t in e["tasks"]),
                label=str(e["label"]),
                group=str(e.get("group") or name),
                inherits=e.get("inherits"),
                why=str(e.get("why") or ""),
                balanced_benchmarks=bool(e.get("balanced_benchmarks", False)),
            )
            for name, e in raw["engines"].items()
        }
        defaults = {
            (vendor, task): (str(d["engine"]), f"{d['source']} ({d['as_of']})")
            for vendor, tasks in raw["defaults"].items()
            for task, d in tasks.items()
        }
        sources = tuple((str(s["prefix"]), str(s["engine"])) for s in raw["sources"])
    except (KeyError, TypeError, AttributeError) as err:
        raise DataFileError(f"{_WHERE} is malformed: {err!r}.", "fix the file.") from err
    named = [s.inherits for s in stacks.values() if s.inherits] + [d for d, _ in defaults.values()]
    named += [e for _, e in sources]
    unknown = sorted({n for n in named if n not in stacks})
    if unknown:
        raise DataFileError(f"{_WHERE} names unknown stacks: {', '.join(unknown)}.", "fix the file.")
    return _Data(stacks, defaults, sources)


def load_stacks() -> dict[str, Stack]:
    return _data().stacks


def default_stack(vendor: str, task: str) -> tuple[Stack, str]:
    """The stack the vendor recommends today for this task, and the source that says so."""
    name, source = _data().defaults[(vendor, "training" if task == "training" else "inference")]
    return _data().stacks[name], source


def resolve_stack(name: str | None, vendor: str, task: str, where: str) -> Stack:
    """The named stack (or the vendor's default), refused where it cannot run or cannot do the task."""
    stacks = _data().stacks
    if name is None:
        return default_stack(vendor, task)[0]
    key = name.strip().lower()
    if key not in stacks:
        raise UnknownNameError("engine", name, stacks, "pass --engine with one of the names listed.")
    stack = stacks[key]
    kind = "training" if task == "training" else "inference"
    if stack.vendor != vendor or kind not in stack.tasks:
        fits = sorted(n for n, s in stacks.items() if s.vendor == vendor and kind in s.tasks)
        chips = "Neuron" if vendor == "aws" else "NVIDIA"
        raise InputError(
            f"Engine {key} ({stack.label}) does not run {kind} on {where} ({chips}).",
            f"pass --engine with one of {', '.join(fits)}, or leave it out for the vendor's default.",
        )
    return stack


def stack_of_source(source: str) -> str:
    """The stack a published row was measured on, from its source's name ("" when unknown)."""
    for prefix, stack in _data().sources:
        if source.startswith(prefix):
            return stack
    return ""
