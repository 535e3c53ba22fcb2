"""Dependencies declared in requirements*.txt, pyproject.toml, setup.cfg and environment.yml.

Line-based on purpose: a file that does not parse as TOML or YAML still yields its dependencies with
their line numbers, and nothing here executes the scanned project (setup.py is read by the Python scanner,
as source text, never run).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["is_dependency_file", "normalize", "packages_in"]

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_LEADING = re.compile(rf"^\s*(?:-\s+)?(?:[\w-]+::)?({_NAME})")
_QUOTED = re.compile(rf"[\"']({_NAME})\s*(?:\[[^\]]*\])?\s*(?=[<>=!~;@,\s\"'(])")
_TOML_KEY = re.compile(rf"^\s*[\"']?({_NAME})[\"']?\s*=")
_REQUIREMENTS = re.compile(r"^requirements.*\.(txt|in)$|^.*requirements\.(txt|in)$", re.IGNORECASE)


def normalize(name: str) -> str:
    """PEP 503 spelling: lower case, runs of `-`, `_` and `.` become one `-`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_dependency_file(name: str) -> bool:
    return bool(_REQUIREMENTS.match(name)) or name in (
        "pyproject.toml",
        "setup.cfg",
        "environment.yml",
        "environment.yaml",
        "conda.yml",
        "conda.yaml",
    )


def _strip_comment(line: str) -> str:
    return line.split(" #", 1)[0].split("\t#", 1)[0] if not line.lstrip().startswith("#") else ""


def _requirements(lines: list[str]) -> Iterator[tuple[str, int]]:
    for n, line in enumerate(lines, 1):
        text = _strip_comment(line)
        if text.strip().startswith("-"):  # -r, -e, --index-url
            continue
        m = _LEADING.match(text)
        if m:
            yield m.group(1), n


def _yaml_list(lines: list[str]) -> Iterator[tuple[str, int]]:
    for n, line in enumerate(lines, 1):
        text = _strip_comment(line)
        if text.lstrip().startswith("- "):
            m = _LEADING.match(text)
            if m:
                yield m.group(1), n


def _setup_cfg(lines: list[str]) -> Iterator[tuple[str, int]]:
    section = ""
    in_requires = False
    for n, line in enumerate(lines, 1):
        text = _strip_comment(line)
        if text.strip().startswith("["):
            section = text.strip().lower()
            in_requires = False
            continue
        if not section.startswith("[options"):
            continue
        if text[:1] in (" ", "\t"):  # a continuation line of the last key
            candidate = text if in_requires else ""
        elif "=" in text:
            key, candidate = text.split("=", 1)
            in_requires = "requires" in key or section.startswith("[options.extras_require")
            candidate = candidate if in_requires else ""
        else:
            continue
        lead = _LEADING.match(candidate)
        if lead:
            yield lead.group(1), n


def _pyproject(lines: list[str]) -> Iterator[tuple[str, int]]:
    table = ""
    for n, line in enumerate(lines, 1):
        text = _strip_comment(line)
        stripped = text.strip()
        if stripped.startswith("["):
            table = stripped.lower()
            continue
        if "dependencies" in table or "requires" in table:
            key = _TOML_KEY.match(text)
            if key and "poetry" in table and key.group(1).lower() != "python":
                yield key.group(1), n
        if "description" in stripped.split("=", 1)[0]:
            continue
        for m in _QUOTED.finditer(text):
            yield m.group(1), n


def packages_in(name: str, text: str) -> Iterator[tuple[str, int]]:
    """(normalized package name, line) for each dependency a file declares."""
    lines = text.splitlines()
    if name == "pyproject.toml":
        found = _pyproject(lines)
    elif name == "setup.cfg":
        found = _setup_cfg(lines)
    elif name.endswith((".yml", ".yaml")):
        found = _yaml_list(lines)
    else:
        found = _requirements(lines)
    for pkg, line in found:
        yield normalize(pkg), line
