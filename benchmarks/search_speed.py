"""How fast the planner evaluates deployments, and how long a whole-catalog `silica compare` takes.

    python benchmarks/search_speed.py [--configs 1000000] [--model llama-3.1-8b]

Prints configurations evaluated per second on one core (the vectorised kernel over a grid of every
instance type x legal tp x instance count x batch, tiled to --configs), and the wall time of the
CLI end to end, start-up included. Targets (issue 2): >= 1,000,000 configs/s, compare < 1 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the target says
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from silica.models import load_model
from silica.plan.grid import BATCHES, Grid, make_grid
from silica.plan.inference_search import PIPELINE_COUNTS, evaluate_inference
from silica.plan.targets import legal_tp, resolve_targets
from silica.workload import InferenceWorkload


def kernel_rate(model_id: str, n_configs: int, repeats: int = 3) -> tuple[float, int]:
    model = load_model(model_id)
    wl = InferenceWorkload(input_len=1024, output_len=256)
    targets = resolve_targets()
    base = make_grid([legal_tp(model, t) for t in targets], PIPELINE_COUNTS, BATCHES)
    reps = max(1, n_configs // base.size)
    grid = Grid(
        inst=np.tile(base.inst, reps),
        tp=np.tile(base.tp, reps),
        count=np.tile(base.count, reps),
        batch=np.tile(base.batch, reps),
    )
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        perf = evaluate_inference(model, wl, targets, grid, grid.count)
        float(perf.replica_output_tok_s.sum())
        best = min(best, time.perf_counter() - start)
    return grid.size / best, grid.size


def cli_seconds(model_id: str, repeats: int = 3) -> float:
    cmd = [
        sys.executable,
        "-m",
        "silica.cli",
        "compare",
        model_id,
        "--task",
        "inference",
        "--input-len",
        "1024",
        "--output-len",
        "256",
        "--json",
    ]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=1_000_000)
    parser.add_argument("--model", default="llama-3.1-8b")
    args = parser.parse_args()
    rate, n = kernel_rate(args.model, args.configs)
    print(f"kernel: {n:,} configurations in one pass, {rate:,.0f} configurations/s (1 thread)")
    print(f"silica compare {args.model} (whole catalog, CLI end to end): {cli_seconds(args.model):.3f} s")


if __name__ == "__main__":
    main()
