"""Serving and training stacks (`--engine`) as the performance model sees them.

One calibration per chip family cannot be both an old vLLM and a current TensorRT-LLM: the stack
sets the launch overheads, the collectives and the attention kernels. So the calibration is fitted
per (family, stack group) where measurements exist, and an estimate names the stack it assumes.
The names, the vendor defaults (with their sources) and the inheritance rules are data
(`data/stacks.yaml`); this module only reads and checks them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from silica._yaml import safe_load
from silica.errors import DataFileError, InputError, UnknownNameError

__all__ = [
    "Stack",
    "default_stack",
    "load_stacks",
    "release_stack",
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
    # How its published "model TFLOP/s" counts attention: "causal" (half the query-key pairs, as
    # Silica's MFU does) or "full" (every pair, as NeMo's FLOPs formulas did before causal masking
    # was counted). `validate` converts its prediction to the source's count.
    attention_flops: str = "causal"
    # Serving context parallelism (`--cp` with task inference): the engine's documentation that its
    # long-prompt prefill splits over cp ranks and its decode shards the KV cache over them, with
    # its date; empty where the engine documents no such mode (`perf.kernels.prefill_seconds`).
    context_parallel: str = ""
    # Set when named with a release (`NAME@VERSION`, `resolve_stack`): the version, whether rows of
    # that release are in the calibration set, and a sentence saying which fit it takes and why.
    release: str = ""
    unmeasured_release: bool = False
    release_note: str = ""


@dataclass(frozen=True, slots=True)
class _Releases:
    """One range of an engine's releases: from `since` on (until the next range), run as `stack`."""

    since: tuple[int, ...]
    stack: str
    measured: tuple[str, ...]
    source: str


@dataclass(frozen=True, slots=True)
class _Data:
    stacks: dict[str, Stack]
    defaults: dict[tuple[str, str], tuple[str, str]]  # (vendor, task) -> (stack, source)
    sources: tuple[tuple[str, str], ...]  # (source prefix, stack)
    releases: dict[str, tuple[_Releases, ...]]  # engine -> its release ranges, oldest first


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
                attention_flops=str(e.get("attention_flops", "causal")),
                context_parallel=str(e.get("context_parallel") or ""),
            )
            for name, e in raw["engines"].items()
        }
        defaults = {
            (vendor, task): (str(d["engine"]), f"{d['source']} ({d['as_of']})")
            for vendor, tasks in raw["defaults"].items()
            for task, d in tasks.items()
        }
        sources = tuple((str(s["prefix"]), str(s["engine"])) for s in raw["sources"])
        releases = {
            str(engine): tuple(
                sorted(
                    (
                        _Releases(
                            since=_version(str(r["since"])) or (0,),
                            stack=str(r["stack"]),
                            measured=tuple(str(v) for v in r.get("measured") or ()),
                            source=str(r.get("source") or ""),
                        )
                        for r in ranges
                    ),
                    key=lambda r: r.since,
                )
            )
            for engine, ranges in (raw.get("releases") or {}).items()
        }
    except (KeyError, TypeError, AttributeError) as err:
        raise DataFileError(f"{_WHERE} is malformed: {err!r}.", "fix the file.") from err
    odd = sorted(n for n, s in stacks.items() if s.attention_flops not in ("causal", "full"))
    if odd:
        raise DataFileError(
            f"{_WHERE}: attention_flops of {', '.join(odd)} is not causal or full.", "fix the file."
        )
    named = [s.inherits for s in stacks.values() if s.inherits] + [d for d, _ in defaults.values()]
    named += [e for _, e in sources] + [r.stack for rs in releases.values() for r in rs]
    unknown = sorted({n for n in named if n not in stacks})
    if unknown:
        raise DataFileError(f"{_WHERE} names unknown stacks: {', '.join(unknown)}.", "fix the file.")
    return _Data(stacks, defaults, sources, releases)


def load_stacks() -> dict[str, Stack]:
    return _data().stacks


def context_parallel_stacks() -> tuple[str, ...]:
    """The serving stacks whose documentation describes context-parallel prefill and decode."""
    return tuple(n for n, s in _data().stacks.items() if s.context_parallel and "inference" in s.tasks)


def default_stack(vendor: str, task: str) -> tuple[Stack, str]:
    """The stack the vendor recommends today for this task, and the source that says so."""
    name, source = _data().defaults[(vendor, "training" if task == "training" else "inference")]
    return _data().stacks[name], source


def _version(text: str) -> tuple[int, ...] | None:
    """(major, minor, patch...) of "0.12", "v0.12.0" or "1.0rc2" (a pre-release counts as its release)."""
    match = re.match(r"v?(\d+(?:\.\d+)*)", text.strip().lower())
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def _release(name: str, version: str) -> Stack:
    """The stack of one release of an engine (`data/stacks.yaml` `releases`), with the rule it followed."""
    data = _data()
    ranges = data.releases.get(name)
    if not ranges:
        known = ", ".join(sorted(data.releases)) or "none"
        raise InputError(
            f"Engine {name} has no release table, so {name}@{version} cannot be told apart from {name}.",
            f"drop @{version}, or name a release of: {known}.",
        )
    wanted = _version(version)
    if wanted is None:
        raise InputError(
            f"{version!r} is not a release number.", f"pass --engine {name}@MAJOR.MINOR, e.g. @0.12."
        )
    if wanted < ranges[0].since:
        first = ".".join(map(str, ranges[0].since))
        raise InputError(
            f"{name} {version} is older than the first release Silica describes ({first}).",
            f"pass {name}@{first} or later.",
        )
    span = [r for r in ranges if r.since <= wanted][-1]
    stack = data.stacks[span.stack]

    def covers(measured: str) -> bool:
        m = _version(measured)
        return m is not None and wanted[: len(m)] == m

    measured = any(covers(v) for v in span.measured)
    since = ".".join(map(str, span.since))
    if measured:
        note = f"{name} {version}: a measured release, fitted as {stack.label} ({span.source})"
    elif span.measured:
        note = (
            f"{name} {version}: no measurements of this release; parameters of the measured releases of "
            f"its range ({', '.join(span.measured)}; from {since} on, {stack.label}: {span.source}), "
            "band widened as for an inherited family"
        )
    else:
        note = f"{name} {version}: no measurements of this release or its range ({span.source}); band widened"
    return replace(
        stack,
        label=f"{stack.label}, release {version}",
        release=version,
        unmeasured_release=not measured,
        release_note=note,
    )


def release_stack(name: str, version: str) -> str:
    """The stack one release of an engine runs as (`releases` in `data/stacks.yaml`); the engine
    itself where it has no release table."""
    if name not in _data().releases:
        return name
    return _release(name, version).name


def resolve_stack(name: str | None, vendor: str, task: str, where: str) -> Stack:
    """The named stack (or the vendor's default), refused where it cannot run or cannot do the task.

    `NAME@VERSION` names one release of an engine; it resolves by the release table
    (`data/stacks.yaml` `releases`) to the stack of that release's range (`_release`).
    """
    stacks = _data().stacks
    if name is None:
        return default_stack(vendor, task)[0]
    key = name.strip().lower()
    release: Stack | None = None
    if "@" in key:
        base, _, version = key.partition("@")
        release = _release(base.strip(), version.strip())
        key = release.name
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
    return release or stack


def stack_of_source(source: str) -> str:
    """The stack a published row was measured on, from its source's name ("" when unknown)."""
    for prefix, stack in _data().sources:
        if source.startswith(prefix):
            return stack
    return ""
