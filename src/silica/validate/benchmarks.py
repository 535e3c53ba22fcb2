"""Read measurements in the validation schema (shared/benchmarks/README.md).

Column order is free and extra columns are ignored; a missing required column or a malformed
number is a `DataFileError` naming the file, line and column.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from silica.errors import DataFileError

__all__ = ["BUNDLED", "METRICS", "BenchmarkRow", "bundled_files", "read_benchmarks"]

METRICS = (
    "ttft_ms",
    "tpot_ms",
    "output_tok_s",
    "max_output_tok_s",
    "encoder_seq_s",
    "encoder_latency_ms",
    "train_tok_s_per_chip",
    "train_model_tflops_per_chip",
)
TRAINING_METRICS = ("train_tok_s_per_chip", "train_model_tflops_per_chip")
REQUIRED = ("chip", "chips", "task", "model", "metric", "value")


@dataclass(frozen=True, slots=True)
class BenchmarkRow:
    id: str
    run: str
    source: str
    chip: str
    chips: int
    instance: str
    task: str
    model: str
    weight_dtype: str
    compute_dtype: str
    batch: int | None
    micro_batch: int | None
    input_len: int | None
    output_len: int | None
    seq_len: int | None
    tp: int | None
    pp: int | None
    metric: str
    value: float
    ep: int | None = None
    cp: int | None = None  # context-parallel degree: ranks that split each sequence (training or serving)
    vp: int | None = None  # model chunks per pipeline stage (interleaved 1F1B), when the source states it
    engine: str = ""  # serving or training stack as the source names it (trtllm, nemo, nxdi, ...)
    engine_release: str = ""  # the engine's release, where the source names one (0.3 for vLLM 0.3.x)
    as_of: str = ""


# Each count column's smallest sane value and largest (10x beyond any published run); a cell outside
# is a typo that would otherwise reach the model as batch 0, tp 10^6 on 8 chips or 10^11 tokens.
_RANGE = {
    "chips": (1, 1_000_000),
    "batch": (1, 100_000_000),  # training rows count global batch in tokens (published: 1,048,576)
    "micro_batch": (1, 1_000_000),
    "input_len": (1, 100_000_000),
    "output_len": (0, 100_000_000),
    "seq_len": (1, 100_000_000),
    "tp": (1, 1_000_000),
    "pp": (1, 10_000),
    "cp": (1, 10_000),
    "vp": (1, 1_024),
}


def _int(raw: dict[str, str], key: str, where: str) -> int | None:
    text = (raw.get(key) or "").strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        raise DataFileError(
            f"{where}: column {key!r} is not a number: {text!r}.", "fix or empty that cell."
        ) from None
    low, high = _RANGE.get(key, (0, 10**12))
    if not (math.isfinite(number) and number == int(number) and low <= number <= high):
        raise DataFileError(
            f"{where}: column {key!r} must be a whole number from {low:,} to {high:,}, got {text!r}.",
            "fix that cell.",
        )
    return int(number)


def _check_row(row: BenchmarkRow, where: str) -> BenchmarkRow:
    """Measurements are positive and finite; a layout uses no more tensor-parallel ranks than it has."""
    if not (math.isfinite(row.value) and 0 < row.value < 1e15):
        raise DataFileError(
            f"{where}: the measured value {row.value!r} is not a positive finite number.",
            "fix that cell; a measurement of 0, a negative one or NaN is not a measurement.",
        )
    # A metric belongs to one task: a per-token latency of a training run measures nothing Silica
    # predicts (the row used to be skipped as "no performance row could be predicted", exit 0).
    if row.metric in METRICS and row.task in ("inference", "training"):
        of_training = row.metric in TRAINING_METRICS
        if of_training != (row.task == "training"):
            allowed = [m for m in METRICS if (m in TRAINING_METRICS) == (row.task == "training")]
            raise DataFileError(
                f"{where}: metric {row.metric} is not a {row.task} metric.",
                f"fix the task or metric cell ({row.task} metrics: {', '.join(allowed)}).",
            )
    # tp counts GPUs, or NeuronCores on Neuron (up to 8 per Trainium2/3 chip); no more than that.
    if row.tp is not None and row.tp > 8 * row.chips:
        raise DataFileError(
            f"{where}: tp {row.tp} is more than {row.chips} chips can hold.", "fix the tp or chips cell."
        )
    return row


# Measurements that ship with Silica, beyond ../shared/benchmarks/published.csv: one CSV per public
# source, in the same schema plus `source_ref`, `as_of` and `engine` on every row (SOURCES.md there).
# Files under holdout/ are never fitted on: they check the model independently.
BUNDLED = Path(__file__).resolve().parents[1] / "data" / "benchmarks"


def bundled_files(holdout: bool = False) -> list[Path]:
    """The bundled measurement files (the calibration's, or the held-out ones), in name order."""
    return sorted((BUNDLED / "holdout" if holdout else BUNDLED).glob("*.csv"))


def read_benchmarks(path: str | Path) -> list[BenchmarkRow]:
    from silica._files import check_rows, csv_text

    path = Path(path)
    handle = csv_text(path, "measurements CSV")  # size limit, binary and non-UTF-8 files refused
    rows = []
    with handle:
        reader = csv.DictReader(handle)
        try:
            header = reader.fieldnames or []
        except csv.Error as err:
            raise DataFileError(f"{path} is not valid CSV: {err}.", "pass a CSV file.") from None
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise DataFileError(
                f"{path} lacks the column(s) {', '.join(missing)}.",
                "use the schema of shared/benchmarks/README.md (column order is free).",
            )
        try:
            for line, raw in enumerate(reader, start=2):
                check_rows(path, line - 1)
                where = f"{path}:{line}"
                try:
                    value = float(raw["value"])
                except (TypeError, ValueError):
                    raise DataFileError(
                        f"{where}: value {raw['value']!r} is not a number.", "fix that cell."
                    ) from None
                rows.append(
                    _check_row(
                        BenchmarkRow(
                            id=(raw.get("id") or str(line)).strip(),
                            run=(raw.get("run") or "").strip(),
                            source=(raw.get("source") or "").strip(),
                            chip=raw["chip"].strip().lower(),
                            chips=_int(raw, "chips", where) or 1,
                            instance=(raw.get("instance") or "").strip(),
                            task=raw["task"].strip(),
                            model=raw["model"].strip(),
                            weight_dtype=(raw.get("weight_dtype") or "bf16").strip() or "bf16",
                            compute_dtype=(raw.get("compute_dtype") or "bf16").strip() or "bf16",
                            batch=_int(raw, "batch", where),
                            micro_batch=_int(raw, "micro_batch", where),
                            input_len=_int(raw, "input_len", where),
                            output_len=_int(raw, "output_len", where),
                            seq_len=_int(raw, "seq_len", where),
                            tp=_int(raw, "tp", where),
                            pp=_int(raw, "pp", where),
                            metric=raw["metric"].strip(),
                            value=value,
                            ep=_int(raw, "ep", where),
                            cp=_int(raw, "cp", where),
                            vp=_int(raw, "vp", where),
                            engine=(raw.get("engine") or "").strip(),
                            engine_release=(raw.get("engine_release") or "").strip(),
                            as_of=(raw.get("as_of") or "").strip(),
                        ),
                        where,
                    )
                )
        except UnicodeDecodeError as err:
            raise DataFileError(f"{path} is not UTF-8 text: {err.reason}.", "pass a CSV file.") from err
        except csv.Error as err:
            raise DataFileError(f"{path} is not valid CSV: {err}.", "pass a CSV file.") from err
    if not rows:
        raise DataFileError(f"{path} has a header but no measurement rows.", "add rows below the header.")
    return rows
