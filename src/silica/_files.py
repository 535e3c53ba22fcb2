"""Reading user files within limits, and writing outputs that never clobber an input or half-write.

Why one module: every command that reads a user's file or writes a report had its own idea of what a
bad file is and of how to write atomically (one shared "<out>.tmp" name made concurrent writers to one
path fail; an output equal to an input replaced it). Here:

- `check_output(out, inputs=...)` runs BEFORE the long work: the output must not be an input (paths
  resolved, symlinks followed, hard links caught by inode), not a directory, and its folder must
  exist and be writable.
- `write_text` / `atomic_open` write to a unique temporary file in the target folder and rename it
  over the target, so a reader sees the old file or the new one, never a part.
- `read_text` refuses files over a size limit (named, with how to raise it), non-UTF-8 and binary
  files, each as one `DataFileError` line. `parse_json` turns nesting beyond Python's recursion limit
  into the same kind of line instead of a RecursionError.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from silica.errors import DataFileError, InputError

__all__ = [
    "ENV_MAX_FILE_MB",
    "ENV_MAX_ROWS",
    "MAX_NESTING",
    "atomic_open",
    "check_output",
    "check_rows",
    "csv_text",
    "max_file_bytes",
    "parse_json",
    "read_text",
    "write_text",
]

ENV_MAX_FILE_MB = "SILICA_MAX_FILE_MB"
DEFAULT_MAX_FILE_MB = 64  # largest input text file read whole; offer files are streamed, not read here
MAX_NESTING = 64  # no Silica file nests deeper than a handful of levels; 64 is far beyond any real one
ENV_MAX_ROWS = "SILICA_MAX_ROWS"
DEFAULT_MAX_ROWS = 100_000  # measurement and price rows; the published benchmark set holds ~1,000


def max_file_bytes() -> int:
    """The size limit for a user's text file: `SILICA_MAX_FILE_MB` megabytes, else 64 MB."""
    raw = os.environ.get(ENV_MAX_FILE_MB, "").strip()
    if raw:
        try:
            mb = float(raw)
        except ValueError:
            mb = -1.0
        if not (0 < mb <= 1_000_000):
            raise InputError(
                f"{ENV_MAX_FILE_MB}={raw!r} is not a size in megabytes.",
                f"set {ENV_MAX_FILE_MB} to a number such as 256, or unset it.",
            )
        return int(mb * 1_000_000)
    return DEFAULT_MAX_FILE_MB * 1_000_000


def check_size(path: Path, what: str = "file") -> None:
    """Refuse a file larger than the limit, before reading a byte of it."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # the read that follows reports it with its own reason
    limit = max_file_bytes()
    if size > limit:
        raise DataFileError(
            f"{path} is {size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit for a {what}.",
            f"split the file, or raise the limit with {ENV_MAX_FILE_MB}=<megabytes>.",
        )


def read_text(path: Path | str, what: str = "file", hint: str = "a UTF-8 text file") -> str:
    """The whole text of a user's file, or one `DataFileError` line saying why it cannot be had."""
    path = Path(path)
    if path.is_dir():
        raise DataFileError(f"{path} is a directory, not a {what}.", f"give the path of {hint}.")
    check_size(path, what)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DataFileError(
            f"Cannot read {path}: {err.strerror or err}.", "check the path and permissions."
        ) from None
    if b"\x00" in data[:8192]:
        raise DataFileError(
            f"{path} is not UTF-8 text: it holds NUL bytes, as binary files do.", f"give {hint}."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataFileError(
            f"{path} is not UTF-8 text (byte {err.start}: {err.reason}).", f"save it as {hint}."
        ) from None


def csv_text(path: Path | str, what: str = "CSV file") -> io.StringIO:
    """A user's CSV as a text stream for `csv.reader`, after the size, binary and UTF-8 checks."""
    import csv

    csv.field_size_limit(1_000_000)  # a cell of a MB is not a number or a name; the limit is enforced
    return io.StringIO(read_text(path, what, f"a {what} saved as UTF-8"), newline="")


def max_rows() -> int:
    """The row limit for a user's CSV: `SILICA_MAX_ROWS`, else 100,000."""
    raw = os.environ.get(ENV_MAX_ROWS, "").strip()
    if not raw:
        return DEFAULT_MAX_ROWS
    if not raw.isdigit() or int(raw) < 1:
        raise InputError(f"{ENV_MAX_ROWS}={raw!r} is not a row count.", f"set {ENV_MAX_ROWS} to e.g. 500000.")
    return int(raw)


def check_rows(path: Path | str, count: int) -> None:
    """Call with the running row count; past the limit, one line naming it and how to raise it."""
    limit = max_rows()
    if count > limit:
        raise DataFileError(
            f"{path} has more than {limit:,} rows, the limit for one file.",
            f"split it, or raise the limit with {ENV_MAX_ROWS}=<rows>.",
        )


def parse_json(text: str, path: Path | str, what: str = "a JSON file") -> Any:
    """`json.loads` that names the file and line, refuses NaN/Infinity and deep nesting in one line."""

    def refuse(name: str) -> Any:
        raise DataFileError(f"{path}: {name} is not a number JSON allows.", "write a finite number.")

    try:
        value = json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as err:
        raise DataFileError(
            f"{path} is not JSON: not valid JSON at line {err.lineno}, column {err.colno} ({err.msg}).",
            f"pass {what}.",
        ) from None
    except RecursionError:
        raise _too_deep(path) from None
    if _depth(value) > MAX_NESTING:
        raise _too_deep(path)
    return value


def _too_deep(path: Path | str) -> DataFileError:
    return DataFileError(
        f"{path} nests deeper than {MAX_NESTING} levels.",
        "no Silica file needs that; check that this is the file you meant.",
    )


def _depth(value: Any) -> int:
    """Nesting depth without recursion (a deep value must not be able to crash the check itself)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if deepest > MAX_NESTING:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


def check_output(out: Path | str, *, inputs: Iterable[Path | str | None] = (), option: str = "--out") -> Path:
    """Refuse an output path that would destroy an input or cannot be written; before any work.

    Returns the path unchanged. Links are followed on both sides, so `--out link-to-input` is caught.
    """
    out = Path(out)
    for given in inputs:
        if given is not None and _same_file(out, Path(given)):
            raise InputError(
                f"Cannot write {option} {out}: it is also an input file, which writing would destroy.",
                f"give {option} a new file name.",
            )
    if out.is_dir():
        raise InputError(f"Cannot write {option} {out}: it is a directory.", f"give {option} a file name.")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise InputError(
            f"Cannot write {option} {out}: the folder {parent} does not exist.",
            "create it first, or pick another path.",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(
            f"Cannot write {option} {out}: the folder {parent} is not writable.",
            "pick a folder you can write to.",
        )
    if out.exists() and not os.access(out, os.W_OK):
        raise InputError(
            f"Cannot write {option} {out}: it exists and is read-only.",
            "pick another path or make it writable.",
        )
    return out


@contextlib.contextmanager
def atomic_open(
    path: Path | str, mode: str = "w", *, encoding: str | None = "utf-8", newline: str | None = None
) -> Iterator[IO[Any]]:
    """A handle on a unique temporary file beside `path`, renamed over `path` only if the block succeeds.

    Concurrent writers to one path each get their own temporary name; the last rename wins whole.
    """
    path = Path(path)
    binary = "b" in mode
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise DataFileError(
            f"Cannot write {path}: {err.strerror or err}.", "choose a writable output path."
        ) from None
    try:
        # mkstemp makes the file 0600; give it what a plain open() would (0666 less the umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(
            fd, mode, encoding=None if binary else encoding, newline=None if binary else newline
        ) as handle:
            yield handle
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise DataFileError(
            f"Cannot write {path}: {err.strerror or err}.", "choose a writable output path."
        ) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path | str, text: str, *, encoding: str = "utf-8", newline: str | None = None) -> None:
    """Write `text` to `path` atomically (see `atomic_open`)."""
    with atomic_open(path, "w", encoding=encoding, newline=newline) as handle:
        handle.write(text)
