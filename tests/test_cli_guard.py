"""The CLI boundary guard: a bug is one line and exit 70 with the traceback in a log file, never on screen."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.cli._guard import INTERNAL_ERROR_EXIT
from silica.cli.app import app
from silica.errors import InputError

runner = CliRunner()


def _boom(*_args: object, **_kwargs: object) -> None:
    raise RuntimeError("simulated bug\nsecond line")


def test_unexpected_exception_is_one_line_exit_70_and_a_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SILICA_LOG_DIR", str(tmp_path))
    monkeypatch.setattr("silica.plan.estimate", _boom)
    r = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge"])
    assert r.exit_code == INTERNAL_ERROR_EXIT
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("internal error: RuntimeError: simulated bug second line;")
    assert "Traceback" not in r.output
    logs = list(tmp_path.glob("silica-crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in lines[0]
    text = logs[0].read_text()
    assert "Traceback (most recent call last)" in text and "simulated bug" in text


def test_silica_error_escaping_a_command_is_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise InputError("Bad thing.", "do the other thing.")

    monkeypatch.setattr("silica.plan.estimate", refuse)
    r = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "error: Bad thing. To fix: do the other thing."


def test_ctrl_c_is_interrupted_exit_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("silica.plan.estimate", interrupt)
    r = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge"])
    assert r.exit_code == 130
    assert r.stderr.strip() == "interrupted"


def test_usage_errors_still_belong_to_the_framework() -> None:
    r = runner.invoke(app, ["history", "--limit", "99999999999999999999999"])
    assert r.exit_code == 2
    assert "internal error" not in r.output
