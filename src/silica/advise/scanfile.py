"""Read the JSON that `silica scan --json` prints, without importing the scanner.

The advisor only needs the verdict per Neuron target, the effort in weeks and which operators are not
supported (those keep a GPU fallback). Reading the file format, not the module, keeps the advisor
working where the scan extra (torch, transformers) is not installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from silica.errors import DataFileError

__all__ = ["SCAN_TARGETS", "ScanSummary", "read_scan"]

SCAN_TARGETS = ("inferentia2", "trainium1", "trainium2", "trainium3")
_VERDICTS = ("ready", "needs-work", "blocked")


@dataclass(frozen=True)
class ScanSummary:
    path: Path
    target_verdicts: dict[str, str]
    effort_weeks: float
    target_effort_weeks: dict[str, float]  # per target where the scan gives it
    unsupported_ops: tuple[str, ...]  # ops the scan marks unsupported: they run on a GPU fallback
    raw: dict[str, Any] = field(repr=False)

    def verdict(self, chip: str) -> str | None:
        """The scan's verdict for a catalog chip id (the scan's targets are chip ids)."""
        return self.target_verdicts.get(chip)

    def effort(self, chip: str) -> float:
        return self.target_effort_weeks.get(chip, self.effort_weeks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "target_verdicts": dict(self.target_verdicts),
            "effort_weeks": self.effort_weeks,
            "target_effort_weeks": dict(self.target_effort_weeks),
            "unsupported_ops": list(self.unsupported_ops),
        }


def read_scan(path: Path) -> ScanSummary:
    fix = "point `scan:` at the output of `silica scan ... --json`."
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise DataFileError(f"Cannot read scan file {path}: {err.strerror}.", fix) from None
    except json.JSONDecodeError as err:
        raise DataFileError(
            f"Scan file {path}, line {err.lineno}: not valid JSON ({err.msg}).", fix
        ) from None
    if not isinstance(data, dict):
        raise DataFileError(f"Scan file {path} is not a JSON object.", fix)
    verdicts = data.get("target_verdicts")
    if not isinstance(verdicts, dict) or not verdicts:
        raise DataFileError(f"Scan file {path} has no `target_verdicts` object.", fix)
    for target, verdict in verdicts.items():
        if target not in SCAN_TARGETS or verdict not in _VERDICTS:
            raise DataFileError(
                f"Scan file {path}: target_verdicts has {target!r}: {verdict!r}.",
                f"targets are {', '.join(SCAN_TARGETS)}; verdicts are {', '.join(_VERDICTS)}.",
            )
    effort = data.get("effort_weeks")
    if not isinstance(effort, int | float) or isinstance(effort, bool) or effort < 0:
        raise DataFileError(f"Scan file {path}: effort_weeks must be a number of weeks >= 0.", fix)
    per_target: dict[str, float] = {}
    for target, detail in (data.get("targets") or {}).items():
        weeks = detail.get("effort_weeks") if isinstance(detail, dict) else None
        if isinstance(weeks, int | float) and not isinstance(weeks, bool) and weeks >= 0:
            per_target[str(target)] = float(weeks)
    unsupported = tuple(
        str(op.get("op"))
        for op in data.get("ops") or []
        if isinstance(op, dict) and op.get("status") == "unsupported"
    )
    return ScanSummary(
        path=path,
        target_verdicts={str(k): str(v) for k, v in verdicts.items()},
        effort_weeks=float(effort),
        target_effort_weeks=per_target,
        unsupported_ops=unsupported,
        raw=data,
    )
