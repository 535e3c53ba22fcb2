"""Mixture-of-experts accuracy: median and p90 error on MoE training and MoE inference rows.

    python benchmarks/moe_accuracy.py [--calibration PATH] [--refit]

Training rows: NVIDIA's Megatron-Bridge performance summary (bundled
`megatron_bridge_perf_summary.csv`), split by chip, model and container release. Inference rows: the
MoE rows (Mixtral, Qwen3 MoE, Llama 4) of `../shared/benchmarks/published.csv` and the bundled
TensorRT-LLM table, so a change to the MoE terms cannot move them unseen. `--refit` fits the
calibration parameters in-process on all those files first (the parameters `silica calibrate` would
ship; its leave-one-source-out bands are not needed for the errors and are skipped). Issue 9's
target: MoE training rows <= 25% median error.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from silica.catalog import load_catalog
from silica.models import load_model
from silica.perf.calibration import Calibration, load_calibration
from silica.validate.benchmarks import BUNDLED, BenchmarkRow, read_benchmarks
from silica.validate.fit import fit_prepared
from silica.validate.predict import Prediction, predict_rows, prepare

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT.parent / "shared" / "benchmarks" / "published.csv"
TRAINING = BUNDLED / "megatron_bridge_perf_summary.csv"
TRTLLM = BUNDLED / "trtllm_perf_overview_v1.csv"


def _line(name: str, preds: Sequence[Prediction]) -> str:
    errors = sorted(p.ape for p in preds if p.ape is not None)
    if not errors:
        return f"{name:36} none predicted"
    p90 = errors[int(0.9 * (len(errors) - 1))]
    return f"{name:36} n={len(errors):4d}  median {statistics.median(errors):6.1%}  p90 {p90:6.1%}"


def _groups(preds: Sequence[Prediction], key: Callable[[BenchmarkRow], str]) -> list[str]:
    keys = sorted({key(p.row) for p in preds})
    return [_line(f"  {k}", [p for p in preds if key(p.row) == k]) for k in keys]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibration", type=Path, help="calibration JSON (default: bundled)")
    parser.add_argument("--refit", action="store_true", help="fit parameters on the rows first")
    args = parser.parse_args()
    published = read_benchmarks(PUBLISHED) if PUBLISHED.exists() else []
    training, trtllm = read_benchmarks(TRAINING), read_benchmarks(TRTLLM)
    calibration = load_calibration(args.calibration)
    if args.refit:
        catalog = load_catalog()
        params, counts, _ = fit_prepared(prepare([*published, *training, *trtllm], catalog), catalog)
        calibration = Calibration(
            params=params, bands={}, fitted_rows=counts, generated_by="refit", as_of="", source=""
        )

    def is_moe(row: BenchmarkRow) -> bool:
        return load_model(row.model).is_moe

    train = predict_rows(training, calibration)
    moe_train = [p for p in train if is_moe(p.row)]
    print(_line("MoE training (Megatron-Bridge)", moe_train))
    print(
        _line(
            "  of which train_tok_s_per_chip",
            [p for p in moe_train if p.row.metric == "train_tok_s_per_chip"],
        )
    )
    print(_line("dense training (same tables)", [p for p in train if not is_moe(p.row)]))
    print("by chip:", *_groups(moe_train, lambda r: r.chip), sep="\n")
    print("by model:", *_groups(moe_train, lambda r: r.model), sep="\n")
    print("by container release:", *_groups(moe_train, lambda r: r.as_of.split(" ")[0]), sep="\n")
    for name, rows in (("published.csv", published), ("TensorRT-LLM v1.0", trtllm)):
        preds = predict_rows([r for r in rows if is_moe(r)], calibration) if rows else []
        print(_line(f"MoE inference ({name})", preds))


if __name__ == "__main__":
    main()
