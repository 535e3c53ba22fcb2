"""Bands sized per chip family: one widening for all held most families' held-out rows 93-100% of the
time and L40S's 40%. A family with rows and sources enough (none dominating) gets its own factor, so
that a source never seen holds about 80% of its rows inside that family's band, whether its sources
agree or not."""

from __future__ import annotations

import numpy as np

from silica.validate import fit as F


def _family(rng: np.random.Generator, name: str, spread: float, n_sources: int, start: int) -> F._Residuals:
    logs: list[float] = []
    names: list[str] = []
    for s in range(start, start + n_sources):
        bias = rng.normal(0.0, spread)
        rows = int(rng.integers(6, 30))
        logs += list(bias + rng.normal(0.0, 0.03, rows))
        names += [f"{name} source {s}"] * rows
    n = len(logs)
    return F._Residuals(
        log_ratio=np.asarray(logs),
        family=(name,) * n,
        metric=("tpot_ms",) * n,
        source=tuple(names),
        index=np.arange(n, dtype=np.int64),
    )


def _join(a: F._Residuals, b: F._Residuals) -> F._Residuals:
    return F._Residuals(
        log_ratio=np.concatenate([a.log_ratio, b.log_ratio]),
        family=a.family + b.family,
        metric=a.metric + b.metric,
        source=a.source + b.source,
        index=np.arange(len(a.log_ratio) + len(b.log_ratio), dtype=np.int64),
    )


def test_each_family_with_enough_rows_gets_the_factor_whose_coverage_comes_nearest_80_percent() -> None:
    """Split-conformal per family: each source held out in turn, the family's rows inside bands sized
    on the other sources come nearer 80% at the family's factor than at any other tried. A family
    whose source biases are heavy-tailed needs a wider factor than one whose are not."""
    rng = np.random.default_rng(11)
    heavy = _family(rng, "ada", 0.0, 16, 100)
    heavy = F._Residuals(
        log_ratio=heavy.log_ratio + np.repeat(0.08 * rng.standard_t(1.5, 16), _runs(heavy.source)),
        family=heavy.family,
        metric=heavy.metric,
        source=heavy.source,
        index=heavy.index,
    )
    seen = _join(_family(rng, "hopper", 0.1, 16, 0), heavy)
    sources = sorted(set(seen.source))
    widenings = F._choose_widenings(seen, sources)
    assert {"*", "hopper", "ada"} <= set(widenings)
    inside, considered = F._held_out_hits(seen, sources)
    family = np.asarray(seen.family)
    for name in ("hopper", "ada"):
        coverage = inside[considered & (family == name)].mean(axis=0)
        k = int(np.flatnonzero(widenings[name] == F._WIDENINGS)[0])
        assert abs(coverage[k] - F.BAND_TARGET) == np.abs(coverage - F.BAND_TARGET).min(), name
        assert 0.7 <= coverage[k] <= 0.9, name
    assert widenings["ada"] > widenings["hopper"]


def test_a_family_one_source_dominates_takes_the_overall_widening() -> None:
    """Held out, a source holding most of a family's rows leaves the family too few rows for a band:
    no factor of the family's moves those rows, so it is not sized on the handful left."""
    rng = np.random.default_rng(3)
    names = ["ada big"] * 40 + [f"ada small {i}" for i in range(3) for _ in range(4)]
    dominated = F._Residuals(
        log_ratio=rng.normal(0.0, 0.1, len(names)),
        family=("ada",) * len(names),
        metric=("tpot_ms",) * len(names),
        source=tuple(names),
        index=np.arange(len(names), dtype=np.int64),
    )
    seen = _join(_family(rng, "hopper", 0.1, 12, 0), dominated)
    ada = [s for f, s in zip(seen.family, seen.source, strict=True) if f == "ada"]
    assert max(ada.count(s) for s in set(ada)) > F.MAX_SOURCE_SHARE * len(ada)
    widenings = F._choose_widenings(seen, sorted(set(seen.source)))
    assert "ada" not in widenings and "hopper" in widenings


def _runs(names: tuple[str, ...]) -> list[int]:
    """Lengths of the runs of equal names (rows of one source are consecutive)."""
    out: list[int] = []
    for i, name in enumerate(names):
        if i and name == names[i - 1]:
            out[-1] += 1
        else:
            out.append(1)
    return out


def test_a_family_with_too_few_sources_takes_the_overall_widening() -> None:
    rng = np.random.default_rng(5)
    seen = _join(_family(rng, "hopper", 0.1, 12, 0), _family(rng, "ada", 0.1, 2, 100))
    widenings = F._choose_widenings(seen, sorted(set(seen.source)))
    assert "ada" not in widenings and "hopper" in widenings
    raw = F._raw_bands(seen, np.ones(len(seen.log_ratio), dtype=bool))
    low, _, high = raw["ada"]["tpot_ms"]
    got = F._widened(raw, widenings)["ada"]["tpot_ms"]
    assert got == F._widened(raw, widenings["*"])["ada"]["tpot_ms"]
    assert np.log(got[1]) - np.log(got[0]) > 0 and high >= low
