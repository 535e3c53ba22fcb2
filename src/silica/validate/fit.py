"""Fit each chip family's calibration parameters to published measurements.

Robust least squares on log error (soft-L1 loss, so a few odd rows cannot drag a family), within
physical bounds, over six parameters per family (see `FamilyParams`). There is no per-row,
per-model or per-source term: the fitted numbers must carry over to measurements never seen.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date

import numpy as np
from numpy.typing import NDArray

from silica.catalog import load_catalog
from silica.catalog.schema import Catalog
from silica.errors import SilicaError
from silica.perf.calibration import (
    DEFAULT_PARAMS,
    FITTED_PARAM_NAMES,
    INHERITANCE,
    PARAM_BOUNDS,
    TRAINING_ATTENTION,
    Calibration,
    FamilyParams,
)
from silica.perf.stacks import load_stacks
from silica.validate.benchmarks import METRICS, BenchmarkRow
from silica.validate.predict import Prepared, prepare, row_stack, stack_group

__all__ = [
    "band_coverage",
    "band_table",
    "best_published_mfu",
    "family_of",
    "fit_calibration",
    "fit_prepared",
    "leave_one_source_out",
    "unbanded",
    "with_bands",
]

Array = NDArray[np.float64]
# Parameters spanning orders of magnitude are fitted in log space.
_LOG = {
    "compute_half_tokens",
    "layer_overhead_us",
    "collective_latency_us",
    "sequence_overhead_us",
    "moe_layer_overhead_us",
}
# Rows a metric needs in a family before it gets a band of its own (else the family's overall band).
# Per metric, not one band per family: measured / predicted means "faster" for a throughput and
# "slower" for a latency, so a band pooled over both describes neither.
MIN_ROWS_FOR_BAND = 8
# Rows a (family, stack group) needs before it gets parameters of its own (else the family's pooled fit).
MIN_STACK_ROWS = 20
# Weight of the pull toward the family's pooled parameters, per parameter moved across its whole range.
STACK_PRIOR = 0.3
# A training row tells attention's speed apart from the rest of the step only where attention is at
# least this share of its model FLOPs (Llama 2 7B: 7% at 4K tokens, 37% at 32K): below it, a 30%
# change of attention speed moves the prediction by less than the rows' own scatter.
ATTENTION_SHARE_SEEN = 1.0 / 3.0
N_STARTS = 6


def _to_x(p: FamilyParams) -> Array:
    return np.asarray([math.log(getattr(p, n)) if n in _LOG else getattr(p, n) for n in FITTED_PARAM_NAMES])


def _from_x(x: Array) -> FamilyParams:
    values = {
        n: float(math.exp(v)) if n in _LOG else float(v) for n, v in zip(FITTED_PARAM_NAMES, x, strict=True)
    }
    return FamilyParams(**values)


def _bounds() -> tuple[Array, Array]:
    lo = [math.log(PARAM_BOUNDS[n][0]) if n in _LOG else PARAM_BOUNDS[n][0] for n in FITTED_PARAM_NAMES]
    hi = [math.log(PARAM_BOUNDS[n][1]) if n in _LOG else PARAM_BOUNDS[n][1] for n in FITTED_PARAM_NAMES]
    return np.asarray(lo), np.asarray(hi)


def _fit_units(prepared: Prepared, catalog: Catalog, mask: NDArray[np.bool_]) -> dict[str, NDArray[np.intp]]:
    """Calibration entries to fit and their rows.

    Each (family, stack group) with `MIN_STACK_ROWS` rows of its own gets an entry where the
    family's rows come from more than one group. The family's pooled entry takes the rest of its
    rows, but not those of a training stack with an entry of its own: a training step prices its
    non-matmul activation traffic with `memory_eff` and folds its per-layer work into
    `layer_overhead_us`, which are not what a serving step's weight streaming and launch floor are,
    so a pooled fit of training rows alone would serve inference badly (on Blackwell, fitted on
    training rows only, 3.5x too slow). A family measured only in training then has no pooled
    entry, and its inference estimates inherit, by a stated rule, from the family it succeeds.
    """
    by_family: dict[str, list[int]] = defaultdict(list)
    by_group: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, row in enumerate(prepared.rows):
        if mask[i] and i not in prepared.skipped:
            family = catalog.chips[row.chip].family
            by_family[family].append(i)
            group = stack_group(row)
            if group:
                by_group[(family, group)].append(i)
    own: dict[tuple[str, str], list[int]] = {}
    separate: set[int] = set()
    for (family, group), ix in by_group.items():
        groups = {g for f, g in by_group if f == family}
        training = all(prepared.rows[j].task == "training" for j in ix)
        if len(ix) >= MIN_STACK_ROWS and (training or len(groups) > 1 or len(ix) < len(by_family[family])):
            own[(family, group)] = ix
            if training:
                separate.update(ix)
    units: dict[str, NDArray[np.intp]] = {}
    for family, ix in by_family.items():
        pooled = [i for i in ix if i not in separate]
        if pooled:
            units[family] = np.asarray(pooled, dtype=np.intp)
    for (family, group), ix in own.items():
        if family in units and sorted(ix) == sorted(units[family].tolist()):
            continue  # the pooled entry already is this group's
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
    base: dict[str, FamilyParams] | None = None,
    keys: set[str] | None = None,
) -> tuple[dict[str, FamilyParams], dict[str, int], dict[str, dict[str, int]]]:
    """Fit every entry (of the families in `only`, if given) with at least `min_rows` rows in `mask`.

    Returns the parameters and row counts per entry, and per entry the rows of each stack group.
    A stack's entry is anchored to its family's pooled fit, and a family's pooled fit to the fit of
    the family it inherits from (`INHERITANCE`; from `base` when that family is not refitted here):
    a parameter an entry's own rows cannot see (attention speed in training rows, per-sequence
    serving work on a chip measured only in training) stays where the better-measured entry put it.

    `keys`: refit only these entries and take every other one from `base` as it stands, where the
    caller knows that entry's rows and the model that predicts them are those `base` was fitted on
    (the fit is deterministic, so a refit would return it unchanged): a refit after a change that
    touches a few entries (`scripts/refit_entries.py`).
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
    moe_rows = _moe_rows(prepared)
    attention_seen = _attention_seen(prepared)
    # Pooled entries first, parents before the families that inherit from them; then stacks.
    for key, idx in sorted(units.items(), key=lambda kv: ("/" in kv[0], _depth(kv[0]), kv[0])):
        if idx.size < min_rows or (only is not None and family_of(key) not in only):
            continue
        if keys is not None and key not in keys:
            if base is None or key not in base:
                raise ValueError(f"{key} is not refitted and has no parameters in base")
            fitted[key], counts[key] = base[key], int(idx.size)
            stacks[key] = _tally(groups, idx)
            continue

        pooled = _anchor(key, fitted, base or {})
        anchor = None if pooled is None else _to_x(pooled)
        tie = _training_attention_tie(key, idx, prepared, attention_seen)

        def residuals(
            x: Array,
            key: str = key,
            idx: NDArray[np.intp] = idx,
            anchor: Array | None = anchor,
            tie: Tie = tie,
        ) -> Array:
            cal = _candidate({key: tie(_from_x(x))})
            pred = prepared.predict(cal, only={key})[idx]
            r = np.log(pred / measured[idx])
            r = np.where(np.isfinite(r), r, 0.0)
            if anchor is None:
                return r
            # Pulled gently toward the anchor: a parameter the rows cannot see stays where it is.
            return np.concatenate([r, STACK_PRIOR * (x - anchor) / (hi - lo)])

        # Several deterministic starts across the bounds; the loss surface has shallow local minima.
        rng = np.random.default_rng(0)
        starts = [np.clip(_to_x(pooled or DEFAULT_PARAMS), lo + 1e-6, hi - 1e-6)]
        n_random = (N_STARTS - 1) // 2 if "/" in key else N_STARTS - 1
        starts += [lo + (hi - lo) * rng.uniform(0.15, 0.85, size=lo.size) for _ in range(n_random)]
        best = None
        for x0 in starts:
            result = least_squares(
                residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, diff_step=1e-3, max_nfev=300
            )
            if best is None or result.cost < best.cost:
                best = result
        assert best is not None
        fitted[key] = _unseen_kept(tie(_from_x(best.x)), idx, moe_rows, pooled)
        counts[key] = int(idx.size)
        stacks[key] = _tally(groups, idx)
    return fitted, counts, stacks


def _tally(groups: Sequence[str], idx: NDArray[np.intp]) -> dict[str, int]:
    """Rows of each stack group among `idx`."""
    tally: dict[str, int] = defaultdict(int)
    for i in idx:
        tally[groups[i] or "unnamed"] += 1
    return dict(sorted(tally.items()))


Tie = Callable[[FamilyParams], FamilyParams]


def _untied(p: FamilyParams) -> FamilyParams:
    return p


def _attention_seen(prepared: Prepared) -> NDArray[np.bool_]:
    """Which training rows spend at least `ATTENTION_SHARE_SEEN` of their model FLOPs on attention
    (causal, 6N per token plus attention, the MFU convention): the rows that see its speed."""
    from silica.perf.kernels import ModelCosts

    seen = np.zeros(len(prepared.rows), dtype=bool)
    for g in prepared.groups:
        if g.kind != "training":
            continue
        c = ModelCosts.of(g.model)
        for i in g.rows:
            seq = prepared.rows[i].seq_len or 0
            attention = 3.0 * float(
                c.attention_flops(np.asarray(1.0), np.asarray(seq / 2.0), np.asarray(c.n_heads))
            )
            seen[i] = attention >= ATTENTION_SHARE_SEEN * (6.0 * c.matmul_params + attention)
    return seen


def _training_attention_tie(
    key: str, idx: NDArray[np.intp], prepared: Prepared, attention_seen: NDArray[np.bool_]
) -> Tie:
    """How a training stack's entry sets `attention_eff` when none of its rows sees attention's speed.

    Such rows (short sequences) leave the speed of the flash-attention kernel free to absorb other
    terms: without NeMo's long-sequence table, Hopper's Megatron entry drifted to twice the speed
    that table measures. Where the family's chips have a published kernel speed
    (`TRAINING_ATTENTION`, a fraction of the 16-bit peak), attention then runs at it: `attention_eff`
    is that fraction over `compute_eff_max` (training attention runs at `attention_eff` times the
    matmul efficiency). Any other entry fits it as before.
    """
    family = family_of(key)
    training = all(prepared.rows[i].task == "training" for i in idx)
    if "/" not in key or not training or family not in TRAINING_ATTENTION or attention_seen[idx].any():
        return _untied
    speed = TRAINING_ATTENTION[family][0]
    low, high = PARAM_BOUNDS["attention_eff"]

    def tie(p: FamilyParams) -> FamilyParams:
        return replace(p, attention_eff=float(np.clip(speed / p.compute_eff_max, low, high)))

    return tie


def _moe_rows(prepared: Prepared) -> NDArray[np.bool_]:
    """Which rows measure a mixture-of-experts model (the only ones that see its layer overhead)."""
    moe = np.zeros(len(prepared.rows), dtype=bool)
    for g in prepared.groups:
        if g.model.n_experts:
            moe[list(g.rows)] = True
    return moe


def _unseen_kept(
    p: FamilyParams, idx: NDArray[np.intp], moe_rows: NDArray[np.bool_], anchor: FamilyParams | None
) -> FamilyParams:
    """An entry without mixture-of-experts rows cannot see `moe_layer_overhead_us`: it keeps the
    value of the entry it is anchored to (else the default) rather than wherever a start left it."""
    if moe_rows[idx].any():
        return p
    return replace(p, moe_layer_overhead_us=(anchor or DEFAULT_PARAMS).moe_layer_overhead_us)


def _depth(key: str) -> int:
    """Inheritance steps from a family to a family that inherits from nothing."""
    family, depth = family_of(key), 0
    while family in INHERITANCE:
        family, depth = INHERITANCE[family][0], depth + 1
    return depth


def _anchor(key: str, fitted: dict[str, FamilyParams], base: dict[str, FamilyParams]) -> FamilyParams | None:
    """What an entry's fit is pulled toward: a stack's family (if it has a pooled entry), else the
    nearest fitted family it inherits from."""
    if "/" in key and family_of(key) in fitted:
        return fitted[family_of(key)]
    parent = INHERITANCE.get(family_of(key), ("",))[0]
    while parent:
        if parent in fitted or parent in base:
            return fitted.get(parent) or base[parent]
        parent = INHERITANCE.get(parent, ("",))[0]
    return None


def _candidate(
    params: dict[str, FamilyParams] | None = None,
    bands: dict[str, dict[str, tuple[float, float]]] | None = None,
) -> Calibration:
    """A calibration of just these parameters or bands, to predict with or to read bands from."""
    return Calibration(
        params=params or {}, bands=bands or {}, fitted_rows={}, generated_by="fit", as_of="", source=""
    )


Progress = Callable[[str], None]


def leave_one_source_out(
    prepared: Prepared,
    catalog: Catalog,
    fitted: Calibration,
    progress: Progress | None = None,
    jobs: int = 1,
) -> Array:
    """Each row predicted by a calibration fitted without the row's source (out of sample).

    Only the families the held-out source measures are refitted; the others keep `fitted`'s
    parameters, which never saw the held-out rows. A family measured by that source alone is left
    unfitted, so its rows take the inherited (or default) parameters a new chip would get. `jobs` > 1
    refits that many sources at once in forked processes (the refits are independent).
    """
    sources = sorted({r.source for r in prepared.rows})
    out = np.full(len(prepared.rows), np.nan)
    work = (prepared, catalog, fitted)
    if jobs > 1:
        import multiprocessing

        global _LOSO_WORK
        _LOSO_WORK = work  # inherited by the forked workers: nothing large is pickled
        try:
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                for source, held, values in pool.imap_unordered(_held_out, sources):
                    if progress is not None:
                        progress(source)
                    out[held] = values
        finally:
            _LOSO_WORK = None
        return out
    for source in sources:
        if progress is not None:
            progress(source)
        _, held, values = _held_out(source, work)
        out[held] = values
    return out


_LOSO_WORK: tuple[Prepared, Catalog, Calibration] | None = None


def _held_out(
    source: str, work: tuple[Prepared, Catalog, Calibration] | None = None
) -> tuple[str, NDArray[np.bool_], Array]:
    """One source's rows predicted by a fit on every other source."""
    if work is None:  # in a forked worker: the parent set it before forking
        assert _LOSO_WORK is not None
        work = _LOSO_WORK
    prepared, catalog, fitted = work
    held = np.asarray([r.source == source for r in prepared.rows])
    families = {catalog.chips[r.chip].family for r, h in zip(prepared.rows, held, strict=True) if h}
    params, _, _ = fit_prepared(prepared, catalog, mask=~held, only=families, base=fitted.params)
    kept = {k: p for k, p in fitted.params.items() if family_of(k) not in families}
    cal = _candidate({**kept, **params})
    return source, held, prepared.predict(cal)[held]


@dataclass(frozen=True, slots=True)
class _Residuals:
    """log(measured / predicted) of every row with a usable prediction, with what groups it."""

    log_ratio: Array
    family: tuple[str, ...]
    metric: tuple[str, ...]
    source: tuple[str, ...]
    index: NDArray[np.int64]  # the row's position in `prepared.rows`


def _residuals(prepared: Prepared, predicted: Array, catalog: Catalog) -> _Residuals:
    keep = [
        i
        for i, row in enumerate(prepared.rows)
        if i not in prepared.skipped
        and row.chip in catalog.chips
        and np.isfinite(predicted[i])
        and predicted[i] > 0
        and row.value > 0
    ]
    rows = [prepared.rows[i] for i in keep]
    return _Residuals(
        log_ratio=np.log(np.asarray([r.value for r in rows]) / predicted[keep]),
        family=tuple(catalog.chips[r.chip].family for r in rows),
        metric=tuple(r.metric for r in rows),
        source=tuple(r.source for r in rows),
        index=np.asarray(keep, dtype=np.int64),
    )


def _weighted_quantiles(values: Array, weights: Array, qs: Sequence[float]) -> list[float]:
    """Quantiles of `values` where each carries `weights` (midpoints of the cumulative weight)."""
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cum = (np.cumsum(w) - 0.5 * w) / w.sum()
    return [float(np.interp(q, cum, v)) for q in qs]


def _raw_bands(res: _Residuals, keep: NDArray[np.bool_]) -> dict[str, dict[str, tuple[float, float, float]]]:
    """(p10, p50, p90) of log ratio per family and metric (and 'all'), over the `keep` rows.

    Each source weighs the same, whatever its row count: errors are correlated within a source (one
    engine build, one harness), so a new source is one draw of that bias, and a 300-row table
    measured the same way must not narrow the band of everything else.
    """
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for j in np.flatnonzero(keep):
        groups[(res.family[j], res.metric[j])].append(int(j))
        groups[(res.family[j], "all")].append(int(j))
    bands: dict[str, dict[str, tuple[float, float, float]]] = defaultdict(dict)
    for (family, metric), idx in groups.items():
        # Too few rows say nothing about a spread: such a family (Trainium2, with 2 rows) keeps the
        # widened band of the family it inherits from.
        if len(idx) < MIN_ROWS_FOR_BAND:
            continue
        tally: dict[str, int] = defaultdict(int)
        for i in idx:
            tally[res.source[i]] += 1
        weights = np.asarray([1.0 / tally[res.source[i]] for i in idx])
        lo, mid, hi = _weighted_quantiles(res.log_ratio[idx], weights, (0.1, 0.5, 0.9))
        bands[family][metric] = (lo, mid, hi)
    return dict(bands)


def _widened(
    raw: dict[str, dict[str, tuple[float, float, float]]], widen: float | Mapping[str, float]
) -> dict[str, dict[str, tuple[float, float]]]:
    """Bands as measured / predicted ratios, each side `widen` times as far from the median (log).

    `widen` is one factor, or one per family with "*" for the families not named (`_choose_widenings`).
    """

    def factor(family: str) -> float:
        return float(widen) if isinstance(widen, (int, float)) else widen.get(family, widen["*"])

    return {
        family: {
            m: (math.exp(mid - factor(family) * (mid - lo)), math.exp(mid + factor(family) * (hi - mid)))
            for m, (lo, mid, hi) in table.items()
        }
        for family, table in raw.items()
    }


# The share of new measurements a p10-p90 band is meant to hold.
BAND_TARGET = 0.8
# Widening factors tried (log space, around the median), smallest first. Below 1 narrows: a family
# whose sources agree more than the pooled p10-p90 says gets a band that holds 80%, not all, of them.
_WIDENINGS = np.round(np.arange(0.25, 4.0001, 0.05), 2)
# A family sizes its own widening once this many of its rows, from this many sources, were held out
# and no one source holds more than `MAX_SOURCE_SHARE` of them; else it takes the overall one. Fewer
# rows or sources say little about how a new source of that family falls; and where one source holds
# most rows (L40S: 39 of 46 from one table), holding it out leaves the family too few rows for a band
# of its own, its rows fall in a band that no widening of the family's moves, and the factor would
# be sized on the handful of rows left.
MIN_ROWS_FOR_OWN_WIDENING = 20
MIN_SOURCES_FOR_OWN_WIDENING = 3
MAX_SOURCE_SHARE = 0.5


def _held_out_hits(res: _Residuals, sources: Sequence[str]) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Each of `sources` held out in turn, its rows against the bands sized on the others of
    `sources` (as `Calibration.band` reads them: per metric, else the family's, else inherited), at
    every widening: (rows x widenings inside, rows considered)."""
    considered = np.zeros(len(res.log_ratio), dtype=bool)
    inside = np.zeros((len(res.log_ratio), _WIDENINGS.size), dtype=bool)
    names = np.asarray(res.source)
    pool = np.isin(names, list(sources))
    for source in sources:
        mask = names == source
        held = np.flatnonzero(mask)
        considered[held] = True
        raw = _raw_bands(res, pool & ~mask)
        for k, widen in enumerate(_WIDENINGS):
            cal = _candidate(bands=_widened(raw, float(widen)))
            for i in held:
                inside[i, k] = _inside(cal, res.family[i], res.metric[i], float(np.exp(res.log_ratio[i])))
    return inside, considered


def _nearest_widening(hits: NDArray[np.bool_]) -> float:
    """The widening at which the share of these rows (rows x widenings) inside their bands comes
    nearest `BAND_TARGET`; of equally near ones, the narrowest."""
    if hits.shape[0] == 0:
        return 1.0
    miss = np.abs(hits.mean(axis=0) - BAND_TARGET)
    return float(_WIDENINGS[int(np.flatnonzero(miss <= miss.min() + 1e-12)[0])])


def _choose_widenings(res: _Residuals, sources: Sequence[str]) -> dict[str, float]:
    """Per chip family, the widening at which the family's rows of each of `sources`, held out in
    turn against bands sized on the rest, come nearest `BAND_TARGET` inside, pooled over the rows
    (split-conformal calibration over sources); "*": the same over every family's rows, for the
    families that cannot size their own (`_sizes_own_widening`).

    One factor for every family held 93-100% of most families' held-out rows and 40% of L40S's:
    the families' spreads differ, so each is sized on its own rows where it has enough. The nearest
    factor, not the smallest reaching the target: the smallest one overshoots wherever the coverage
    jumps past 80% in one step, as it does with few sources.
    """
    inside, considered = _held_out_hits(res, sources)
    out = {"*": _nearest_widening(inside[considered])}
    family, names = np.asarray(res.family), np.asarray(res.source)
    for f in sorted(set(family[considered].tolist())):
        rows = considered & (family == f)
        if _sizes_own_widening(names[rows].tolist()):
            out[f] = _nearest_widening(inside[rows])
    return out


def _sizes_own_widening(sources: Sequence[str]) -> bool:
    """Whether a family whose held-out rows come from `sources` (one entry per row) sizes its own
    widening: enough rows, from enough sources, none holding more than `MAX_SOURCE_SHARE`."""
    counts = list(Counter(sources).values())
    return (
        len(sources) >= MIN_ROWS_FOR_OWN_WIDENING
        and len(counts) >= MIN_SOURCES_FOR_OWN_WIDENING
        and max(counts) <= MAX_SOURCE_SHARE * len(sources)
    )


def _choose_widening(res: _Residuals, sources: Sequence[str]) -> float:
    """The one widening over every family's rows (`_choose_widenings`' "*")."""
    return _choose_widenings(res, sources)["*"]


def band_table(
    prepared: Prepared, predicted: Array, catalog: Catalog, mask: NDArray[np.bool_] | None = None
) -> tuple[dict[str, dict[str, tuple[float, float]]], dict[str, float]]:
    """Bands per family and metric (and 'all') from `predicted`'s residuals over `mask`'s rows.

    `predicted` should be out of sample (leave-one-source-out). The p10-p90 of those residuals,
    weighted so each source counts once, still covers fewer than 80% of a *new* source's rows: its
    bias is shared by all its rows. So the band is widened (in log space, around its median) by the
    factor at which the rows, each source held out in turn against the band sized on the others,
    come nearest 80% inside; per chip family where the family can size its own (`_choose_widenings`).
    Returns the bands and the factors ("*": the families without one of their own).
    """
    res = _residuals(prepared, predicted, catalog)
    keep = np.ones(len(res.log_ratio), dtype=bool) if mask is None else mask[res.index]
    sources = sorted({s for s, k in zip(res.source, keep, strict=True) if k})
    widen = _choose_widenings(res, sources)
    return _widened(_raw_bands(res, keep), widen), widen


def band_coverage(
    prepared: Prepared, catalog: Catalog, fitted: Calibration, in_sample: Array, loso: Array
) -> dict[str, float]:
    """Share of rows whose measurement falls inside its band, measured two ways.

    in_sample: the shipped bands around the shipped (fitted-on-everything) predictions.
    out_of_sample: each source's rows, predicted without that source, inside bands sized (and
    widened, the widening chosen) from the leave-one-source-out residuals of the *other* sources
    only: what a new source should expect. Nothing of the held-out source reaches its band.
    """
    held_out = held_out_hits(prepared, catalog, fitted, loso)
    n_out, hit_out = len(held_out), sum(hit for _, hit in held_out)
    n_in = hit_in = 0
    for i, row in enumerate(prepared.rows):
        if i in prepared.skipped or row.chip not in catalog.chips:
            continue
        if np.isfinite(in_sample[i]) and in_sample[i] > 0:
            n_in += 1
            hit_in += _inside(fitted, catalog.chips[row.chip].family, row.metric, row.value / in_sample[i])
    return {
        "in_sample": hit_in / n_in if n_in else float("nan"),
        "out_of_sample": hit_out / n_out if n_out else float("nan"),
        "rows_in_sample": float(n_in),
        "rows_out_of_sample": float(n_out),
    }


def held_out_hits(
    prepared: Prepared, catalog: Catalog, fitted: Calibration, loso: Array
) -> list[tuple[str, bool]]:
    """Per row predicted out of sample: (chip family, whether the measurement fell inside a band
    sized and widened from the other sources only). `band_coverage` counts them all; the accuracy
    report counts them per family."""
    res = _residuals(prepared, loso, catalog)
    out: list[tuple[str, bool]] = []
    names = np.asarray(res.source)
    for source in sorted(set(res.source)):
        held = names == source
        others = sorted({s for s in res.source if s != source})
        nested = replace(fitted, bands=_widened(_raw_bands(res, ~held), _choose_widenings(res, others)))
        for j in np.flatnonzero(held):
            ratio = float(math.exp(res.log_ratio[j]))
            out.append((res.family[j], _inside(nested, res.family[j], res.metric[j], ratio)))
    return out


def _inside(calibration: Calibration, family: str, metric: str, ratio: float) -> bool:
    low, high = calibration.band(family, metric)
    return low <= ratio <= high


def best_published_mfu(
    rows: Sequence[BenchmarkRow], catalog: Catalog
) -> dict[str, dict[str, dict[str, dict[str, object]]]]:
    """Per chip family, compute dtype and kind of model (dense or MoE), the highest model-FLOPs
    utilisation a training row measured, naming the row, its engine and its source.

    MFU = model FLOP/s per chip (6N per token plus attention, the convention `estimate` reports)
    over the chip's dense peak at the row's compute dtype. Dense and mixture-of-experts models are
    kept apart: an MoE model's grouped GEMMs, all-to-alls and routing keep its MFU far below a dense
    model's on the same chips (Megatron-Bridge's bf16 GPT-OSS 120B on H100 reaches 20%, its fp8
    dense Llama rows 55%), so an MoE row is no ceiling for a dense estimate. An estimate above the
    ceiling of its kind extrapolates beyond every published measurement of its family, and says so.
    """
    from silica.models import load_model
    from silica.perf.kernels import ModelCosts
    from silica.perf.precision import precision

    best: dict[str, dict[str, dict[str, dict[str, object]]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        if row.task != "training" or row.chip not in catalog.chips or row.seq_len is None:
            continue
        chip = catalog.chips[row.chip]
        flops_dtype = precision("bf16", row.compute_dtype).flops_dtype  # type: ignore[arg-type]
        peak = chip.peak_tflops(flops_dtype)
        if not peak or row.metric not in ("train_model_tflops_per_chip", "train_tok_s_per_chip"):
            continue
        try:
            c = ModelCosts.of(load_model(row.model))
        except SilicaError:
            continue
        attention = 3.0 * float(
            c.attention_flops(np.asarray(1.0), np.asarray(row.seq_len / 2.0), np.asarray(c.n_heads))
        )
        if row.metric == "train_model_tflops_per_chip":
            # A stack that counts every query-key pair reports attention twice over (`attention_flops`).
            stack = load_stacks().get(row_stack(row))
            counted = 2.0 if stack is not None and stack.attention_flops == "full" else 1.0
            causal = 6.0 * c.matmul_params + attention
            mfu = row.value / peak * causal / (causal + (counted - 1.0) * attention)
        else:
            mfu = row.value * (6.0 * c.matmul_params + attention) / (peak * 1e12)
        kind = "moe" if c.n_experts else "dense"
        current = best[chip.family][flops_dtype].get(kind)
        if current is None or mfu > float(current["mfu"]):  # type: ignore[arg-type]
            best[chip.family][flops_dtype][kind] = {
                "mfu": round(float(mfu), 4),
                "row": f"{row.model} on {row.chips} x {row.chip}, {row.compute_dtype}, {row.metric}",
                "engine": row_stack(row) or "unnamed",
                "source": row.source,
            }
    return {
        family: {dtype: dict(sorted(kinds.items())) for dtype, kinds in sorted(t.items())}
        for family, t in sorted(best.items())
    }


def unbanded(
    rows: Sequence[BenchmarkRow],
    params: dict[str, FamilyParams],
    counts: dict[str, int],
    stacks: dict[str, dict[str, int]],
    command: str,
) -> Calibration:
    """The full fit's parameters as a Calibration without bands yet (`with_bands` adds them from
    the leave-one-source-out predictions); `scripts/refit_entries.py` builds its partial refit the
    same way, so both write the same record of what was fitted and by which command."""
    return Calibration(
        params=params,
        bands={},
        fitted_rows=counts,
        generated_by=command,
        as_of=date.today().isoformat(),
        source=f"{len(rows)} rows from {len({r.source for r in rows})} published sources",
        metrics=tuple(METRICS),
        fitted_stacks=stacks,
    )


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
    fitted = unbanded(rows, params, counts, stacks, command)
    loso = leave_one_source_out(prepared, catalog, fitted, progress)
    return with_bands(fitted, rows, prepared, loso, catalog)


def with_bands(
    fitted: Calibration, rows: Sequence[BenchmarkRow], prepared: Prepared, loso: Array, catalog: Catalog
) -> Calibration:
    """`fitted` with its bands, their coverage and the MFU anchors, from the leave-one-source-out
    predictions `loso` of `rows` (`fit_calibration`'s last step; also how bands are resized on a
    fit's saved leave-one-source-out predictions without refitting every source)."""
    bands, widenings = band_table(prepared, loso, catalog)
    widen = widenings["*"]
    own = ", ".join(f"{f} {w:g}x" for f, w in sorted(widenings.items()) if f != "*")
    shipped = replace(fitted, bands=bands)
    coverage = band_coverage(prepared, catalog, shipped, prepared.predict(shipped), loso)
    return replace(
        shipped,
        band_note=(
            "p10-p90 of measured/predicted, each predicted by a fit without its source, each source "
            f"weighted alike, widened (log, around the median) so that the rows of each source held out "
            f"come nearest 80% inside: per family where it has {MIN_ROWS_FOR_OWN_WIDENING} rows from "
            f"{MIN_SOURCES_FOR_OWN_WIDENING} sources, none holding over {MAX_SOURCE_SHARE:.0%} of them "
            f"({own or 'none'}), else {widen:g}x"
        ),
        band_widening=widen,
        band_widening_by_family={f: w for f, w in sorted(widenings.items()) if f != "*"},
        band_coverage=coverage,
        best_published_mfu=best_published_mfu(rows, catalog),
    )
