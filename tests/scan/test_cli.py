"""`silica scan` from the command line: JSON shape, rich output, one-line errors, a light --help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.cli.app import app

runner = CliRunner()


def test_help_says_when_user_code_runs() -> None:
    result = runner.invoke(app, ["scan", "--help"])
    assert result.exit_code == 0
    assert "ONLY" in result.output and "never imports or executes" in result.output


def test_silica_help_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom silica.cli.app import app\n"
        "assert 'torch' not in sys.modules\nassert 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_code_scan_json_and_rich(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("flash-attn\n")
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    result = runner.invoke(app, ["scan", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data["target_verdicts"].values()) == {"needs-work"}
    assert {f["location"] for f in data["findings"]} == {"requirements.txt:1", "k.cu:1"}
    assert data["status"] == "ok"
    result = runner.invoke(app, ["scan", str(tmp_path)])
    assert result.exit_code == 0 and "needs-work" in result.output and "requirements.txt:1" in result.output


def test_unknown_model_is_one_line_exit_2() -> None:
    result = runner.invoke(app, ["scan", "no-such-model"])
    assert result.exit_code == 2
    assert result.output.count("\n") <= 1 and "Unknown model" in result.output


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("torch", "transformers") else real(name, *a),
    )
    result = runner.invoke(app, ["scan", "llama-3.1-8b"])
    assert result.exit_code == 2
    assert "silica[scan]" in result.output


def test_model_scan_json() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    result = runner.invoke(app, ["scan", "llama-3.1-8b", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["target_verdicts"]["trainium2"] == "ready"
    assert all(o["status"] == "supported" for o in data["ops"])
    result = runner.invoke(app, ["scan", "gpt2"])
    assert result.exit_code == 0 and "aten::mm" in result.output and "Verdict per target" in result.output


def test_failed_model_scan_is_a_result_marked_failed() -> None:
    pytest.importorskip("torch")
    subject = f"{Path(__file__).parent / 'fixtures' / 'factories.py'}:raises"
    result = runner.invoke(app, ["scan", subject, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "failed"
    assert [f["rule"] for f in data["findings"]] == ["factory-error"]
    result = runner.invoke(app, ["scan", subject])
    assert result.exit_code == 0
    assert "scan failed" in result.output and "not an estimate" in result.output


def test_missing_path_is_one_line_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["scan", str(tmp_path / "nope.py") + ":f"])
    assert result.exit_code == 2
    assert result.output.count("\n") <= 1
