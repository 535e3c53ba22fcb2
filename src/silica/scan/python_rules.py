"""Match the code rules against one Python syntax tree: imports, calls, attributes, decorators, control flow.

Names are resolved through the file's imports (`import torch as T`, `from torch.utils import cpp_extension`)
so `T.cuda.synchronize()` is `torch.cuda.synchronize`. Each syntax node reports at most one rule, the first
in the data file's order, which lists specific rules (CUDA streams) before general ones (torch.cuda.*).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence

from silica.scan.knowledge import CodeRule

__all__ = ["PythonMatcher"]

Match = tuple[str, str, int]  # (rule id, message, line)
_DATA_DEPENDENT_METHODS = frozenset({"item", "any", "all", "tolist"})
_DATA_DEPENDENT_CALLS = frozenset(
    {"torch.any", "torch.all", "torch.equal", "torch.is_nonzero", "torch.allclose"}
)
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _prefix(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


class PythonMatcher:
    """The code rules, compiled for lookups by import, call, method, keyword, argument and decorator."""

    def __init__(self, rules: Sequence[CodeRule]) -> None:
        self.rules = list(rules)

    def trigger_words(self) -> set[str]:
        """Names at least one of which a file must contain for any Python rule to match."""
        words = {"torch"}
        for r in self.rules:
            for entry in (*r.imports, *r.calls, *r.decorators):
                words.add(entry.split(".")[0])
            for kw in r.keywords:
                words.add(kw.split("=", 1)[1])
        return words

    def _call_rule(self, name: str) -> CodeRule | None:
        for r in self.rules:
            for pattern in r.calls:
                if pattern.endswith(".*"):
                    if name.startswith(pattern[:-1]):
                        return r
                elif name == pattern or name.endswith("." + pattern):
                    return r
        return None

    def scan(self, tree: ast.AST, *, uses_torch: bool) -> Iterator[Match]:
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        yield from _Visitor(self, aliases, uses_torch).run(tree)

    def string_requirements(self, tree: ast.AST) -> Iterator[tuple[str, int]]:
        """String constants inside setup(install_requires=..., extras_require=...) calls."""
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                if kw.arg not in ("install_requires", "extras_require", "setup_requires"):
                    continue
                for const in ast.walk(kw.value):
                    if isinstance(const, ast.Constant) and isinstance(const.value, str):
                        m = _REQ_NAME.match(const.value)
                        if m:
                            yield m.group(1), const.lineno


class _Visitor:
    def __init__(self, matcher: PythonMatcher, aliases: dict[str, str], uses_torch: bool) -> None:
        self.m = matcher
        self.aliases = aliases
        self.torch = uses_torch
        self.out: list[Match] = []

    def resolve(self, node: ast.AST) -> str | None:
        name = _dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.aliases.get(head, head)
        return f"{full}.{rest}" if rest else full

    def run(self, tree: ast.AST) -> list[Match]:
        inner: set[int] = set()  # attribute nodes that are part of a longer chain
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                inner.add(id(node.value))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self._import(a.name, node.lineno)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                self._import(node.module, node.lineno, [a.name for a in node.names])
            elif isinstance(node, ast.Attribute) and id(node) not in inner:
                self._attribute(node)
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self._decorators(node)
            elif isinstance(node, ast.If | ast.While) and self.torch:
                self._control_flow(node)
        return self.out

    def _add(self, rule: CodeRule, message: str, line: int) -> None:
        self.out.append((rule.id, message, line))

    def _import(self, module: str, line: int, names: Sequence[str] = ()) -> None:
        candidates = [module, *(f"{module}.{n}" for n in names)]
        for r in self.m.rules:
            hit = next((c for c in candidates for p in r.imports if _prefix(c, p)), None)
            if hit:
                self._add(r, f"imports {hit}", line)
                return

    def _attribute(self, node: ast.Attribute) -> None:
        name = self.resolve(node)
        if name is None:
            return
        rule = self.m._call_rule(name)
        if rule is not None and ("." in name or name in self.aliases):
            self._add(rule, f"uses {name}", node.lineno)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):  # a bare name imported with `from x import y`
            name = self.resolve(func)
            rule = self.m._call_rule(name) if name and func.id in self.aliases else None
            if rule is not None:
                self._add(rule, f"calls {name}", node.lineno)
                return
        if (
            self.torch
            and isinstance(func, ast.Attribute)
            and self.m._call_rule(self.resolve(func) or "") is None
        ):
            for r in self.m.rules:
                if func.attr in r.methods:
                    self._add(r, f"calls .{func.attr}()", node.lineno)
                    return
        for kw in node.keywords:
            value = kw.value.value if isinstance(kw.value, ast.Constant) else None
            if kw.arg is None or not isinstance(value, str):
                continue
            for r in self.m.rules:
                for spec in r.keywords:
                    key, want = spec.split("=", 1)
                    if kw.arg == key and (value == want or value.startswith(want + ":")):
                        self._add(r, f"passes {kw.arg}={value!r}", node.lineno)
                        return
        if self.torch:
            for arg in node.args:
                value = arg.value if isinstance(arg, ast.Constant) else None
                if not isinstance(value, str):
                    continue
                for r in self.m.rules:
                    if any(value == s or value.startswith(s + ":") for s in r.string_args):
                        self._add(r, f"passes {value!r}", node.lineno)
                        return

    def _decorators(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            name = self.resolve(target)
            for r in self.m.rules:
                if name and name in r.decorators:
                    self._add(r, f"@{name} kernel {node.name}", node.lineno)
                    return

    def _control_flow(self, node: ast.If | ast.While) -> None:
        for sub in ast.walk(node.test):
            if not isinstance(sub, ast.Call):
                continue
            func = sub.func
            name = self.resolve(func) or ""
            method = func.attr if isinstance(func, ast.Attribute) else ""
            if name in _DATA_DEPENDENT_CALLS or method in _DATA_DEPENDENT_METHODS:
                what = name if name in _DATA_DEPENDENT_CALLS else f".{method}()"
                kind = "while" if isinstance(node, ast.While) else "if"
                rule = next(r for r in self.m.rules if r.id == "data-dependent-control-flow")
                self._add(rule, f"`{kind}` on a tensor value ({what})", node.lineno)
                return
