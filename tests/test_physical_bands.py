"""Bands respect physics: over every bundled measurement row, no band (as `validate --out` writes
it) reaches below a time no chip can beat or above a rate no chip can reach.

The bounds checked here are computed from the catalog alone (peak FLOPs, peak HBM bandwidth, the
model's parameters), not from the performance model's own floor, so the test fails if the model's
floor is wrong as well as when the clipping is missing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from silica.catalog import load_catalog
from silica.models import load_model
from silica.perf.calibration import clip_band
from silica.perf.kernels import ModelCosts
from silica.perf.precision import precision
from silica.validate.benchmarks import BenchmarkRow, bundled_files, read_benchmarks
from silica.validate.predict import Prediction, predict_rows

PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "published.csv"
SLACK = 1.0 - 1e-9


def test_clip_band_cuts_only_the_fast_end_and_keeps_the_value_inside() -> None:
    assert clip_band(10.0, 0.5, 1.5, floor=7.0) == (7.0, 15.0)
    assert clip_band(10.0, 0.5, 1.5, floor=3.0) == (5.0, 15.0)
    assert clip_band(10.0, 0.5, 1.5, ceiling=12.0) == (5.0, 12.0)
    assert clip_band(10.0, 0.5, 1.5, floor=11.0) == (10.0, 15.0)  # a floor above the value: value is the edge


@pytest.fixture(scope="module")
def predictions() -> list[Prediction]:
    rows: list[BenchmarkRow] = []
    for path in [
        *bundled_files(),
        *bundled_files(holdout=True),
        *([PUBLISHED] if PUBLISHED.exists() else []),
    ]:
        rows += read_benchmarks(path)
    return [p for p in predict_rows(rows) if p.predicted is not None]


def _unit(row: BenchmarkRow) -> tuple[float, float]:
    """Peak FLOP/s and HBM bytes/s of one tensor-parallel unit (a GPU, a NeuronCore)."""
    chip = load_catalog().chips[row.chip]
    flops_dtype = precision(row.weight_dtype, row.compute_dtype).flops_dtype  # type: ignore[arg-type]
    peak = chip.peak_tflops(flops_dtype) or chip.peak_tflops("bf16") or np.nan
    units = chip.tp_cores_per_chip
    return peak * 1e12 / units, (chip.hbm_tb_per_s or np.nan) * 1e12 / units


@pytest.mark.slow
def test_every_band_holds_its_prediction(predictions: list[Prediction]) -> None:
    assert len(predictions) > 1000
    bad = [
        p
        for p in predictions
        if not (p.low is not None and p.high is not None and p.low <= p.predicted <= p.high)
    ]  # type: ignore[operator]
    assert not bad, bad[:3]


@pytest.mark.slow
def test_no_training_band_promises_more_than_100_percent_mfu(predictions: list[Prediction]) -> None:
    checked = 0
    for p in predictions:
        row = p.row
        if row.metric not in ("train_model_tflops_per_chip", "train_tok_s_per_chip") or row.seq_len is None:
            continue
        chip = load_catalog().chips[row.chip]
        peak = chip.peak_tflops(precision("bf16", row.compute_dtype).flops_dtype)  # type: ignore[arg-type]
        if not peak:
            continue
        if row.metric == "train_model_tflops_per_chip":
            mfu_high = p.high / peak  # type: ignore[operator]
        else:
            c = ModelCosts.of(load_model(row.model))
            attn = 3.0 * float(
                c.attention_flops(np.asarray(1.0), np.asarray(row.seq_len / 2.0), np.asarray(c.n_heads))
            )
            mfu_high = p.high * (6.0 * c.matmul_params + attn) / (peak * 1e12)  # type: ignore[operator]
        assert mfu_high <= 1.0 + 1e-6, (row, mfu_high)
        checked += 1
    assert checked > 50


@pytest.mark.slow
def test_no_dense_decode_band_beats_its_weights_over_peak_bandwidth(predictions: list[Prediction]) -> None:
    """TPOT low >= the dense weights one tensor-parallel rank must stream each step at peak HBM bandwidth."""
    checked = 0
    for p in predictions:
        row = p.row
        if row.metric != "tpot_ms" or (row.ep or 1) > 1:
            continue
        c = ModelCosts.of(load_model(row.model))
        if c.n_experts:
            continue
        _, bw = _unit(row)
        weight_bytes = precision(row.weight_dtype, row.compute_dtype).weight_bytes  # type: ignore[arg-type]
        floor_ms = c.static_params * weight_bytes / (row.tp or 1) / bw * 1e3
        assert p.low >= floor_ms * SLACK, (row, p.low, floor_ms)  # type: ignore[operator]
        checked += 1
    assert checked > 50


@pytest.mark.slow
def test_no_dense_prefill_band_beats_its_flops_at_peak(predictions: list[Prediction]) -> None:
    """TTFT low (static batch, as the tables measure) >= 2 x active parameters x prompt tokens / peak."""
    checked = 0
    for p in predictions:
        row = p.row
        if row.metric != "ttft_ms" or row.input_len is None or (row.ep or 1) > 1:
            continue
        c = ModelCosts.of(load_model(row.model))
        if c.n_experts:
            continue
        flops, _ = _unit(row)
        floor_ms = 2.0 * c.matmul_params * row.input_len * (row.batch or 1) / ((row.tp or 1) * flops) * 1e3
        assert p.low >= floor_ms * SLACK, (row, p.low, floor_ms)  # type: ignore[operator]
        checked += 1
    assert checked > 20
