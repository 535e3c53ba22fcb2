"""Fit each chip family's calibration parameters to published measurements.

Robust least squares on log error (soft-L1 loss, so a few odd rows cannot drag a family), within
physical bounds, over six parameters per family (see `FamilyParams`). There is no per-row,
per-model or per-source term: the fitted numbers must carry over to measurements never seen.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date

import numpy as np
from numpy.typing import NDArray

from silica.catalog import load_catalog
from silica.catalog.schema import Catalog
from silica.errors import SilicaError
from silica.perf.calibration import DEFAULT_PARAMS, PARAM_BOUNDS, PARAM_NAMES, Calibration, FamilyParams
from silica.validate.benchmarks import METRICS, BenchmarkRow
from silica.validate.predict import Prepared, prepare, stack_group

__all__ = [
    "band_coverage",
    "band_table",
    "best_published_mfu",
    "family_of",
    "fit_calibration",
    "fit_prepared",
    "leave_one_source_out",
]

Array = NDArray[np.float64]
# Parameters spanning orders of magnitude are fitted in log space.
_LOG = {"compute_half_tokens", "layer_overhead_us", "collective_latency_us", "sequence_overhead_us"}
# Rows a metric needs in a family before it gets a band of its own (else the family's overall band).
# Per metric, not one band per family: measured / predicted means "faster" for a throughput and
# "slower" for a latency, so a band pooled over both describes neither.
MIN_ROWS_FOR_BAND = 8
# Rows a (family, stack group) needs before it gets parameters of its own (else the family's pooled fit).
MIN_STACK_ROWS = 20
# Weight of the pull toward the family's pooled parameters, per parameter moved across its whole range.
STACK_PRIOR = 0.3
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


def _fit_units(prepared: Prepared, catalog: Catalog, mask: NDArray[np.bool_]) -> dict[str, NDArray[np.intp]]:
    """Calibration entries to fit and their rows: each family pooled over all its stacks, and
    each (family, stack group) with `MIN_STACK_ROWS` rows of its own where the family's rows come
    from more than one group (otherwise the pooled fit already is that group's)."""
    by_family: dict[str, list[int]] = defaultdict(list)
    by_group: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, row in enumerate(prepared.rows):
        if mask[i] and i not in prepared.skipped:
            family = catalog.chips[row.chip].family
            by_family[family].append(i)
            group = stack_group(row)
            if group:
                by_group[(family, group)].append(i)
    units = {f: np.asarray(ix, dtype=np.intp) for f, ix in by_family.items()}
    for (family, group), ix in by_group.items():
        groups = {g for f, g in by_group if f == family}
        if len(ix) >= MIN_STACK_ROWS and (len(groups) > 1 or len(ix) < len(by_family[family])):
            units[f"{family}/{group}"] = np.asarray(ix, dtype=np.intp)
    return units


def family_of(key: str) -> str:
    """The chip family of a calibration entry ("hopper/trtllm" -> "hopper")."""
    return key.split("/", 1)[0]


def fit_prepared(
    prepared: Prepared,
    catalog: Catalog,
    mask: NDArray[np.bool_] | None = None,
    min_rows: int = 10,
    only: set[str] | None = None,
) -> tuple[dict[str, FamilyParams], dict[str, int], dict[str, dict[str, int]]]:
    """Fit every entry (of the families in `only`, if given) with at least `min_rows` rows in `mask`.

    Returns the parameters and row counts per entry, and per entry the rows of each stack group.
    A stack's entry starts from its family's pooled fit: with fewer rows it moves only where its
    own measurements say so.
    """
    from scipy.optimize import least_squares  # heavy; only the fit needs it

    mask = np.ones(len(prepared.rows), dtype=bool) if mask is None else mask
    measured = np.asarray([r.value for r in prepared.rows])
    groups = [stack_group(r) for r in prepared.rows]
    fitted: dict[str, FamilyParams] = {}
    counts: dict[str, int] = {}
    stacks: dict[str, dict[str, int]] = {}
    lo, hi = _bounds()
    units = _fit_units(prepared, catalog, mask)
    # Pooled entries first: a stack's entry starts from its family's.
    for key, idx in sorted(units.items(), key=lambda kv: ("/" in kv[0], kv[0])):
        if idx.size < min_rows or (only is not None and family_of(key) not in only):
            continue

        pooled = fitted.get(family_of(key)) if "/" in key else None
        anchor = None if pooled is None else _to_x(pooled)

        def residuals(
            x: Array, key: str = key, idx: NDArray[np.intp] = idx, anchor: Array | None = anchor
        ) -> Array:
            cal = _candidate({key: _from_x(x)})
            pred = prepared.predict(cal, only={key})[idx]
            r = np.log(pred / measured[idx])
            r = np.where(np.isfinite(r), r, 0.0)
            if anchor is None:
                return r
            # A stack's entry is pulled gently toward its family's pooled fit: a parameter its own
            # rows cannot see (attention speed in training rows) stays where the family put it.
            return np.concatenate([r, STACK_PRIOR * (x - anchor) / (hi - lo)])

        # Several deterministic starts across the bounds; the loss surface has shallow local minima.
        rng = np.random.default_rng(0)
        starts = [np.clip(_to_x(pooled or DEFAULT_PARAMS), lo + 1e-6, hi - 1e-6)]
        n_random = (N_STARTS - 1) // 2 if pooled else N_STARTS - 1
        starts += [lo + (hi - lo) * rng.uniform(0.15, 0.85, size=lo.size) for _ in range(n_random)]
        best = None
        for x0 in starts:
            result = least_squares(
                residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, diff_step=1e-3, max_nfev=300
            )
            if best is None or result.cost < best.cost:
                best = result
        assert best is not None
        fitted[key] = _from_x(best.x)
        counts[key] = int(idx.size)
        tally: dict[str, int] = defaultdict(int)
        for i in idx:
            tally[groups[i] or "unnamed"] += 1
        stacks[key] = dict(sorted(tally.items()))
    return fitted, counts, stacks


def _candidate(params: dict[str, FamilyParams]) -> Calibration:
    return Calibration(params=params, bands={}, fitted_rows={}, generated_by="fit", as_of="", source="")


Progress = Callable[[str], None]


def leave_one_source_out(
    prepared: Prepared, catalog: Catalog, fitted: Calibration, progress: Progress | None = None
) -> Array:
    """Each row predicted by a calibration fitted without the row's source (out of sample).

    Only the families the held-out source measures are refitted; the others keep `fitted`'s
    parameters, which never saw the held-out rows. A family measured by that source alone is left
    unfitted, so its rows take the inherited (or default) parameters a new chip would get.
    """
    sources = sorted({r.source for r in prepared.rows})
    out = np.full(len(prepared.rows), np.nan)
    for source in sources:
        if progress is not None:
            progress(source)
        held = np.asarray([r.source == source for r in prepared.rows])
        families = {catalog.chips[r.chip].family for r, h in zip(prepared.rows, held, strict=True) if h}
        params, _, _ = fit_prepared(prepared, catalog, mask=~held, only=families)
        kept = {k: p for k, p in fitted.params.items() if family_of(k) not in families}
        cal = _candidate({**kept, **params})
        out[held] = prepared.predict(cal)[held]
    return out


def _ratios(
    prepared: Prepared, predicted: Array, catalog: Catalog, mask: NDArray[np.bool_] | None = None
) -> dict[str, dict[str, list[float]]]:
    ratios: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for i, row in enumerate(prepared.rows):
        if mask is not None and not mask[i]:
            continue
        if i in prepared.skipped or not np.isfinite(predicted[i]) or predicted[i] <= 0:
            continue
        family = catalog.chips[row.chip].family
        ratio = row.value / predicted[i]
        ratios[family][row.metric].append(ratio)
        ratios[family]["all"].append(ratio)
    return ratios


def band_table(
    prepared: Prepared, predicted: Array, catalog: Catalog, mask: NDArray[np.bool_] | None = None
) -> dict[str, dict[str, tuple[float, float]]]:
    """p10 and p90 of measured / predicted per family and metric (and 'all'), over `mask`'s rows."""
    bands: dict[str, dict[str, tuple[float, float]]] = {}
    for family, table in _ratios(prepared, predicted, catalog, mask).items():
        # Too few rows say nothing about a spread: such a family (Trainium2, with 2 rows) keeps the
        # widened band of the family it inherits from.
        kept = {m: v for m, v in table.items() if len(v) >= MIN_ROWS_FOR_BAND}
        if kept:
            bands[family] = {
                m: (float(np.percentile(np.asarray(v), 10)), float(np.percentile(np.asarray(v), 90)))
                for m, v in kept.items()
            }
    return bands


def _inside(calibration: Calibration, family: str, metric: str, ratio: float) -> bool:
    low, high = calibration.band(family, metric)
    return low <= ratio <= high


def band_coverage(
    prepared: Prepared, catalog: Catalog, fitted: Calibration, in_sample: Array, loso: Array
) -> dict[str, float]:
    """Share of rows whose measurement falls inside its p10-p90 band, measured two ways.

    in_sample: the shipped bands around the shipped (fitted-on-everything) predictions.
    out_of_sample: each source's rows, predicted without that source, inside bands sized from the
    leave-one-source-out residuals of the *other* sources only: what a new source should expect.
    """
    n_in = hit_in = n_out = hit_out = 0
    sources = sorted({r.source for r in prepared.rows})
    for source in sources:
        held = np.asarray([r.source == source for r in prepared.rows])
        bands = band_table(prepared, loso, catalog, mask=~held)
        nested = Calibration(
            params=fitted.params, bands=bands, fitted_rows={}, generated_by="", as_of="", source=""
        )
        for i in np.flatnonzero(held):
            row = prepared.rows[i]
            family = catalog.chips[row.chip].family if row.chip in catalog.chips else ""
            if np.isfinite(loso[i]) and loso[i] > 0:
                n_out += 1
                hit_out += _inside(nested, family, row.metric, row.value / loso[i])
            if np.isfinite(in_sample[i]) and in_sample[i] > 0:
                n_in += 1
                hit_in += _inside(fitted, family, row.metric, row.value / in_sample[i])
    return {
        "in_sample": hit_in / n_in if n_in else float("nan"),
        "out_of_sample": hit_out / n_out if n_out else float("nan"),
        "rows_in_sample": float(n_in),
        "rows_out_of_sample": float(n_out),
    }


def best_published_mfu(
    rows: Sequence[BenchmarkRow], catalog: Catalog
) -> dict[str, dict[str, dict[str, object]]]:
    """Per chip family and compute dtype, the highest model-FLOPs utilisation a training row measured.

    MFU = model FLOP/s per chip (6N per token plus attention, the convention `estimate` reports)
    over the chip's dense peak at the row's compute dtype. An estimate above it extrapolates beyond
    every published measurement of its family, and says so.
    """
    from silica.models import load_model
    from silica.perf.kernels import ModelCosts
    from silica.perf.precision import precision

    best: dict[str, dict[str, dict[str, object]]] = defaultdict(dict)
    for row in rows:
        if row.task != "training" or row.chip not in catalog.chips or row.seq_len is None:
            continue
        chip = catalog.chips[row.chip]
        flops_dtype = precision("bf16", row.compute_dtype).flops_dtype  # type: ignore[arg-type]
        peak = chip.peak_tflops(flops_dtype)
        if not peak:
            continue
        if row.metric == "train_model_tflops_per_chip":
            mfu = row.value / peak
        elif row.metric == "train_tok_s_per_chip":
            try:
                c = ModelCosts.of(load_model(row.model))
            except SilicaError:
                continue
            attention = 3.0 * float(
                c.attention_flops(np.asarray(1.0), np.asarray(row.seq_len / 2.0), np.asarray(c.n_heads))
            )
            mfu = row.value * (6.0 * c.matmul_params + attention) / (peak * 1e12)
        else:
            continue
        current = best[chip.family].get(flops_dtype)
        if current is None or mfu > float(current["mfu"]):  # type: ignore[arg-type]
            best[chip.family][flops_dtype] = {
                "mfu": round(float(mfu), 4),
                "row": f"{row.model} on {row.chips} x {row.chip}, {row.compute_dtype}",
                "source": row.source,
            }
    return {family: dict(sorted(t.items())) for family, t in sorted(best.items())}


def fit_calibration(
    rows: Sequence[BenchmarkRow],
    *,
    catalog: Catalog | None = None,
    command: str = "silica calibrate",
    progress: Progress | None = None,
) -> Calibration:
    """Fit all families with data; bands from leave-one-source-out residuals.

    An in-sample band (residuals of a fit that saw the row) is too narrow for a new measurement:
    on published.csv it covered 79% of rows in sample but 62% out of sample. The band shipped is the
    p10-p90 of measured / predicted where each prediction comes from a fit without its source.
    """
    catalog = catalog or load_catalog()
    prepared = prepare(rows, catalog)
    if progress is not None:
        progress("all sources")
    params, counts, stacks = fit_prepared(prepared, catalog)
    sources = sorted({r.source for r in rows})
    fitted = Calibration(
        params=params,
        bands={},
        fitted_rows=counts,
        generated_by=command,
        as_of=date.today().isoformat(),
        source=f"{len(rows)} rows from {len(sources)} published sources",
        extra={"metrics": list(METRICS), "fitted_stacks": stacks},
    )
    loso = leave_one_source_out(prepared, catalog, fitted, progress)
    shipped = replace(fitted, bands=band_table(prepared, loso, catalog))
    coverage = band_coverage(prepared, catalog, shipped, prepared.predict(shipped), loso)
    extra = {
        **fitted.extra,
        "band": "p10-p90 of measured/predicted, each predicted by a fit without its source",
        "band_coverage": coverage,
        "best_published_mfu": best_published_mfu(rows, catalog),
    }
    return replace(shipped, extra=extra)
