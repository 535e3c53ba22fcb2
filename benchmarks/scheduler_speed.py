"""How the training scheduler scales with the number of jobs: 2,500, 10,000 and 40,000 jobs.

    python benchmarks/scheduler_speed.py [--repeats 3]

Each run schedules N jobs (log-uniform 64-65,536 chips, 1-48 h, 80% checkpointable, arrivals spread
over the week, deadlines 1-4 days after arrival) on four pools whose training room follows a day/night
curve at 1-minute steps for 7 days; the offered work is kept at the same share of the room for every N
(job sizes scale with 10,000 / N), so only the count of jobs changes. Prints the best wall time of
`--repeats` per N and the ratio of 40,000 to 2,500 jobs. Target (issue 23): 16x the jobs costs at most
20x the time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from silica.fleet.jobs import TrainingJob
from silica.fleet.scheduler import schedule

STEPS = 7 * 24 * 60
POOL_CHIPS = np.array([432_000, 320_000, 160_000, 88_000])


def make(n: int, seed: int = 0) -> tuple[list[TrainingJob], np.ndarray]:
    rng = np.random.default_rng(seed)
    scale = 10_000 / n
    chips = np.exp(rng.uniform(np.log(64), np.log(65_536), n)).astype(int).clip(64, 65_536)
    hours = rng.uniform(1, 48, n) * scale
    start = rng.uniform(0, 24 * 6, n)
    jobs = [
        TrainingJob(
            name=f"j{i}",
            chips=int(chips[i]),
            hours=float(max(hours[i], 0.05)),
            earliest_start_h=float(start[i]),
            deadline_h=float(start[i] + rng.uniform(24, 96)),
            checkpointable=bool(rng.random() < 0.8),
        )
        for i in range(n)
    ]
    t = np.arange(STEPS)
    night = 0.5 + 0.4 * np.cos(2 * np.pi * (t / (24 * 60)))  # share of each pool left to training
    cap = (POOL_CHIPS[:, None] * night[None, :]).astype(np.int64)
    return jobs, cap


def run(n: int, repeats: int) -> float:
    jobs, cap = make(n)
    floor = (POOL_CHIPS // 10).astype(np.int64)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        schedule(jobs, cap, floor, [1.0, 0.8, 1.2, None], [False, False, True, False], 60.0)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    times = {}
    for n in (2_500, 10_000, 40_000):
        times[n] = run(n, args.repeats)
        print(f"{n:>6,} jobs: {times[n]:.3f} s")
    print(f"40,000 / 2,500 jobs (16x): {times[40_000] / times[2_500]:.1f}x the time (target <= 20x)")


if __name__ == "__main__":
    main()
