"""Check the performance model against published measurements, and fit its calibration."""

from silica.validate.benchmarks import BenchmarkRow, read_benchmarks
from silica.validate.predict import Prediction, predict_rows
from silica.validate.report import ValidationReport, summarize, validate

__all__ = [
    "BenchmarkRow",
    "Prediction",
    "ValidationReport",
    "predict_rows",
    "read_benchmarks",
    "summarize",
    "validate",
]
