"""Every bundled measurement file: schema, provenance on every row, and every row predicted."""

from __future__ import annotations

import csv

import pytest

from silica.validate import predict_rows, read_benchmarks
from silica.validate.benchmarks import bundled_files

FILES = bundled_files() + bundled_files(holdout=True)
PROVENANCE = ("source", "source_ref", "as_of", "engine")


def test_there_are_bundled_files_to_fit_and_to_hold_out() -> None:
    assert bundled_files(), "src/silica/data/benchmarks/*.csv"
    assert bundled_files(holdout=True), "src/silica/data/benchmarks/holdout/*.csv"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_rows_name_source_date_and_engine(path) -> None:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    for line, raw in enumerate(rows, start=2):
        for column in PROVENANCE:
            assert (raw.get(column) or "").strip(), f"{path.name}:{line} has no {column}"
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids), "ids are unique"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_row_is_predicted(path) -> None:
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
