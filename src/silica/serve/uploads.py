"""Uploaded files: read within a size limit, checked before any loader sees them, kept in a private
temporary folder that is removed afterwards.

The library's loaders take paths (an inventory names its scan files relative to itself), so an upload
is written under a fresh `tempfile.mkdtemp()` folder with a name the server chooses; the client's file
name is only a label, reduced to its last part and a safe alphabet. Uploaded YAML is first read as a
stream of parser events (cheap: nothing is built) and refused when it uses more aliases or nests deeper
than any real inventory or fleet file, or when it points at a file outside the upload (`/...`, `~`,
`..`): a small YAML "billion laughs" file would otherwise expand to gigabytes.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from silica.serve.problems import ProblemError

__all__ = ["MAX_ALIASES", "MAX_DEPTH", "check_yaml", "safe_name", "upload_dir", "utf8_text"]

MAX_ALIASES = 50
MAX_DEPTH = 32
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(filename: str | None, default: str = "upload") -> str:
    """The label of an uploaded file: its last path part, in [A-Za-z0-9._-], never hidden, at most 80."""
    last = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _SAFE.sub("_", last).lstrip(".")[:80]
    return cleaned or default


def utf8_text(data: bytes, label: str, what: str) -> str:
    """Uploaded bytes as text; binary content is a 422 naming the first bad byte."""
    if b"\x00" in data[:8192]:
        raise ProblemError(422, f"{label} is a binary file, not {what}.", f"upload the {what} as text.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ProblemError(
            422,
            f"{label} is not UTF-8 text (byte {err.start}: {err.reason}).",
            f"upload the {what} saved as UTF-8.",
        ) from None


def check_json_object(text: str, label: str) -> dict[str, Any]:
    """A JSON object, or a 422 naming the line where it stops being one."""
    from silica._files import parse_json
    from silica.errors import DataFileError

    try:  # huge integers, NaN and nesting (100,000-deep JSON) are a 422 too, never a 500
        value = parse_json(text, label, "a Hugging Face config.json")
    except DataFileError as err:
        raise ProblemError(422, err.problem, "upload a Hugging Face config.json.") from None
    if not isinstance(value, dict):
        raise ProblemError(
            422,
            f"{label} holds a JSON {type(value).__name__}, not an object.",
            "upload a config.json object.",
        )
    return value


def check_yaml(text: str, label: str) -> None:
    """Refuse YAML that is a bomb (aliases, depth) or reaches outside the upload; syntax is left to
    the library's loader, which names the line."""
    aliases = depth = 0
    open_anchors: list[str | None] = []  # the anchor of each collection not yet closed
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                if event.anchor in open_anchors:  # `a: &a [*a]`: infinitely deep once loaded
                    line = event.start_mark.line + 1 if event.start_mark else 0
                    raise ProblemError(
                        422,
                        f"{label}, line {line}: the alias *{event.anchor} refers to the value that holds it.",
                        "write the values out; inventories and fleet files need no aliases.",
                    )
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise ProblemError(
                        422,
                        f"{label} uses more than {MAX_ALIASES} YAML aliases (*name).",
                        "write the values out; inventories and fleet files need no aliases.",
                    )
            elif isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                open_anchors.append(event.anchor)
                if depth > MAX_DEPTH:
                    raise ProblemError(
                        422,
                        f"{label} nests deeper than {MAX_DEPTH} levels.",
                        "flatten it; see examples/inventory.yaml for the shape.",
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                open_anchors.pop()
            elif isinstance(event, yaml.ScalarEvent) and _escapes(event.value):
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise ProblemError(
                    422,
                    f"{label}, line {line}: {event.value[:60]!r} points outside the upload.",
                    "upload the files it refers to with it and name them relative to it.",
                )
    except yaml.YAMLError:
        return  # the library's loader reports the syntax error with its line


def _escapes(value: str) -> bool:
    text = value.strip().replace("\\", "/")
    if text.startswith("traces:"):
        text = text.removeprefix("traces:").lstrip("/")
        return ".." in text.split("/")
    return text.startswith(("/", "~")) or ".." in text.split("/") or bool(re.match(r"^[A-Za-z]:/", text))


@contextmanager
def upload_dir() -> Iterator[Path]:
    """A private temporary folder for one request's files, removed when the request is done."""
    path = Path(tempfile.mkdtemp(prefix="silica-serve-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
