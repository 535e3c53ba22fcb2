"""The real app under uvicorn on a free loopback port, called over HTTP with httpx.

`serve` starts one server per settings (a store in tmp_path, or the real PostgreSQL from
SILICA_TEST_PG_URL) in a thread and stops it afterwards. Under CI=true a missing PostgreSQL fails.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from silica import store  # noqa: E402
from silica.serve import ServeSettings, create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PG_URL = os.environ.get("SILICA_TEST_PG_URL")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(settings: ServeSettings) -> Iterator[str]:
    """Start uvicorn with the app for `settings`, configured as `silica serve` runs it; yield its base
    URL; stop it."""
    from dataclasses import replace

    import uvicorn

    from silica.serve.server import uvicorn_config

    port = free_port()
    settings = replace(settings, host="127.0.0.1", port=port)
    config = uvicorn_config(create_app(settings), settings, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def form_token(client: Any, page: str) -> dict[str, str]:
    """The hidden form token of `page`'s post form, as a browser would submit it (the client keeps
    the page's cookie)."""
    import re

    found = re.search(r'name="csrf_token" value="([0-9a-f]+)"', client.get(page).text)
    assert found, f"{page} has no post form with a token"
    return {"csrf_token": found.group(1)}


def pg_url_or_fail() -> str:
    if PG_URL:
        return PG_URL
    if os.environ.get("CI") == "true":
        pytest.fail(
            "CI=true but SILICA_TEST_PG_URL is not set: PostgreSQL is required (source .ci/postgres.sh)."
        )
    pytest.skip("SILICA_TEST_PG_URL is not set: run `source .ci/postgres.sh` to test on PostgreSQL")


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing a test does writes to the user's directories."""
    monkeypatch.setenv("SILICA_DB_URL", f"sqlite:///{tmp_path / 'default.db'}")
    monkeypatch.setenv("SILICA_LOG_DIR", str(tmp_path / "log"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The store URL a module's server writes to: SQLite in tmp, then the real PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('store') / 'serve.db'}"
    else:
        yield pg_url_or_fail()
    store.close_all()


@pytest.fixture(scope="module")
def base(backend: str) -> Iterator[str]:
    """A server on `backend` with a small in-flight cap (the burst test relies on it)."""
    with running(ServeSettings(store_url=backend, max_inflight=8, max_upload_bytes=256 * 1024)) as url:
        yield url


@pytest.fixture
def client(base: str) -> Iterator[Any]:
    with httpx.Client(base_url=base, timeout=120) as c:
        yield c


@pytest.fixture
def start() -> Callable[..., Any]:
    """Start a server with the given settings inside a test (for token and limit tests)."""
    return running
