"""Synthetic repositories for the readiness rule tests: write a few files, scan them, read back where
a rule fired. One home for what every round's test file (test_readiness_*.py) needs."""

from __future__ import annotations

from pathlib import Path

from silica.scan import ScanReport, scan_code


def scan_files(root: Path, files: dict[str, str], task: str = "training") -> ScanReport:
    """Write `files` (relative path -> text) under `root` and scan it as a repository."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return scan_code(root, task=task)  # type: ignore[arg-type]


def locations(report: ScanReport, rule: str, *, info: bool = True) -> list[str]:
    """`file:line` of each finding of `rule`; `info=False` leaves out findings that are only
    informational on Trainium2 (a CUDA line on an existing Neuron path, a declaration)."""
    return [
        f.location for f in report.findings if f.rule == rule and (info or f.impact["trainium2"] != "info")
    ]
