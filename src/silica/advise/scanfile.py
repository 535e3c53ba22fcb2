"""Read the JSON that `silica scan --json` prints, without importing the scanner.

The advisor only needs the verdict per Neuron target, the effort in weeks and which operators are not
supported (those keep a GPU fallback). Reading the file format, not the module, keeps the advisor
working where the scan extra (torch, transformers) is not installed.

A model scan that failed (the factory raised, transformers rejected the config or does not know the
architecture, the model could not be built or traced) still prints verdicts, but they describe the
failure, not the model: `ScanSummary.failed` says so, and the advisor does not read such a scan as a
migration estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from silica.errors import DataFileError

__all__ = ["SCAN_TARGETS", "ScanSummary", "read_scan"]

SCAN_TARGETS = ("inferentia2", "trainium1", "trainium2", "trainium3")
_VERDICTS = ("ready", "needs-work", "blocked")
# `silica scan` reports a model it could not build or trace with this finding title (scan/model_scan.py)
# and traces nothing: method "none".
_FAILED_TITLE = "model could not be scanned"


@dataclass(frozen=True)
class ScanSummary:
    path: Path
    target_verdicts: dict[str, str]
    effort_weeks: float
    target_effort_weeks: dict[str, float]  # per target where the scan gives it
    unsupported_ops: tuple[str, ...]  # ops the scan marks unsupported: they run on a GPU fallback
    raw: dict[str, Any] = field(repr=False)
    failed: str | None = None  # why the scan is not an estimate of the model (it failed); None when it ran

    @property
    def name(self) -> str:
        return self.path.name

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
            "failed": self.failed,
        }


def read_scan(path: Path) -> ScanSummary:
    fix = "point `scan:` at the output of `silica scan ... --json`."
    from silica._files import parse_json, read_text

    try:  # size, file kind, UTF-8, NaN, integer digits and nesting: one line each
        data = parse_json(read_text(path, "scan file", "the output of `silica scan --json`"), path)
    except DataFileError as err:
        problem = err.problem
        if problem.startswith("Cannot read "):
            problem = "Cannot read scan file " + problem.removeprefix("Cannot read ")
        else:
            problem = f"Scan file {problem}"
        raise DataFileError(problem, fix) from None
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
    if not _weeks(effort):
        raise DataFileError(f"Scan file {path}: effort_weeks must be a number of weeks >= 0.", fix)
    per_target: dict[str, float] = {}
    targets = data.get("targets")
    for target, detail in (targets if isinstance(targets, dict) else {}).items():
        weeks = detail.get("effort_weeks") if isinstance(detail, dict) else None
        if _weeks(weeks):
            per_target[str(target)] = float(weeks)
    ops = data.get("ops")
    unsupported = tuple(
        str(op.get("op"))
        for op in (ops if isinstance(ops, list) else [])
        if isinstance(op, dict) and op.get("status") == "unsupported"
    )
    return ScanSummary(
        path=path,
        target_verdicts={str(k): str(v) for k, v in verdicts.items()},
        effort_weeks=float(effort),
        target_effort_weeks=per_target,
        unsupported_ops=unsupported,
        raw=data,
        failed=_failure(data),
    )


def _weeks(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < math.inf


def _failure(data: dict[str, Any]) -> str | None:
    """Why a model scan did not scan the model, from its failure findings; None when it ran."""
    findings = data.get("findings")
    failures = [
        f
        for f in (findings if isinstance(findings, list) else [])
        if isinstance(f, dict) and f.get("title") == _FAILED_TITLE
    ]
    if failures:
        first = failures[0]
        message = str(first.get("message", "no message"))
        if len(message) > 160:
            message = message[:159] + "…"
        return f"{first.get('rule', 'scan-failure')}: {message}"
    if data.get("kind", "model") == "model" and data.get("method") == "none":
        return "nothing was traced (method none)"
    return None
