"""How fast the fleet simulator runs: chip-steps per second on a 1,000,000-chip fleet for 7 days.

    python benchmarks/fleet_speed.py [--days 7] [--step-minutes 1] [--jobs 10000] [--repeats 3]

The fleet mixes Trainium3 UltraServers, Trainium2, H200 and Inferentia2 (1,000,008 chips) serving
Llama 3.1 70B on ServeGen's m-large shape with Azure burstiness, and runs `--jobs` training jobs
(log-uniform 64-65,536 chips, 1-48 h, 80% checkpointable) under static, day/night and autoscale.
Prints, per policy, the best wall time of `--repeats` and chip-steps per second (chips x steps /
seconds), then the end-to-end time (capacities from the performance model, demand, three policies).
Target (issue 6): 1M chips x 7 days at 1-minute steps in <= 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from silica.catalog import load_catalog
from silica.fleet.capacity import PoolRequest, resolve_pools
from silica.fleet.demand import bundled_shape, lengths_of, profile
from silica.fleet.jobs import TrainingJob
from silica.fleet.policies import Policy
from silica.fleet.simulate import Fleet, run_policy
from silica.workload import InferenceWorkload, TrainingWorkload

POOLS = (
    PoolRequest("trn3-gen2-ultraserver", 3000, "reserved", price_usd_per_hour=1.0),  # 432,000 chips
    PoolRequest("trn2.48xlarge", 20000, "reserved", price_usd_per_hour=1.0),  # 320,000
    PoolRequest("p5en.48xlarge", 20000, "on_demand"),  # 160,000
    PoolRequest("inf2.48xlarge", 7334, "reserved"),  # 88,008
)
# Placeholder prices of 1 USD/instance-hour for the unpriced Trainium types keep the cost path
# exercised; the benchmark measures speed, and its cost figures mean nothing.


def make_fleet(days: float, step_minutes: float, n_jobs: int, seed: int = 0) -> Fleet:
    lengths = lengths_of("azure:conv")
    workload = InferenceWorkload(
        input_len=round(lengths.input_len),
        output_len=round(lengths.output_len),
        ttft_slo_ms=2000,
        tpot_slo_ms=50,
    )
    pools = resolve_pools(
        list(POOLS),
        catalog=load_catalog(),
        model="llama-3.1-70b",
        workload=workload,
        training_model="llama-3.1-8b",
        training_workload=TrainingWorkload(seq_len=4096),
        reference_instance="trn2.48xlarge",
    )
    step_s = step_minutes * 60.0
    steps = round(days * 86400 / step_s)
    serving = sum(p.replicas * (p.replica_tokens_per_s or 0.0) for p in pools)
    demand = profile(
        bundled_shape("servegen:m-large"),
        steps=steps,
        step_s=step_s,
        peak_requests_per_s=0.6 * serving / lengths.output_len,
        lengths=lengths,
        burst="azure:conv",
        seed=seed,
    )
    rng = np.random.default_rng(seed)
    chips = np.exp(rng.uniform(np.log(64), np.log(65536), n_jobs)).astype(int)
    hours = rng.uniform(1.0, 48.0, n_jobs)
    start = rng.uniform(0.0, days * 24.0, n_jobs)
    slack = rng.uniform(2.0, 4.0, n_jobs)
    jobs = tuple(
        TrainingJob(
            f"job-{i}",
            int(chips[i]),
            float(hours[i]),
            float(start[i]),
            float(start[i] + slack[i] * hours[i]),
            bool(rng.random() < 0.8),
        )
        for i in range(n_jobs)
    )
    return Fleet("benchmark-1M", tuple(pools), demand, jobs, model="llama-3.1-70b")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--step-minutes", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    t0 = time.perf_counter()
    fleet = make_fleet(args.days, args.step_minutes, args.jobs)
    built = time.perf_counter() - t0
    chip_steps = fleet.chips * fleet.steps
    print(
        f"fleet: {fleet.chips:,} chips in {len(fleet.pools)} pools, {fleet.steps:,} steps of "
        f"{args.step_minutes:g} min, {len(fleet.jobs):,} training jobs; built in {built:.2f} s"
    )
    total = built
    for name in ("static", "day_night", "autoscale"):
        best = float("inf")
        run = None
        for _ in range(args.repeats):
            start = time.perf_counter()
            run = run_policy(fleet, Policy(name))
            best = min(best, time.perf_counter() - start)
        total += best
        assert run is not None
        m = run.metrics
        print(
            f"{name:>10}: {best:6.3f} s  {chip_steps / best:.3e} chip-steps/s  "
            f"(attainment {100 * m['slo_attainment']:.2f}%, {m['jobs_completed']:,} jobs done, "
            f"{m['preemptions']:,} preemptions)"
        )
    print(
        f"end to end, three policies: {total:.2f} s for {chip_steps:.3e} chip-steps per policy "
        f"(target: <= 30 s per 1M chips x 7 days)"
    )


if __name__ == "__main__":
    main()
