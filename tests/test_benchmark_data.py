"""Every bundled measurement file: schema, provenance on every row, and every row predicted."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from silica.validate import predict_rows, read_benchmarks
from silica.validate.benchmarks import BUNDLED, bundled_files

FILES = bundled_files() + bundled_files(holdout=True)
PROVENANCE = ("source", "source_ref", "as_of", "engine")


def test_there_are_bundled_files_to_fit_and_to_hold_out() -> None:
    assert bundled_files(), "src/silica/data/benchmarks/*.csv"
    assert bundled_files(holdout=True), "src/silica/data/benchmarks/holdout/*.csv"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_rows_name_source_date_and_engine(path: Path) -> None:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    for line, raw in enumerate(rows, start=2):
        for column in PROVENANCE:
            assert (raw.get(column) or "").strip(), f"{path.name}:{line} has no {column}"
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids), "ids are unique"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_row_is_predicted(path: Path) -> None:
    predictions = predict_rows(read_benchmarks(path))
    skipped = [(p.row.id, p.skipped) for p in predictions if p.predicted is None]
    assert not skipped


def test_the_shipped_calibration_was_fitted_on_every_bundled_file_and_no_holdout() -> None:
    """A file added to the data but left out of `silica calibrate` would silently not be fitted."""
    from silica.perf.calibration import load_calibration

    command = load_calibration().generated_by.split()
    fitted = {part.rsplit("/", 1)[-1] for part in command if part.endswith(".csv")}
    assert {p.name for p in bundled_files()} <= fitted
    assert not {p.name for p in bundled_files(holdout=True)} & fitted
    assert "published.csv" in fitted


def _sources(paths: list[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        with path.open(newline="") as handle:
            found |= {(raw.get("source") or "").strip() for raw in csv.DictReader(handle)}
    return found


def test_every_bundled_file_is_described_in_sources_md() -> None:
    """SOURCES.md is where a file's source, dates and left-out rows are stated; a file missing there is unexplained."""
    sources_md = (BUNDLED / "SOURCES.md").read_text()
    for path in bundled_files():
        assert f"`{path.name}`" in sources_md, f"{path.name} is not described in SOURCES.md"
    for path in bundled_files(holdout=True):
        assert f"`holdout/{path.name}`" in sources_md, f"holdout/{path.name} is not described in SOURCES.md"


def test_no_source_is_both_fitted_and_held_out() -> None:
    """The split is by source: a held-out source that also feeds the fit would not be out of sample."""
    shared = _sources(bundled_files()) & _sources(bundled_files(holdout=True))
    assert not shared, f"sources in both the fit set and holdout/: {sorted(shared)}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_engine_releases_resolve_to_a_stack(path: Path) -> None:
    """An `engine_release` cell names a release the stack table can resolve (`--engine NAME@VERSION`)."""
    from silica.perf.stacks import resolve_stack

    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for line, raw in enumerate(rows, start=2):
        release = (raw.get("engine_release") or "").strip()
        if release:
            vendor = "aws" if raw["chip"].startswith(("trainium", "inferentia")) else "nvidia"
            stack = resolve_stack(f"{raw['engine']}@{release}", vendor, raw["task"], raw["chip"])
            assert stack.release == release, f"{path.name}:{line}"
