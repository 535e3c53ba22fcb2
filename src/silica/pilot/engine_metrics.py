"""The engine's own view of a pilot step: its `/metrics` scraped while the step runs.

Why: a step that misses its prediction can be queueing (requests waiting), preempting (KV cache full,
sequences evicted and recomputed) or plainly computing slower; only the engine knows which. vLLM and
SGLang export these as Prometheus gauges and counters (vLLM docs/usage/metrics.md: num_requests_running,
num_requests_waiting, kv_cache_usage_perc (gpu_cache_usage_perc before v0.10), num_preemptions_total,
prefix_cache_queries/hits_total; SGLang docs production_metrics.md). Triton's TensorRT-LLM backend
keeps several quantities in one gauge family told apart by a label (NVIDIA's Triton user guide,
TensorRT-LLM backend, "Triton Metrics": nv_trt_llm_request_metrics{request_type=active|waiting|...},
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction|used|max|...}); such a name is
written with its one label matcher, `family{label="value"}`. Each series is summed over its
label sets (one engine may report per model or per engine core). A server without `/metrics` (or
answering something else there) leaves the step's `engine` empty; nothing is guessed.

The engine's own time-to-first-token histogram (`HISTOGRAMS`) is kept too: its increase over the
step is the TTFT the engine saw, from when its front end took the request to the first token it
produced. The client's TTFT also holds the network, the HTTP handling before that and the streaming
after it, so `pilot compare` shows the two side by side and the front end's share is visible.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

__all__ = ["HISTOGRAMS", "WATCHED", "Scraper", "parse_exposition", "read_recording", "summarise"]

# what -> metric names, first found wins (newer vLLM name first)
WATCHED: dict[str, tuple[str, ...]] = {
    "running": (
        "vllm:num_requests_running",
        "sglang:num_running_reqs",
        'nv_trt_llm_request_metrics{request_type="active"}',
    ),
    "waiting": (
        "vllm:num_requests_waiting",
        "sglang:num_queue_reqs",
        'nv_trt_llm_request_metrics{request_type="waiting"}',
    ),
    "kv_cache_usage": (
        "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
        "sglang:token_usage",
        'nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}',
    ),
    "preemptions": ("vllm:num_preemptions_total",),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total",),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total",),
}
# what -> histogram family (seconds), first found wins; names from silica.monitor.signals' TTFT row
HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": (
        "vllm:time_to_first_token_seconds",
        "sglang:time_to_first_token_seconds",
        "trtllm_time_to_first_token_seconds",
    ),
}
_HIST = {
    f"{family}{suffix}": (what, family, suffix)
    for what, families in HISTOGRAMS.items()
    for family in families
    for suffix in ("_bucket", "_sum", "_count")
}
_NAMES = {name: what for what, names in WATCHED.items() for name in names}
_FAMILIES = {name.split("{", 1)[0] for name in _NAMES}


def _keys(name: str, labels: str) -> list[str]:
    """The WATCHED names a sample matches: its family, and its family with each of its labels."""
    keys = [name]
    for part in labels.split(","):
        label, eq, value = part.partition("=")
        if eq:
            keys.append(f"{name}{{{label.strip()}={value.strip()}}}")
    return [k for k in keys if k in _NAMES]


def parse_exposition(text: str) -> dict[str, float]:
    """The watched values in one Prometheus text exposition, each summed over its series."""
    found: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, rest = line.rpartition("}") if "}" in line else ("", "", line)
        name, _, labels = head.partition("{") if head else (rest.split(None, 1)[0], "", "")
        if name in _HIST:
            _histogram_sample(found, name, labels, rest if head else rest.split(None, 1)[-1])
            continue
        if name not in _FAMILIES:
            continue
        fields = rest.split() if head else rest.split()[1:]
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        if math.isfinite(value):
            for key in _keys(name, labels):
                per = found.setdefault(_NAMES[key], {})
                per[key] = per.get(key, 0.0) + value
    out = {}
    for what, names in WATCHED.items():
        for name in names:
            if name in found.get(what, {}):
                out[what] = found[what][name]
                break
    for what, families in HISTOGRAMS.items():
        for family in families:
            held = found.get(f"{what}:{family}")
            if held and "count" in held:  # the keys: "<what>:count", ":sum", ":le=<bound>"
                out.update({f"{what}:{k}": v for k, v in held.items()})
                break
    return out


def _histogram_sample(found: dict[str, dict[str, float]], name: str, labels: str, rest: str) -> None:
    """One bucket, sum or count sample of a watched histogram, summed over its other labels."""
    what, family, suffix = _HIST[name]
    try:
        value = float(rest.split()[0])
    except (ValueError, IndexError):
        return
    if not math.isfinite(value):
        return
    key = suffix[1:]
    if suffix == "_bucket":
        le = next(
            (
                v.strip().strip('"')
                for k, _, v in (p.partition("=") for p in labels.split(","))
                if k.strip() == "le"
            ),
            None,
        )
        if le is None:
            return
        key = f"le={float(le)!r}"
    held = found.setdefault(f"{what}:{family}", {})
    held[key] = held.get(key, 0.0) + value


def read_recording(text: str) -> list[tuple[float, dict[str, float]]]:
    """A recorded exposition (`scripts/record_engine_metrics.py`: every sample stamped with its
    scrape's time in ms) as the scraper would have kept it: (epoch seconds, values) per scrape."""
    by_time: dict[float, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            sample, _, stamp = line.rpartition(" ")
            try:
                by_time.setdefault(int(stamp) / 1e3, []).append(sample)
            except ValueError:
                continue  # a sample without a timestamp belongs to no scrape
    return [(t, parse_exposition("\n".join(lines))) for t, lines in sorted(by_time.items())]


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
    out.update(_engine_ttft(picked[0][1], picked[-1][1]))
    return out


def _engine_ttft(first: dict[str, float], last: dict[str, float]) -> dict[str, Any]:
    """The engine's TTFT over the window: its histogram's increase between the first and last scrape
    (mean from sum / count, p50 as Prometheus' histogram_quantile). Empty without the histogram, or
    after a counter reset (an engine restart), which would read as a negative count."""
    from silica.monitor.figures import histogram_quantile

    count = last.get("ttft:count", math.nan) - first.get("ttft:count", math.nan)
    total = last.get("ttft:sum", math.nan) - first.get("ttft:sum", math.nan)
    if not (count > 0 and total >= 0):
        return {}
    buckets = [
        (float(k.removeprefix("ttft:le=")), v - first.get(k, 0.0))
        for k, v in last.items()
        if k.startswith("ttft:le=")
    ]
    p50 = histogram_quantile(0.5, buckets) if all(c >= 0 for _, c in buckets) else None
    return {
        "ttft_requests": count,
        "ttft_mean_ms": total / count * 1e3,
        "ttft_p50_ms": p50 * 1e3 if p50 is not None else None,
    }
