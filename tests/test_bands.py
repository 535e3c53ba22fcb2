"""The p10-p90 band: sized so that a source never seen holds about 80% of its rows inside it.

Synthetic residuals shaped like the real ones: each source shares one bias (its engine build, its
harness) and adds a little noise per row. A band from pooled rows is then too narrow for a new
source; the widening chosen by holding sources out must restore the coverage on sources drawn
afresh, which the band never saw.
"""

from __future__ import annotations

import math

import numpy as np

from silica.perf.calibration import Calibration
from silica.validate import fit as F


def _sources(rng: np.random.Generator, n_sources: int, start: int = 0) -> F._Residuals:
    logs: list[float] = []
    names: list[str] = []
    for s in range(start, start + n_sources):
        bias = rng.normal(0.0, 0.25)
        rows = int(rng.integers(4, 60))
        logs += list(bias + rng.normal(0.0, 0.05, rows))
        names += [f"source {s}"] * rows
    n = len(logs)
    return F._Residuals(
        log_ratio=np.asarray(logs),
        family=("hopper",) * n,
        metric=("tpot_ms",) * n,
        source=tuple(names),
        index=np.arange(n, dtype=np.int64),
    )


def _coverage(bands: dict[str, dict[str, tuple[float, float]]], new: F._Residuals) -> float:
    cal = Calibration(params={}, bands=bands, fitted_rows={}, generated_by="", as_of="", source="")
    low, high = cal.band("hopper", "tpot_ms")
    ratios = np.exp(new.log_ratio)
    return float(np.mean((ratios >= low) & (ratios <= high)))


def test_widened_band_holds_80_percent_of_new_sources() -> None:
    rng = np.random.default_rng(7)
    seen = _sources(rng, 24)
    fresh = _sources(rng, 400, start=1000)
    everything = np.ones(len(seen.log_ratio), dtype=bool)
    raw = F._raw_bands(seen, everything)
    widen = F._choose_widening(seen, sorted(set(seen.source)))
    # The factor at which the held-out sources' rows come nearest 80% inside.
    inside, considered = F._held_out_hits(seen, sorted(set(seen.source)))
    coverage = inside[considered].mean(axis=0)
    k = int(np.flatnonzero(widen == F._WIDENINGS)[0])
    assert abs(coverage[k] - F.BAND_TARGET) == np.abs(coverage - F.BAND_TARGET).min()
    assert 0.7 <= _coverage(F._widened(raw, widen), fresh) <= 0.92


def test_a_large_source_does_not_narrow_the_band() -> None:
    """One 1,000-row source with a tight fit among small ones: weighted per source, the band keeps
    the spread between sources instead of collapsing onto the big source's residuals."""
    rng = np.random.default_rng(3)
    small = _sources(rng, 10)
    big = np.full(1000, 0.01) + rng.normal(0.0, 0.01, 1000)
    res = F._Residuals(
        log_ratio=np.concatenate([small.log_ratio, big]),
        family=("hopper",) * (len(small.log_ratio) + 1000),
        metric=("tpot_ms",) * (len(small.log_ratio) + 1000),
        source=small.source + ("big",) * 1000,
        index=np.arange(len(small.log_ratio) + 1000, dtype=np.int64),
    )
    lo, _, hi = F._raw_bands(res, np.ones(len(res.log_ratio), dtype=bool))["hopper"]["tpot_ms"]
    pooled_lo, pooled_hi = np.percentile(res.log_ratio, [10, 90])
    assert hi - lo > 3 * (pooled_hi - pooled_lo)


def test_widening_is_around_the_median_in_log_space() -> None:
    raw = {"hopper": {"tpot_ms": (math.log(0.8), math.log(1.0), math.log(1.25))}}
    low, high = F._widened(raw, 2.0)["hopper"]["tpot_ms"]
    assert math.isclose(low, 0.64)
    assert math.isclose(high, 1.5625)
