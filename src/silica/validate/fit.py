"""Fit each chip family's calibration parameters to published measurements.

Robust least squares on log error (soft-L1 loss, so a few odd rows cannot drag a family), within
physical bounds, over six parameters per family (see `FamilyParams`). There is no per-row,
per-model or per-source term: the fitted numbers must carry over to measurements never seen.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import date

import numpy as np
from numpy.typing import NDArray

from silica.catalog import load_catalog
from silica.catalog.schema import Catalog
from silica.perf.calibration import DEFAULT_PARAMS, PARAM_BOUNDS, PARAM_NAMES, Calibration, FamilyParams
from silica.validate.benchmarks import METRICS, BenchmarkRow
from silica.validate.predict import Prepared, prepare

__all__ = ["band_table", "fit_calibration", "fit_prepared"]

Array = NDArray[np.float64]
# Parameters spanning orders of magnitude are fitted in log space.
_LOG = {"compute_half_tokens", "layer_overhead_us", "collective_latency_us"}
# Rows a metric needs in a family before it gets a band of its own (else the family's overall band).
MIN_ROWS_FOR_BAND = 8
N_STARTS = 6


def _to_x(p: FamilyParams) -> Array:
    return np.asarray([math.log(getattr(p, n)) if n in _LOG else getattr(p, n) for n in PARAM_NAMES])


def _from_x(x: Array) -> FamilyParams:
    values = {n: float(math.exp(v)) if n in _LOG else float(v) for n, v in zip(PARAM_NAMES, x, strict=True)}
    return FamilyParams(**values)


def _bounds() -> tuple[Array, Array]:
    lo = [math.log(PARAM_BOUNDS[n][0]) if n in _LOG else PARAM_BOUNDS[n][0] for n in PARAM_NAMES]
    hi = [math.log(PARAM_BOUNDS[n][1]) if n in _LOG else PARAM_BOUNDS[n][1] for n in PARAM_NAMES]
    return np.asarray(lo), np.asarray(hi)


def _families(prepared: Prepared, catalog: Catalog, mask: NDArray[np.bool_]) -> dict[str, NDArray[np.intp]]:
    rows: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(prepared.rows):
        if mask[i] and i not in prepared.skipped:
            rows[catalog.chips[row.chip].family].append(i)
    return {f: np.asarray(ix, dtype=np.intp) for f, ix in rows.items()}


def fit_prepared(
    prepared: Prepared,
    catalog: Catalog,
    mask: NDArray[np.bool_] | None = None,
    min_rows: int = 10,
) -> tuple[dict[str, FamilyParams], dict[str, int]]:
    """Fit every family that has at least `min_rows` usable rows among `mask`."""
    from scipy.optimize import least_squares  # heavy; only the fit needs it

    mask = np.ones(len(prepared.rows), dtype=bool) if mask is None else mask
    measured = np.asarray([r.value for r in prepared.rows])
    fitted: dict[str, FamilyParams] = {}
    counts: dict[str, int] = {}
    lo, hi = _bounds()
    for family, idx in sorted(_families(prepared, catalog, mask).items()):
        if idx.size < min_rows:
            continue

        def residuals(x: Array, family: str = family, idx: NDArray[np.intp] = idx) -> Array:
            pred = prepared.predict_with({family: _from_x(x)}, {family})[idx]
            r = np.log(pred / measured[idx])
            return np.where(np.isfinite(r), r, 0.0)

        # Several deterministic starts across the bounds; the loss surface has shallow local minima.
        rng = np.random.default_rng(0)
        starts = [np.clip(_to_x(DEFAULT_PARAMS), lo + 1e-6, hi - 1e-6)]
        starts += [lo + (hi - lo) * rng.uniform(0.15, 0.85, size=lo.size) for _ in range(N_STARTS - 1)]
        best = None
        for x0 in starts:
            result = least_squares(
                residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, diff_step=1e-3, max_nfev=300
            )
            if best is None or result.cost < best.cost:
                best = result
        assert best is not None
        fitted[family] = _from_x(best.x)
        counts[family] = int(idx.size)
    return fitted, counts


def band_table(
    prepared: Prepared, predicted: Array, catalog: Catalog
) -> dict[str, dict[str, tuple[float, float]]]:
    """p10 and p90 of measured / predicted per family and metric (and 'all')."""
    ratios: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for i, row in enumerate(prepared.rows):
        if i in prepared.skipped or not np.isfinite(predicted[i]) or predicted[i] <= 0:
            continue
        family = catalog.chips[row.chip].family
        ratio = row.value / predicted[i]
        ratios[family][row.metric].append(ratio)
        ratios[family]["all"].append(ratio)
    bands: dict[str, dict[str, tuple[float, float]]] = {}
    for family, table in ratios.items():
        # Too few rows say nothing about a spread: such a family (Trainium2, with 2 rows) keeps the
        # widened band of the family it inherits from.
        kept = {m: v for m, v in table.items() if len(v) >= MIN_ROWS_FOR_BAND}
        if kept:
            bands[family] = {
                m: (float(np.percentile(np.asarray(v), 10)), float(np.percentile(np.asarray(v), 90)))
                for m, v in kept.items()
            }
    return bands


def fit_calibration(
    rows: Sequence[BenchmarkRow], *, catalog: Catalog | None = None, command: str = "silica calibrate"
) -> Calibration:
    """Fit all families with data; bands from the in-sample error of the fitted model."""
    catalog = catalog or load_catalog()
    prepared = prepare(rows, catalog)
    params, counts = fit_prepared(prepared, catalog)
    sources = sorted({r.source for r in rows})
    calibration = Calibration(
        params=params,
        bands={},
        fitted_rows=counts,
        generated_by=command,
        as_of=date.today().isoformat(),
        source=f"{len(rows)} rows from {len(sources)} published sources",
        extra={"metrics": list(METRICS)},
    )
    predicted = prepared.predict(calibration)
    return Calibration(
        params=params,
        bands=band_table(prepared, predicted, catalog),
        fitted_rows=counts,
        generated_by=command,
        as_of=calibration.as_of,
        source=calibration.source,
        extra=calibration.extra,
    )
