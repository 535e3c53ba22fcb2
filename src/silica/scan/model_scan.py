"""`scan_model`: which operators a model needs, what Neuron says about each, and a verdict per target.

A failure on the user's side (a config transformers rejects, a factory that raises or returns the wrong
thing, an export that fails) becomes a finding in the report; only a bad path or an unknown id raises.
When no graph could be built or traced the report's `status` is "failed": its verdicts and effort then
describe no model and must not be read as an estimate.
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from collections import Counter
from collections.abc import Sequence

from silica.errors import InputError
from silica.scan.build import Built, ScanFailure, build_from_config, load_factory
from silica.scan.classify import Classified, NodeFacts, classify
from silica.scan.knowledge import Knowledge, knowledge
from silica.scan.report import TARGETS, Finding, Impact, OpUse, ScanReport
from silica.scan.source import ModelSource, resolve
from silica.scan.trace import Traced, trace
from silica.scan.verdict import fallback_plan, verdicts

__all__ = ["scan_model", "scan_source"]

INSTALL_HINT = (
    "install the CPU build of torch first (the README shows how; a plain `pip install torch` pulls the CUDA "
    "build), then pip install 'silica[scan]'."
)
_STATUS_ORDER = {"unsupported": 0, "limited": 1, "supported": 2}
_DTYPE_IMPACT: dict[str, Impact] = {
    "supported": "info",
    "downcast": "info",
    "limited": "needs-work",
    "unsupported": "blocker",
}


def _require(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise InputError(
            f"`silica scan` of a model needs {' and '.join(missing)}, which are not installed.", INSTALL_HINT
        )


def _everywhere(impact: Impact) -> dict[str, Impact]:
    return dict.fromkeys(TARGETS, impact)


def _failure(kb: Knowledge, rule: str, message: str) -> Finding:
    return Finding(
        rule=rule,
        title="model could not be scanned",
        message=message,
        impact=_everywhere("needs-work"),
        alternative="make the model traceable by torch.export "
        "(static shapes, no data-dependent Python control flow)",
        source="pytorch/pytorch:torch/export",
        effort_weeks=kb.effort.scan_failure_weeks,
    )


def _ops(kb: Knowledge, nodes: Sequence[NodeFacts]) -> tuple[list[OpUse], list[bool], list[str], int]:
    """Aggregate per operator; also each node's device support in graph order for the fallback plan."""
    counts: Counter[tuple[str, Classified]] = Counter()
    on_device: list[bool] = []
    order: list[str] = []
    ignored = 0
    for facts in nodes:
        c = classify(facts, kb)
        if c.status == "ignored":
            ignored += 1
            continue
        counts[(facts.op, c)] += 1
        on_device.append(c.status != "unsupported")
        order.append(facts.op)
    ops = [
        OpUse(op, n, c.status, c.note, c.source, c.evidence, c.matched, c.condition)  # type: ignore[arg-type]
        for (op, c), n in counts.items()
    ]
    ops.sort(key=lambda o: (_STATUS_ORDER[o.status], -o.count, o.op))
    return ops, on_device, order, ignored


def _dtype_findings(kb: Knowledge, traced: Traced) -> list[Finding]:
    out = []
    for dtype, n in sorted(traced.dtypes.items()):
        row = kb.dtypes.get(dtype)
        if row is None or all(row.status(t) == "supported" for t in TARGETS):
            continue
        impact: dict[str, Impact] = {t: _DTYPE_IMPACT[row.status(t)] for t in TARGETS}
        weeks = (
            kb.effort.unsupported_dtype_weeks
            if "blocker" in impact.values()
            else kb.effort.limited_dtype_weeks
        )
        statuses = ", ".join(f"{t} {row.status(t)}" for t in TARGETS)
        out.append(
            Finding(
                f"dtype:{dtype}",
                f"{dtype} tensors",
                f"{n} tensor(s) of {dtype} in the graph ({statuses})",
                impact,
                alternative=row.note,
                source=row.source,
                effort_weeks=weeks,
            )
        )
    return out


def _trace_findings(kb: Knowledge, traced: Traced) -> list[Finding]:
    out: list[Finding] = []
    failed = traced.method == "none"
    for rule_id, message in traced.errors:
        if failed:
            out.append(_failure(kb, rule_id, message))
        else:
            out.append(
                Finding(
                    rule_id,
                    "torch.export failed; traced with dynamo instead",
                    message,
                    _everywhere("info"),
                    source="pytorch/pytorch:torch/export",
                )
            )
    pattern = kb.patterns["data_dependent_control_flow"]
    rule = kb.rule("data-dependent-control-flow")
    if traced.graph_breaks:
        reasons = "; ".join(dict.fromkeys(traced.break_reasons)) or "no reason given"
        out.append(
            Finding(
                "graph-breaks",
                f"{traced.graph_breaks} graph break(s)",
                reasons,
                _everywhere("info"),
                rule.alternative,
                pattern.source,
            )
        )
    for name in dict.fromkeys(traced.control_flow):
        out.append(
            Finding(
                rule.id,
                rule.title,
                f"torch.{name} in the exported graph",
                _everywhere("needs-work"),
                rule.alternative,
                pattern.source,
                effort_weeks=rule.effort_weeks,
            )
        )
    return out


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for name in ("torch", "transformers"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[name] = metadata.version(name)
    return out


def scan_source(source: ModelSource, *, layers: int = 2, task: str = "inference") -> ScanReport:
    """Scan an already resolved registry id, config or factory."""
    if layers < 1:
        raise InputError(f"--layers must be at least 1, not {layers}.", "pass --layers 2 (the default).")
    start = time.perf_counter()
    kb = knowledge()
    _require("torch") if source.kind == "factory" else _require("torch", "transformers")
    findings: list[Finding] = []
    assumptions: list[str] = []
    built: Built | None = None
    try:
        if source.kind == "factory":
            assert source.path is not None
            built = load_factory(source.path, source.factory)
        else:
            built = build_from_config(source.config, layers)
    except ScanFailure as err:
        findings.append(_failure(kb, err.rule, err.message))
    traced = trace(built.module, built.args, built.kwargs) if built else Traced(method="none")
    if built:
        assumptions += built.assumptions
        findings += _trace_findings(kb, traced)
    ops, on_device, order, ignored = _ops(kb, traced.nodes)
    findings += _dtype_findings(kb, traced)
    if ignored:
        assumptions.append(
            f"{ignored} bookkeeping node(s) (export assertions, shape queries) are not counted as operators"
        )
    failed = built is None or traced.method == "none"
    if failed:
        assumptions.append(
            "the scan failed (see the findings): no operator graph was seen, so the verdicts and the effort "
            "are placeholders, not an estimate"
        )
    plan = fallback_plan(on_device, order, traced.graph_breaks)
    model_type = source.config.get("model_type") if source.config else None
    per_target, effort = verdicts(
        kb,
        kind="model",
        model_type=model_type,
        is_llm=bool(built and built.is_llm),
        ops=ops,
        plan=plan,
        findings=findings,
        task=task,
    )
    return ScanReport(
        subject=source.subject,
        kind="model",
        target_verdicts=per_target,
        ops=tuple(ops),
        findings=tuple(findings),
        effort_weeks=effort,
        model_type=model_type,
        method=traced.method,
        assumptions=tuple(assumptions),
        seconds=time.perf_counter() - start,
        versions=_versions(),
        status="failed" if failed else "ok",
        task=task,
    )


def scan_model(subject: str, *, layers: int = 2, task: str = "inference") -> ScanReport:
    """Scan a registry model id, a config.json path, or FILE.py:FACTORY (which runs the user's code)."""
    source = resolve(subject)
    if source.kind == "code":
        raise InputError(
            f"{subject} is a directory.", "use scan_code() for a code base, or pass DIR/config.json."
        )
    return scan_source(source, layers=layers, task=task)
