"""Trace a module to ATen operators: `torch.export` first, dynamo with graph breaks when export fails.

Both paths end in core ATen (export's `run_decompositions()`, AOTAutograd with the core decompositions for
dynamo), the level at which Neuron's operator knowledge is written. Output is plain Python (`NodeFacts`,
dtype counts), so nothing downstream needs torch.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from silica.scan.classify import NodeFacts, op_name

__all__ = ["Traced", "trace"]

_DATA_DEPENDENT_HOPS = frozenset({"cond", "while_loop", "scan", "map", "associative_scan"})


@dataclass
class Traced:
    method: str  # "torch.export" | "dynamo" | "none"
    nodes: list[NodeFacts] = field(default_factory=list)
    dtypes: Counter[str] = field(default_factory=Counter)  # dtype -> tensors of that dtype in the graph
    graph_breaks: int = 0
    break_reasons: list[str] = field(default_factory=list)
    control_flow: list[str] = field(default_factory=list)  # higher-order control-flow ops seen
    errors: list[tuple[str, str]] = field(default_factory=list)  # (rule, message) of failed steps


def _dtype(torch: Any, value: Any) -> str | None:
    return str(value.dtype).removeprefix("torch.") if isinstance(value, torch.Tensor) else None


def _flat(values: Any) -> list[Any]:
    if isinstance(values, list | tuple):
        return [x for v in values for x in _flat(v)]
    return [values]


def _node_facts(torch: Any, node: Any) -> NodeFacts | None:
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return None
    namespace, _, name = target._schema.name.partition("::")
    op = op_name(namespace, name, target._overloadname)

    def dtypes_of(values: Any) -> tuple[str, ...]:
        out = []
        for a in _flat(values):
            d = _dtype(torch, a.meta.get("val")) if isinstance(a, torch.fx.Node) else None
            if d:
                out.append(d)
        return tuple(out)

    args = list(node.args)
    params: dict[str, Any] = {}
    index_dtypes: tuple[str, ...] = ()
    if name in ("index", "index_put", "index_put_", "_unsafe_index", "_unsafe_index_put") and len(args) > 1:
        index_dtypes = dtypes_of(args[1])
        if name.startswith(("index_put", "_unsafe_index_put")) and len(args) > 3:
            params["accumulate"] = args[3]
    if name in ("convolution", "_convolution", "convolution_overrideable") and len(args) > 6:
        params.update(stride=args[3], dilation=args[5], transposed=args[6])
    if name.startswith("max_pool") and len(args) > 4:
        params["dilation"] = args[4]
    return NodeFacts(op, dtypes_of(args), index_dtypes, params)


def _collect(torch: Any, graph_modules: list[Any], out: Traced) -> None:
    for gm in graph_modules:
        for node in gm.graph.nodes:
            for value in _flat(node.meta.get("val")):
                d = _dtype(torch, value)
                if d:
                    out.dtypes[d] += 1
            if node.op != "call_function":
                continue
            target = node.target
            if isinstance(target, torch._ops.HigherOrderOperator):
                if target.name() in _DATA_DEPENDENT_HOPS:
                    out.control_flow.append(target.name())
                continue
            facts = _node_facts(torch, node)
            if facts is not None:
                out.nodes.append(facts)


def _export(torch: Any, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Traced) -> bool:
    try:
        program = torch.export.export(module, args, kwargs, strict=False)
        program = program.run_decompositions()
    except Exception as err:
        out.errors.append(("export-failed", f"torch.export failed: {type(err).__name__}: {_first_line(err)}"))
        return False
    gms = [m for m in program.graph_module.modules() if isinstance(m, torch.fx.GraphModule)]
    _collect(torch, gms, out)
    out.method = "torch.export"
    return True


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:400] if text else type(err).__name__


def _dynamo(torch: Any, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Traced) -> None:
    try:
        import torch._dynamo as dynamo
        from torch._decomp import core_aten_decompositions
        from torch._functorch._aot_autograd.utils import make_boxed_func
        from torch._functorch.aot_autograd import aot_module_simplified
    except ImportError as err:  # private torch APIs move between releases
        out.errors.append(("dynamo-failed", f"dynamo is not usable with torch {torch.__version__}: {err}"))
        return
    graphs: list[Any] = []

    def forward_compiler(gm: Any, _inputs: Any) -> Any:
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    def backend(gm: Any, inputs: Any) -> Any:
        compiler: Any = forward_compiler
        decompositions: Any = core_aten_decompositions()
        return aot_module_simplified(gm, inputs, fw_compiler=compiler, decompositions=decompositions)

    try:
        dynamo.reset()
        explanation = dynamo.explain(module)(*args, **kwargs)
        out.graph_breaks = int(explanation.graph_break_count)
        out.break_reasons = [_first_line(Exception(str(r.reason))) for r in explanation.break_reasons]
        dynamo.reset()
        with torch.no_grad():
            torch.compile(module, backend=backend, fullgraph=False, dynamic=False)(*args, **kwargs)
    except Exception as err:
        out.errors.append(
            ("dynamo-failed", f"dynamo tracing failed: {type(err).__name__}: {_first_line(err)}")
        )
        return
    finally:
        dynamo.reset()
    _collect(torch, graphs, out)
    out.method = "dynamo"


def trace(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Traced:
    """ATen-level facts of `module(*args, **kwargs)`; failures are recorded in `errors`, never raised."""
    import torch

    out = Traced(method="none")
    # The traced model's warnings and torch's diagnostic prints are not the scan's output.
    previous = logging.root.manager.disable
    logging.disable(
        logging.WARNING
    )  # torch logs the failing graph at WARNING; the finding carries the message
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            if not _export(torch, module, args, kwargs, out):
                _dynamo(torch, module, args, kwargs, out)
    finally:
        logging.disable(previous)
    return out
