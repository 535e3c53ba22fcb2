"""Output formats shared by listing commands: TSV when piped, CSV that pandas reads, folding at 80 columns."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from silica.cli import _output
from silica.cli._output import Column, Listing, emit, resolve_format
from silica.errors import InputError

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if columns:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "silica.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_format_resolution_prefers_json_flag_then_option_then_tty() -> None:
    assert resolve_format(None, True, isatty=True) == "json"
    assert resolve_format("CSV", False, isatty=True) == "csv"
    assert resolve_format(None, False, isatty=True) == "table"
    assert resolve_format(None, False, isatty=False) == "tsv"
    with pytest.raises(InputError, match="Unknown output format 'xml'"):
        resolve_format("xml")


def test_piped_models_listing_is_tsv_and_csv_loads_in_pandas() -> None:
    piped = _run("models")
    assert piped.returncode == 0, piped.stderr
    header = piped.stdout.splitlines()[0].split("\t")
    assert header[:2] == ["model", "kind"]
    as_csv = _run("models", "--output", "csv")
    frame = pd.read_csv(io.StringIO(as_csv.stdout))
    row = frame.set_index("model").loc["llama-3.1-8b"]
    assert 7.5e9 < row["params"] < 8.5e9  # a number, not "8.0B"
    assert len(frame) == len(piped.stdout.splitlines()) - 1


def test_narrow_terminal_hides_optional_columns_but_keeps_money_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listing = Listing(
        title="ranked",
        columns=(
            Column("instance", keep=True),
            Column("note", drop=1),
            Column("chip", drop=2),
            Column("$/1M out", lambda v: f"{v:,.4f}", right=True, keep=True),
        ),
        rows=[("p5.48xlarge", "a long explanation of why this row is where it is " * 2, "h100", 1234.5678)],
    )
    out = io.StringIO()
    monkeypatch.setattr("rich.console.Console", lambda: Console(file=out, width=40, force_terminal=False))
    emit(listing, "table")
    text = out.getvalue()
    assert "1,234.5678" in text  # whole, on one line
    assert "hidden at 40 columns: chip, note;" in text.replace("\n", " ")  # note would fold below 10
    assert _output.FORMATS == ("table", "json", "csv", "tsv")


def test_help_has_short_flag_and_no_bool_labels() -> None:
    out = _run("catalog", "instances", "-h", columns=100)
    assert out.returncode == 0
    assert "<bool>" not in out.stdout and "list[str]" not in out.stdout
    assert "TEXT..." in out.stdout


COMPARE = ("compare", "llama-3.1-8b", "--task", "inference", "--input-len", "1024", "--output-len", "256")


def test_piped_compare_is_tsv_csv_loads_and_80_columns_keep_money_whole() -> None:
    piped = _run(*COMPARE)
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert lines[0].split("\t")[:2] == ["#", "instance"] and "┃" not in piped.stdout
    frame = pd.read_csv(io.StringIO(_run(*COMPARE, "--output", "csv").stdout))
    priced = frame.dropna(subset=["$/1M out"])
    assert list(priced["$/1M out"]) == sorted(priced["$/1M out"])  # numbers, ranked ascending
    # On an 80-column terminal (a pty, so rich sees a terminal), every $/1M figure is printed whole.
    code = (
        "import sys; from rich.console import Console; import rich.console as rc; "
        "rc.Console = lambda *a, **k: Console(width=80, force_terminal=True, color_system=None); "
        "from silica.cli._output import emit, comparison_listing; from silica.plan import compare; "
        "from silica.workload import InferenceWorkload as W; "
        "emit(comparison_listing(compare('llama-3.1-8b', W(input_len=1024, output_len=256))), 'table')"
    )
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    table = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert table.returncode == 0, table.stderr
    rows = [ln for ln in table.stdout.splitlines() if ln.startswith("│")]
    assert max(len(ln) for ln in table.stdout.splitlines()) <= 80
    for value in priced["$/1M out"]:
        assert any(f"{value:,.3f}" in ln for ln in rows), value


def test_every_command_help_ends_with_examples() -> None:
    from silica.cli.app import app

    def walk(prefix: str, group: object) -> list[tuple[str, str | None]]:
        out = [
            (f"{prefix} {c.name or c.callback.__name__}".strip(), c.epilog) for c in group.registered_commands
        ]  # type: ignore[attr-defined]
        for sub in group.registered_groups:  # type: ignore[attr-defined]
            out += walk(f"{prefix} {sub.name}".strip(), sub.typer_instance)
        return out

    commands = walk("", app)
    assert len(commands) >= 20
    missing = [name for name, epilog in commands if not (epilog or "").startswith("Examples:")]
    assert not missing, missing
    shown = _run("estimate", "-h", columns=120)
    assert "Examples:" in shown.stdout and "silica estimate llama-3.1-8b --on g6e.xlarge" in shown.stdout
