"""Keep what Silica computes: inventories, estimates, scans, recommendations, claims, fleet sweeps.

    from silica import store
    store.record("recommendation", "chat-api", advice.to_dict())   # -> id
    store.history(kind="recommendation", limit=20)                  # newest first

SQLite in the user's data directory by default; `SILICA_DB_URL` selects another database
(`postgresql+psycopg://user:pass@host/db`). The schema is created and upgraded by Alembic migrations on
first use. SQLAlchemy and Alembic (the `store` extra) load only when the store is used, so importing
this package, or running `silica --help`, stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from silica.store._db import Store, StoredRecord

__all__ = ["KINDS", "Store", "StoreError", "StoredRecord", "database_url", "history", "open_store", "record"]

# The kinds Silica itself writes; others (a user's own) are allowed.
KINDS = ("inventory", "estimate", "scan", "recommendation", "claim", "fleet_sweep", "monitor", "pilot")

_open: dict[str, Store] = {}


def open_store(url: str | None = None) -> Store:
    """The store at `url` (default: `SILICA_DB_URL`, else SQLite in the data directory), migrated.

    Stores are cached per URL within a process, so repeated `record` calls do not re-check migrations.
    """
    db = _backend()
    resolved = db.database_url(url)
    if resolved not in _open:
        _open[resolved] = db.Store(resolved)
    return _open[resolved]


def record(kind: str, name: str, payload: dict[str, Any], *, url: str | None = None) -> int:
    """Keep one result (a `to_dict()` payload) under a kind and a name; returns the new record's id."""
    return open_store(url).record(kind, name, payload)


def history(kind: str | None = None, limit: int = 50, *, url: str | None = None) -> list[StoredRecord]:
    """The newest records first, optionally only one kind."""
    return open_store(url).history(kind, limit)


def database_url(url: str | None = None) -> str:
    return str(_backend().database_url(url))


def close_all() -> None:
    """Dispose of every cached store (tests, and long-lived processes switching databases)."""
    for store in _open.values():
        store.close()
    _open.clear()


def __getattr__(name: str) -> Any:
    if name in ("Store", "StoredRecord", "StoreError"):
        return getattr(_backend(), name)
    raise AttributeError(f"module 'silica.store' has no attribute {name!r}")


def _backend() -> Any:
    from importlib import import_module

    try:
        return import_module("silica.store._db")
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] in ("sqlalchemy", "alembic"):
            from silica.errors import SilicaError

            raise SilicaError(
                "The store needs SQLAlchemy and Alembic, which are not installed.",
                "pip install 'silica[store]' (and 'silica[postgres]' for PostgreSQL).",
            ) from None
        raise
