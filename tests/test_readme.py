"""README's quick start: exactly two commands, and CI runs the second one as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_quick_start_has_exactly_two_one_line_commands() -> None:
    commands = _quick_start_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in c for c in commands), commands
    assert "silica compare" in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_as_written() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert _quick_start_commands()[1] in ci.splitlines()


def test_the_test_command_runs_every_tier_and_the_checkers() -> None:
    """Plain `pytest` is the fast tier only (pyproject's addopts); CI must run them all, plus ruff and mypy."""
    command = _quick_start_commands()[1]
    assert 'pytest -m ""' in command
    assert "ruff check" in command and "ruff format --check" in command and command.endswith("mypy")
