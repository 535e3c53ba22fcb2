"""Measured energy and power rows in `silica validate`: predicted with the power model the planner uses.

A row in the validation schema (shared/benchmarks/README.md) whose metric is one of `ENERGY_METRICS`
is what ML.ENERGY measures: GPU (chip) energy only, no host, summed over the configuration's chips.

- `energy_per_output_token_j`: predicted chip watts x chips / predicted output tokens per second,
  what `estimate` says end to end (`validate.energy.Scored.j_per_token`);
- `avg_gpu_power_w`: predicted chip watts x chips.

The configuration runs through the same `estimate` call as the power fit (`validate.energy.
prepare_cases`), with the row's chip, chip count (tp), model, dtype, batch and lengths, and the
shipped fractions (`perf.power`); the band is the power model's held-out p10-p90 error. A row
without a batch or output length, or on a chip with no power figure, is skipped with the reason.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from silica.catalog.schema import Catalog
from silica.errors import DataFileError, SilicaError
from silica.perf.power import load_power
from silica.validate.benchmarks import BenchmarkRow
from silica.validate.energy import (
    ASSUMED_INPUT_LEN,
    EnergyRow,
    predicted_gpu_watts,
    prepare_cases,
    read_energy_rows,
)

__all__ = ["ENERGY_METRICS", "EnergyPrediction", "is_mlenergy", "mlenergy_rows", "predict_energy_row"]

ENERGY_METRICS = ("energy_per_output_token_j", "avg_gpu_power_w")

# (predicted value, band low, band high) or (None, why not)
EnergyPrediction = tuple[float, float, float] | tuple[None, str]


def predict_energy_row(row: BenchmarkRow, catalog: Catalog) -> EnergyPrediction:
    """The power model's figure for one measured energy row, with its band, or why it has none."""
    power = load_power()
    if row.chip not in catalog.chips:
        return None, f"chip {row.chip!r} is not in the catalog"
    if row.chip not in power.chips:
        return None, f"{row.chip} has no published power figure"
    if row.task != "inference":
        return None, "energy rows are serving measurements (task inference)"
    if row.batch is None or row.output_len is None:
        return None, "no batch or output length given"
    gpus = row.tp or row.chips
    energy_row = EnergyRow(
        key=row.id,
        source=row.source,
        chip=row.chip,
        chip_name=catalog.chips[row.chip].name,
        gpus=gpus,
        model=row.model,
        hub_model=row.model,
        dtype=row.weight_dtype,
        tp=gpus,
        ep=row.ep,
        batch=row.batch,
        output_len=float(row.output_len),
        j_per_token=math.nan,  # measured figures are not the prediction's business
        output_tok_s=math.nan,
        gpu_power_w=math.nan,
        input_len=row.input_len or ASSUMED_INPUT_LEN,
    )
    cases, skipped = prepare_cases([energy_row])
    if not cases:
        return None, skipped[0].split(": ", 1)[-1] if skipped else "no feasible configuration"
    case = cases[0]
    params, _ = power.params_for(case.family)
    watts = predicted_gpu_watts(case, params) * gpus
    value = watts if row.metric == "avg_gpu_power_w" else watts / case.predicted_tok_s
    low, high = power.error
    return value, value * low, value * high


def is_mlenergy(path: str | Path) -> bool:
    """Whether a CSV is in the ML.ENERGY layout (`batch_or_concurrency`, hub model names) rather
    than the validation schema."""
    from silica._files import csv_text, file_kind

    if file_kind(path) != "regular":
        return False  # a pipe can be read once: it goes straight to `read_benchmarks`
    try:
        header = next(csv.reader(csv_text(path, "measurements CSV")), [])
    except (SilicaError, csv.Error):
        return False  # not readable as a CSV: `read_benchmarks` says why in one line
    return "batch_or_concurrency" in header and "scenario" in header


def mlenergy_rows(path: str | Path) -> tuple[list[BenchmarkRow], list[str]]:
    """The ML.ENERGY file's configurations as validation rows (J per output token, summed GPU power,
    output tokens per second each), read as the power fit reads them (`validate.energy`), and one
    line per configuration the catalog cannot place."""
    try:
        found, skipped = read_energy_rows(path)
    except (KeyError, ValueError, IndexError) as err:
        raise DataFileError(
            f"{path} looks like ML.ENERGY's layout but cannot be read as it: {type(err).__name__} {err}.",
            "pass the ML.ENERGY CSV as published, or rows in the validation schema (shared/benchmarks/README.md).",
        ) from None
    rows = []
    for r in found:
        for metric, value in (
            ("energy_per_output_token_j", r.j_per_token),
            ("avg_gpu_power_w", r.gpu_power_w),
            ("output_tok_s", r.output_tok_s),
        ):
            rows.append(
                BenchmarkRow(
                    id=f"{r.key}:{metric}",
                    run=r.key,
                    source=f"ML.ENERGY {r.source}",
                    chip=r.chip,
                    chips=r.gpus,
                    instance="",
                    task="inference",
                    model=r.model,
                    weight_dtype=r.dtype,
                    compute_dtype=r.dtype,
                    batch=r.batch,
                    micro_batch=None,
                    input_len=r.input_len,
                    output_len=max(round(r.output_len), 1),
                    seq_len=None,
                    tp=r.tp,
                    pp=1,
                    metric=metric,
                    value=value,
                    ep=r.ep,
                )
            )
    return rows, skipped
