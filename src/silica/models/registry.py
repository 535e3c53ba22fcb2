"""Bundled model configs and local config.json files, loaded on demand into `ModelSpec`s.

Bundled configs sit in `silica/data/models/<id>.json`: `_source` inside each says where its values
were read, and `PROVENANCE.csv` beside them gives when they were collected and how well they are
confirmed. Nothing is read at import time; each bundled model is parsed once per process.
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from silica.errors import DataFileError, UnknownNameError
from silica.models.parse import parse_config
from silica.models.spec import ModelSpec

__all__ = ["config_path", "list_models", "load_config", "load_model", "unknown_model"]

_DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "models"
_PROVENANCE = _DATA_DIR / "PROVENANCE.csv"
_PROVENANCE_COLUMNS = ["id", "as_of", "confidence"]
_CONFIDENCE = ("exact", "cross-checked", "approximate")  # the levels of reference/model_configs/INDEX.md
_AS_OF = re.compile(r"\d{4}-\d{2}(-\d{2})?")  # YYYY-MM or YYYY-MM-DD


class _Provenance(NamedTuple):
    as_of: str
    confidence: str


def list_models() -> list[str]:
    """Ids of the bundled models, sorted."""
    return list(_bundled_ids())


def config_path(model_id: str) -> Path:
    """Where a bundled model's config.json lives (for showing it or copying it as a template)."""
    if model_id not in _bundled_ids():
        raise unknown_model(model_id)
    return _DATA_DIR / f"{model_id}.json"


def load_config(name_or_path: str) -> dict[str, Any]:
    """The raw config object of a bundled id, or of a local config.json (or a folder holding one)."""
    return _read_json(_locate(name_or_path))


def load_model(name_or_path: str) -> ModelSpec:
    """A bundled id (parsed once, then cached), a local config.json (its id is the file stem), or a
    Hugging Face repo id (`meta-llama/Llama-3.1-8B`) whose config.json is in the local HF cache."""
    if name_or_path in _bundled_ids():
        return _load_bundled(name_or_path)
    path = _locate(name_or_path)
    config = _read_json(path)
    # A local file's own `_source` wins; otherwise the file is the source. Local files are not
    # cached: the user may be editing them between calls.
    model_id = _local_id(path)
    source = str(path)
    if "/" in model_id:  # from the Hugging Face cache: name the repo and the revision, not a cache path
        source = f"Hugging Face {model_id} config.json, revision {path.parent.name} (local cache)"
    return parse_config(config, model_id, source="" if "_source" in config else source)


@functools.cache
def _bundled_ids() -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in _DATA_DIR.glob("*.json")))


@functools.cache  # = lru_cache(maxsize=None); bundled ids are few and fixed
def _load_bundled(model_id: str) -> ModelSpec:
    config = _read_json(_DATA_DIR / f"{model_id}.json")
    provenance = _provenance().get(model_id)
    if provenance is None:
        raise DataFileError(
            f"Bundled model {model_id!r} has no row in {_PROVENANCE.name}.",
            f"add `{model_id},<YYYY-MM collected>,<{'|'.join(_CONFIDENCE)}>` to {_PROVENANCE}.",
        )
    source = config.get("_source")
    if not isinstance(source, str) or not source.strip():
        raise DataFileError(
            f"Bundled model {model_id!r} has no `_source`.",
            f"add a `_source` string (where the values were read) to {_DATA_DIR / model_id}.json.",
        )
    spec = parse_config(config, model_id, source=source, as_of=provenance.as_of)
    return replace(spec, notes=(*spec.notes, f"confidence: {provenance.confidence}"))


@functools.cache
def _provenance() -> dict[str, _Provenance]:
    """PROVENANCE.csv rows by id; a malformed row fails naming its line."""
    try:
        with _PROVENANCE.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != _PROVENANCE_COLUMNS:
                raise DataFileError(
                    f"{_PROVENANCE} has columns {reader.fieldnames}, not {_PROVENANCE_COLUMNS}.",
                    f"make the header line `{','.join(_PROVENANCE_COLUMNS)}`.",
                )
            rows: dict[str, _Provenance] = {}
            for row in reader:
                where = f"{_PROVENANCE.name} line {reader.line_num}"
                model_id, as_of, confidence = row["id"], row["as_of"], row["confidence"]
                if not model_id or model_id in rows:
                    raise DataFileError(
                        f"{where}: id {model_id!r} is empty or repeated.", "keep one row per id."
                    )
                if not as_of or not _AS_OF.fullmatch(as_of):
                    raise DataFileError(f"{where}: as_of {as_of!r} is not a date.", "write it as YYYY-MM.")
                if confidence not in _CONFIDENCE:
                    raise DataFileError(
                        f"{where}: confidence {confidence!r} is not a known level.",
                        f"use one of {', '.join(_CONFIDENCE)}.",
                    )
                rows[model_id] = _Provenance(as_of, confidence)
            return rows
    except OSError as err:
        raise DataFileError(f"Cannot read {_PROVENANCE}: {err.strerror}.", "reinstall silica.") from err


# A Hugging Face repo id: "org/name", no path separators beyond the one slash, no file suffix.
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


def _locate(name_or_path: str) -> Path:
    if name_or_path in _bundled_ids():
        return _DATA_DIR / f"{name_or_path}.json"
    path = Path(name_or_path).expanduser()
    if _REPO_ID.fullmatch(name_or_path) and not path.exists() and path.suffix != ".json":
        return _from_hub_cache(name_or_path)
    if path.suffix != ".json" and len(path.parts) < 2 and not path.exists():
        raise unknown_model(name_or_path)  # a bare word: a misspelt id, not a path
    if path.is_dir() and (path / "config.json").is_file():
        path = path / "config.json"  # a Hugging Face model folder
    if not path.is_file():
        raise DataFileError(
            f"Model config {str(path)!r} is not a file.",
            "pass the path of a config.json (or of the folder holding it), or a bundled model id.",
        )
    return path


def _from_hub_cache(repo_id: str) -> Path:
    """A repo id's config.json from the local Hugging Face cache (HF_HUB_CACHE / HF_HOME), offline.

    Nothing is downloaded unless the user opts in with SILICA_HF_DOWNLOAD=1: Silica must work on a
    machine with no network, and a model hub is not a dependency of an estimate. Only config.json is
    ever fetched, never weights.
    """
    import os

    try:
        from huggingface_hub import hf_hub_download, try_to_load_from_cache
    except ImportError:
        raise DataFileError(
            f"{repo_id!r} looks like a Hugging Face repo id, but huggingface_hub is not installed.",
            "pip install 'silica[hub]', or pass the path of the model's config.json.",
        ) from None
    # Read the cache location now, not when huggingface_hub was first imported (it caches env at import).
    cache_dir = os.environ.get("HF_HUB_CACHE") or (
        str(Path(os.environ["HF_HOME"]) / "hub") if os.environ.get("HF_HOME") else None
    )
    cached = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir)
    if isinstance(cached, str) and Path(cached).is_file():
        return Path(cached)
    from silica._files import env_value

    if env_value("SILICA_HF_DOWNLOAD") == "1":
        try:
            return Path(hf_hub_download(repo_id, "config.json", cache_dir=cache_dir))
        except Exception as err:  # network, auth (gated repos), missing repo: all one line
            reason = " ".join(str(err).split())[:200]
            raise DataFileError(
                f"Cannot download config.json of {repo_id!r}: {reason}.",
                "check the repo id and your network/token (HF_TOKEN), or pass a local config.json.",
            ) from None
    raise DataFileError(
        f"{repo_id!r} is not a bundled model and its config.json is not in the local Hugging Face cache.",
        f"run `huggingface-cli download {repo_id} config.json` (or set SILICA_HF_DOWNLOAD=1 to let "
        "Silica fetch config.json only), or pass the path of a config.json.",
    )


def _local_id(path: Path) -> str:
    """The file stem; for a Hugging Face folder's `config.json`, the folder's name; for a file in the
    Hugging Face cache (.../models--org--name/snapshots/REV/config.json), the repo id org/name."""
    parts = path.parts
    if path.name == "config.json" and len(parts) >= 4 and parts[-3] == "snapshots":
        repo = parts[-4]
        if repo.startswith("models--"):
            return repo[len("models--") :].replace("--", "/")
    return path.parent.name if path.name == "config.json" and path.parent.name else path.stem


def _read_json(path: Path) -> dict[str, Any]:
    from silica._files import parse_json, read_text

    # size limit, binary and non-UTF-8 files, NaN and nesting beyond any real config: one line each
    value = parse_json(
        read_text(path, "config.json", "a Hugging Face config.json"), path, "a Hugging Face config.json"
    )
    if not isinstance(value, dict):
        raise DataFileError(
            f"{path} holds a JSON {type(value).__name__}, not an object.",
            "pass a Hugging Face config.json, whose top level is an object {...}.",
        )
    return value


def unknown_model(name: str) -> UnknownNameError:
    """The error for a model name that is neither bundled nor a file: the registry's one wording, which
    the CLI and the HTTP API both show, with the closest bundled ids."""
    return UnknownNameError(
        "model",
        name,
        _bundled_ids(),
        fix="pass a bundled id (silica.models.list_models()) or the path of a config.json.",
    )
