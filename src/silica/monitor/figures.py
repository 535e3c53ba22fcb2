"""Arithmetic on raw samples: counter increases, histogram quantiles, gauge means, covered time.

The rules follow Prometheus's so that a figure here and a PromQL panel agree in meaning, but they are
exact on raw samples instead of extrapolated:
- a counter's increase is the sum of its rises between consecutive samples; a fall is a reset (the
  process restarted), after which the new value is the increase (as `increase()` treats resets);
- each rise belongs to the interval holding its later sample, intervals being (start, end];
- a histogram quantile is Prometheus's `histogram_quantile`: cumulative bucket increases, the rank
  q x total found by linear interpolation inside its bucket (lower edge 0 for the first bucket), the
  highest finite bound when the rank falls in `+Inf`;
- the mean of a histogram is the increase of `_sum` over the increase of `_count`.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from silica.monitor.series import Series

__all__ = [
    "GAP_FACTOR",
    "Rise",
    "bucket_of",
    "gaps",
    "histogram_quantile",
    "rises",
]

GAP_FACTOR = 3.0  # a pause of more than three usual scrape intervals is a gap in the data


@dataclass(frozen=True, slots=True)
class Rise:
    """What a counter gained between two consecutive samples, and whether a reset happened there."""

    t0: float
    t1: float
    amount: float
    reset: bool


def rises(series: Series) -> list[Rise]:
    out = []
    for i in range(1, len(series.times)):
        before, after = series.values[i - 1], series.values[i]
        reset = after < before
        out.append(Rise(series.times[i - 1], series.times[i], after if reset else after - before, reset))
    return out


def bucket_of(t: float, start: float, width: float, count: int) -> int:
    """Index of the interval (start + i*width, start + (i+1)*width] holding time t (clamped)."""
    if width <= 0:
        return 0
    index = math.ceil((t - start) / width) - 1
    return min(max(index, 0), count - 1)


def usual_interval(series: Series) -> float | None:
    if len(series.times) < 2:
        return None
    return statistics.median(b - a for a, b in zip(series.times, series.times[1:], strict=False))


def gaps(series: Series) -> list[tuple[float, float]]:
    """Pauses longer than GAP_FACTOR usual intervals: the exporter or the scrape was down."""
    usual = usual_interval(series)
    if not usual:
        return []
    return [
        (a, b) for a, b in zip(series.times, series.times[1:], strict=False) if b - a > GAP_FACTOR * usual
    ]


def covered_seconds(series: Series, start: float, width: float, count: int) -> list[float]:
    """Seconds the series was reporting in each interval: gaps between samples count, gaps do not."""
    usual = usual_interval(series)
    out = [0.0] * count
    if not usual:
        return out
    for a, b in zip(series.times, series.times[1:], strict=False):
        if b - a <= GAP_FACTOR * usual:
            out[bucket_of(b, start, width, count)] += b - a
    return out


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """Prometheus's histogram_quantile over (upper bound, cumulative count) pairs; None without data."""
    ordered = sorted(buckets)
    if not ordered or not math.isinf(ordered[-1][0]):
        return None
    total = ordered[-1][1]
    if total <= 0:
        return None
    rank = q * total
    counts = [c for _, c in ordered]
    i = bisect.bisect_left(counts, rank)
    if i >= len(ordered) - 1:  # in the +Inf bucket: the highest finite bound, as Prometheus does
        return ordered[-2][0] if len(ordered) >= 2 else None
    upper, count = ordered[i]
    lower, below = (ordered[i - 1][0], ordered[i - 1][1]) if i > 0 else (0.0, 0.0)
    if i == 0 and upper <= 0:
        return upper
    if count == below:
        return upper
    return lower + (upper - lower) * (rank - below) / (count - below)


def counter_sums(series: Iterable[Series], start: float, width: float, count: int) -> tuple[list[float], int]:
    """Per-interval increases summed over several counter series, and how many resets were seen."""
    out = [0.0] * count
    resets = 0
    for s in series:
        for r in rises(s):
            out[bucket_of(r.t1, start, width, count)] += r.amount
            resets += r.reset
    return out, resets


def bucket_sums(series: Iterable[Series], start: float, width: float, count: int) -> list[dict[float, float]]:
    """Per-interval bucket increases by upper bound `le`, summed over every series of a histogram."""
    out: list[dict[float, float]] = [defaultdict(float) for _ in range(count)]
    for s in series:
        le = s.label("le")
        if le is None:
            continue
        bound = float("inf") if le in ("+Inf", "Inf", "inf") else float(le)
        for r in rises(s):
            out[bucket_of(r.t1, start, width, count)][bound] += r.amount
    return out


def gauge_means(series: Series, start: float, width: float, count: int, scale: float) -> list[float | None]:
    sums = [0.0] * count
    n = [0] * count
    for t, v in zip(series.times, series.values, strict=True):
        i = bucket_of(t, start, width, count)
        sums[i] += v * scale
        n[i] += 1
    return [s / k if k else None for s, k in zip(sums, n, strict=True)]
