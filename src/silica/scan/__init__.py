"""Neuron readiness: can this model or code base run on Inferentia2, Trainium1, Trainium2 or Trainium3?

    scan_model("llama-3.1-8b")          # registry id, config.json path, or FILE.py:FACTORY
    scan_code("path/to/repo", task="training")  # static analysis; never imports the repository

Both return a `ScanReport`: per-target verdicts (ready, needs-work, blocked) with blockers, a CPU-fallback
plan and an effort estimate, the operators with their Neuron status and source, and file:line findings.
torch and transformers (the `scan` extra) are needed for model scans only, and load inside the calls.
"""

from __future__ import annotations

from silica.errors import InputError
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
    "scan_with_model",
]


def scan(subject: str, *, layers: int = 2, task: Task = "inference", model: str | None = None) -> ScanReport:
    """One front door: a directory is a code scan, anything else a model scan; for inference or training.
    With `model`, a directory and the model it loads are scanned both ways and judged as one port."""
    from silica.limits import check
    from silica.scan.model_scan import scan_source
    from silica.scan.source import resolve

    check("layers", layers, "layers")  # the library's callers are held to the same range
    source = resolve(subject)
    if model is not None:
        if source.kind != "code":
            raise InputError(
                f"--model goes with a repository, and {subject} is not a directory.",
                "pass the repository folder as SUBJECT and the model it loads as --model.",
            )
        return scan_with_model(subject, model, layers=layers, task=task)
    if source.kind == "code":
        return scan_code(subject, task=task)
    return scan_source(source, layers=layers, task=task)


def scan_with_model(directory: str, model: str, *, layers: int = 2, task: Task = "inference") -> ScanReport:
    """A repository and the model it loads (a registry id, config.json or FILE.py:FACTORY), scanned as code
    and as a model, with one verdict and one effort per target (`silica.scan.verdict.combine`)."""
    from silica.scan.model_scan import scan_source
    from silica.scan.source import resolve
    from silica.scan.verdict import combine

    source = resolve(model)  # bad input fails before either scan runs
    if source.kind == "code":
        raise InputError(
            f"--model {model} is a directory.", "pass a model id, a config.json or file.py:NAME."
        )
    code = scan_code(directory, task=task)
    return combine(knowledge(), code, scan_source(source, layers=layers, task=task))
