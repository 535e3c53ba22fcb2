"""The values a scan returns. Interfaces serialise these; they compute nothing of their own.

`ScanReport.to_dict()` is the `--json` output: the issue's four keys (`target_verdicts`, `ops`, `findings`,
`effort_weeks`) come first, then `status`, and the detail behind each verdict follows under `targets`.
`status` is "failed" when a model scan could not build or trace the model (the factory raised, transformers
rejected the config, export and dynamo both failed): the findings say why, and the verdicts and effort are
placeholders, not an estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "IMPACTS",
    "TARGETS",
    "VERDICTS",
    "FallbackPlan",
    "Finding",
    "Impact",
    "OpStatus",
    "OpUse",
    "ScanReport",
    "Status",
    "Target",
    "TargetVerdict",
    "Verdict",
    "WorkItemEffort",
]

Target = Literal["inferentia2", "trainium1", "trainium2", "trainium3"]
# Chip ids as in the catalog (`silica catalog`), oldest first.
TARGETS: tuple[Target, ...] = ("inferentia2", "trainium1", "trainium2", "trainium3")
Verdict = Literal["ready", "needs-work", "blocked"]
VERDICTS: tuple[Verdict, ...] = ("ready", "needs-work", "blocked")
OpStatus = Literal["supported", "limited", "unsupported"]
# What a finding does to a target's verdict: nothing, at least needs-work, or blocked.
Impact = Literal["info", "needs-work", "blocker"]
IMPACTS: tuple[Impact, ...] = ("info", "needs-work", "blocker")
# "failed": the scan ran but could not look at the model; its verdicts and effort are not an estimate.
Status = Literal["ok", "failed"]


@dataclass(frozen=True)
class OpUse:
    """One operator of the exported graph: how often it occurs and what Neuron knowledge says about it."""

    op: str  # "aten::mm", "aten::mul.Tensor", "transformers::grouped_mm_fallback"
    count: int
    status: OpStatus
    note: str
    source: str
    evidence: str = ""  # doc | xla-lowering | inferred | issue, ";"-joined
    matched: str = ""  # the knowledge row that matched ("aten::mm [int_operands]"); "" when none did
    condition: str = ""  # the limiting condition this graph meets, e.g. "int_operands"


@dataclass(frozen=True)
class Finding:
    """Something that matters for a port: a dependency, a call, a file, a dtype, a failed export.

    `impact` is per target because the same fact (int64, complex64, the vLLM plugin) weighs differently
    on Inferentia2 than on Trainium2.
    """

    rule: str
    title: str
    message: str
    impact: Mapping[str, Impact]
    alternative: str = ""
    source: str = ""
    file: str | None = None
    line: int | None = None
    effort_weeks: float = 0.0

    @property
    def location(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["impact"] = dict(self.impact)
        out["location"] = self.location
        return out


@dataclass(frozen=True)
class FallbackPlan:
    """What runs on the host CPU when a graph is partitioned (torch_neuronx.PartitionerConfig)."""

    cpu_ops: tuple[str, ...]  # operators that fall back
    cpu_nodes: int  # graph nodes that fall back
    cpu_partitions: int  # separate CPU subgraphs, each a device-host round trip
    graph_breaks: int  # breaks seen while tracing (dynamo); 0 when torch.export succeeded
    supported_share: float  # device-supported share of operator nodes, 0..1
    viable: bool  # the partitioner accepts the graph (share at or above its threshold)
    threshold: float  # the partitioner's default model_support_percentage_threshold


@dataclass(frozen=True)
class WorkItemEffort:
    """One named piece of porting work on one target: its weeks and the rules (findings) that size it."""

    item: str  # "replace-parallel-layers", as in data/neuron/effort.yaml
    title: str
    weeks: float
    rules: tuple[str, ...]  # the rules whose findings need this work ("task" for task-wide items)
    reasoning: str


@dataclass(frozen=True)
class TargetVerdict:
    """The answer for one chip, with every reason that shaped it."""

    target: Target
    verdict: Verdict
    blockers: tuple[str, ...]
    work: tuple[str, ...]  # reasons for needs-work
    notes: tuple[str, ...]  # lifecycle and caveats that do not change the verdict
    path: str  # supported | maintenance | community | trace | preview | none
    libraries: tuple[str, ...]  # the Neuron libraries that run this architecture on the target
    fallback: FallbackPlan
    effort_weeks: float
    effort_breakdown: tuple[tuple[str, float], ...]
    work_items: tuple[WorkItemEffort, ...] = ()


@dataclass(frozen=True)
class ScanReport:
    """Everything one scan found, for a model or a code base."""

    subject: str
    kind: Literal["model", "code", "combined"]  # combined: a repository and the model it loads (issue 30)
    target_verdicts: Mapping[str, TargetVerdict]
    ops: tuple[OpUse, ...] = ()
    findings: tuple[Finding, ...] = ()
    effort_weeks: float = 0.0
    model_type: str | None = None
    method: str = ""  # torch.export | dynamo | none | static analysis
    assumptions: tuple[str, ...] = ()
    seconds: float = 0.0
    files_scanned: int = 0
    versions: Mapping[str, str] = field(default_factory=dict)
    status: Status = "ok"
    task: str = "inference"  # inference | training: what the verdicts and the effort are for

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def verdict(self, target: str) -> Verdict:
        return self.target_verdicts[target].verdict

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_verdicts": {t: v.verdict for t, v in self.target_verdicts.items()},
            "ops": [asdict(o) for o in self.ops],
            "findings": [f.to_dict() for f in self.findings],
            "effort_weeks": self.effort_weeks,
            "status": self.status,
            "task": self.task,
            "subject": self.subject,
            "kind": self.kind,
            "model_type": self.model_type,
            "method": self.method,
            "targets": {t: asdict(v) for t, v in self.target_verdicts.items()},
            "assumptions": list(self.assumptions),
            "seconds": round(self.seconds, 3),
            "files_scanned": self.files_scanned,
            "versions": dict(self.versions),
        }
