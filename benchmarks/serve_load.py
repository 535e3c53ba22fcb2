"""Load test of `silica serve`: N concurrent clients calling compare and estimate for a fixed time.

    python benchmarks/serve_load.py                       # 50 clients, 60 s (the issue's target)
    python benchmarks/serve_load.py --clients 10 --seconds 10 --uncached

It starts its own server (`python -m silica.cli serve`) on a free loopback port with a store in a
temporary folder, and stops it afterwards; it never talks to anything but 127.0.0.1. Bounded: it stops
at --seconds or after --max-requests, whichever comes first. Prints requests/s, p50/p99 latency and the
error count (any non-200 answer or transport error), and exits 1 if there was an error.

By default the clients cycle through a small set of distinct questions (4 models x 3 shapes for compare,
4 placements for estimate), as a team's dashboard would; repeats are served from the server's cache of
pure answers. --uncached makes every request distinct (a new input length each time), so every one is
computed: the raw cost of compare and estimate.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-7b")
SHAPES = ((1024, 256), (2048, 512), (512, 128))
PLACEMENTS = ("trn1.32xlarge", "inf2.48xlarge", "p5.48xlarge", "g6e.48xlarge")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _requests(uncached: bool) -> Any:
    """An endless stream of (path, body), alternating compare and estimate."""
    counter = itertools.count(1)
    cycle = itertools.cycle(itertools.product(MODELS, SHAPES, PLACEMENTS))
    for model, (inp, out), on in cycle:
        if uncached:
            inp = 64 + next(counter) % 100_000  # a new question every time: nothing is cached
        yield "/api/v1/compare", {"model": model, "input_len": inp, "output_len": out, "tpot_slo_ms": 80}
        yield "/api/v1/estimate", {"model": model, "on": on, "input_len": inp, "output_len": out}


async def _client(
    base: str, stream: Any, stop_at: float, budget: list[int], latencies: list[float], errors: list[str]
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        while time.monotonic() < stop_at and budget[0] > 0:
            budget[0] -= 1
            path, body = next(stream)
            start = time.perf_counter()
            try:
                resp = await client.post(path, json=body)
                if resp.status_code != 200:
                    errors.append(f"{path} {resp.status_code}: {resp.text[:160]}")
            except httpx.HTTPError as err:
                errors.append(f"{path}: {type(err).__name__}")
            latencies.append(time.perf_counter() - start)


def _start(port: int, db: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SILICA_DB_URL": f"sqlite:///{db}", "SILICA_API_TOKENS": ""}
    cmd = [sys.executable, "-m", "silica.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--log-level", "warning", "--max-inflight", "256"]
    return subprocess.Popen(cmd, env=env)


def _wait_ready(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with code {proc.returncode}")
        try:
            if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit("the server did not answer within 60 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--max-requests", type=int, default=500_000)
    ap.add_argument("--uncached", action="store_true", help="every request distinct: nothing cached")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    if not (1 <= args.clients <= 500 and 0 < args.seconds <= 600 and args.max_requests >= 1):
        ap.error("--clients 1-500, --seconds up to 600, --max-requests at least 1")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        proc = _start(port, Path(tmp) / "load.db")
        try:
            _wait_ready(base, proc)
            latencies: list[float] = []
            errors: list[str] = []
            stream = _requests(args.uncached)
            budget = [args.max_requests]
            began = time.monotonic()
            stop_at = began + args.seconds

            async def run() -> None:
                await asyncio.gather(
                    *(_client(base, stream, stop_at, budget, latencies, errors) for _ in range(args.clients))
                )

            asyncio.run(run())
            elapsed = time.monotonic() - began
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    qs = statistics.quantiles(latencies, n=100) if len(latencies) >= 2 else [float("nan")] * 99
    figures = {
        "clients": args.clients,
        "seconds": round(elapsed, 1),
        "uncached": args.uncached,
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(qs[49] * 1000, 1),
        "p99_ms": round(qs[98] * 1000, 1),
        "errors": len(errors),
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"{figures['requests']} requests in {figures['seconds']} s from {args.clients} clients "
            f"({'every one computed' if args.uncached else 'repeats cached'}): "
            f"{figures['requests_per_s']} requests/s, p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, "
            f"{figures['errors']} errors ({figures['cpus']} CPUs)"
        )
    for line in errors[:5]:
        print("error:", line, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
