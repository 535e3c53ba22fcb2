"""Outputs: written whole by concurrent writers, never over an input, and checked before the work.

Issue 15: 8 concurrent `validate --out` to one path shared the temporary name "<out>.tmp" and 2 of 8
failed; `calibrate x.csv --out x.csv` replaced the measurements with JSON; an unwritable --out was
found only after a 37 s fit.
"""

from __future__ import annotations

import csv
import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

import pytest
from tests.hostile.conftest import BENCH, Sandbox

from silica._files import atomic_open, check_output, write_text
from silica.errors import DataFileError, InputError

FORK = mp.get_context("fork")
WRITERS = 8


def _validate_to(work: str, barrier: Any) -> None:
    from typer.testing import CliRunner

    from silica.cli.app import app

    os.chdir(work)
    barrier.wait(timeout=60)
    result = CliRunner().invoke(app, ["validate", "bench.csv", "--out", "pred.csv"])
    os._exit(result.exit_code)


def test_8_concurrent_validate_out_to_one_path_all_succeed(sandbox: Sandbox) -> None:
    barrier = FORK.Barrier(WRITERS)
    procs = [FORK.Process(target=_validate_to, args=(str(sandbox.work), barrier)) for _ in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    rows = list(csv.reader((sandbox.work / "pred.csv").read_text().splitlines()))
    assert rows[0][:4] == ["id", "chip", "model", "metric"] and len(rows) == 2  # one whole file
    assert not [p.name for p in sandbox.work.iterdir() if p.name.endswith(".tmp")]  # no leftovers
    assert (sandbox.work / "bench.csv").read_text() == BENCH


def test_calibrate_out_is_checked_before_the_fit(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr("silica.validate.fit.fit_calibration", lambda *a, **k: calls.append(1))
    result = sandbox.run(["calibrate", "bench.csv", "--out", "no/such/dir/fit.json"])
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert calls == []  # the fit never started


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(target) as handle:
        handle.write("half")
        raise RuntimeError("the renderer failed midway")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_write_text_gives_the_mode_a_plain_open_would(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(umask)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda d: (d / "in.csv", d / "in.csv"), id="same-path"),
        pytest.param(lambda d: (d / "in.csv", d / "sub" / ".." / "in.csv"), id="dotdot"),
        pytest.param(lambda d: (d / "in.csv", _link(d / "in.csv", d / "l.csv")), id="symlink"),
        pytest.param(lambda d: (d / "in.csv", _hardlink(d / "in.csv", d / "h.csv")), id="hardlink"),
    ],
)
def test_an_output_that_is_an_input_is_refused(tmp_path: Path, make: Any) -> None:
    (tmp_path / "in.csv").write_text("keep me")
    (tmp_path / "sub").mkdir()
    source, out = make(tmp_path)
    with pytest.raises(InputError, match="is also an input file"):
        check_output(out, inputs=[source])
    assert (tmp_path / "in.csv").read_text() == "keep me"


def _link(target: Path, link: Path) -> Path:
    link.symlink_to(target)
    return link


def _hardlink(target: Path, link: Path) -> Path:
    os.link(target, link)
    return link


def test_writing_into_a_missing_folder_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="Cannot write"):
        write_text(tmp_path / "nope" / "x.txt", "x")
    assert not (tmp_path / "nope").exists()
