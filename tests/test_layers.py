"""Imports flow one way: no module reaches up a layer, wherever the import sits (module or function).

The layers, bottom to top (DESIGN.md): plumbing, then facts (catalog, models, settings), then the core
values, then the performance model and the plan context, then planning, then the side modules built on
planning, then reports, then the front doors. A module may import its own layer or any below.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "silica"

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "paths", "text", "jsonable", "_files", "_yaml", "limits", "__init__"}),
    frozenset({"catalog", "models", "config"}),
    frozenset({"results", "cost", "workload", "legality"}),
    frozenset({"perf", "context"}),
    frozenset({"plan", "options"}),
    frozenset({"validate", "advise", "fleet", "pilot", "monitor", "scan", "store", "simulate", "energy"}),
    frozenset({"report"}),
    frozenset({"api", "serve", "cli"}),
)


def _layer(top: str) -> int:
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"silica.{top} is in no layer: add it to LAYERS in {__file__}")


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found += [(node.lineno, n) for n in names if n == "silica" or n.startswith("silica.")]
    return found


def test_no_import_reaches_up_a_layer() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).parts
        own = _layer(parts[0].removesuffix(".py"))
        for line, name in _imports(path):
            target = name.split(".")[1] if "." in name else "__init__"
            if _layer(target) > own:
                upward.append(f"{path.relative_to(SRC)}:{line} imports {name}")
    assert not upward, "\n".join(upward)
