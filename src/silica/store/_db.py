"""The store's engine, migrations and the few operations Silica needs: record, list, get.

Every write is one transaction: a batch of records is committed together or not at all, so a crash or
an error mid-write never leaves half an advice run behind, and what was committed before stays.

Many first users at once: the schema is created under a lock (a file lock beside a SQLite database, a
transaction-scoped advisory lock on PostgreSQL), so the second process waits and then finds the schema
made instead of racing to create the same tables. SQLite runs in WAL mode (readers do not block the
writer) with a busy timeout, and a write that still finds the database locked is retried a bounded
number of times before it is reported.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, func, insert, select
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from silica.errors import InputError, SilicaError
from silica.paths import data_dir
from silica.store.models import RecordRow

__all__ = ["ENV_URL", "Store", "StoreError", "StoredRecord", "data_dir", "database_url"]

ENV_URL = "SILICA_DB_URL"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
MAX_KIND, MAX_NAME = 64, 512
MAX_ID = 2**63 - 1  # SQLite INTEGER and PostgreSQL BIGINT
BUSY_TIMEOUT_S = 30.0  # how long one SQLite statement waits for another process's write lock
WRITE_ATTEMPTS = 5  # bounded retry of a whole write transaction that still found the database locked
MIGRATION_LOCK_TIMEOUT_S = 120.0  # the file lock held while the schema is created (seconds, SQLite)
# pg_advisory_xact_lock key: any fixed 64-bit number, the same in every Silica process ("silica01").
PG_MIGRATION_LOCK = 0x73696C6963613031


class StoreError(SilicaError):
    """The database cannot be reached or written (exit code 2, one line, like every Silica error)."""


def database_url(url: str | None = None) -> str:
    """`url`, else `SILICA_DB_URL`, else SQLite in the data directory; plain postgresql:// uses psycopg 3."""
    from silica._files import env_value

    chosen = url or env_value(ENV_URL) or f"sqlite:///{data_dir() / 'silica.db'}"
    if chosen.startswith(("postgresql://", "postgres://")):
        chosen = "postgresql+psycopg://" + chosen.split("://", 1)[1]
    return chosen


@dataclass(frozen=True)
class StoredRecord:
    id: int
    kind: str
    name: str
    created_at: datetime
    batch: str
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "created_at": self.created_at.isoformat(),
            "batch": self.batch,
            "payload": self.payload,
        }


def _check(kind: str, name: str, payload: Any) -> dict[str, Any]:
    """Reject what the database should never hold, before any transaction starts."""
    if not kind or len(kind) > MAX_KIND:
        raise InputError(f"Record kind {kind!r} must be 1-{MAX_KIND} characters.", "use a short kind name.")
    if len(name) > MAX_NAME:
        raise InputError(f"Record name is longer than {MAX_NAME} characters.", "shorten it.")
    if not isinstance(payload, dict):
        raise InputError(
            f"A {kind} record's payload must be a JSON object.", "pass a dict (result.to_dict())."
        )
    try:
        # Round-trip: what is stored is exactly what JSON can carry (no NaN, no objects).
        plain: dict[str, Any] = json.loads(json.dumps(payload, allow_nan=False, default=_refuse))
    except (TypeError, ValueError) as err:
        raise InputError(
            f"The {kind} record {name!r} is not plain JSON: {err}.", "store result.to_dict()."
        ) from None
    return plain


def _refuse(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    raise TypeError(f"{type(value).__name__} is not JSON")


class Store:
    """A migrated database. Open one with `silica.store.open_store()`."""

    def __init__(self, url: str | None = None) -> None:
        self.url = database_url(url)
        try:
            parsed = make_url(self.url)
            parsed.port  # noqa: B018 - a port that is not a number raises here, not at first use
        except (ArgumentError, ValueError):
            raise StoreError(
                f"{self.url!r} is not a database URL.", f"set {ENV_URL} to e.g. sqlite:///path.db."
            ) from None
        self.display_url = parsed.render_as_string(hide_password=True)
        self.backend = parsed.get_backend_name()
        self.sqlite_file: Path | None = None
        if self.backend == "sqlite" and parsed.database not in (None, "", ":memory:"):
            self.sqlite_file = _sqlite_folder(Path(parsed.database or "").expanduser())
        connect_args = {"timeout": BUSY_TIMEOUT_S} if self.backend == "sqlite" else {}
        try:
            self.engine: Engine = create_engine(self.url, connect_args=connect_args)
        except (ArgumentError, ImportError, SQLAlchemyError, TypeError) as err:
            raise StoreError(f"Cannot use database {self.display_url}: {err}.", f"check {ENV_URL}.") from None
        if self.backend == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._migrate()

    def _migrate(self) -> None:
        from alembic import command
        from alembic.config import Config
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory
        from alembic.util.exc import CommandError

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.set_main_option("path_separator", "os")
        config.set_main_option("version_locations", str(MIGRATIONS / "versions"))
        head = ScriptDirectory.from_config(config).get_current_head()
        try:
            with self._migration_lock(), self.engine.begin() as connection:
                if self.backend == "postgresql":
                    # Held to the end of this transaction: a second first user waits here, then sees
                    # the schema at head (catalog rows such as pg_type are created only once).
                    connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_MIGRATION_LOCK})")
                if MigrationContext.configure(connection).get_current_revision() == head:
                    return
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        except CommandError as err:  # a revision this Silica does not know: newer, or another program's
            raise StoreError(
                f"The database {self.display_url} was written by a newer Silica or by another program "
                f"({_first_line(err)}).",
                f"upgrade Silica; or back the file up and point {ENV_URL} at a new database.",
            ) from None
        except SQLAlchemyError as err:
            raise StoreError(
                f"Cannot open database {self.display_url}: {_first_line(err)}.",
                f"if it is a file, check that it is a Silica store (back it up and move it aside to start "
                f"afresh); if a server, that it is running and that {ENV_URL} is right.",
            ) from None

    @contextmanager
    def _migration_lock(self) -> Iterator[None]:
        """A file lock beside a SQLite database while its schema is checked or created."""
        if self.sqlite_file is None:
            yield
            return
        from filelock import FileLock, Timeout

        # The lock lives in the temporary folder, keyed by the database's real path: nothing appears
        # beside the user's file, and every process that opens the same file takes the same lock.
        key = hashlib.sha256(str(self.sqlite_file.resolve()).encode()).hexdigest()[:24]
        lock_path = Path(tempfile.gettempdir()) / f"silica-store-{key}.lock"
        lock = FileLock(str(lock_path), timeout=MIGRATION_LOCK_TIMEOUT_S)
        try:
            with lock:
                yield
        except Timeout:
            raise StoreError(
                f"Another Silica process has held {lock.lock_file} for {MIGRATION_LOCK_TIMEOUT_S:.0f} s.",
                "wait for it to finish, or remove the lock file if no Silica process is running.",
            ) from None

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: committed at the end, rolled back entirely on any exception."""
        with self._sessions() as session, session.begin():
            yield session

    def record(self, kind: str, name: str, payload: dict[str, Any]) -> int:
        """Keep one result; returns its id."""
        return self.record_many([(kind, name, payload)])[0]

    def record_many(self, items: Sequence[tuple[str, str, dict[str, Any]]]) -> list[int]:
        """Keep several results in one transaction (all or none); returns their ids in order."""
        checked = [(kind, name, _check(kind, name, payload)) for kind, name, payload in items]
        now, batch = datetime.now(UTC), str(uuid.uuid4())
        rows = [dict(kind=k, name=n, created_at=now, batch=batch, payload=p) for k, n, p in checked]
        # One multi-row INSERT ... RETURNING (ids in the order given): a third of the time of ORM
        # objects, which matters while other processes wait for SQLite's single write lock.
        statement = insert(RecordRow).returning(RecordRow.id, sort_by_parameter_order=True)
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with self.transaction() as session:
                    return [int(i) for i in session.scalars(statement, rows)]
            except OperationalError as err:
                if attempt < WRITE_ATTEMPTS and _locked(err):
                    time.sleep(0.05 * 2**attempt)  # the whole batch rolled back; try it again
                    continue
                raise self._write_error(err) from None
            except SQLAlchemyError as err:
                raise self._write_error(err) from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _write_error(self, err: Exception) -> StoreError:
        return StoreError(
            f"Could not write to {self.display_url}: {_first_line(err)}.", "nothing was written."
        )

    def history(self, kind: str | None = None, limit: int = 50) -> list[StoredRecord]:
        """The latest records, newest first, optionally of one kind."""
        if not 1 <= limit <= MAX_ID:
            raise InputError(f"limit must be 1 to {MAX_ID}, got {limit}.", "pass --limit 1 or more.")
        if kind is not None and not kind.strip():
            raise InputError("The record kind is empty.", "pass --kind with a kind, or leave it out.")
        query = select(RecordRow).order_by(RecordRow.created_at.desc(), RecordRow.id.desc()).limit(limit)
        if kind is not None:
            query = query.where(RecordRow.kind == kind)
        return self._read(query)

    def get(self, record_id: int) -> StoredRecord:
        if not 1 <= record_id <= MAX_ID:
            raise InputError(f"Record id {record_id} is out of range.", f"pass an id from 1 to {MAX_ID}.")
        found = self._read(select(RecordRow).where(RecordRow.id == record_id))
        if not found:
            raise InputError(f"No record {record_id} in {self.display_url}.", "see `silica history`.")
        return found[0]

    def count(self, kind: str | None = None) -> int:
        query = select(func.count(RecordRow.id))
        if kind is not None:
            query = query.where(RecordRow.kind == kind)
        try:
            with self._sessions() as session:
                return int(session.scalar(query) or 0)
        except SQLAlchemyError as err:
            raise StoreError(
                f"Could not read {self.display_url}: {_first_line(err)}.", "check the database."
            ) from None

    def _read(self, query: Any) -> list[StoredRecord]:
        try:
            with self._sessions() as session:
                return [_stored(row) for row in session.scalars(query)]
        except (ValueError, TypeError, KeyError, OverflowError) as err:  # a payload or date not as written
            raise StoreError(
                f"The database {self.display_url} holds a record Silica did not write ({_first_line(err)}).",
                f"back it up and point {ENV_URL} at a new database, or delete the damaged rows.",
            ) from None
        except SQLAlchemyError as err:
            raise StoreError(
                f"Could not read {self.display_url}: {_first_line(err)}.", "check the database."
            ) from None

    def close(self) -> None:
        self.engine.dispose()


def _stored(row: RecordRow) -> StoredRecord:
    created = row.created_at
    created = (
        created.astimezone(UTC) if created.tzinfo else created.replace(tzinfo=UTC)
    )  # SQLite drops the zone
    return StoredRecord(row.id, row.kind, row.name, created, row.batch, dict(row.payload))


def _sqlite_folder(path: Path) -> Path:
    """The database file; its folder may be created only when it is Silica's own data directory."""
    folder = path.parent
    if not folder.is_dir():
        if folder.resolve() != data_dir().resolve():
            raise StoreError(
                f"The folder {folder} of the database {path} does not exist.",
                f"create it first, or set {ENV_URL} to a path in an existing folder.",
            )
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(
                f"Cannot create Silica's data folder {folder}: {err.strerror or err}.",
                f"set {ENV_URL} to a database you can write, e.g. sqlite:///path/to/silica.db.",
            ) from None
    return path


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    # WAL: readers never block the writer and the writer never blocks readers; the mode is kept in
    # the database file, so setting it on every connection is a cheap no-op after the first.
    cursor.execute("PRAGMA journal_mode=WAL")
    # FULL sync: a committed transaction survives a crash of the process or of the machine.
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()


def _locked(err: OperationalError) -> bool:
    text = str(err.orig or err).lower()
    return "database is locked" in text or "database table is locked" in text or "busy" in text


def _first_line(err: Exception) -> str:
    return str(getattr(err, "orig", None) or err).strip().splitlines()[0].rstrip(".")
