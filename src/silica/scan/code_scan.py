"""`scan_code`: CUDA-only dependencies, calls and kernels in a repository, each with file:line.

The scan reads files as text and parses Python with `ast`; it never imports or executes the scanned code.
A text prefilter (`PythonMatcher.needs_ast`) skips the parse for Python files that no rule can match, and
each parsed file is walked once, which keeps a 10,000-file repository within seconds. Unreadable folders,
unreadable, binary and unparsable files become findings.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

from silica.errors import InputError
from silica.scan.code_deps import dependencies, is_dependency_file, normalize
from silica.scan.knowledge import TASKS, CodeRule, Knowledge, Task, knowledge
from silica.scan.python_rules import PythonMatcher
from silica.scan.report import TARGETS, Finding, ScanReport
from silica.scan.verdict import task_findings, verdicts

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


REVIEW_RULE = "unscanned-source"
_REVIEW_WEEKS = 0.1  # one file read by hand (effort.yaml work item review-unscanned)


def _review(problem: Finding) -> Finding:
    """A Python source the scan could not look at: "needs review", never "ready" (issue 15)."""
    return Finding(
        REVIEW_RULE,
        "source file not scanned: review it by hand",
        f"{problem.title}: {problem.message}",
        dict.fromkeys(TARGETS, "needs-work"),
        alternative="fix or convert the file (UTF-8 text that Python parses), then scan again",
        file=problem.file,
        line=problem.line,
        effort_weeks=_REVIEW_WEEKS,
    )


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


def _walk(root: Path, errors: list[OSError]) -> Iterator[tuple[str, str, str]]:
    """(path, path relative to root, file name) for each file; folders that cannot be listed go to errors."""
    top = os.fspath(root)
    for folder, dirs, files in os.walk(top, onerror=errors.append):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        prefix = os.path.relpath(folder, top).replace(os.sep, "/") + "/" if folder != top else ""
        for name in sorted(files):
            yield os.path.join(folder, name), prefix + name, name


def _read(path: str, rel: str) -> tuple[str | None, Finding | None]:
    import stat

    try:  # a FIFO or device in the repo would block or never end: only regular files are read
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, _info(
                "skipped-file", "not a regular file", "a FIFO, device or socket; not scanned", rel
            )
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        return None, _info(
            "unreadable-file", "unreadable file", f"{type(err).__name__}: {err.strerror or err}", rel
        )
    if len(data) > MAX_BYTES:
        return None, _info("skipped-file", "file too large to scan", f"over {MAX_BYTES:,} bytes", rel)
    if data.find(b"\x00", 0, 8192) >= 0:
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
        self.python_files = 0
        self.parsed = 0
        self.packages: dict[str, CodeRule] = {}
        self.extensions: dict[str, CodeRule] = {}
        for rule in kb.code_rules:
            for pkg in rule.packages:
                self.packages.setdefault(normalize(pkg), rule)
            for ext in rule.extensions:
                self.extensions.setdefault(ext, rule)
        self.ext_suffixes = tuple(self.extensions)
        self.rules = {r.id: r for r in kb.code_rules}
        self.python = PythonMatcher(kb.code_rules)
        # text rules: (rule, file-name pattern, line pattern), for scripts, Dockerfiles and JSON configs
        self.text_rules: list[tuple[CodeRule, re.Pattern[str], re.Pattern[str]]] = [
            (
                r,  # r.text_literals: a cheap `in` test before the pattern runs
                re.compile("|".join(fnmatch.translate(g) for g in r.files)),
                re.compile("|".join(f"(?:{t})" for t in r.text), re.MULTILINE),
            )
            for r in kb.code_rules
            if r.text
        ]
        globs = sorted({g for r in kb.code_rules for g in r.files})
        self._py_text_rules: list[tuple[CodeRule, re.Pattern[str]]] | None = None
        self.text_names = re.compile("|".join(fnmatch.translate(g) for g in globs)) if globs else None

    def run(self) -> None:
        errors: list[OSError] = []
        for path, rel, name in _walk(self.root, errors):
            self.files += 1
            if name.endswith(".py"):
                self._python(path, rel, name == "setup.py")
            elif name.endswith(self.ext_suffixes):
                ext = next(e for e in self.extensions if name.endswith(e))
                self._kernel_file(path, rel, self.extensions[ext])
            else:
                dependency = is_dependency_file(name)
                text_rules = self.text_names is not None and self.text_names.match(name) is not None
                if dependency or text_rules:
                    self._other(path, rel, name, dependency, text_rules)
        for err in errors:
            self.findings.append(self._unlistable(err))

    def _text_rules_for(self, name: str) -> list[tuple[CodeRule, re.Pattern[str]]]:
        """The text rules whose file patterns match `name` (cached for Python files, the common case)."""
        plain_py = name.endswith(".py") and not name.startswith("Dockerfile")  # not "Dockerfile.*"
        if plain_py and self._py_text_rules is not None:
            return self._py_text_rules
        rules = [(r, pattern) for r, names, pattern in self.text_rules if names.match(name)]
        if plain_py:  # the rules' globs ("*.py", "*.sh", "Dockerfile.*") match all such names alike
            self._py_text_rules = rules
        return rules

    def _text(self, text: str, rel: str, name: str) -> None:
        """Line patterns (launch commands, NCCL variables, CUDA base images, ZeRO configs): one finding per
        rule and line."""
        for rule, pattern in self._text_rules_for(name):
            if rule.text_literals and not any(lit in text for lit in rule.text_literals):
                continue
            seen: set[int] = set()
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                if line not in seen:
                    seen.add(line)
                    what = m.group(0).strip()
                    self.findings.append(_finding(rule, f"{what[:80]!r} in {name}", rel, line))

    def _unlistable(self, err: OSError) -> Finding:
        where = os.fspath(err.filename) if err.filename is not None else os.fspath(self.root)
        rel = os.path.relpath(where, self.root).replace(os.sep, "/")
        return _info(
            "unreadable-directory",
            "folder could not be listed; its files were not scanned",
            f"{type(err).__name__}: {err.strerror or err}",
            rel,
        )

    def _kernel_file(self, path: str, rel: str, rule: CodeRule) -> None:
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

    def _other(self, path: str, rel: str, name: str, dependency: bool, text_rules: bool) -> None:
        text, problem = _read(path, rel)
        if text is None:
            if problem is not None:
                self.findings.append(problem)
            return
        if text_rules:
            self._text(text, rel, name)
        if not dependency:
            return
        found, trouble = dependencies(name, text)
        if trouble is not None:
            self.findings.append(_info("unparsable-dependencies", f"{name} does not parse", trouble, rel))
        for pkg, line in found:
            rule = self.packages.get(pkg)
            if rule is not None:
                self.findings.append(_finding(rule, f"depends on {pkg}", rel, line))

    def _python(self, path: str, rel: str, is_setup: bool) -> None:
        text, problem = _read(path, rel)
        if text is None:
            if problem is not None:
                self.findings.append(problem)
                if problem.rule != "skipped-file":
                    self.findings.append(_review(problem))
            return
        self.python_files += 1
        if self.text_names is not None and self.text_names.match(os.path.basename(rel)):
            self._text(text, rel, os.path.basename(rel))
        uses_torch = "torch" in text
        if not is_setup and not self.python.needs_ast(text, uses_torch=uses_torch):
            return
        self.parsed += 1
        try:
            tree = ast.parse(text, filename=rel)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            line = getattr(err, "lineno", None)
            problem = _info(
                "unparsable-python", "Python file does not parse", f"{type(err).__name__}: {err}", rel, line
            )
            self.findings += [problem, _review(problem)]
            return
        for rule_id, message, line in self.python.scan(tree, uses_torch=uses_torch):
            self.findings.append(_finding(self.rules[rule_id], message, rel, line))
        if is_setup:
            for pkg, line in self.python.string_requirements(tree):
                rule = self.packages.get(normalize(pkg))
                if rule is not None:
                    self.findings.append(_finding(rule, f"setup.py requires {pkg}", rel, line))


def scan_code(directory: str | Path, *, task: Task = "inference") -> ScanReport:
    """Scan a repository directory for what stands between it and Neuron, for inference or training.
    Never runs its code."""
    root = Path(directory)
    if task not in TASKS:
        raise InputError(f"Unknown task {task!r}.", f"pass --task {' or --task '.join(TASKS)}.")
    if not root.is_dir():
        raise InputError(f"{root} is not a directory.", "pass the root folder of the repository to scan.")
    start = time.perf_counter()
    kb = knowledge()
    scanner = _Scanner(kb, root)
    scanner.run()
    if scanner.files == 0 and not scanner.findings:
        raise InputError(
            f"{root} holds no files to scan (folders named {', '.join(sorted(SKIP_DIRS)[:3])}, ... are skipped).",
            "pass the root folder of a repository that holds its source files.",
        )
    findings = sorted(
        task_findings(kb, scanner.findings, task), key=lambda f: (f.file or "", f.line or 0, f.rule)
    )
    per_target, effort = verdicts(kb, kind="code", findings=findings, task=task)
    return ScanReport(
        subject=str(directory),
        kind="code",
        target_verdicts=per_target,
        findings=tuple(findings),
        effort_weeks=effort,
        method="static analysis",
        task=task,
        assumptions=(
            "text and ast only: the repository is never imported or executed",
            f"skipped folders: {', '.join(sorted(SKIP_DIRS))}",
            "torch-specific rules (methods, string 'cuda' arguments, data-dependent control flow) "
            "apply to files that mention torch",
            "light data flow: a string assigned to a plain name in a file ('cuda', 'nccl', either arm of "
            "`a if c else b`, an environment default) is matched where the name is passed to a call",
            "a Python source that cannot be read or parsed makes every target 'needs-work' (review it by hand)",
            f"{scanner.parsed} of {scanner.python_files} Python files parsed: the others hold none of the "
            "names the rules look for (so a syntax error in them is not reported); a string value spelled "
            "with escapes or split into adjacent literals ('cu' 'da') is not seen",
        ),
        seconds=time.perf_counter() - start,
        files_scanned=scanner.files,
    )
