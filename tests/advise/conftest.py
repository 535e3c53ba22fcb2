"""Shared fixtures: a throwaway SQLite store per test, the bundled example, and a way to write inventories."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from silica import store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "inventory.yaml"


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every test gets its own SQLite file, so nothing touches the user's real store."""
    url = f"sqlite:///{tmp_path / 'silica-test.db'}"
    monkeypatch.setenv("SILICA_DB_URL", url)
    yield url
    store.close_all()


@pytest.fixture
def write_inventory(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str, name: str = "inventory.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write
