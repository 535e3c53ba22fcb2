"""`scan_code`: CUDA-only dependencies, calls and kernels in a repository, each with file:line.

The scan reads files as text and parses Python with `ast`; it never imports or executes the scanned code.
A cheap text prefilter skips the AST for Python files that mention none of the rules' names, which keeps a
10,000-file repository within seconds. Unreadable, binary and unparsable files become findings.
"""

from __future__ import annotations

import ast
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

from silica.errors import InputError
from silica.scan.code_deps import is_dependency_file, normalize, packages_in
from silica.scan.knowledge import CodeRule, Knowledge, knowledge
from silica.scan.python_rules import PythonMatcher
from silica.scan.report import TARGETS, Finding, ScanReport
from silica.scan.verdict import verdicts

__all__ = ["SKIP_DIRS", "scan_code"]

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        "site-packages",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "build",
        "dist",
        ".eggs",
    }
)
MAX_BYTES = 2_000_000  # larger "source" files are generated or vendored; they are reported, not parsed


def _info(rule: str, title: str, message: str, file: str, line: int | None = None) -> Finding:
    return Finding(rule, title, message, dict.fromkeys(TARGETS, "info"), file=file, line=line)


def _finding(rule: CodeRule, message: str, file: str, line: int | None) -> Finding:
    return Finding(
        rule=rule.id,
        title=rule.title,
        message=message,
        impact=dict.fromkeys(TARGETS, rule.impact),
        alternative=rule.alternative,
        source=rule.source,
        file=file,
        line=line,
        effort_weeks=rule.effort_weeks,
    )


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            yield Path(folder, name)


def _read(path: Path, rel: str) -> tuple[str | None, Finding | None]:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None, _info("skipped-file", "file too large to scan", f"over {MAX_BYTES:,} bytes", rel)
        data = path.read_bytes()
    except OSError as err:
        return None, _info(
            "unreadable-file", "unreadable file", f"{type(err).__name__}: {err.strerror or err}", rel
        )
    if b"\x00" in data[:8192]:
        return None, _info(
            "binary-file", "binary file where text was expected", "contains NUL bytes; not scanned", rel
        )
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as err:
        return None, _info("unreadable-file", "file is not UTF-8 text", str(err), rel)


class _Scanner:
    def __init__(self, kb: Knowledge, root: Path) -> None:
        self.kb = kb
        self.root = root
        self.findings: list[Finding] = []
        self.files = 0
        self.packages: dict[str, CodeRule] = {}
        self.extensions: dict[str, CodeRule] = {}
        for rule in kb.code_rules:
            for pkg in rule.packages:
                self.packages.setdefault(normalize(pkg), rule)
            for ext in rule.extensions:
                self.extensions.setdefault(ext, rule)
        self.python = PythonMatcher(kb.code_rules)
        self.trigger = re.compile("|".join(re.escape(t) for t in sorted(self.python.trigger_words())))

    def run(self) -> None:
        for path in _walk(self.root):
            self.files += 1
            name = path.name
            rel = path.relative_to(self.root).as_posix()
            ext = next((e for e in self.extensions if name.endswith(e)), None)
            if ext is not None:
                self._kernel_file(path, rel, self.extensions[ext])
            elif name.endswith(".py"):
                self._python(path, rel, name == "setup.py")
            elif is_dependency_file(name):
                self._dependencies(path, rel, name)

    def _kernel_file(self, path: Path, rel: str, rule: CodeRule) -> None:
        text, problem = _read(path, rel)
        line = None
        if text is not None:
            line = next((n for n, t in enumerate(text.splitlines(), 1) if "__global__" in t), 1)
        message = "CUDA kernel source" + (
            " (first __global__ kernel here)" if text and "__global__" in text else ""
        )
        self.findings.append(_finding(rule, message, rel, line))
        if problem is not None and problem.rule != "binary-file":
            self.findings.append(problem)

    def _dependencies(self, path: Path, rel: str, name: str) -> None:
        text, problem = _read(path, rel)
        if text is None:
            if problem is not None:
                self.findings.append(problem)
            return
        for pkg, line in packages_in(name, text):
            rule = self.packages.get(pkg)
            if rule is not None:
                self.findings.append(_finding(rule, f"depends on {pkg}", rel, line))

    def _python(self, path: Path, rel: str, is_setup: bool) -> None:
        text, problem = _read(path, rel)
        if text is None:
            if problem is not None:
                self.findings.append(problem)
            return
        if not self.trigger.search(text) and not is_setup:
            return
        try:
            tree = ast.parse(text, filename=rel)
        except (SyntaxError, ValueError, RecursionError) as err:
            line = getattr(err, "lineno", None)
            self.findings.append(
                _info(
                    "unparsable-python",
                    "Python file does not parse",
                    f"{type(err).__name__}: {err}",
                    rel,
                    line,
                )
            )
            return
        for rule_id, message, line in self.python.scan(tree, uses_torch="torch" in text):
            self.findings.append(_finding(self.kb.rule(rule_id), message, rel, line))
        if is_setup:
            for pkg, line in self.python.string_requirements(tree):
                rule = self.packages.get(normalize(pkg))
                if rule is not None:
                    self.findings.append(_finding(rule, f"setup.py requires {pkg}", rel, line))


def scan_code(directory: str | Path) -> ScanReport:
    """Scan a repository directory for what stands between it and Neuron. Never runs its code."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"{root} is not a directory.", "pass the root folder of the repository to scan.")
    start = time.perf_counter()
    kb = knowledge()
    scanner = _Scanner(kb, root)
    scanner.run()
    findings = sorted(scanner.findings, key=lambda f: (f.file or "", f.line or 0, f.rule))
    per_target, effort = verdicts(kb, kind="code", findings=findings)
    return ScanReport(
        subject=str(directory),
        kind="code",
        target_verdicts=per_target,
        findings=tuple(findings),
        effort_weeks=effort,
        method="static analysis",
        assumptions=(
            "text and ast only: the repository is never imported or executed",
            f"skipped folders: {', '.join(sorted(SKIP_DIRS))}",
            "torch-specific rules (methods, string 'cuda' arguments, data-dependent control flow) "
            "apply to files that mention torch",
        ),
        seconds=time.perf_counter() - start,
        files_scanned=scanner.files,
    )
