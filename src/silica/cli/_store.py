"""Keeping a command's results in the store: one home, so advise, claims and monitor report behave alike.

Output files go through `silica._files` (checked before the work, written atomically); this is the
other half of what a report-writing command does with its results.
"""

from __future__ import annotations

import sys
from typing import Any

from silica.errors import SilicaError
from silica.jsonable import plain

__all__ = ["store_records"]


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
