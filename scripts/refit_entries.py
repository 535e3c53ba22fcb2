"""Refit the calibration entries a change touches, and only those; the rest is the shipped fit.

    python scripts/refit_entries.py --refit hopper/megatron --previous-loso OLD.npy \
        --previous-files FILE... [--out src/silica/data/calibration.json] [--loso-out NEW.npy]

`silica calibrate` refits every entry and then every source left out in turn: on two cores, over an
hour. After a change that moves a few entries (a model term only training rows see, new rows of one
family) the others come out of a refit unchanged, because the fit is deterministic: same rows,
same model, same anchor, same result. This script refits

- in the full fit: the entries named by `--refit` (the caller states which entries the model change
  reaches: a family name means all its entries), every entry whose rows changed (new rows, a new
  entry) and every entry anchored to one of those (`fit._anchor`: a stack to its family's pooled
  fit, a family to the one it inherits from); every other entry is copied from the shipped fit;
- leaving each source out: a row of that source is predicted again when the entry that predicts it,
  or one it is anchored to, was refitted above, or when the row is new; then the entries it depends
  on that hold rows of the source (and those anchored to them) are refitted without it, the others
  taken from the new full fit, which never saw the source's rows in them. Every other row keeps its
  saved leave-one-source-out prediction (`--previous-loso`, computed over `--previous-files`).

The result is what `silica calibrate` over the same files would write (the same command is recorded
in it), and the leave-one-source-out predictions `scripts/accuracy_report.py --loso` reads.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from silica.catalog import load_catalog
from silica.perf.calibration import INHERITANCE, calibration_to_json, load_calibration
from silica.perf.stacks import load_stacks
from silica.validate.benchmarks import BenchmarkRow, bundled_files, read_benchmarks
from silica.validate.fit import _candidate, _fit_units, family_of, fit_prepared, unbanded, with_bands
from silica.validate.predict import prepare, row_stack, stack_group


def _key(row: BenchmarkRow) -> tuple[str, str, str, float]:
    return (row.source, row.id, row.metric, row.value)


def _anchors(key: str, units: set[str]) -> list[str]:
    """The entries `key`'s fit is pulled toward, nearest first (as `fit._anchor` picks them)."""
    family = family_of(key)
    out = [family] if "/" in key and family in units else []
    parent = INHERITANCE.get(family, ("",))[0]
    while parent:
        if parent in units:
            out.append(parent)
        parent = INHERITANCE.get(parent, ("",))[0]
    return out


def _predicting(row: BenchmarkRow, family: str, units: set[str]) -> list[str]:
    """The entries that can predict `row` (its stack's entry, its family's pooled one, the pooled
    fits of the families it inherits from), and their anchors."""
    stacks = load_stacks()
    groups = [stack_group(row)] if stack_group(row) else []
    name = stacks[row_stack(row)].inherits if row_stack(row) in stacks else None
    while name is not None and name in stacks and stacks[name].group not in groups:
        groups.append(stacks[name].group)
        name = stacks[name].inherits
    keys: list[str] = []
    seen: str = family
    while seen:
        keys += [k for k in [*(f"{seen}/{g}" for g in groups), seen] if k in units]
        seen = INHERITANCE.get(seen, ("",))[0]
    return sorted({a for k in keys for a in [k, *_anchors(k, units)]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--refit",
        nargs="*",
        default=[],
        help="Entries or families a model change reaches (new rows are found).",
    )
    parser.add_argument("--previous-loso", type=Path, required=True)
    parser.add_argument("--previous-files", type=Path, nargs="+", required=True)
    parser.add_argument("--published", default="../shared/benchmarks/published.csv")
    parser.add_argument("--out", type=Path, default=Path("src/silica/data/calibration.json"))
    parser.add_argument("--loso-out", type=Path, required=True)
    args = parser.parse_args()
    t0 = time.time()

    def say(what: str) -> None:
        print(f"{time.time() - t0:6.0f}s {what}", file=sys.stderr, flush=True)

    files = [Path(args.published), *bundled_files()]
    names = [args.published] + [f"src/silica/data/benchmarks/{f.name}" for f in bundled_files()]
    rows = [r for f in files for r in read_benchmarks(f)]
    old_rows = [r for f in args.previous_files for r in read_benchmarks(f)]
    old_loso = np.load(args.previous_loso)
    if old_loso.shape != (len(old_rows),):
        sys.exit(f"error: {args.previous_loso} holds {old_loso.shape} predictions for {len(old_rows)} rows")
    old = {_key(r): float(v) for r, v in zip(old_rows, old_loso, strict=True)}
    catalog = load_catalog()
    prepared = prepare(rows, catalog)
    shipped = load_calibration()
    everything = np.ones(len(rows), dtype=bool)
    units = _fit_units(prepared, catalog, everything)
    names_of_units = set(units)

    # Full fit: the named entries, the entries whose rows changed, and all anchored to them.
    named = set(args.refit)
    affected = {k for k in units if k in named or family_of(k) in named}
    affected |= {
        k for k, ix in units.items() if shipped.fitted_rows.get(k) != ix.size or k not in shipped.params
    }
    while True:
        more = {k for k in units if k not in affected and set(_anchors(k, names_of_units)) & affected}
        if not more:
            break
        affected |= more
    say(f"full fit: refitting {sorted(affected)}")
    params, counts, stacks = fit_prepared(prepared, catalog, keys=affected, base=shipped.params)
    command = "silica calibrate " + " ".join(names) + f" --out {args.out}"
    fitted = unbanded(rows, params, counts, stacks, command)

    # Leave one source out.
    family = [catalog.chips[r.chip].family if r.chip in catalog.chips else "" for r in rows]
    loso = np.full(len(rows), np.nan)
    for source in sorted({r.source for r in rows}):
        held = np.asarray([r.source == source for r in rows])
        again: list[int] = []
        depends: set[str] = set()
        for i in np.flatnonzero(held):
            chain = _predicting(rows[i], family[i], names_of_units)
            if _key(rows[i]) in old and not set(chain) & affected:
                loso[i] = old[_key(rows[i])]
            else:
                again.append(int(i))
                depends |= set(chain)
        if not again:
            say(f"kept     {source[:80]}")
            continue
        # Refit without the source: the entries it depends on that hold its rows, those anchored
        # to them, and any entry that only exists without the source.
        rest = _fit_units(prepared, catalog, ~held)
        holds = {k for k in depends if k in units and np.isin(units[k], np.flatnonzero(held)).any()}
        need = holds | {
            k for k in rest if family_of(k) in {family_of(d) for d in depends} and k not in params
        }
        while True:
            more = {k for k in depends if k not in need and set(_anchors(k, set(rest))) & need}
            if not more:
                break
            need |= more
        families = {family_of(k) for k in depends}
        say(f"refit    {source[:80]}: {sorted(need)} for {len(again)} rows")
        refit, _, _ = fit_prepared(prepared, catalog, mask=~held, only=families, base=params, keys=need)
        kept = {k: p for k, p in params.items() if family_of(k) not in families}
        predicted = prepared.predict(_candidate({**kept, **refit}))
        loso[again] = predicted[again]

    np.save(args.loso_out, loso)
    result = with_bands(fitted, rows, prepared, loso, catalog)
    args.out.write_text(json.dumps(calibration_to_json(result), indent=2) + "\n")
    say(f"wrote {args.out} and {args.loso_out}; band coverage {result.band_coverage}")


if __name__ == "__main__":
    main()
