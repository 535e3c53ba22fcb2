"""How fast the request-level simulator runs, and how long SLO sizing over the catalog takes.

    python benchmarks/simulate_speed.py [--requests 100000] [--rate 4] [--search-requests 2000]

1. Simulated requests per CPU-second for one aggregated replica: Llama 3.1 8B on g6e.xlarge (tp 1),
   Poisson arrivals at `--rate`/s, 1,024 prompt and 256 output tokens, vLLM's default engine limits.
   CPU time is `time.process_time()` around `simulate()` only (the step table is built once before).
2. SLO sizing over every available catalog instance type for Llama 3.1 8B at 8 req/s with p90 TTFT
   <= 500 ms and p99 TBT <= 60 ms, aggregated and disaggregated: the wall and CPU time of
   `size_to_slo` after `compare` (reported separately).
Targets (issue 29): >= 100,000 simulated requests per CPU-second; the catalog search in <= 60 s.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from silica.plan import compare
from silica.simulate import simulate, synthetic
from silica.simulate.deploy import plan_replica
from silica.simulate.sizing import size_to_slo
from silica.workload import InferenceWorkload


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--rate", type=float, default=4.0)
    ap.add_argument("--search-requests", type=int, default=2000)
    ap.add_argument("--skip-search", action="store_true")
    args = ap.parse_args()

    wl = InferenceWorkload(input_len=1024, output_len=256)
    planned = plan_replica("llama-3.1-8b", "g6e.xlarge", wl)
    reqs = synthetic(rate=args.rate, n=args.requests, input_len=1024, output_len=256, seed=0)
    cpu = time.process_time()
    result = simulate(reqs, planned.table)
    cpu = time.process_time() - cpu
    print(
        f"one replica ({planned.table.label}), {args.requests:,} requests at {args.rate:g}/s: "
        f"{cpu:.2f} CPU-s, {args.requests / cpu:,.0f} simulated requests per CPU-second "
        f"(p99 TTFT {result.ttft.p99:,.0f} ms, p99 TBT {result.tbt.p99:.1f} ms)"
    )
    if args.skip_search:
        return
    load = InferenceWorkload(input_len=1024, output_len=256, rate_req_per_s=8.0)
    wall, cpu = time.perf_counter(), time.process_time()
    c = compare("llama-3.1-8b", load)
    mid = time.perf_counter()
    sized = size_to_slo(c, rate=8.0, ttft_p90_ms=500.0, tbt_p99_ms=60.0, requests=args.search_requests)
    end, cpu = time.perf_counter(), time.process_time() - cpu
    n = sum(1 for r in c.results if r.feasible)
    print(
        f"catalog SLO search: {n} feasible instance types, {sized.simulations} simulations of "
        f"{args.search_requests:,} requests: compare {mid - wall:.1f} s + sizing {end - mid:.1f} s wall, "
        f"{cpu:.1f} CPU-s in all"
    )


if __name__ == "__main__":
    main()
