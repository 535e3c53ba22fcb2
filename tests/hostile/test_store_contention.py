"""The store under first use and contention: many processes at once, large overlapping writes, kill -9.

Issue 15 saw 0-5 of 16 first users fail ("table alembic_version already exists" on SQLite, "duplicate
key ... pg_type_typname_nsp_index" on PostgreSQL) and 6 of 160 large transactions fail with "database is
locked". Each test here starts real OS processes (forked, so they do not pay the import again) that
wait on one barrier and then hit a database that did not exist a moment before.

PostgreSQL: `SILICA_TEST_PG_URL` (source /work/test_env.sh, or .ci/postgres.sh); each run makes a fresh
schema and drops it after. Under CI=true a missing PostgreSQL fails instead of skipping.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from silica import store
from silica.store._db import Store, StoreError

FIRST_USERS = 32  # processes opening one brand-new database at the same instant
WRITERS, TRANSACTIONS, RECORDS = 16, 10, 2_000  # 320,000 records in 160 overlapping transactions
PG_URL = os.environ.get("SILICA_TEST_PG_URL")
FORK = mp.get_context("fork")


def _first_user(url: str, barrier: Any, n: int) -> None:
    barrier.wait(timeout=60)
    try:
        s = Store(url)  # migrates on first use
        s.record("first_use", f"process-{n}", {"n": n})
        s.close()
    except Exception as err:
        print(f"process {n}: {err}", flush=True)
        os._exit(1)
    os._exit(0)


def _writer(url: str, barrier: Any, n: int) -> None:
    s = Store(url)
    barrier.wait(timeout=60)
    try:
        for t in range(TRANSACTIONS):
            s.record_many([("bulk", f"w{n}-t{t}-r{r}", {"w": n, "t": t, "r": r}) for r in range(RECORDS)])
    except Exception as err:
        print(f"writer {n}: {err}", flush=True)
        os._exit(1)
    s.close()
    os._exit(0)


def _run_all(target: Any, url: str, count: int, timeout: float) -> list[int | None]:
    barrier = FORK.Barrier(count)
    procs = [FORK.Process(target=target, args=(url, barrier, n)) for n in range(count)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    return [p.exitcode for p in procs]


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    store.close_all()
    yield
    store.close_all()


def test_32_first_users_of_a_new_sqlite_database_all_succeed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    codes = _run_all(_first_user, url, FIRST_USERS, timeout=120)
    assert codes == [0] * FIRST_USERS
    s = Store(url)
    assert s.count("first_use") == FIRST_USERS
    with sqlite3.connect(tmp_path / "new.db") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    s.close()


@pytest.fixture
def fresh_pg_schema() -> Iterator[str]:
    if not PG_URL:
        if os.environ.get("CI") == "true":
            pytest.fail("SILICA_TEST_PG_URL is not set under CI: PostgreSQL is required")
        pytest.skip("SILICA_TEST_PG_URL is not set (source /work/test_env.sh or .ci/postgres.sh)")
    from sqlalchemy import create_engine

    schema = f"hostile_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    finally:
        store.close_all()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


def test_32_first_users_of_a_new_postgresql_schema_all_succeed(fresh_pg_schema: str) -> None:
    codes = _run_all(_first_user, fresh_pg_schema, FIRST_USERS, timeout=120)
    assert codes == [0] * FIRST_USERS
    s = Store(fresh_pg_schema)
    assert s.count("first_use") == FIRST_USERS
    s.close()


def test_16_writers_x_10_transactions_x_2000_records_all_commit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bulk.db'}"
    Store(url).close()  # created up front: this test is about overlapping writes, not first use
    codes = _run_all(_writer, url, WRITERS, timeout=600)
    assert codes == [0] * WRITERS
    with sqlite3.connect(tmp_path / "bulk.db") as raw:
        total = raw.execute("SELECT count(*) FROM silica_records WHERE kind = 'bulk'").fetchone()[0]
        batches = raw.execute(
            "SELECT count(DISTINCT batch) FROM silica_records WHERE kind = 'bulk'"
        ).fetchone()[0]
    assert (total, batches) == (WRITERS * TRANSACTIONS * RECORDS, WRITERS * TRANSACTIONS)


def _endless_writer(url: str, committed: Any) -> None:
    s = Store(url)
    s.record("killed", "first", {"n": 0})
    n = 0
    while True:  # big batches, until the parent kills the process with SIGKILL mid-transaction
        n += 1
        s.record_many([("killed", f"batch-{n}-{r}", {"r": r}) for r in range(RECORDS)])
        committed.value = n


def test_kill_9_mid_write_leaves_only_whole_batches(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    committed = FORK.Value("i", 0)
    child = FORK.Process(target=_endless_writer, args=(url, committed))
    child.start()
    deadline = time.monotonic() + 120
    while committed.value < 2 and time.monotonic() < deadline:  # some batches in, the next one open
        time.sleep(0.01)
    time.sleep(0.03)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    assert child.exitcode == -signal.SIGKILL
    with sqlite3.connect(tmp_path / "killed.db") as raw:
        sizes = raw.execute(
            "SELECT count(*) FROM silica_records WHERE kind = 'killed' AND name != 'first' GROUP BY batch"
        ).fetchall()
        first = raw.execute("SELECT count(*) FROM silica_records WHERE name = 'first'").fetchone()[0]
    assert first == 1 and sizes  # the child committed some batches before it died
    assert all(size == (RECORDS,) for size in sizes), sizes  # never a partial batch


def test_a_missing_folder_is_an_error_not_a_new_tree(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new' / 'dir' / 's.db'}"
    with pytest.raises(StoreError, match=r"folder .*new/dir of the database .* does not exist"):
        Store(url)
    assert not (tmp_path / "new").exists()


def test_the_default_data_folder_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SILICA_DB_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    s = Store()
    assert (tmp_path / "xdg" / "silica" / "silica.db").is_file()
    s.close()
