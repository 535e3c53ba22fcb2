"""docs/accuracy.md and README quote figures made by scripts/accuracy_report.py: notice drift.

Regenerating the report takes minutes, so these tests check that the quoted figures agree with
each other and with the shipped calibration; a calibration refitted without regenerating the
report (or a hand-edited figure) fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from silica.perf.calibration import FITTED_PARAM_NAMES, load_calibration

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "accuracy.md").read_text()
README = (ROOT / "README.md").read_text()


def _doc_row(label: str) -> tuple[str, str]:
    match = re.search(rf"^\| {re.escape(label)}[^|]* \| ([\d.]+%) \| ([\d.]+%) \|$", DOC, re.M)
    assert match, label
    return match.group(1), match.group(2)


def test_readme_quotes_the_report() -> None:
    in_sample = _doc_row("Silica, shipped calibration (in-sample)")[0]
    loso = _doc_row("leave-one-source-out")[0]
    paragraph = README[README.index("Accuracy on the ") :].split("\n\n")[0]
    assert f"error {in_sample} with the shipped calibration" in paragraph
    assert f"{loso}\nleave-one-source-out" in paragraph


def test_report_shows_the_shipped_calibration_and_band_coverage() -> None:
    cal = load_calibration()
    for family, params in cal.params.items():
        row = re.search(rf"^\| {re.escape(family)} \| (.+) \| \d+ \|$", DOC, re.M)
        assert row, family
        quoted = [float(v) for v in row.group(1).split(" | ")]
        expected = [getattr(params, n) for n in FITTED_PARAM_NAMES]
        assert quoted == pytest.approx(expected, rel=1e-3), family
    coverage = cal.band_coverage
    assert f"| {coverage['out_of_sample']:.1%} |" in DOC
    assert f"| {coverage['in_sample']:.1%} |" in DOC
