"""What every report-writing command does with its outputs: check the paths first, write atomically,
keep the results in the store. One home, so `advise`, `claims` and `monitor report` behave alike.

`silica.cli.advise_cmd` still holds its own copies (`_check_target`, `_write_atomic`, `_store`); they
are to be replaced by these.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from silica.errors import InputError, SilicaError
from silica.jsonable import plain

__all__ = ["check_target", "store_records", "write_atomic"]


def check_target(path: Path) -> None:
    """Refuse, before anything is computed or stored, a report path that cannot be written."""
    folder = path.parent
    if path.is_dir():
        raise InputError(f"Cannot write {path}: it is a folder.", "give a file name, e.g. report.html.")
    if not folder.is_dir():
        raise InputError(
            f"Cannot write {path}: the folder {folder} does not exist.",
            "create it first or pick another path.",
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(
            f"Cannot write {path}: the folder {folder} is not writable.", "pick a folder you can write to."
        )


def write_atomic(path: Path, text: str) -> None:
    """A temporary file in the same folder, renamed over the target: a reader never sees half a report."""
    tmp: str | None = None
    try:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o666 & ~mask
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
    except OSError as err:
        raise InputError(
            f"Cannot write {path}: {err.strerror or err}.", "check the folder and the free space."
        ) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def store_records(records: list[tuple[str, str, dict[str, Any]]]) -> None:
    """Keep `records` in one transaction; without the store extra, say so and go on."""
    try:
        from silica.store import open_store

        store = open_store()
    except SilicaError as err:
        if "not installed" not in err.problem:
            raise
        sys.stderr.write(f"note: results not stored: {err}\n")
        return
    # Stored as printed by --json: non-finite floats become null, as JSON requires.
    ids = store.record_many([(kind, name, plain(payload)) for kind, name, payload in records])
    sys.stderr.write(f"stored {len(ids)} records (#{ids[0]}-#{ids[-1]}) in {store.display_url}\n")
