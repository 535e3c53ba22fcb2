"""Summaries of prediction error: what `silica validate` prints."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from silica.catalog.schema import Catalog
from silica.errors import DataFileError
from silica.perf.calibration import Calibration
from silica.validate.benchmarks import read_benchmarks
from silica.validate.energy_rows import ENERGY_METRICS, is_mlenergy, mlenergy_rows
from silica.validate.predict import Prediction, predict_rows

__all__ = ["ValidationReport", "summarize", "validate", "write_predictions"]


@dataclass(frozen=True, slots=True)
class ValidationReport:
    rows: int
    predicted: int
    skipped: int
    median_ape: float | None
    p90_ape: float | None
    by_chip: dict[str, dict[str, Any]]
    by_metric: dict[str, dict[str, Any]]
    by_source: dict[str, dict[str, Any]]
    energy: dict[str, Any]  # energy and power rows (the power model), kept out of the headline figures
    skipped_rows: list[dict[str, str]]
    predictions: tuple[Prediction, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "predicted": self.predicted,
            "skipped": self.skipped,
            "median_ape": self.median_ape,
            "p90_ape": self.p90_ape,
            "by_chip": self.by_chip,
            "by_metric": self.by_metric,
            "by_source": self.by_source,
            "energy": self.energy,
            "skipped_rows": self.skipped_rows,
        }


def _stats(apes: Sequence[float]) -> dict[str, Any]:
    if not apes:
        return {"n": 0, "median_ape": None, "p90_ape": None}
    arr = np.asarray(apes)
    return {"n": len(apes), "median_ape": float(np.median(arr)), "p90_ape": float(np.percentile(arr, 90))}


def summarize(predictions: Sequence[Prediction]) -> ValidationReport:
    done = [p for p in predictions if p.ape is not None]
    energy = [p.ape or 0.0 for p in done if p.row.metric in ENERGY_METRICS]
    performance = [p.ape or 0.0 for p in done if p.row.metric not in ENERGY_METRICS]
    by: dict[str, dict[str, list[float]]] = {
        "chip": defaultdict(list),
        "metric": defaultdict(list),
        "source": defaultdict(list),
    }
    for p in done:
        ape = p.ape or 0.0
        by["chip"][p.row.chip].append(ape)
        by["metric"][p.row.metric].append(ape)
        by["source"][p.row.source].append(ape)
    overall = _stats(performance)
    return ValidationReport(
        rows=len(predictions),
        predicted=len(done),  # performance and energy rows
        skipped=len(predictions) - len(done),
        median_ape=overall["median_ape"],
        p90_ape=overall["p90_ape"],
        by_chip={k: _stats(v) for k, v in sorted(by["chip"].items())},
        by_metric={k: _stats(v) for k, v in sorted(by["metric"].items())},
        by_source={k: _stats(v) for k, v in sorted(by["source"].items())},
        energy={
            "rows": sum(p.row.metric in ENERGY_METRICS for p in predictions),
            **_stats(energy),
            "model": "perf.power fractions over the estimate's phases; chip (GPU) power only, no host",
        },
        skipped_rows=[{"id": p.row.id, "reason": p.skipped or ""} for p in predictions if p.ape is None],
        predictions=tuple(predictions),
    )


def validate(
    path: str | Path, calibration: Calibration | None = None, catalog: Catalog | None = None
) -> ValidationReport:
    """Predict every row of a measurements CSV (the validation schema, or ML.ENERGY's layout) and
    summarise the error; energy and power rows go through the power model (`energy_rows`)."""
    if is_mlenergy(path):
        rows, _ = mlenergy_rows(path)
        if not rows:
            raise DataFileError(
                f"{path}: no configuration's chip and model are in the catalog.", "check the file."
            )
    else:
        rows = read_benchmarks(path)
    return summarize(predict_rows(rows, calibration, catalog))


def write_predictions(report: ValidationReport, out: str | Path) -> None:
    """Each row's prediction beside its measurement; written whole or not at all (unique temp file)."""
    from silica._files import atomic_open

    with atomic_open(Path(out), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "id",
                "chip",
                "model",
                "metric",
                "measured",
                "predicted",
                "predicted_low",
                "predicted_high",
                "ape",
                "skipped",
            ]
        )
        for p in report.predictions:
            writer.writerow(
                [
                    p.row.id,
                    p.row.chip,
                    p.row.model,
                    p.row.metric,
                    p.row.value,
                    "" if p.predicted is None else f"{p.predicted:.6g}",
                    "" if p.low is None else f"{p.low:.6g}",
                    "" if p.high is None else f"{p.high:.6g}",
                    "" if p.ape is None else f"{p.ape:.4f}",
                    p.skipped or "",
                ]
            )
