"""Match the code rules against one Python syntax tree: imports, calls, attributes, decorators, control flow.

Names are resolved through the file's imports (`import torch as T`, `from torch.utils import cpp_extension`)
so `T.cuda.synchronize()` is `torch.cuda.synchronize`. Each syntax node reports at most one rule, the first
in the data file's order, which lists specific rules (CUDA streams) before general ones (torch.cuda.*); a
call's keyword arguments count as their own nodes.

Speed matters (issue 4: 10,000 files in 10 s on 2 cores), so the rules are compiled once into lookup tables
(an exact-name table matched against every dotted suffix of a name, a prefix table for `a.b.*` patterns,
and tables for methods, keyword values, string arguments and decorators), each file's tree is walked once,
a string assigned to a plain name is remembered so its later use as an argument is matched (light data
flow, no imports or execution),
and `needs_ast` tells from the text alone whether a file can match at all. It never skips a file a rule
matches, with one exception: a string value spelled with escapes ("\\x63uda") or split into adjacent
literals ("cu" "da") is not seen.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from silica.scan.knowledge import CodeRule
from silica.scan.prefilter import FROM_TORCH, GAP, HEADER, TO_SPACE, logical_line_end, name_words, word_tokens

__all__ = ["DATA_DEPENDENT_RULE", "PythonMatcher"]

Match = tuple[str, str, int]  # (rule id, message, line)
DATA_DEPENDENT_RULE = "data-dependent-control-flow"
_DATA_DEPENDENT_METHODS = frozenset({"item", "any", "all", "tolist"})
_DATA_DEPENDENT_CALLS = frozenset(
    {"torch.any", "torch.all", "torch.equal", "torch.is_nonzero", "torch.allclose"}
)
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_PINNED_REQ = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*(?:[<>=!~]=|[<>]|===)\s*[0-9]"
)
# A repository's own module named after a kernel library it patches in (FastChat's
# llama_flash_attn_monkey_patch, llama_xformers_attn_monkey_patch): importing it switches that library on.
_WRAPPER_WORDS = ("flash_attn", "xformers")
# Modules whose arrays live on the host: `np.unique(x)`, `df.any()` on them is not device control flow.
_HOST_MODULES = frozenset({"numpy", "pandas", "math", "scipy", "random", "statistics"})


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class PythonMatcher:
    """The code rules, compiled for lookups by import, call, method, keyword, argument and decorator."""

    def __init__(self, rules: Sequence[CodeRule], *, local: frozenset[str] = frozenset()) -> None:
        self.rules = list(rules)
        self.local = local  # the scanned repository's own top-level packages: never a library
        self.ids = [r.id for r in self.rules]
        self._imports: dict[str, set[int]] = {}  # module prefix -> rules that name it
        self._exact: dict[str, int] = {}  # call pattern -> first rule; matched against dotted suffixes
        self._prefix: dict[str, int] = {}  # "torch.cuda" for "torch.cuda.*" -> first rule
        self._methods: dict[str, int] = {}
        self._keywords: dict[tuple[str, str], int] = {}
        self._any_keywords: dict[str, int] = {}  # "deepspeed=*": the keyword with any value
        self._string_args: dict[str, int] = {}
        self._decorators: dict[str, int] = {}
        names: set[str] = set()  # dotted names (imports, calls, decorators) whose use a file must spell
        words: set[str] = set()  # a file must contain one of these as a word for a rule to match
        torch_words: set[str] = set()  # the same, for rules that apply to files that mention torch
        methods: set[str] = set(_DATA_DEPENDENT_METHODS)  # method names, written after a `.`
        for i, r in enumerate(self.rules):
            for p in r.imports:
                self._imports.setdefault(p, set()).add(i)
                names.add(p)
            for p in r.calls:
                table, name = (self._prefix, p[:-2]) if p.endswith(".*") else (self._exact, p)
                table.setdefault(name, i)
                names.add(name)
            for m in r.methods:
                self._methods.setdefault(m, i)
                methods.add(m)
            for spec in r.keywords:
                key, value = spec.split("=", 1)
                if value == "*":
                    self._any_keywords.setdefault(key, i)
                else:
                    self._keywords.setdefault((key, value), i)
                # `fp16=True`: the key is the rarer word; a string value is rarer than its key ("device")
                words.add(key if value in ("*", "True", "False") or not value[:1].isalpha() else value)
            for s in r.string_args:
                self._string_args.setdefault(s, i)
                torch_words.add(s)
            for d in r.decorators:
                self._decorators.setdefault(d, i)
                names.add(d)
        self._data_dependent = (
            self.ids.index(DATA_DEPENDENT_RULE) if DATA_DEPENDENT_RULE in self.ids else None
        )
        if self._data_dependent is None:
            methods -= _DATA_DEPENDENT_METHODS
        by_name = name_words(names)
        self._calls: dict[str, int | None] = {}  # resolved name -> call rule, cached across files
        plain_methods = sorted(methods - _DATA_DEPENDENT_METHODS)
        dd_names = sorted(_DATA_DEPENDENT_METHODS | {c.split(".", 1)[1] for c in _DATA_DEPENDENT_CALLS})
        tokens = [
            word_tokens(words),
            word_tokens(torch_words),
            word_tokens(set(plain_methods)),
            word_tokens(set(dd_names)),
        ]
        self._always = by_name is None or any(
            t is None for t in tokens
        )  # the prefilter cannot express a rule
        self._names = by_name or {}
        self._words, self._torch_words, self._method_words, self._dd_words = (
            t or frozenset() for t in tokens
        )
        if self._data_dependent is None:
            self._dd_words = frozenset()
        self._method = re.compile(r"\." + GAP + r"(?:" + "|".join(map(re.escape, plain_methods)) + r")\b")
        self._dd_dot = re.compile(r"\." + GAP + r"(?:" + "|".join(dd_names) + r")\b")
        self._dd_word = re.compile(r"\b(?:" + "|".join(dd_names) + r")\b")
        calls = "|".join(sorted(c.split(".", 1)[1] for c in _DATA_DEPENDENT_CALLS))
        self._dd_alias = re.compile(r"\." + GAP + r"(?:" + calls + r")\b" + GAP + r"as\b")

    # --- lookups ----------------------------------------------------------------------------------------

    def call_rule(self, name: str) -> int | None:
        """The first rule whose `calls` match a resolved dotted name, by index; None when none does."""
        cached = self._calls.get(name, -1)
        if cached != -1:
            return cached
        best: int | None = None
        start = 0
        while True:  # exact patterns: the name itself and every suffix that starts after a dot
            hit = self._exact.get(name[start:])
            if hit is not None and (best is None or hit < best):
                best = hit
            dot = name.find(".", start)
            if dot < 0:
                break
            hit = self._prefix.get(name[:dot])  # prefix patterns: every proper dotted prefix
            if hit is not None and (best is None or hit < best):
                best = hit
            start = dot + 1
        self._calls[name] = best
        return best

    def _value_rule(self, table: dict[str, int], value: str) -> int | None:
        """`value == want` or `value.startswith(want + ":")` ("cuda" matches "cuda:1")."""
        best = table.get(value)
        colon = value.find(":")
        while colon >= 0:
            hit = table.get(value[:colon])
            if hit is not None and (best is None or hit < best):
                best = hit
            colon = value.find(":", colon + 1)
        return best

    def _keyword_rule(self, key: str, value: str) -> int | None:
        best = self._keywords.get((key, value))
        colon = value.find(":")
        while colon >= 0:
            hit = self._keywords.get((key, value[:colon]))
            if hit is not None and (best is None or hit < best):
                best = hit
            colon = value.find(":", colon + 1)
        return best

    def import_match(self, module: str, names: Sequence[str] = ()) -> tuple[int, str] | None:
        """(rule, imported name) for an import of `module` (and `from module import names`)."""
        candidates = [module, *(f"{module}.{n}" for n in names)]
        matched: list[set[int]] = []
        for c in candidates:
            rules: set[int] = set()
            dot = c.find(".")
            while dot >= 0:
                rules |= self._imports.get(c[:dot], set())
                dot = c.find(".", dot + 1)
            rules |= self._imports.get(c, set())
            matched.append(rules)
        found = [min(m) for m in matched if m]
        if not found:
            return None
        best = min(found)
        return best, next(c for c, m in zip(candidates, matched, strict=True) if best in m)

    # --- text prefilter ---------------------------------------------------------------------------------

    def needs_ast(self, text: str, *, uses_torch: bool) -> bool:
        """False only when no rule can match `text`, so the file need not be parsed.

        Every part of a resolved name is written in the file (in the import or in the attribute chain), so a
        name rule can only match a file that contains all of the name's parts, and a keyword rule one that
        contains its key or value. Methods are written after a `.`, and a
        tensor value can only drive an `if` or `while` whose test holds one of the data-dependent calls.
        Identifiers are NFKC-normalised by Python, so the check runs on the normalised text.
        """
        if self._always:
            return True
        if not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        words = set(text.encode().translate(TO_SPACE).split())
        if not words.isdisjoint(self._words):
            return True
        for key in words.intersection(self._names):
            if any(need <= words for need in self._names[key]):
                return True
        if not uses_torch:
            return False
        if not words.isdisjoint(self._torch_words):
            return True
        if not words.isdisjoint(self._method_words) and self._method.search(text):
            return True
        return not words.isdisjoint(self._dd_words) and self._maybe_data_dependent(text)

    def _maybe_data_dependent(self, text: str) -> bool:
        """Whether a data-dependent call can sit in the test of an `if` or `while` statement."""
        for m in FROM_TORCH.finditer(text):  # `from torch import any`: a bare name can be the call
            if self._dd_word.search(m.group(1)):
                return True
        if self._dd_alias.search(text):  # `import torch.any as tany`
            return True
        if "\r" in text:
            text = text.replace("\r\n", "\n")
            if "\r" in text:  # old Mac line ends: the line logic below does not apply
                return True
        calls = [m.start() for m in self._dd_dot.finditer(text)]  # `.item`, `.any`, ...
        if not calls:
            return False
        last = calls[-1]
        tests: list[tuple[int, int]] = []  # the logical lines of `if`/`while` headers before the last call
        for m in HEADER.finditer(text, 0, last + 1):
            end = logical_line_end(text, m.start())
            if end is None:
                return True  # cannot tell where this test ends: it may hold a call
            tests.append((m.start(), end))
        return any(start <= call <= end for call in calls for start, end in tests)

    # --- the tree ---------------------------------------------------------------------------------------

    def scan(
        self,
        tree: ast.AST,
        *,
        uses_torch: bool,
        local: frozenset[str] | None = None,
        guarded: bool = False,
    ) -> list[Match]:
        """Every match in one parsed file; `local` overrides the repository's own packages for this file.
        `guarded`: the file may hold imports guarded by `try: ... except ImportError` or an availability check
        (its text names one), which are then reported as optional imports."""
        scan = _FileScan(self, uses_torch, self.local if local is None else local)
        if guarded:
            scan.optional = _guarded_imports(tree)
        return scan.run(tree)

    def string_requirements(self, tree: ast.AST) -> Iterator[tuple[str, str, int]]:
        """String constants inside setup(install_requires=..., extras_require=...) calls, and anywhere in
        setup.py a string spelled as a pinned requirement ("triton>=2.3.1"): requirement lists are often
        built by helper functions or variables before they reach setup(). Each comes as (name, extras, line):
        `trl[vllm]` installs vLLM."""
        rocm = _rocm_branches(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) in rocm:
                    continue
                m = _PINNED_REQ.match(node.value)
                if m:
                    yield m.group(1), m.group(2) or "", node.lineno
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                if kw.arg not in ("install_requires", "extras_require", "setup_requires"):
                    continue
                for const in ast.walk(kw.value):
                    if (
                        isinstance(const, ast.Constant)
                        and isinstance(const.value, str)
                        and id(const) not in rocm
                    ):
                        m = _REQ_NAME.match(const.value)
                        if m:
                            yield m.group(1), m.group(2) or "", const.lineno


_ROCM = re.compile(r"(?i)rocm|(?<![a-z])hip(?![a-z])")


def _rocm_branches(tree: ast.AST) -> set[int]:
    """The nodes inside the body of an `if` whose test names ROCm or HIP (`if ROCM_BACKEND == "triton":`,
    `if IS_HIP_EXTENSION:`): requirements listed there are the ROCm build's, not the CUDA one's (round 6,
    from flash-attention's setup.py)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _ROCM.search(ast.unparse(node.test)):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})
_AVAILABILITY = re.compile(r"(?:^|\.)(?:is_\w+_available|find_spec|find_loader)$")


def _guarded_imports(tree: ast.AST) -> set[int]:
    """Import statements inside `try:` bodies that catch ImportError, or inside `if is_x_available():` /
    `if importlib.util.find_spec(...)` bodies: optional integrations that the code skips when the library is
    not installed (round 6, for the effort of fine-tuning kits with many optional kernel backends)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body: list[ast.stmt] = []
        if isinstance(node, ast.Try):
            caught = {
                n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
                for h in node.handlers
                if h.type is not None
                for n in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])
            }
            if caught & _IMPORT_ERRORS:
                body = node.body
        elif isinstance(node, ast.If):
            calls = [c for c in ast.walk(node.test) if isinstance(c, ast.Call)]
            if any(_AVAILABILITY.search(_dotted(c.func) or "") for c in calls):
                body = node.body
        for stmt in body:
            out.update(id(n) for n in ast.walk(stmt) if isinstance(n, ast.Import | ast.ImportFrom))
    return out


def _switched_off_or_forwarded(key: str, value: ast.expr) -> bool:
    """`fsdp=None`, `deepspeed=""`, `fsdp=False` switch nothing on, and `fsdp=training_args.fsdp` only forwards
    a setting made elsewhere (a launcher flag or config, which the scan reads where it is set): round 6, from
    LLaVA passing `fsdp=training_args.fsdp` to its own vision-tower loader."""
    if type(value) is ast.Constant:
        return value.value in (None, False, "", 0)
    return type(value) is ast.Attribute and value.attr == key


_EQUALITY = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)

# Fields that never hold a syntax node worth visiting (names, flags, operators, contexts).
_LEAF_FIELDS = frozenset(
    {
        "ctx",
        "op",
        "ops",
        "id",
        "attr",
        "arg",
        "module",
        "level",
        "name",
        "asname",
        "names",
        "type_comment",
        "simple",
        "is_async",
        "conversion",
        "kind",
        "rest",
        "kwd_attrs",
        "tag",
        "lineno",
    }
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: (), ast.MatchSingleton: ()}


def _child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that can hold nodes, last first (the pass pushes them on a stack)."""
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        fields = tuple(reversed([f for f in getattr(cls, "_fields", ()) if f not in _LEAF_FIELDS]))
        _CHILD_FIELDS[cls] = fields
    return fields


def _string_values(node: ast.expr) -> list[str]:
    """String constants an expression can evaluate to: a literal, either arm of `a if c else b`, the
    operands of `a or b`, the default of `os.environ.get(NAME, "x")` / `os.getenv(NAME, "x")`."""
    if type(node) is ast.Constant:
        return [node.value] if isinstance(node.value, str) else []
    if type(node) is ast.IfExp:
        return _string_values(node.body) + _string_values(node.orelse)
    if type(node) is ast.BoolOp:
        return [v for item in node.values for v in _string_values(item)]
    if (
        type(node) is ast.Call
        and type(node.func) is ast.Attribute
        and node.func.attr in ("get", "getenv")
        and len(node.args) == 2
    ):
        return _string_values(node.args[1])
    # "cuda:" + str(rank) and f"cuda:{rank}": the constant head names the device (issue 30)
    if type(node) is ast.BinOp and type(node.op) is ast.Add:
        return [v for v in _string_values(node.left) if v.endswith(":")]
    if type(node) is ast.JoinedStr and node.values and type(node.values[0]) is ast.Constant:
        head = node.values[0].value
        return [head] if isinstance(head, str) and head.endswith(":") else []
    return []


class _FileScan(ast.NodeVisitor):
    """One pass over a file's tree that collects what the rules look at, then matches it.

    Imports are matched as they are met; attribute chains, calls, decorated functions and `if`/`while`
    tests are kept and matched after the pass, once every import alias of the file is known.
    """

    def __init__(self, matcher: PythonMatcher, uses_torch: bool, local: frozenset[str]) -> None:
        self.m = matcher
        self.optional: set[int] = set()  # ids of guarded import statements (PythonMatcher.scan)
        self.local = local
        self.torch = uses_torch
        self.aliases: dict[str, str] = {}
        self.out: list[Match] = []
        self.chains: list[tuple[ast.Attribute, str]] = []  # outermost attribute chains on a name
        self.calls: list[ast.Call] = []
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.tests: list[tuple[ast.If | ast.While, list[ast.Call]]] = []
        self._handlers: dict[type, Callable[[Any], bool]] = {
            ast.Import: self.visit_Import,
            ast.ImportFrom: self.visit_ImportFrom,
            ast.Attribute: self.visit_Attribute,
            ast.Call: self.visit_Call,
            ast.FunctionDef: self.visit_FunctionDef,
            ast.AsyncFunctionDef: self.visit_FunctionDef,
            ast.Assign: self.visit_Assign,
            ast.AnnAssign: self.visit_Assign,
            ast.arg: self.visit_arg,
            ast.ClassDef: self.visit_ClassDef,
            ast.Dict: self.visit_Dict,
            ast.Compare: self.visit_Compare,
            ast.Delete: self.visit_Delete,
        }
        self._imported: dict[str, int] = {}  # alias -> index in `out` of the finding its import made
        self.defaults: list[tuple[str, ast.expr, int]] = []  # (parameter or field, default value, line)
        self.bound: dict[str, list[tuple[str, int]]] = {}  # name -> string values assigned to it, with lines
        if uses_torch and matcher._data_dependent is not None:
            self._handlers[ast.If] = self.visit_If
            self._handlers[ast.While] = self.visit_If
        self._test_calls: list[ast.Call] | None = None
        self._stack: list[ast.AST] = []
        self._probes: set[int] = set()
        self._entries: list[tuple[str, ast.expr, int]] = []  # (dict key, value, line)

    def run(self, tree: ast.AST) -> list[Match]:
        self.visit(tree)
        if self._probes:
            self.out = [m for i, m in enumerate(self.out) if i not in self._probes]
        self._match()
        return self.out

    # The pass: iterative (deep expressions do not hit the recursion limit), children in source order.
    def visit(self, node: ast.AST) -> None:
        stack = self._stack
        stack.append(node)
        pop, push = stack.pop, stack.append
        handlers = self._handlers
        fields_of = _CHILD_FIELDS
        while stack:
            node = pop()
            cls = type(node)
            handler = handlers.get(cls)
            if handler is not None and handler(node):
                continue
            fields = fields_of.get(cls)
            if fields is None:
                fields = _child_fields(cls)
            for field in fields:
                value = getattr(node, field, None)
                if value is None:
                    continue
                if type(value) is list:
                    for item in reversed(value):
                        if item is not None:
                            push(item)
                elif isinstance(value, ast.AST):
                    push(value)

    def generic_visit(self, node: ast.AST) -> None:
        self.visit(node)

    def _add(self, rule: int, message: str, line: int) -> None:
        self.out.append((self.m.ids[rule], message, line))

    def _own(self, name: str) -> bool:
        """Whether a dotted module is the repository's own code: its top-level package, or a sub-package of
        a folder without `__init__.py` (a namespace package, `megablocks.layers`), as `local` lists them."""
        head, _, rest = name.partition(".")
        if head in self.local:
            return True
        return bool(rest) and f"{head}.{rest.split('.', 1)[0]}" in self.local

    # Handlers return True when they have queued the node's children themselves.
    def visit_Import(self, node: ast.Import) -> bool:
        for a in node.names:
            head = a.name.split(".")[0]
            self.aliases[a.asname or head] = a.name if a.asname else head
            if self._own(a.name):
                self._wrapper(a.name, node.lineno)
                continue
            hit = self.m.import_match(a.name)
            if hit is not None:
                self._imported[a.asname or head] = len(self.out)
                self._add(hit[0], f"{self._imports(node)} {hit[1]}", node.lineno)
        return True

    def _imports(self, node: ast.Import | ast.ImportFrom) -> str:
        """How an import is reported: "optionally imports" when it is guarded (an optional integration)."""
        return "optionally imports" if id(node) in self.optional else "imports"

    def _wrapper(self, module: str, line: int) -> None:
        """The repository's own module named after a kernel library (`llama_flash_attn_monkey_patch`)."""
        for part in module.split(".")[1:]:
            word = next((w for w in _WRAPPER_WORDS if w in part), None)
            hit = self.m.import_match(word) if word else None
            if hit is not None:
                self._add(hit[0], f"imports {module} (the repository's own {word} wrapper)", line)
                return

    def visit_Compare(self, node: ast.Compare) -> bool:
        """`x.device.type == "cuda"`, `"cuda" in device`, `backend == "nccl"`: a branch on a CUDA device or
        backend name is device code, matched like a positional string (round 4, from llm-foundry and
        TinyLlama)."""
        if self.torch and all(type(op) in _EQUALITY for op in node.ops):
            for side in (node.left, *node.comparators):
                if type(side) is ast.Constant and isinstance(side.value, str):
                    rule = self.m._value_rule(self.m._string_args, side.value)
                    if rule is not None:
                        self._add(rule, f"compares with {side.value!r}", node.lineno)
                        break
        return False

    def visit_Delete(self, node: ast.Delete) -> bool:
        """`import torch_xla; del torch_xla` probes whether a package is installed: not a use of it."""
        for target in node.targets:
            if type(target) is ast.Name and target.id in self._imported:
                self._probes.add(self._imported.pop(target.id))
        return True

    def visit_Dict(self, node: ast.Dict) -> bool:
        """A dict display's string-keyed entries are matched like keyword arguments
        (`{"attn_implementation": "flash_attention_2"}` passed as `**kwargs`), and a table keyed by a device
        (`{"cuda": "nccl", "cpu": "gloo"}`) by its values, like positional strings."""
        for key, value in zip(node.keys, node.values, strict=True):
            if type(key) is ast.Constant and isinstance(key.value, str):
                self._entries.append((key.value, value, key.lineno))
        return False

    def visit_ImportFrom(self, node: ast.ImportFrom) -> bool:
        if node.module and node.level == 0:
            for a in node.names:
                self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            if self._own(node.module) or all(self._own(f"{node.module}.{a.name}") for a in node.names):
                self._wrapper(node.module, node.lineno)
                return True
            hit = self.m.import_match(node.module, [a.name for a in node.names])
            if hit is not None:
                self._add(hit[0], f"{self._imports(node)} {hit[1]}", node.lineno)
        return True

    def visit_Attribute(self, node: ast.Attribute) -> bool:
        base = node.value
        while type(base) is ast.Attribute:  # inner links of the chain are not matched on their own
            base = base.value
        if type(base) is ast.Name:
            self.chains.append((node, base.id))
        else:
            self._stack.append(base)
        return True

    def visit_Call(self, node: ast.Call) -> bool:
        self.calls.append(node)
        if self._test_calls is not None:
            self._test_calls.append(node)
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Decorated functions are kept for the decorator rules; a parameter's default value is matched
        like a keyword argument (`def load(attn_implementation="flash_attention_2")` switches it on for
        every caller that does not pass it)."""
        if node.decorator_list:
            self.functions.append(node)
        a = node.args
        positional = [*a.posonlyargs, *a.args]
        pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True))
        pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
        for arg, default in pairs:
            self.defaults.append((arg.arg, default, default.lineno))
        return False

    def visit_arg(self, node: ast.arg) -> bool:
        """A parameter's type annotation (`trainer: transformers.Trainer`) names a type, it uses nothing
        (round 6, from LLaVA): the parameter's children are not visited."""
        return True

    def visit_ClassDef(self, node: ast.ClassDef) -> bool:
        """A class attribute or dataclass field with a constant value (`dist_backend = 'nccl'`,
        `attn_implementation: str = "flash_attention_2"`) is matched like a keyword argument."""
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and type(stmt.targets[0]) is ast.Name:
                self.defaults.append((stmt.targets[0].id, stmt.value, stmt.lineno))
            elif isinstance(stmt, ast.AnnAssign) and type(stmt.target) is ast.Name and stmt.value is not None:
                value = stmt.value
                if type(value) is ast.Call and _dotted(value.func) in ("field", "dataclasses.field"):
                    value = next((k.value for k in value.keywords if k.arg == "default"), value)
                self.defaults.append((stmt.target.id, value, stmt.lineno))
        return False

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign) -> bool:
        """Light data flow: `device = 'cuda'` (or `'cuda' if ... else 'cpu'`) is remembered, so a later
        `x.to(device)` or `autocast(device_type=device)` is matched where the value is used. An attribute set
        to a constant (`config._attn_implementation = "flash_attention_2"`, `args.fp16 = True`) is matched like
        a keyword argument of that name (round 6)."""
        if node.value is None:
            return False
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if type(t) is ast.Attribute:
                self.defaults.append((t.attr.lstrip("_"), node.value, node.lineno))
        values = _string_values(node.value)
        if values:
            for t in targets:
                if type(t) is ast.Name:
                    self.bound.setdefault(t.id, []).extend((v, node.lineno) for v in values)
        return False

    def visit_If(self, node: ast.If | ast.While) -> bool:
        for stmt in reversed(node.orelse):
            self._stack.append(stmt)
        for stmt in reversed(node.body):
            self._stack.append(stmt)
        calls: list[ast.Call] = []
        outer, self._test_calls = self._test_calls, calls
        saved, self._stack = self._stack, []
        self.visit(node.test)  # an expression: it holds no statement, so no nested test
        self._stack, self._test_calls = saved, outer
        if calls:
            self.tests.append((node, calls))
        return True

    # --- matching, after the pass -----------------------------------------------------------------------

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name through the file's imports; None for names of the repository's own packages."""
        name = _dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.aliases.get(head, head)
        if self._own(full):
            return None
        return f"{full}.{rest}" if rest else full

    def _match(self) -> None:
        m = self.m
        for node, _ in self.chains:
            name = self.resolve(node)
            rule = m.call_rule(name) if name else None
            if rule is not None:
                self._add(rule, f"uses {name}", node.lineno)
        for call in self.calls:
            self._call(call)
        for fn in self.functions:
            for deco in fn.decorator_list:
                name = self.resolve(deco.func if isinstance(deco, ast.Call) else deco)
                rule = m._decorators.get(name) if name else None
                if rule is not None:
                    self._add(rule, f"@{name} kernel {fn.name}", fn.lineno)
                    break
        for test, calls in self.tests:
            self._control_flow(test, calls)
        for key, value_node, line in self.defaults:
            for value, _ in self._values(value_node):
                rule = m._keyword_rule(key, value)
                if rule is not None:
                    self._add(rule, f"defaults {key}={value!r}", line)
                    break
        for key, value_node, line in self._entries:
            device_table = self.torch and m._value_rule(m._string_args, key) is not None
            for value, _ in self._values(value_node):
                rule = m._keyword_rule(key, value)
                if rule is None and device_table:
                    rule = m._value_rule(m._string_args, value)
                if rule is not None:
                    self._add(rule, f"maps {key!r} to {value!r}", line)
                    break

    def _call(self, node: ast.Call) -> None:
        """The call's own name or method (one rule), then its keyword arguments (one rule each:
        `TrainingArguments(fp16=True, deepspeed=...)` is three findings), then, when nothing else matched,
        a positional string ("cuda", "nccl")."""
        m = self.m
        func = node.func
        matched = False
        if type(func) is ast.Name and func.id in self.aliases:  # a bare name from `from x import y`
            name = self.aliases[func.id]
            rule = m.call_rule(name) if not self._own(name) else None
            if rule is not None:
                self._add(rule, f"calls {name}", node.lineno)
                matched = True
        if not matched and self.torch and type(func) is ast.Attribute and not self._host(func):
            rule = m._methods.get(func.attr)
            if rule is not None and m.call_rule(self.resolve(func) or "") is None:
                self._add(rule, f"calls .{func.attr}()", node.lineno)
                matched = True
        for kw in node.keywords:
            if kw.arg is None:
                continue
            rule = m._any_keywords.get(kw.arg)
            if rule is not None and _switched_off_or_forwarded(kw.arg, kw.value):
                continue
            if rule is not None:
                self._add(rule, f"passes {kw.arg}=...", node.lineno)
                matched = True
                continue
            for value, origin in self._values(kw.value):
                rule = m._keyword_rule(kw.arg, value)
                if rule is not None:
                    self._add(rule, f"passes {kw.arg}={value!r}{origin}", node.lineno)
                    matched = True
                    break
        if self.torch and not matched:
            for arg in node.args:
                for value, origin in self._values(arg):
                    rule = m._value_rule(m._string_args, value)
                    if rule is not None:
                        self._add(rule, f"passes {value!r}{origin}", node.lineno)
                        return

    def _values(self, node: ast.expr) -> list[tuple[str, str]]:
        """The values an argument can hold: a constant (True becomes "True"), or the strings assigned to a
        name in this file, each with where it came from."""
        if type(node) is ast.Constant:
            v = node.value
            if isinstance(v, str):
                return [(v, "")]
            return [(str(v), "")] if isinstance(v, bool | int) else []
        if type(node) is ast.Name:
            return [(v, f" (held in `{node.id}`, line {line})") for v, line in self.bound.get(node.id, ())]
        if type(node) is ast.Attribute:  # dtype=torch.float16: the resolved dotted name is the value
            name = self.resolve(node)
            return [(name, "")] if name else []
        if type(node) is ast.Dict:  # device_map={"": device_string}: the values it maps to
            return [v for item in node.values if item is not None for v in self._values(item)]
        return [(v, "") for v in _string_values(node)]

    def _host(self, func: ast.Attribute) -> bool:
        """Whether a method call is made on a host library (numpy, pandas): `np.unique(x)`,
        `np.any(mask)`, `pd.Series(x).unique()`, `np.array(x).nonzero()` are host code, not device code."""
        base: ast.expr = func.value
        while True:
            if type(base) is ast.Call:
                base = base.func
            elif type(base) is ast.Attribute:
                base = base.value
            else:
                break
        if type(base) is not ast.Name:
            return False
        head = self.aliases.get(base.id, base.id).split(".", 1)[0]
        return head in _HOST_MODULES

    def _control_flow(self, node: ast.If | ast.While, calls: list[ast.Call]) -> None:
        rule = self.m._data_dependent
        assert rule is not None
        for call in calls:
            func = call.func
            if isinstance(func, ast.Attribute) and self._host(func):
                continue
            name = self.resolve(func) or ""
            method = func.attr if isinstance(func, ast.Attribute) else ""
            if name in _DATA_DEPENDENT_CALLS or method in _DATA_DEPENDENT_METHODS:
                what = name if name in _DATA_DEPENDENT_CALLS else f".{method}()"
                kind = "while" if isinstance(node, ast.While) else "if"
                self._add(rule, f"`{kind}` on a tensor value ({what})", node.lineno)
                return
