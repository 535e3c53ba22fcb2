"""docs/api.md and docs/serve.md stay true: their Python runs, their images exist, their endpoints are
in the schema, and README says how to start the web app."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.serve.conftest import ROOT

from silica.serve import create_app

DOCS = ROOT / "docs"


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_api_md_examples_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    monkeypatch.chdir(ROOT)  # the examples name examples/inventory.yaml
    monkeypatch.setenv("SILICA_DB_URL", f"sqlite:///{tmp_path / 'docs.db'}")
    blocks = _blocks((DOCS / "api.md").read_text(), "python")
    assert len(blocks) >= 3
    for code in blocks:
        exec(compile(code, "docs/api.md", "exec"), {})


def test_serve_md_images_and_endpoints() -> None:
    text = (DOCS / "serve.md").read_text()
    images = re.findall(r"img/[\w.-]+\.png", text)
    assert len(images) >= 6
    for img in images:
        assert (DOCS / img).is_file(), img
    schema = create_app().openapi()
    for path in re.findall(r"`(?:GET|POST) (/api/v1/[\w/{}-]+)", text):
        assert path in schema["paths"], path


def test_readme_says_how_to_start_the_web_app() -> None:
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "silica serve" in quick and "docs/serve.md" in quick
