"""Match one graph operator against the Neuron ops table, including its limiting configurations.

Pure Python over `NodeFacts`, so the rules are testable without torch. The name rules follow the reference
notes (section 7, rule 1): try `ns::name.overload`, then `ns::name`, then the functional `_copy` spelling.
An ATen op that no row names has no torch-xla lowering, so `torch_neuronx.trace` would raise (rule 2);
an op outside `aten::` is a custom C++/CUDA op unless a row names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from silica.scan.knowledge import Knowledge, OpRow

__all__ = ["Classified", "NodeFacts", "classify", "op_name"]

INT_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
NO_LOWERING_NOTE = (
    "[inferred] no row in the Neuron ops table: not in Neuron's documented list nor in the torch-xla v2.9.0 "
    "lowering table, so torch_neuronx.trace will likely raise. Fallbacks: torch_neuronx.PartitionerConfig "
    "(CPU partition), an NKI kernel, or a rewrite"
)
NO_LOWERING_SOURCE = (
    "pytorch/xla:codegen/xla_native_functions.yaml@v2.9.0 ; "
    "aws-neuron/aws-neuron-sdk:frameworks/torch/torch-neuronx/api-reference-guide/inference/api-torch-neuronx-trace.rst"
)


@dataclass(frozen=True)
class NodeFacts:
    """What the classifier needs to know about one call in a graph."""

    op: str  # "aten::mm", "aten::mul.Tensor"
    input_dtypes: tuple[str, ...] = ()  # dtypes of the tensor arguments
    index_dtypes: tuple[str, ...] = ()  # dtypes of index tensors (aten::index, index_put)
    params: Mapping[str, Any] = field(default_factory=dict)  # stride, dilation, transposed, accumulate


@dataclass(frozen=True)
class Classified:
    status: str  # supported | limited | unsupported | ignored
    note: str
    source: str
    evidence: str
    matched: str  # "aten::mm" or "aten::mm [int_operands]"; "" when no row matched
    condition: str


def op_name(namespace: str, name: str, overload: str) -> str:
    """The table's spelling of an operator: `aten::mul.Tensor`, `aten::mm` (no `.default`)."""
    base = f"{namespace}::{name}"
    return base if overload in ("", "default") else f"{base}.{overload}"


def _max(value: Any) -> int:
    if isinstance(value, list | tuple):
        return max((int(v) for v in value), default=0)
    return int(value) if value is not None else 0


def _has_int(f: NodeFacts) -> bool:
    return any(d in INT_DTYPES for d in f.input_dtypes)


_CONDITIONS: dict[str, Callable[[NodeFacts], bool]] = {
    "int_operands": _has_int,
    "int64_operands": lambda f: "int64" in f.input_dtypes,
    "int_dtype": lambda f: _has_int(f) or "bool" in f.input_dtypes,
    "bool_index": lambda f: "bool" in f.index_dtypes,
    "bool_index_or_int_accumulate": lambda f: (
        "bool" in f.index_dtypes or (bool(f.params.get("accumulate")) and _has_int(f))
    ),
    "non32_int_input": lambda f: any(d in INT_DTYPES - {"int32", "uint32"} for d in f.input_dtypes),
    "conv_input_dilation": lambda f: (
        bool(f.params.get("transposed"))
        and _max(f.params.get("stride")) > 1
        and _max(f.params.get("dilation")) > 1
    ),
    "pool_dilation": lambda f: _max(f.params.get("dilation")) > 1,
}


def _candidates(op: str) -> list[str]:
    base, _, overload = op.partition(".")
    names = [base, base.rstrip("_")] if base.endswith("_") and not base.endswith("__") else [base]
    out: list[str] = []
    for name in names:
        spelled = [f"{name}.{overload}", name] if overload else [name]
        for s in spelled:
            out.append(s)
            if not name.endswith("_copy"):
                out.append(s.replace(name, f"{name}_copy", 1))
    return list(dict.fromkeys(out))


def _row(row: OpRow, condition: str = "") -> Classified:
    matched = f"{row.op} [{row.condition}]" if row.condition else row.op
    return Classified(row.status, row.note, row.source, row.evidence, matched, condition)


def classify(facts: NodeFacts, kb: Knowledge) -> Classified:
    """The Neuron status of one call: the first matching row, narrowed by any condition it meets."""
    for key in _candidates(facts.op):
        rows = kb.ops.get(key)
        if not rows:
            continue
        # Conditional rows may sit under the exact overload or the base name.
        conditional = [
            r for k in dict.fromkeys([key, key.split(".")[0]]) for r in kb.ops.get(k, ()) if r.condition
        ]
        for r in conditional:
            if _CONDITIONS[r.condition](facts):
                return _row(r, r.condition)
        base = next((r for r in rows if not r.condition), None)
        if base is not None:
            return _row(base)
    if not facts.op.startswith("aten::"):
        pattern = kb.patterns["custom_cuda_or_cpp_op"]
        return Classified("unsupported", pattern.note, pattern.source, pattern.evidence, pattern.op, "")
    return Classified("unsupported", NO_LOWERING_NOTE, NO_LOWERING_SOURCE, "inferred", "", "")
