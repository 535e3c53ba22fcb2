"""Neuron readiness: can this model or code base run on Inferentia2, Trainium1, Trainium2 or Trainium3?

    scan_model("llama-3.1-8b")          # registry id, config.json path, or FILE.py:FACTORY
    scan_code("path/to/repo", task="training")  # static analysis; never imports the repository

Both return a `ScanReport`: per-target verdicts (ready, needs-work, blocked) with blockers, a CPU-fallback
plan and an effort estimate, the operators with their Neuron status and source, and file:line findings.
torch and transformers (the `scan` extra) are needed for model scans only, and load inside the calls.
"""

from __future__ import annotations

from silica.scan.code_scan import scan_code
from silica.scan.knowledge import TASKS, Knowledge, Task, knowledge
from silica.scan.model_scan import scan_model
from silica.scan.report import (
    TARGETS,
    VERDICTS,
    FallbackPlan,
    Finding,
    OpUse,
    ScanReport,
    TargetVerdict,
    WorkItemEffort,
)

__all__ = [
    "TARGETS",
    "TASKS",
    "VERDICTS",
    "FallbackPlan",
    "Finding",
    "Knowledge",
    "OpUse",
    "ScanReport",
    "TargetVerdict",
    "Task",
    "WorkItemEffort",
    "knowledge",
    "scan",
    "scan_code",
    "scan_model",
]


def scan(subject: str, *, layers: int = 2, task: Task = "inference") -> ScanReport:
    """One front door: a directory is a code scan, anything else a model scan; for inference or training."""
    from silica.limits import check
    from silica.scan.model_scan import scan_source
    from silica.scan.source import resolve

    check("layers", layers, "layers")  # the library's callers are held to the same range
    source = resolve(subject)
    if source.kind == "code":
        return scan_code(subject, task=task)
    return scan_source(source, layers=layers, task=task)
