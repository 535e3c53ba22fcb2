"""The store on SQLite and, when SILICA_TEST_PG_URL is set, on a real PostgreSQL (`source .ci/postgres.sh`).

What must hold on both: records come back as written, newest first; a batch is all or nothing; an
exception or a killed process in the middle of a write leaves earlier commits intact and no partial rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from silica import store
from silica.errors import InputError
from silica.store import Store, open_store
from silica.store.models import RecordRow

PG_URL = os.environ.get("SILICA_TEST_PG_URL")
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgresql",
        id="postgresql",
        marks=pytest.mark.skipif(
            not PG_URL,
            reason="SILICA_TEST_PG_URL is not set: run `source .ci/postgres.sh` to test on PostgreSQL",
        ),
    ),
]


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, str]]:
    """A migrated store and a kind unique to this test, so runs on a shared PostgreSQL do not collide."""
    url = f"sqlite:///{tmp_path / 'store.db'}" if request.param == "sqlite" else str(PG_URL)
    yield open_store(url), f"test-{uuid.uuid4().hex[:12]}"
    store.close_all()


def test_record_and_history_round_trip(db: tuple[Store, str]) -> None:
    s, kind = db
    first = s.record(kind, "first", {"verdict": "stay", "usd": 12.5, "nested": {"list": [1, 2, None]}})
    second, third = s.record_many([(kind, "second", {"n": 2}), (kind, "third", {"n": 3})])
    assert first < second < third
    found = s.history(kind)
    assert [r.name for r in found] == ["third", "second", "first"]
    assert found[2].payload == {"verdict": "stay", "usd": 12.5, "nested": {"list": [1, 2, None]}}
    assert found[0].batch == found[1].batch != found[2].batch
    assert found[0].created_at.tzinfo is not None and found[0].created_at >= found[2].created_at
    assert [r.name for r in s.history(kind, limit=1)] == ["third"]
    assert s.get(first).name == "first"
    assert s.count(kind) == 3


def test_bad_payload_writes_nothing_of_its_batch(db: tuple[Store, str]) -> None:
    s, kind = db
    s.record(kind, "kept", {"ok": True})
    with pytest.raises(InputError, match="not plain JSON"):
        s.record_many([(kind, "a", {"ok": True}), (kind, "b", {"bad": float("nan")})])
    with pytest.raises(InputError, match="not plain JSON"):
        s.record(kind, "c", {"object": object()})
    assert [r.name for r in s.history(kind)] == ["kept"]


def test_exception_inside_a_transaction_keeps_prior_commits_and_no_partial_rows(
    db: tuple[Store, str],
) -> None:
    s, kind = db
    s.record(kind, "committed", {"n": 1})
    with pytest.raises(RuntimeError, match="crash"), s.transaction() as session:
        session.add(RecordRow(kind=kind, name="partial-1", created_at=_now(), batch="x", payload={}))
        session.flush()  # the row reached the database inside the open transaction
        session.add(RecordRow(kind=kind, name="partial-2", created_at=_now(), batch="x", payload={}))
        raise RuntimeError("crash mid-write")
    assert [r.name for r in s.history(kind)] == ["committed"]


def test_killed_process_mid_write_loses_nothing_committed(db: tuple[Store, str]) -> None:
    s, kind = db
    s.record(kind, "before", {"n": 0})
    script = textwrap.dedent(
        f"""
        import os
        from datetime import UTC, datetime
        from silica.store import open_store
        from silica.store.models import RecordRow
        s = open_store({s.url!r})
        s.record({kind!r}, "committed-in-child", {{"n": 1}})
        with s.transaction() as session:
            for i in range(50):
                session.add(RecordRow(kind={kind!r}, name=f"partial-{{i}}", created_at=datetime.now(UTC),
                                      batch="killed", payload={{"i": i}}))
            session.flush()
            os._exit(9)  # the process dies with the transaction open: no rollback, no commit
        """
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert child.returncode == 9, child.stderr
    store.close_all()
    names = [r.name for r in open_store(s.url).history(kind, limit=100)]
    assert names == ["committed-in-child", "before"]


def test_migrations_match_the_models(db: tuple[Store, str]) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from silica.store.models import Base

    s, _ = db
    with s.engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == "r0001"
        assert compare_metadata(context, Base.metadata) == []


def test_module_level_api_uses_silica_db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("SILICA_DB_URL", url)
    record_id = store.record("fleet_sweep", "sweep-1", {"instances": 4})
    assert store.history("fleet_sweep")[0].id == record_id
    assert Path(tmp_path / "env.db").exists()


def test_default_location_is_the_user_data_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SILICA_DB_URL")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(sys, "platform", "linux")
    assert store.database_url() == f"sqlite:///{tmp_path / 'xdg' / 'silica' / 'silica.db'}"
    assert store.database_url("postgresql://u:p@h/db") == "postgresql+psycopg://u:p@h/db"


def test_unreachable_database_is_one_clear_error() -> None:
    with pytest.raises(
        store.StoreError, match=r"Cannot open database postgresql\+psycopg://silica:\*\*\*@127\.0\.0\.1:1/"
    ):
        open_store("postgresql://silica:secret@127.0.0.1:1/silica")


def _now() -> datetime:
    return datetime.now(UTC)
