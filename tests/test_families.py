"""Chips, families and inheritance are data: a new chip is rows, and no chip runs on silent defaults."""

from __future__ import annotations

import csv
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from silica.catalog import load_catalog
from silica.catalog.loader import DATA_DIR
from silica.perf.calibration import INHERITANCE, load_calibration
from silica.perf.stacks import default_stack
from silica.plan import estimate
from silica.workload import Deployment, InferenceWorkload

WL = InferenceWorkload(input_len=1024, output_len=256, batch=1)


@pytest.mark.parametrize("task", ["inference", "training"])
def test_every_chip_reaches_fitted_parameters_by_a_stated_rule(task: str) -> None:
    """A chip whose family has no fit of its own and no rule in data/families.yaml would run on
    uncalibrated defaults; that must be a failing test, not a silent estimate."""
    cal = load_calibration()
    for chip in load_catalog().chips.values():
        if task == "training" and chip.family == "neuron-v1":
            continue  # Inferentia1 serves only (AWS sells it for inference)
        stack, _ = default_stack(chip.vendor, task)
        resolved = cal.resolve(chip.family, stack.name)
        assert resolved.key != "defaults", (
            f"{chip.id} ({chip.family}) falls back to defaults: {resolved.note}"
        )
        if resolved.inherited_from is not None:
            assert chip.family in INHERITANCE, chip.id


def _with_rows(tmp: Path, table: str, rows: list[dict[str, str]]) -> None:
    path = tmp / table
    with path.open(encoding="utf-8") as f:
        header = next(csv.reader(f))
    with path.open("a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in header})


def test_a_hypothetical_chip_from_data_rows_alone_is_estimated(tmp_path: Path) -> None:
    """'h100-next': an H100 with twice the HBM bandwidth, in an 8-chip instance, added as catalog rows
    only. It estimates with its family's calibration, and decodes faster than the H100 (bandwidth-bound)."""
    for name in ("chips.csv", "instances.csv", "prices.csv"):
        shutil.copy(DATA_DIR / name, tmp_path / name)
    h100 = load_catalog().chips["h100"]
    chip = {k: ("" if v is None else str(v)) for k, v in asdict(h100).items()}
    chip.update(id="h100-next", name="Hypothetical H100 with 2x bandwidth", hbm_tb_per_s="6.7")
    chip.update(source="test row", as_of="2026-12-03", notes="hypothetical")
    _with_rows(tmp_path, "chips.csv", [chip])
    inst = {
        k: ("" if v is None else str(v)) for k, v in asdict(load_catalog().instances["p5.48xlarge"]).items()
    }
    inst.update(id="p9.48xlarge", chip="h100-next", source="test row", as_of="2026-12-03", notes="")
    _with_rows(tmp_path, "instances.csv", [inst])
    catalog = load_catalog(data_dir=tmp_path)
    new = estimate("llama-3.1-8b", WL, Deployment("p9.48xlarge", tp=1), catalog=catalog)
    old = estimate("llama-3.1-8b", WL, Deployment("p5.48xlarge", tp=1), catalog=catalog)
    assert new.feasible and new.family == "hopper"
    assert "hopper" in new.calibration
    assert new.tpot_ms is not None and old.tpot_ms is not None  # type: ignore[union-attr]
    assert new.tpot_ms < old.tpot_ms  # type: ignore[union-attr]
    assert new.price is None  # no price row: unpriced, never guessed
