"""Dependencies declared in requirements*.txt, pyproject.toml, setup.cfg and environment.yml.

pyproject.toml is parsed with `tomllib`, and only its dependency tables count (`project.dependencies`,
`project.optional-dependencies`, `dependency-groups`, `build-system.requires`, Poetry's dependency tables
and the uv/PDM dev-dependency lists), so `keywords = ["triton"]` or a linter's `exclude = ["apex"]` are not
dependencies; line numbers are found afterwards. A pyproject.toml that is not valid TOML is read line by
line, still within those tables, and says so. The other formats are read line by line, so a file that does
not parse still yields its dependencies. Nothing here executes the scanned project (setup.py is read by
the Python scanner, as source text, never run).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = ["Dependencies", "dependencies", "is_dependency_file", "normalize", "packages_in"]

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_LEADING = re.compile(rf"^\s*(?:-\s+)?[\"']?(?:[\w-]+::)?({_NAME})")
_REQUIREMENTS = re.compile(r"^requirements.*\.(txt|in)$|^.*requirements\.(txt|in)$", re.IGNORECASE)
_TOML_PART = r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'"""
_TOML_DOTTED = rf"(?:{_TOML_PART})(?:\s*\.\s*(?:{_TOML_PART}))*"
_TOML_HEADER = re.compile(rf"^\s*\[\[?\s*({_TOML_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(rf"^\s*({_TOML_DOTTED})\s*=(?!=)")
_TOML_PARTS = re.compile(_TOML_PART)
_TOML_STRING = re.compile(r""""((?:[^"\\]|\\.)*)"|'([^']*)'""")
_INLINE_KEY = re.compile(rf"""(?:^|[{{,])\s*["']?({_NAME})["']?\s*=""")

Dependencies = tuple[list[tuple[str, int | None]], str | None]  # ((package, line) ..., problem)


def normalize(name: str) -> str:
    """PEP 503 spelling: lower case, runs of `-`, `_` and `.` become one `-`."""
    return re.sub(r"[-_.]+", "-", name).lower()


_PYPROJECT = re.compile(r"^pyproject(?:[-_.][\w.-]+)?\.toml$")


def is_dependency_file(name: str) -> bool:
    return bool(_REQUIREMENTS.match(name) or _PYPROJECT.match(name)) or name in (
        "pyproject.toml",
        "setup.cfg",
        "environment.yml",
        "environment.yaml",
        "conda.yml",
        "conda.yaml",
        "cog.yaml",  # round 6 (from LLaVA): Cog's build.python_packages list
    )


def _strip_comment(line: str) -> str:
    return line.split(" #", 1)[0].split("\t#", 1)[0] if not line.lstrip().startswith("#") else ""


# Round 5 (issue 30, from lingua's Mamba app): a bare `git+https://github.com/Dao-AILab/causal-conv1d.git` line
# installs the package its repository (or `#egg=`) names.
_VCS_LINE = re.compile(
    r"^\s*(?:-e\s+)?git\+\S+?/([A-Za-z0-9][\w.-]*?)(?:\.git)?(?:@[^#\s]*)?(?:#egg=([\w.-]+)\S*)?\s*$"
)


def _requirements(lines: list[str]) -> Iterator[tuple[str, int]]:
    for n, line in enumerate(lines, 1):
        text = _strip_comment(line)
        vcs = _VCS_LINE.match(text)
        if vcs:
            yield vcs.group(2) or vcs.group(1), n
            continue
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


# --- pyproject.toml ---------------------------------------------------------------------------------------


def _kind(path: tuple[str, ...]) -> tuple[str, int] | None:
    """How a pyproject.toml key path lists dependencies, and the length of the path to that list or table:
    "list" of PEP 508 strings, or "table" keyed by package name (Poetry)."""
    match path:
        case ("project", "dependencies", *_) | ("build-system", "requires", *_):
            return "list", 2
        case ("project", "optional-dependencies", *_) | ("tool", "uv" | "pdm", "dev-dependencies", *_):
            return "list", 3
        case ("dependency-groups", *_):
            return "list", 1
        case ("tool", "poetry", "dependencies" | "dev-dependencies", *_):
            return "table", 3
        case ("tool", "poetry", "group", _, "dependencies", *_):
            return "table", 5
    return None


def _split(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip("\"'") for p in _TOML_PARTS.findall(dotted))


def _requirement_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _requirement_strings(item)
    elif isinstance(value, dict):  # dependency-groups also hold {include-group = "..."} tables
        for item in value.values():
            if isinstance(item, list):
                yield from _requirement_strings(item)


def _declared(data: dict[str, Any]) -> set[str]:
    """Normalized names in the dependency tables of a parsed pyproject.toml."""
    found: set[str] = set()

    def visit(value: Any, path: tuple[str, ...]) -> None:
        kind = _kind(path)
        if kind is not None and kind[0] == "table" and len(path) == kind[1]:
            if isinstance(value, dict):
                found.update(normalize(k) for k in value if k.lower() != "python")
        elif kind is not None and kind[0] == "list":
            for req in _requirement_strings(value):
                m = _LEADING.match(req)
                if m:
                    found.add(normalize(m.group(1)))
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(item, (*path, str(key)))

    visit(data, ())
    return found


def _dependency_lines(lines: list[str]) -> Iterator[tuple[str, int]]:
    """(name, line) for each name written in a dependency table, following headers and dotted keys."""
    table: tuple[str, ...] = ()
    key: tuple[str, ...] = ()
    for n, line in enumerate(lines, 1):
        text = _strip_comment(line)
        header = _TOML_HEADER.match(text)
        if header:
            table, key = _split(header.group(1)), ()
            continue
        assigned = _TOML_KEY.match(text)
        if assigned:
            key = _split(assigned.group(1))
        path = (*table, *key)
        kind = _kind(path)
        if kind is None:
            continue
        value = text[assigned.end() :] if assigned else text
        if kind[0] == "list":  # each string's leading name: not the 'Linux' of a marker
            for m in _TOML_STRING.finditer(value):
                lead = _LEADING.match(m.group(1) if m.group(1) is not None else m.group(2))
                if lead:
                    yield lead.group(1), n
        elif len(path) > kind[1]:  # [tool.poetry.dependencies] torch = "^2"
            yield path[kind[1]], n
        elif assigned:  # dependencies = { torch = "^2", flash-attn = "*" }
            for m in _INLINE_KEY.finditer(value.strip()):
                yield m.group(1), n


def _pyproject(text: str) -> Dependencies:
    first: dict[str, int] = {}
    for name, n in _dependency_lines(text.splitlines()):
        first.setdefault(normalize(name), n)
    first.pop("python", None)
    from silica._files import parse_toml
    from silica.errors import DataFileError

    try:  # nesting beyond the limit (a 3000-deep array) is refused, not a RecursionError
        declared = _declared(parse_toml(text, "pyproject.toml"))
    except DataFileError as err:
        return list(first.items()), f"{err.problem.removeprefix('pyproject.toml ')}; read line by line"
    return [(name, first.get(name)) for name in sorted(declared, key=lambda d: (first.get(d, 0), d))], None


def dependencies(name: str, text: str) -> Dependencies:
    """(normalized package name, line or None) for each dependency a file declares, and a problem if any."""
    if _PYPROJECT.match(name):  # pyproject.toml, and variants such as pyproject-cuda.toml (issue 30)
        return _pyproject(text)
    lines = text.splitlines()
    if name == "setup.cfg":
        found = _setup_cfg(lines)
    elif name.endswith((".yml", ".yaml")):
        found = _yaml_list(lines)
    else:
        found = _requirements(lines)
    return [(normalize(pkg), line) for pkg, line in found], None


def packages_in(name: str, text: str) -> Iterator[tuple[str, int | None]]:
    """(normalized package name, line) for each dependency a file declares."""
    yield from dependencies(name, text)[0]
