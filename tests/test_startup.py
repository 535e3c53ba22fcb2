"""Start-up: what every command pays before it does its work (benchmarks/startup_speed.py measures it).

These hold the structure that keeps it low, so that a change that undoes it fails here rather than in a
benchmark nobody runs: the console script builds only the command its line names, and the catalog loads
without pydantic's model machinery.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from silica.cli import app as cli


def _names() -> list[str]:
    from typer.main import get_command

    return sorted(get_command(cli.app).commands)  # type: ignore[attr-defined]


def test_every_command_line_builds_only_its_command() -> None:
    before = (list(cli.app.registered_commands), list(cli.app.registered_groups))
    for name in _names():
        narrow = cli._only(name)
        assert narrow is not None, name
        assert len(narrow.registered_commands) + len(narrow.registered_groups) == 1, name
    assert (cli.app.registered_commands, cli.app.registered_groups) == before  # the full app untouched
    for word in ("--help", "-h", "--version", "compar", "nope", ""):
        assert cli._only(word) is None, word  # help, options and typos get the full app


def test_a_narrowed_command_prints_what_the_full_app_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["catalog", "instances", "--family", "p5", "-o", "tsv"]
    full = CliRunner().invoke(cli.app, args)
    assert full.exit_code == 0, full.output
    monkeypatch.setattr(sys, "argv", ["silica", *args])
    with pytest.raises(SystemExit) as done:
        cli.main()
    assert done.value.code == 0
    assert capsys.readouterr().out == full.output


def test_planning_loads_the_catalog_without_pydantic_models() -> None:
    """pydantic's BaseModel costs ~50 ms to import and each model more to build; the bundled catalog's
    cells are plain, so loading it (and the planner's modules) must not import it."""
    code = (
        "import sys, silica.plan, silica.context\n"
        "from silica.catalog import load_catalog\n"
        "load_catalog()\n"
        "print('pydantic.main' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
