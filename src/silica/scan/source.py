"""What `silica scan` was pointed at: a registry model id, a config.json, a Python factory or a directory.

This module reads files and JSON only; it never imports torch and never runs user code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from silica.errors import DataFileError, InputError, UnknownNameError

__all__ = ["ModelSource", "bundled_model_ids", "load_registry_config", "resolve"]

_FACTORY = re.compile(r"^(?P<path>.+\.py):(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
# Layer counts as Hugging Face configs name them; a model with none is not a model (issue 15).
_LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "encoder_layers", "decoder_layers")
_FIX = "pass a registry model id (silica.models.list_models()), a config.json path, or FILE.py:FACTORY."


@dataclass(frozen=True)
class ModelSource:
    kind: Literal["registry", "config", "factory", "code"]
    subject: str
    config: dict[str, Any] = field(default_factory=dict)  # Hugging Face config values, `_`-keys removed
    path: Path | None = None
    factory: str = ""


def bundled_model_ids() -> list[str]:
    folder = resources.files("silica").joinpath("data", "models")
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def _clean(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise DataFileError(f"{where} is not a JSON object.", "pass a Hugging Face config.json.")
    config = {k: v for k, v in raw.items() if not str(k).startswith("_")}
    if not isinstance(config.get("model_type"), str):
        raise DataFileError(
            f"{where} has no model_type.", 'add "model_type" (e.g. "llama") as in a Hugging Face config.json.'
        )
    for sub in (config, config.get("text_config")):
        for key in _LAYER_KEYS:
            value = sub.get(key) if isinstance(sub, dict) else None
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise DataFileError(
                    f"{where} has {key}: {value!r}; a model needs at least one layer.",
                    f"set {key} to the model's layer count (a whole number >= 1).",
                )
    return config


def load_registry_config(name: str) -> dict[str, Any]:
    """A bundled config by id: through `silica.models.load_config` when that exists, else the JSON file."""
    try:
        from silica import models

        loader = getattr(models, "load_config", None)
    except ImportError:  # pragma: no cover - the models package ships with silica
        loader = None
    if callable(loader):
        raw = loader(name)
    else:
        known = bundled_model_ids()
        if name not in known:
            raise UnknownNameError("model", name, known, _FIX)
        text = (
            resources.files("silica").joinpath("data", "models", f"{name}.json").read_text(encoding="utf-8")
        )
        raw = json.loads(text)
    return _clean(raw, f"model {name!r}")


def _read_config(path: Path) -> dict[str, Any]:
    from silica._files import parse_json, read_text

    # size, binary, UTF-8 and nesting limits: one line each (100,000-deep JSON was a RecursionError)
    raw = parse_json(
        read_text(path, "config.json", "a Hugging Face config.json"), path, "a Hugging Face config.json"
    )
    return _clean(raw, str(path))


def _refuse_odd_kind(path: Path) -> None:
    """A FIFO, device or socket named as the subject is refused by its kind (it exists; it is just
    not something to scan), and an over-long path in one line."""
    from silica._files import file_kind

    kind = file_kind(path)
    if kind in ("fifo", "character device", "block device", "socket", "other"):
        raise InputError(f"{path} is a {kind}, not a model config, a Python file or a folder.", _FIX)


def resolve(subject: str) -> ModelSource:
    """Decide what `subject` names. Bad paths and unknown ids raise `InputError` subclasses."""
    if not subject.strip():  # Path("") is the current folder: never scan it by accident
        raise InputError(
            "The scan subject is empty.", "pass a MODEL_ID, a config.json, FILE.py:NAME or a DIR."
        )
    m = _FACTORY.match(subject)
    if m:
        path = Path(m["path"])
        _refuse_odd_kind(path)
        if not path.is_file():
            raise InputError(
                f"Factory file {path} does not exist.", "pass FILE.py:FACTORY with an existing file."
            )
        return ModelSource("factory", subject, path=path, factory=m["name"])
    path = Path(subject)
    _refuse_odd_kind(path)
    if path.is_dir():
        return ModelSource("code", subject, path=path)
    if path.is_file() and path.suffix == ".py":
        raise InputError(
            f"{subject} is a Python file, but which model in it should be scanned?",
            f"pass {subject}:NAME, NAME being an nn.Module class or a function that returns one.",
        )
    if path.is_file():
        if path.suffix == ".py":
            raise InputError(
                f"{subject} is a Python file, not a model config.",
                f"pass {subject}:NAME, where NAME() returns (module, example_inputs), or the folder that "
                "holds it to scan it as code.",
            )
        return ModelSource("config", subject, _read_config(path), path=path)
    if subject.endswith((".json", ".py")) or "/" in subject:
        raise InputError(f"{subject} does not exist.", _FIX)
    return ModelSource("registry", subject, load_registry_config(subject))
