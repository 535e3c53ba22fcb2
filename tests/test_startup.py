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
    """Each top-level name is registered by the module `_HOME` names, and `main` builds it alone."""
    from typer.main import get_command

    full = cli.app
    before = (list(full.registered_commands), list(full.registered_groups))
    assert set(cli._HOME) <= set(_names()) and set(cli._HOME.values()) <= set(cli._MODULES)
    for name in _names():
        home = cli._HOME.get(name)
        if home is None:
            continue  # takes the long path: every module (correct, only slower)
        assert name in get_command(cli._build((home,))).commands, (name, home)  # type: ignore[attr-defined]
        narrow = cli._only(cli._build((home,)), name)
        assert narrow is not None, name
        assert len(narrow.registered_commands) + len(narrow.registered_groups) == 1, name
    assert (full.registered_commands, full.registered_groups) == before  # the full app untouched
    for word in ("--help", "-h", "--version", "compar", "nope", ""):
        assert cli._only(full, word) is None, word  # help, options and typos get the full app
    assert cli.app is full  # built once


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
