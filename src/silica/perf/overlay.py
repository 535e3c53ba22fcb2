"""A user's calibration overlay: parameters fitted on their own pilot runs, per (chip family, engine).

`silica calibrate --from-pilot` writes it (see `silica.pilot.calibrate`); the plan context
(`silica.context.plan_context`) applies it on top of the shipped calibration at the edge, so
`estimate`, `compare`, `advise` and `fleet` all use it, each result that does names it in its
calibration note and its settings, and no plan function reads it behind its caller's back. The overlay holds
parameters only, each inside `PARAM_BOUNDS`, and each entry's own p10-p90 band per metric (from the
fit's residuals; it replaces the published family's band wherever the entry applies); never a
measured figure.

Where it lives: `SILICA_CALIBRATION_OVERLAY`, else `calibration-overlay.json` in Silica's data
directory (XDG on Linux). No file: no overlay.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from silica.errors import DataFileError
from silica.perf.calibration import PARAM_BOUNDS, PARAM_NAMES, Calibration, FamilyParams, Overlay

__all__ = ["OVERLAY_SCHEMA", "overlay_path", "with_user_overlay", "without_user_overlay"]

OVERLAY_SCHEMA = "silica.calibration_overlay/1"
_cache: dict[tuple[str, float], list[dict[str, Any]]] = {}


def overlay_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user's overlay lives (it need not exist): `SILICA_CALIBRATION_OVERLAY`, else the data dir."""
    from silica._files import env_value

    explicit = env_value("SILICA_CALIBRATION_OVERLAY", environ)
    if explicit:
        return Path(explicit).expanduser()
    from silica.paths import data_dir  # light: the core install has no store

    return data_dir() / "calibration-overlay.json"


def read_overlay(path: Path) -> list[dict[str, Any]]:
    """The overlay's entries, checked: known families' parameters inside their bounds."""
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError:
        return []
    if key in _cache:
        return _cache[key]
    from silica._files import parse_json, read_text

    raw = parse_json(read_text(path, "calibration overlay"), path, "a calibration overlay JSON file")
    try:
        if raw.get("schema") != OVERLAY_SCHEMA:
            raise ValueError(f"schema is {raw.get('schema')!r}")
        entries = list(raw["entries"])
        for e in entries:
            for name, value in e["params"].items():
                lo, hi = PARAM_BOUNDS[name]
                if not lo <= float(value) <= hi:
                    raise ValueError(f"{name}={value} is outside its bounds [{lo}, {hi}]")
            for metric, band in (e.get("bands") or {}).items():
                lo, hi = (float(v) for v in band)
                if not (0 < lo <= 1 <= hi < math.inf):
                    raise ValueError(f"band {metric}={band} is not a p10-p90 ratio pair around 1")
            str(e["family"]), str(e["engine"]), str(e["label"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise DataFileError(
            f"Calibration overlay {path} is invalid: {err}.",
            "rewrite it with `silica calibrate --from-pilot`, or delete it.",
        ) from err
    _cache[key] = entries
    return entries


def with_user_overlay(cal: Calibration, path: Path) -> Calibration:
    """The calibration with the user's overlay beside it, per (family, engine).

    Kept beside the shipped parameters, not in them (`overlay_params["hopper/vllm"]`): a target
    takes an entry only for its own chip family and engine; every other pair, and a family that
    inherits from an overlaid one, keeps the shipped parameters.
    """
    entries = read_overlay(path)
    if not entries or cal.overlay is not None:
        return cal
    params: dict[str, FamilyParams] = {}
    labels: dict[str, str] = {}
    bands: dict[str, dict[str, tuple[float, float]]] = {}
    for e in entries:
        family, engine = str(e["family"]), str(e["engine"])
        base = cal.resolve(family, engine).params
        moved = {n: float(v) for n, v in e["params"].items() if n in PARAM_NAMES}
        params[f"{family}/{engine}"] = replace(base, **moved)
        labels[f"{family}/{engine}"] = str(e["label"])
        bands[f"{family}/{engine}"] = {
            str(m): (float(b[0]), float(b[1])) for m, b in (e.get("bands") or {}).items()
        }
    return replace(cal, overlay=Overlay(labels=labels, params=params, bands=bands))


def without_user_overlay(cal: Calibration) -> Calibration:
    """A calibration the overlay will not be applied to (fitting a new overlay starts from the shipped one)."""
    return replace(cal, overlay=Overlay())
