"""Hugging Face repo ids resolve through a local HF cache that the test builds; nothing is downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from silica.errors import DataFileError
from silica.models import load_model

BUNDLED = Path(__file__).resolve().parents[1] / "src" / "silica" / "data" / "models" / "llama-3.1-8b.json"


def _cache(tmp_path: Path, repo: str, revision: str = "0123abcd") -> Path:
    """The layout huggingface_hub writes: models--org--name/{refs/main, snapshots/REV/config.json}."""
    root = tmp_path / "hub" / ("models--" + repo.replace("/", "--"))
    snap = root / "snapshots" / revision
    snap.mkdir(parents=True)
    config = json.loads(BUNDLED.read_text(encoding="utf-8"))
    config.pop("_source")
    (snap / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(revision, encoding="utf-8")
    return tmp_path / "hub"


def test_repo_id_resolves_from_local_cache_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(_cache(tmp_path, "meta-llama/Llama-3.1-8B")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("SILICA_HF_DOWNLOAD", raising=False)
    spec = load_model("meta-llama/Llama-3.1-8B")
    bundled = load_model("llama-3.1-8b")
    assert spec.id == "meta-llama/Llama-3.1-8B"
    assert spec.total_params == bundled.total_params
    assert "revision 0123abcd (local cache)" in spec.source


def test_repo_id_missing_from_cache_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("SILICA_HF_DOWNLOAD", raising=False)
    with pytest.raises(DataFileError, match="not in the local Hugging Face cache") as err:
        load_model("meta-llama/Llama-3.1-70B")
    assert "huggingface-cli download meta-llama/Llama-3.1-70B config.json" in str(err.value)


def test_a_relative_path_with_a_slash_is_still_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "org" / "mymodel"
    folder.mkdir(parents=True)
    config = json.loads(BUNDLED.read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    monkeypatch.chdir(tmp_path / "org")
    assert load_model("mymodel").id == "mymodel"
    monkeypatch.chdir(tmp_path)
    assert load_model("org/mymodel").id == "mymodel"
