"""Shared fixtures: a throwaway store, overlay and data dir, and the CLI runner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica import store
from silica.cli.app import app

DATA = Path(__file__).resolve().parents[1] / "data" / "pilot"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SILICA_DB_URL", f"sqlite:///{tmp_path / 'silica-test.db'}")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("SILICA_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.delenv("SILICA_CALIBRATION_OVERLAY", raising=False)
    yield tmp_path
    store.close_all()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr
