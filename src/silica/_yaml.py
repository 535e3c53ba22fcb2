"""Read YAML while remembering the line every value came from, so errors can name it.

`yaml.safe_load` throws the marks away. Here the file is composed into nodes with the safe loader
(no arbitrary Python objects), converted to plain values by hand, and the 1-based line of every mapping
key and sequence item is kept in a table keyed by its path, e.g. ("workloads", 2, "load").

Hostile files meet limits, each a one-line error (silica._files reads the text: size limit, binary and
non-UTF-8 files refused). The parser's event stream is walked first, without recursion, so nesting
deeper than `MAX_NESTING` and more than `MAX_ALIASES` aliases are refused before PyYAML's recursive
composer could hit Python's recursion limit. While converting, every value produced again through an
alias counts against `MAX_ALIAS_VALUES`: nine levels of nine aliases (the "billion laughs" bomb) would
otherwise expand to 9^9 values and gigabytes of memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from silica.errors import DataFileError

__all__ = ["MAX_ALIASES", "MAX_ALIAS_VALUES", "Located", "load_located", "safe_load"]

MAX_ALIASES = 100  # a hand-written file reuses an anchor a few times; a bomb needs many
MAX_ALIAS_VALUES = 10_000  # values produced through aliases, nested expansions included

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Located:
    """Plain Python values read from a YAML file, and where each one sits in the file."""

    path: Path
    value: Any
    lines: dict[Path_, int] = field(default_factory=dict)

    def line(self, where: Path_) -> int:
        """The line of `where`, or of its nearest parent that has one (1 if none does)."""
        probe = tuple(where)
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe[:-1]
        return self.lines.get((), 1)

    def error(self, where: Path_, problem: str, fix: str) -> DataFileError:
        """A one-line error naming the file, the line and the field."""
        # A key from the file may hold a newline or other control character: quoted, the message
        # stays one line (the fuzz tests found `{"\n": null}` under a known section).
        dotted = ".".join(str(p) if str(p).isprintable() else repr(str(p)) for p in where) or "(top level)"
        return DataFileError(f"{self.path}, line {self.line(where)}, field {dotted}: {problem}", fix)


# libyaml's parser where PyYAML was built with it (10x faster on the bundled files; same events and
# marks); the pure-Python one elsewhere. Scalars are still constructed by the safe loader's rules.
_FAST: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load` for the bundled data files, with libyaml's parser where PyYAML has it.

    The same safe constructor and values as `yaml.safe_load`, about 10x faster (stacks.yaml: 10 ms of
    pure-Python parsing at every command's start otherwise). User files go through `load_located`.
    """
    return yaml.load(text, Loader=_FAST)  # the safe loader (C or Python), never the full one


def load_located(path: Path) -> Located:
    """Parse `path` (YAML) into plain values plus a line table; a syntax error names its line."""
    from silica._files import read_text

    text = read_text(path, "YAML file", "a YAML text file saved as UTF-8")
    try:
        try:
            _check_shape(text, path, _FAST)
            node = yaml.compose(text, Loader=_FAST)
        except yaml.YAMLError:  # say what is wrong in the pure-Python parser's words (libyaml's are terser)
            _check_shape(text, path, yaml.SafeLoader)
            node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        line = mark.line + 1 if mark is not None else 1
        raise DataFileError(
            f"{path}, line {line}: not valid YAML ({err.problem}).", "fix the indentation or quoting there."
        ) from None
    except yaml.YAMLError as err:  # the reader: control characters, NUL bytes
        raise DataFileError(
            f"{path} is not a YAML text file ({_first_line(err)}).", "give a YAML text file saved as UTF-8."
        ) from None
    except RecursionError:  # below MAX_NESTING this cannot happen; kept as the last line of defence
        raise _too_deep(path, 1) from None
    lines: dict[Path_, int] = {}
    if node is None:
        return Located(path, None, lines)
    lines[()] = node.start_mark.line + 1
    constructor = yaml.SafeLoader(text)  # constructs scalars with YAML 1.1 rules (ints, floats, bools)
    try:
        value = _convert(node, (), lines, constructor, path, _Budget())
    finally:
        constructor.dispose()
    return Located(path, value, lines)


def _check_shape(text: str, path: Path, loader: Any) -> None:
    """Refuse deep nesting and many aliases from the event stream (iterative: no recursion)."""
    from silica._files import MAX_NESTING

    depth = aliases = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise _too_deep(path, event.start_mark.line + 1)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise DataFileError(
                    f"{path}, line {event.start_mark.line + 1}: more than {MAX_ALIASES} YAML aliases (*name).",
                    "write the repeated values out; no Silica file needs that many aliases.",
                )


def _too_deep(path: Path, line: int) -> DataFileError:
    from silica._files import MAX_NESTING

    return DataFileError(
        f"{path}, line {line}: nested deeper than {MAX_NESTING} levels.",
        "no Silica file nests that deep; check that this is the file you meant.",
    )


@dataclass
class _Budget:
    """Nodes already converted, and how many values have been produced again through aliases."""

    seen: set[int] = field(default_factory=set)
    repeated: int = 0
    open: set[int] = field(default_factory=set)  # collections being converted: the path from the root


def _convert(
    node: yaml.Node,
    where: Path_,
    lines: dict[Path_, int],
    loader: yaml.SafeLoader,
    path: Path,
    budget: _Budget,
) -> Any:
    if id(node) in budget.seen:  # reached again: an alias (or an alias inside an alias)
        budget.repeated += 1
        if budget.repeated > MAX_ALIAS_VALUES:
            raise DataFileError(
                f"{path}, line {node.start_mark.line + 1}: YAML aliases expand to more than "
                f"{MAX_ALIAS_VALUES:,} values.",
                "write the repeated values out; an alias of an alias of an alias is a YAML bomb.",
            )
    else:
        budget.seen.add(id(node))
    if id(node) in budget.open:  # `a: &a [*a]`: the alias points back up its own path
        raise DataFileError(
            f"{path}, line {node.start_mark.line + 1}: a YAML alias refers to a value that contains it.",
            "a Silica file cannot hold itself; write the value out.",
        )
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
        budget.open.add(id(node))
        try:
            return _collection(node, where, lines, loader, path, budget)
        finally:
            budget.open.discard(id(node))
    return _scalar(node, loader, path)


def _collection(
    node: yaml.MappingNode | yaml.SequenceNode,
    where: Path_,
    lines: dict[Path_, int],
    loader: yaml.SafeLoader,
    path: Path,
    budget: _Budget,
) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise DataFileError(
                    f"{path}, line {key_node.start_mark.line + 1}: YAML merge keys (<<) are not supported.",
                    "write the fields out in full.",
                )
            key = _scalar(key_node, loader, path)
            here = (*where, str(key))
            if str(key) in out:
                raise DataFileError(
                    f"{path}, line {key_node.start_mark.line + 1}, field {'.'.join(map(str, here))}: "
                    "given twice.",
                    "keep one of them.",
                )
            lines[here] = key_node.start_mark.line + 1
            out[str(key)] = _convert(value_node, here, lines, loader, path, budget)
        return out
    items = []
    for i, item in enumerate(node.value):  # a sequence
        here = (*where, i)
        lines[here] = item.start_mark.line + 1
        items.append(_convert(item, here, lines, loader, path, budget))
    return items


def _scalar(node: yaml.Node, loader: yaml.SafeLoader, path: Path) -> Any:
    """One value by the safe loader's rules; a tag it refuses or a malformed value names its line."""
    try:
        return loader.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as err:
        problem = getattr(err, "problem", None) or _first_line(err)
        raise DataFileError(
            f"{path}, line {node.start_mark.line + 1}: cannot read this value ({problem}).",
            "write a plain number, text, list or mapping (no YAML tags).",
        ) from None


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0].rstrip(".:") if text else type(err).__name__
