"""Reading user files within limits, and writing outputs that never clobber an input or half-write.

Why one module: every command that reads a user's file or writes a report had its own idea of what a
bad file is and of how to write atomically (one shared "<out>.tmp" name made concurrent writers to one
path fail; an output equal to an input replaced it; `/dev/zero` as an input was read to exhaustion;
`--out /dev/null` replaced the device node with a regular file). Here, the reading layer:

- `read_bytes` / `read_text` are the one way a user's file, pipe or `-` (stdin) enters: the byte cap
  is enforced WHILE reading (a pipe or process substitution has no size to stat), directories,
  character and block devices and sockets are refused by name, FIFOs are read under the cap, and
  over-long paths are one line. `read_text` refuses non-UTF-8 and binary files.
- `parse_json` refuses NaN/Infinity, non-finite floats, integers of more than `MAX_INT_DIGITS` digits
  (Python's own limit is a ValueError deep in `int()`) and nesting beyond `MAX_NESTING`;
  `parse_toml` refuses nesting beyond it too. Each is one `DataFileError` line.

and the writing layer:

- `check_output(out, inputs=...)` / `check_outputs(...)` run BEFORE the long work: an output must not
  be an input (paths resolved, symlinks followed, hard links caught by inode), not a directory, not
  another output of the same command, and its folder must exist and be writable.
- `write_text` / `atomic_open` write a regular file through a unique temporary file in the target
  folder renamed over the target, so a reader sees the old file or the new one, never a part. `-`,
  `/dev/stdout`, `/dev/null`, FIFOs and other character devices are written in place (a rename would
  replace the device node); a failed write (`/dev/full`: no space) is one line.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from silica.errors import DataFileError, InputError

__all__ = [
    "ENV_MAX_FILE_MB",
    "ENV_MAX_ROWS",
    "MAX_INT_DIGITS",
    "MAX_NESTING",
    "STDIO",
    "atomic_open",
    "check_columns",
    "check_output",
    "check_outputs",
    "check_path",
    "check_rows",
    "csv_text",
    "env_number",
    "env_value",
    "file_kind",
    "json_decoder",
    "max_file_bytes",
    "parse_json",
    "parse_toml",
    "read_bytes",
    "read_head",
    "read_text",
    "write_text",
]

ENV_MAX_FILE_MB = "SILICA_MAX_FILE_MB"
DEFAULT_MAX_FILE_MB = 64  # largest input text file read whole; offer files are streamed, not read here
MAX_NESTING = 64  # no Silica file nests deeper than a handful of levels; 64 is far beyond any real one
MAX_INT_DIGITS = 30  # the largest real count (tokens per run, ~1e14) has 15 digits; 30 leaves room
ENV_MAX_ROWS = "SILICA_MAX_ROWS"
DEFAULT_MAX_ROWS = 100_000  # measurement and price rows; the published benchmark set holds ~1,000
STDIO = "-"  # as an input: standard input; as an output: standard output
_CHUNK = 1 << 20


def max_file_bytes() -> int:
    """The size limit for a user's text file: `SILICA_MAX_FILE_MB` megabytes, else 64 MB."""
    mb = env_number(ENV_MAX_FILE_MB, "file_mb")
    return int((mb if mb is not None else DEFAULT_MAX_FILE_MB) * 1_000_000)


MAX_ENV_CHARS = 4096  # a path (PATH_MAX), a URL or a token list; an environment value is never a file


def env_value(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """An environment value as the reading layer admits it: stripped, None when unset or blank,
    refused in one line naming the variable when over `MAX_ENV_CHARS` or holding control characters
    (a value pasted with a newline would otherwise reach a file name, a URL or a query)."""
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None or not raw.strip():
        return None
    value = raw.strip()
    if len(value) > MAX_ENV_CHARS:
        raise InputError(
            f"{name} is {len(value):,} characters long, over the {MAX_ENV_CHARS:,} an environment "
            "value may have.",
            f"set {name} to a shorter value (a path, a URL or a name), or unset it.",
        )
    if not value.isprintable():
        raise InputError(
            f"{name} holds control characters (a newline or a tab?): {value[:40]!r}.",
            f"set {name} on one line, or unset it.",
        )
    return value


def env_number(name: str, kind: str, environ: Mapping[str, str] | None = None) -> float | None:
    """A numeric environment value in its declared range (`silica.limits`), or None when unset."""
    from silica.limits import check

    value = env_value(name, environ)
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise InputError(
            f"{name}={value[:40]!r} is not a number.", f"set {name} to a number, or unset it."
        ) from None
    return check(kind, number, name)


def _shown(path: Path | str) -> str:
    """A path as it may appear in a one-line message: control characters escaped, length cut."""
    text = str(path)
    if not text.isprintable():
        text = repr(text)[1:-1]
    return text if len(text) <= 200 else text[:100] + "..." + text[-40:]


def file_kind(path: Path | str) -> str:
    """'missing', 'regular', 'directory', 'fifo', 'character device', 'block device', 'socket' or
    'other' (symlinks followed); a path the OS refuses to look up (too long, a loop) is one line."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "missing"
    except OSError as err:
        if err.errno == errno.ENAMETOOLONG:
            raise InputError(
                f"The path {_shown(path)} is longer than this system allows.", "give a shorter path."
            ) from None
        if err.errno == errno.ELOOP:
            raise InputError(
                f"The path {_shown(path)} is a symbolic link loop.", "point it at a real file."
            ) from None
        if err.errno in (errno.EACCES, errno.EPERM):
            return "missing" if not os.path.lexists(path) else "unreadable"
        raise InputError(
            f"Cannot look up {_shown(path)}: {err.strerror or err}.", "check the path."
        ) from None
    except ValueError:  # an embedded NUL byte
        raise InputError(f"The path {_shown(path)} holds a NUL byte.", "give a real path.") from None
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "other"


def check_path(path: Path | str) -> None:
    """Refuse, as one line, a path no file can have: a NUL byte, or longer than the OS allows."""
    file_kind(path)


def check_size(path: Path, what: str = "file") -> None:
    """Refuse a regular file larger than the limit, before reading a byte of it."""
    try:
        size = path.stat().st_size
    except (OSError, ValueError):
        return  # the read that follows reports it with its own reason
    limit = max_file_bytes()
    if stat.S_ISREG(path.stat().st_mode) and size > limit:
        raise _too_big(path, what, limit, size)


def _too_big(path: Path | str, what: str, limit: int, size: int | None = None) -> DataFileError:
    have = f"is {size / 1e6:.1f} MB," if size is not None else "holds more than that,"
    return DataFileError(
        f"{_shown(path)} {have} over the {limit / 1e6:.0f} MB limit for a {what}.",
        f"split the file, or raise the limit with {ENV_MAX_FILE_MB}=<megabytes>.",
    )


def read_bytes(
    path: Path | str, what: str = "file", hint: str = "a file", *, limit: int | None = None
) -> bytes:
    """The bytes of a user's file, pipe or `-` (stdin), at most `limit` (default: the file limit).

    The cap is enforced while reading, so a pipe, process substitution or FIFO that never ends is cut
    off at the limit rather than read to exhaustion. Character devices (/dev/zero, /dev/urandom, a
    terminal), block devices, sockets and directories are refused by name. A FIFO with no writer
    waits for one; Ctrl-C ends the wait with "interrupted".
    """
    cap = max_file_bytes() if limit is None else limit
    if str(path) == STDIO:
        return _read_capped(sys.stdin.buffer, "standard input", what, cap)
    kind = file_kind(path)
    if kind == "missing":
        raise DataFileError(f"Cannot read {_shown(path)}: it does not exist.", f"give the path of {hint}.")
    if kind == "directory":
        raise DataFileError(f"{_shown(path)} is a directory, not a {what}.", f"give the path of {hint}.")
    if kind not in ("regular", "fifo", "unreadable"):
        raise DataFileError(
            f"{_shown(path)} is a {kind}, not a {what}.",
            f"give the path of {hint} (to read a stream, save it to a file first).",
        )
    if kind == "regular":
        check_size(Path(path), what)
    try:
        with open(path, "rb") as handle:
            return _read_capped(handle, path, what, cap)
    except OSError as err:
        raise DataFileError(
            f"Cannot read {_shown(path)}: {err.strerror or err}.", "check the path and permissions."
        ) from None


def read_head(path: Path | str, size: int, what: str = "file", hint: str = "a file") -> bytes:
    """The first `size` bytes of a user's file (to sniff its format), with `read_bytes`'s refusals."""
    kind = file_kind(path)
    if kind in ("missing", "directory") or kind not in ("regular", "fifo", "unreadable"):
        read_bytes(path, what, hint)  # raises the one line for that kind
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError as err:
        raise DataFileError(
            f"Cannot read {_shown(path)}: {err.strerror or err}.", "check the path and permissions."
        ) from None


def _read_capped(handle: IO[bytes], path: Path | str, what: str, cap: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        chunk = handle.read(min(_CHUNK, cap + 1 - total))
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
        if total > cap:
            raise _too_big(path, what, cap)


def read_text(path: Path | str, what: str = "file", hint: str = "a UTF-8 text file") -> str:
    """The whole text of a user's file, or one `DataFileError` line saying why it cannot be had."""
    data = read_bytes(path, what, hint)
    if b"\x00" in data[:8192]:
        raise DataFileError(
            f"{_shown(path)} is not UTF-8 text: it holds NUL bytes, as binary files do.", f"give {hint}."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataFileError(
            f"{_shown(path)} is not UTF-8 text (byte {err.start}: {err.reason}).", f"save it as {hint}."
        ) from None


def csv_text(path: Path | str, what: str = "CSV file") -> io.StringIO:
    """A user's CSV as a text stream for `csv.reader`, after the size, binary and UTF-8 checks."""
    import csv

    csv.field_size_limit(1_000_000)  # a cell of a MB is not a number or a name; the limit is enforced
    text = read_text(path, what, f"a {what} saved as UTF-8")
    try:
        header = next(csv.reader(io.StringIO(text, newline="")), [])
    except csv.Error:
        header = []  # the reader that follows reports the malformed line with its number
    check_columns(path, header)
    return io.StringIO(text, newline="")


def check_columns(path: Path | str, header: Iterable[str]) -> None:
    """Refuse a CSV header that names one column twice: a reader keyed by name would keep the last
    and drop the first without a word."""
    seen: set[str] = set()
    for name in header:
        key = name.strip().lower()
        if key and key in seen:
            raise DataFileError(
                f"{_shown(path)}: the column {name.strip()[:60]!r} appears twice in the header.",
                "keep one of them.",
            )
        seen.add(key)


def max_rows() -> int:
    """The row limit for a user's CSV: `SILICA_MAX_ROWS`, else 100,000."""
    rows = env_number(ENV_MAX_ROWS, "rows")
    if rows is None:
        return DEFAULT_MAX_ROWS
    if rows != int(rows):
        raise InputError(f"{ENV_MAX_ROWS}={rows:g} is not a whole number of rows.", "set e.g. 500000.")
    return int(rows)


def check_rows(path: Path | str, count: int) -> None:
    """Call with the running row count; past the limit, one line naming it and how to raise it."""
    limit = max_rows()
    if count > limit:
        raise DataFileError(
            f"{_shown(path)} has more than {limit:,} rows, the limit for one file.",
            f"split it, or raise the limit with {ENV_MAX_ROWS}=<rows>.",
        )


def json_decoder(path: Path | str) -> json.JSONDecoder:
    """A decoder that refuses, each as one `DataFileError` line naming `path`: NaN/Infinity, floats
    that overflow to infinity, a key given twice in one object, and integers longer than
    `MAX_INT_DIGITS` digits (Python's own limit,
    4,300 digits, is a ValueError from deep inside `int()`). Nesting is the caller's to check."""

    def refuse(name: str) -> Any:
        raise DataFileError(f"{_shown(path)}: {name} is not a number JSON allows.", "write a finite number.")

    def bounded_int(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise DataFileError(
                f"{_shown(path)}: an integer of {len(digits.lstrip('-')):,} digits; no quantity Silica "
                f"reads has more than {MAX_INT_DIGITS}.",
                "write the number in its real size.",
            )
        return int(digits)

    def finite_float(digits: str) -> float:
        value = float(digits[:400]) if len(digits) <= 400 else math.inf
        if not math.isfinite(value):
            raise DataFileError(
                f"{_shown(path)}: the number {digits[:24]}{'...' if len(digits) > 24 else ''} "
                "is too large to be finite.",
                "write a finite number.",
            )
        return value

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # Last-wins would hide a pasted line or a merge gone wrong; as for CSV columns and YAML keys.
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise DataFileError(
                    f"{_shown(path)}: the key {key[:60]!r} appears twice in one object.", "keep one of them."
                )
            out[key] = value
        return out

    return json.JSONDecoder(
        parse_constant=refuse, parse_int=bounded_int, parse_float=finite_float, object_pairs_hook=unique
    )


def parse_json(text: str | bytes, path: Path | str, what: str = "a JSON file") -> Any:
    """`json.loads` that names the file and line and refuses, each in one line: NaN/Infinity, floats
    that overflow to infinity, integers longer than `MAX_INT_DIGITS` digits, and deep nesting."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8-sig")
        value = json_decoder(path).decode(text)
    except json.JSONDecodeError as err:
        raise DataFileError(
            f"{_shown(path)} is not JSON: not valid JSON at line {err.lineno}, column {err.colno} ({err.msg}).",
            f"pass {what}.",
        ) from None
    except UnicodeDecodeError:
        raise DataFileError(f"{_shown(path)} is not UTF-8 text.", f"pass {what}.") from None
    except RecursionError:
        raise _too_deep(path) from None
    if _depth(value) > MAX_NESTING:
        raise _too_deep(path)
    return value


def parse_toml(text: str, path: Path | str) -> dict[str, Any]:
    """`tomllib.loads` with nesting beyond `MAX_NESTING` and syntax errors as one line."""
    import tomllib

    if _toml_brackets_too_deep(text):
        raise _too_deep(path)
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise DataFileError(
            f"{_shown(path)} is not valid TOML: {_first_line(err)}.", "fix the syntax there."
        ) from None
    except RecursionError:
        raise _too_deep(path) from None
    if _depth(value) > MAX_NESTING:
        raise _too_deep(path)
    return value


def _toml_brackets_too_deep(text: str) -> bool:
    """A cheap upper bound on inline nesting ([ and { open, ] and } close), ignoring strings' content
    roughly: a false alarm needs more than MAX_NESTING brackets open inside strings at once."""
    depth = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "\n":
            depth = depth if depth > 1 else 0  # table headers [a] close on their own line
    return False


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0].rstrip(".:") if text else type(err).__name__


def _too_deep(path: Path | str) -> DataFileError:
    return DataFileError(
        f"{_shown(path)} nests deeper than {MAX_NESTING} levels.",
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


# ------------------------------------------------------------------------------------------- writing


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except (OSError, ValueError, RuntimeError):
        return False


def _in_place(path: Path | str) -> bool:
    """True for an output written in place: `-`, or an existing file that is not a regular file
    (/dev/null, /dev/stdout, a FIFO, a terminal), which a rename would replace."""
    return str(path) == STDIO or file_kind(path) not in ("missing", "regular", "directory", "unreadable")


def check_output(
    out: Path | str,
    *,
    inputs: Iterable[Path | str | None] = (),
    option: str = "--out",
) -> Path:
    """Refuse an output path that would destroy an input or cannot be written; before any work.

    Returns the path unchanged. Links are followed on both sides, so `--out link-to-input` is caught.
    `-` and device or FIFO outputs are accepted when writable: they are written in place.
    """
    out = Path(out)
    if str(out) == STDIO:
        return out
    kind = file_kind(out)
    if kind in ("character device", "fifo", "socket", "block device", "other"):
        if kind in ("block device", "socket", "other"):
            raise InputError(
                f"Cannot write {option} {_shown(out)}: it is a {kind}.", f"give {option} a file name."
            )
        if not os.access(out, os.W_OK):
            raise InputError(
                f"Cannot write {option} {_shown(out)}: it is not writable.", "pick another path."
            )
        if kind == "fifo":
            _refuse_inputs(out, inputs, option)
        return out
    _refuse_inputs(out, inputs, option)
    if kind == "directory":
        raise InputError(
            f"Cannot write {option} {_shown(out)}: it is a directory.", f"give {option} a file name."
        )
    if len(out.name.encode()) > 255:
        raise InputError(
            f"Cannot write {option}: the file name is longer than 255 bytes.", "give a shorter name."
        )
    try:
        parent = out.resolve().parent
    except (OSError, RuntimeError):
        raise InputError(
            f"Cannot write {option} {_shown(out)}: the path cannot be resolved.", "give another path."
        ) from None
    if not parent.is_dir():
        raise InputError(
            f"Cannot write {option} {_shown(out)}: the folder {_shown(parent)} does not exist.",
            "create it first, or pick another path.",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(
            f"Cannot write {option} {_shown(out)}: the folder {_shown(parent)} is not writable.",
            "pick a folder you can write to.",
        )
    if kind != "missing" and not os.access(out, os.W_OK):
        raise InputError(
            f"Cannot write {option} {_shown(out)}: it exists and is read-only.",
            "pick another path or make it writable.",
        )
    return out


def _refuse_inputs(out: Path, inputs: Iterable[Path | str | None], option: str) -> None:
    for given in inputs:
        if given is not None and str(given) != STDIO and _same_file(out, Path(given)):
            raise InputError(
                f"Cannot write {option} {_shown(out)}: it is also an input file, which writing would destroy.",
                f"give {option} a new file name.",
            )


def check_outputs(
    outputs: Iterable[tuple[str, Path | str | None]], *, inputs: Iterable[Path | str | None] = ()
) -> None:
    """`check_output` for every (option, path) a command writes, sibling files included, and no two
    outputs the same file (the second would replace the first). Outputs written in place (`-`,
    /dev/null) may repeat."""
    given = [(option, Path(p)) for option, p in outputs if p is not None]
    inputs = [i for i in inputs if i is not None]
    seen: list[tuple[str, Path]] = []
    for option, path in given:
        check_output(path, inputs=inputs, option=option)
        if _in_place(path):
            continue
        for other_option, other in seen:
            if os.path.abspath(path) == os.path.abspath(other) or _same_file(path, other):
                raise InputError(
                    f"{other_option} and {option} both name {_shown(path)}; the second would replace the first.",
                    "give each output its own file.",
                )
        seen.append((option, path))


@contextlib.contextmanager
def atomic_open(
    path: Path | str, mode: str = "w", *, encoding: str | None = "utf-8", newline: str | None = None
) -> Iterator[IO[Any]]:
    """A handle for writing `path`, whose failure to write is one `DataFileError` line.

    A regular file (or a new one) is written to a unique temporary file beside it, renamed over it
    only if the block succeeds: concurrent writers each get their own temporary name and the last
    rename wins whole. `-` is standard output; an existing device or FIFO is written in place.
    """
    binary = "b" in mode
    if str(path) == STDIO or _in_place(path):
        with _write_in_place(path, mode, binary, encoding, newline) as handle:
            yield handle
        return
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:200]}.", suffix=".tmp")
    except OSError as err:
        raise _cannot_write(path, err) from None
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
        raise _cannot_write(path, err) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _write_in_place(
    path: Path | str, mode: str, binary: bool, encoding: str | None, newline: str | None
) -> Iterator[IO[Any]]:
    try:
        if str(path) == STDIO:
            sys.stdout.flush()
            buffer = io.BytesIO() if binary else io.StringIO(newline=newline)
            yield buffer
            data = buffer.getvalue()
            target: IO[Any] = sys.stdout.buffer if binary else sys.stdout
            target.write(data)
            target.flush()
            return
        with open(
            path, mode, encoding=None if binary else encoding, newline=None if binary else newline
        ) as handle:
            yield handle
    except OSError as err:
        raise _cannot_write(Path(path), err) from None


def _cannot_write(path: Path | str, err: OSError) -> DataFileError:
    return DataFileError(
        f"Cannot write {_shown(path)}: {err.strerror or err}.", "choose a writable output path."
    )


def write_text(path: Path | str, text: str, *, encoding: str = "utf-8", newline: str | None = None) -> None:
    """Write `text` to `path` (see `atomic_open`: atomic for regular files, in place for devices)."""
    with atomic_open(path, "w", encoding=encoding, newline=newline) as handle:
        handle.write(text)
