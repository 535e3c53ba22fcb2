"""Pilot results in the store (SQLite, and the real PostgreSQL of SILICA_TEST_PG_URL), and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tests.pilot.conftest import run
from tests.pilot.sse_server import serving

from silica import store

PG_URL = os.environ.get("SILICA_TEST_PG_URL")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_history_lists_pilots(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if backend == "postgresql":
        if not PG_URL:
            if os.environ.get("CI") == "true":
                pytest.fail("SILICA_TEST_PG_URL is not set under CI: source .ci/postgres.sh")
            pytest.skip("SILICA_TEST_PG_URL is not set")
        monkeypatch.setenv("SILICA_DB_URL", PG_URL)
        store.close_all()
    model = f"m-{uuid.uuid4().hex[:10]}"  # unique on a shared database
    with serving() as srv:
        code, _, err = run(
            "pilot",
            "run",
            "--endpoint",
            f"http://127.0.0.1:{srv.port}",
            "--model",
            model,
            "--concurrency",
            "1,2",
            "--requests",
            "2",
            "--out",
            str(tmp_path / "r.json"),
        )
    assert code == 0, err
    code, out, _ = run("history", "--kind", "pilot", "--limit", "200", "--json")
    mine = [r for r in json.loads(out)["records"] if model in r["name"]]
    assert len(mine) == 1
    record = store.open_store().get(mine[0]["id"])
    assert record.payload["steps"][1]["concurrency"] == 2
    code, out, _ = run("history", "--kind", "pilot", "--limit", "200")
    assert f"pilot of {model}" in out and "2/2 steps" in out


def test_ctrl_c_keeps_the_finished_steps(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with serving() as srv:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "silica.cli", "pilot", "run", "--endpoint", f"http://127.0.0.1:{srv.port}",
             "--model", "slow", "--concurrency", "1,1", "--requests", "2", "--out", str(out), "--no-store"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        # warm-up + 2 requests of 64 tokens at 20/s: the first step ends after ~10 s; stop mid-second
        deadline = time.monotonic() + 60
        while srv.requests < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    res = json.loads(out.read_text())
    assert len(res["steps"]) == 1 and res["steps"][0]["completed"] == 2
    assert res["stopped"] == "interrupted (Ctrl-C) during the step at concurrency 1"
    assert "1/2 steps" in stdout
