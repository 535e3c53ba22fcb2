"""Serving engines a pilot can launch: image, command and the flag for each layout choice, as data.

The flags live in `data/pilot/engines.yaml` with the documentation page each was read from, so a
kit never carries a flag the engine's CLI does not document, and a changed CLI is one data edit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from silica.errors import DataFileError, InputError, UnknownNameError

__all__ = ["Engine", "default_engine", "engine_for", "load_engines"]

_LAYOUT = ("tp", "batch", "max_len", "dtype", "port", "host")
_FIELDS = {
    "vendor",
    "label",
    "image",
    "images",
    "env",
    "command",
    "flags",
    "dtype_names",
    "source",
    "as_of",
    "ami",
    "capabilities",
}


@dataclass(frozen=True, slots=True)
class Engine:
    name: str
    vendor: str  # "nvidia" or "aws" (Neuron)
    label: str
    image: str
    command: str  # with {model}
    flags: dict[str, str]
    dtype_names: dict[str, str]
    source: str
    as_of: str
    ami: str | None = None
    # Per chip (Neuron: a DLC per chip generation): the pinned image and the environment it needs.
    images: dict[str, str] = field(default_factory=dict)
    env: dict[str, dict[str, str]] = field(default_factory=dict)
    # Linux capabilities the container needs (`docker run --cap-add`, a pod's securityContext), as
    # the engine's own container quickstart runs it; empty where it asks for none.
    capabilities: tuple[str, ...] = ()

    def image_for(self, chip: str) -> str:
        """The image pinned for this chip, else the engine's image."""
        return self.images.get(chip, self.image)

    def env_for(self, chip: str) -> dict[str, str]:
        """Environment variables the engine's documentation requires on this chip."""
        return dict(self.env.get(chip, {}))

    def launch_args(
        self, model: str, *, tp: int, batch: int, max_len: int, dtype: str, port: int
    ) -> list[str]:
        """The server command line for this layout, one flag per choice the engine exposes."""
        # Split the template first, then fill each word: a model name is one argument whatever it holds
        # (`x; touch PWNED $(id)` must not become four shell words).
        args = [word.replace("{model}", model) for word in self.command.split()]
        values: dict[str, str] = {
            "tp": str(tp),
            "batch": str(batch),
            "max_len": str(max_len),
            "port": str(port),
            "host": "0.0.0.0",
        }
        if dtype in self.dtype_names:
            values["dtype"] = self.dtype_names[dtype]
        for key in _LAYOUT:
            if key in self.flags and key in values:
                args += [self.flags[key], values[key]]
        return args


@lru_cache(maxsize=1)
def load_engines() -> dict[str, Engine]:
    where = "data/pilot/engines.yaml"
    raw: Any = yaml.safe_load(resources.files("silica").joinpath(where).read_text())
    out: dict[str, Engine] = {}
    for name, e in (raw.get("engines") or {}).items():
        unknown = set(e) - _FIELDS
        if unknown:
            raise DataFileError(
                f"{where}: engine {name} has unknown fields {sorted(unknown)}.", "fix the file."
            )
        try:
            out[name] = Engine(
                name=name,
                vendor=str(e["vendor"]),
                label=str(e["label"]),
                image=str(e["image"]),
                command=str(e["command"]),
                flags={str(k): str(v) for k, v in e["flags"].items()},
                dtype_names={str(k): str(v) for k, v in (e.get("dtype_names") or {}).items()},
                source=str(e["source"]),
                as_of=str(e["as_of"]),
                ami=e.get("ami"),
                images={str(k): str(v) for k, v in (e.get("images") or {}).items()},
                env={
                    str(c): {str(k): str(v) for k, v in vs.items()} for c, vs in (e.get("env") or {}).items()
                },
                capabilities=tuple(str(c) for c in e.get("capabilities") or ()),
            )
        except KeyError as err:
            raise DataFileError(f"{where}: engine {name} lacks {err}.", "fix the file.") from err
    return out


def default_engine(vendor: str) -> str:
    """vLLM is the engine both vendors document first for OpenAI-compatible serving."""
    return "vllm-neuron" if vendor == "aws" else "vllm"


def engine_for(name: str | None, vendor: str, instance: str) -> Engine:
    """The named engine (or the vendor's default), refused where it cannot run on this instance."""
    engines = load_engines()
    chosen = name or default_engine(vendor)
    if chosen not in engines:
        raise UnknownNameError("engine", chosen, engines, "pass --engine with one of the names listed.")
    engine = engines[chosen]
    if engine.vendor != vendor:
        fits = sorted(n for n, e in engines.items() if e.vendor == vendor)
        raise InputError(
            f"Engine {chosen} does not run on {instance} ({'Neuron' if vendor == 'aws' else 'NVIDIA'}).",
            f"pass --engine with one of {', '.join(fits)}.",
        )
    return engine
