"""The engine's own view of a pilot step: its `/metrics` scraped while the step runs.

Why: a step that misses its prediction can be queueing (requests waiting), preempting (KV cache full,
sequences evicted and recomputed) or plainly computing slower; only the engine knows which. vLLM and
SGLang export these as Prometheus gauges and counters (vLLM docs/usage/metrics.md: num_requests_running,
num_requests_waiting, kv_cache_usage_perc (gpu_cache_usage_perc before v0.10), num_preemptions_total,
prefix_cache_queries/hits_total; SGLang docs production_metrics.md). Each series is summed over its
label sets (one engine may report per model or per engine core). A server without `/metrics` (or
answering something else there) leaves the step's `engine` empty; nothing is guessed.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

__all__ = ["WATCHED", "Scraper", "parse_exposition", "summarise"]

# what -> metric names, first found wins (newer vLLM name first)
WATCHED: dict[str, tuple[str, ...]] = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
    "preemptions": ("vllm:num_preemptions_total",),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total",),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total",),
}
_NAMES = {name: what for what, names in WATCHED.items() for name in names}


def parse_exposition(text: str) -> dict[str, float]:
    """The watched values in one Prometheus text exposition, each summed over its series."""
    found: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, rest = line.rpartition("}") if "}" in line else ("", "", line)
        name = head.split("{", 1)[0] if head else rest.split(None, 1)[0]
        if name not in _NAMES:
            continue
        fields = rest.split() if head else rest.split()[1:]
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        if math.isfinite(value):
            per = found.setdefault(_NAMES[name], {})
            per[name] = per.get(name, 0.0) + value
    out = {}
    for what, names in WATCHED.items():
        for name in names:
            if name in found.get(what, {}):
                out[what] = found[what][name]
                break
    return out


class Scraper:
    """GET `url` every `interval_s` until stopped; keeps (perf_counter time, values) per scrape."""

    def __init__(self, url: str, interval_s: float = 1.0, timeout_s: float = 5.0) -> None:
        self.url, self.interval_s, self.timeout_s = url, interval_s, timeout_s
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.error: str | None = None

    async def run(self) -> None:
        import httpx

        failures = 0
        async with httpx.AsyncClient(timeout=self.timeout_s) as client:
            while True:
                t = time.perf_counter()
                try:
                    r = await client.get(self.url)
                    values = parse_exposition(r.text) if r.status_code == 200 else {}
                    if r.status_code != 200:
                        self.error = f"{self.url} answered HTTP {r.status_code}"
                        return
                    if not values:
                        self.error = f"{self.url} exports none of the engine metrics Silica reads"
                        return
                    self.samples.append((t, values))
                    failures = 0
                except httpx.HTTPError as err:
                    failures += 1
                    self.error = f"{self.url}: {type(err).__name__}"
                    if failures >= 3:
                        return
                await asyncio.sleep(max(0.0, self.interval_s - (time.perf_counter() - t)))


def summarise(
    samples: list[tuple[float, dict[str, float]]], window: tuple[float, float] | None = None
) -> dict[str, Any] | None:
    """Mean and max of the gauges, increase of the counters, over the window (all samples without one)."""
    picked = [(t, v) for t, v in samples if window is None or window[0] <= t <= window[1]]
    if not picked:
        return None
    out: dict[str, Any] = {"scrapes": len(picked)}
    for what in ("running", "waiting", "kv_cache_usage"):
        vals = [v[what] for _, v in picked if what in v]
        out[f"{what}_mean"] = sum(vals) / len(vals) if vals else None
        out[f"{what}_max"] = max(vals) if vals else None
    for what in ("preemptions", "prefix_cache_queries", "prefix_cache_hits"):
        vals = [v[what] for _, v in picked if what in v]
        out[what] = max(0.0, vals[-1] - vals[0]) if len(vals) >= 2 else None
    q, h = out["prefix_cache_queries"], out["prefix_cache_hits"]
    out["prefix_cache_hit_rate"] = h / q if q and h is not None else None
    return out
