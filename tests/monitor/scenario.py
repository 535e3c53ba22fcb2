"""A replayable production scenario: two deployments, two hours of scrapes, every number chosen so that
the report's figures can be worked out by hand (see `Hand`).

- chat-gpu: 4 g6e hosts (DCGM exporter + vLLM), each generating 3,000 tokens per 30 s scrape (100/s),
  GPUs 20% busy, latency exactly at plan; gpu-c's vLLM restarts at scrape 150 (a counter reset) and
  gpu-d's DCGM exporter is down for 10 minutes (a gap). Far more capacity than load: right-size.
- chat-neuron: 1 inf2 host (neuron-monitor-prometheus.py + vLLM on Neuron), 200 tokens/s, TPOT at plan
  in the first hour and 50% above plan in the second: drift in window 2 only.
Latencies are set relative to the plan (p = planned TPOT, q = planned TTFT) so that a change to the
performance model moves the plan and the scenario together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

STEP = 30.0
SCRAPES = 240  # two hours
GPU_HOSTS = ("gpu-a", "gpu-b", "gpu-c", "gpu-d")
RESET_HOST, RESET_AT = "gpu-c", 150
GAP_HOST, GAP = "gpu-d", range(61, 80)  # DCGM missing for scrapes 61..79: one 600 s interval
NEURON_HOST = "i-0123456789abcdef0"
SLOW = 1.5


@dataclass(frozen=True)
class Plan:
    tpot_s: float
    ttft_s: float


def _labels(**kv: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(kv.items())) + "}"


def _fmt(v: float) -> str:
    return repr(float(v))


class _Family:
    def __init__(self, name: str, kind: str) -> None:
        self.name, self.kind, self.lines = name, kind, [f"# TYPE {name} {kind}"]

    def add(self, sample: str, labels: dict[str, str], t: float, v: float) -> None:
        self.lines.append(f"{sample}{_labels(**labels)} {_fmt(v)} {t:.3f}")


def openmetrics(t0: float, gpu: Plan, neuron: Plan) -> str:
    """The scenario as one OpenMetrics file with timestamps (what promtool backfills)."""
    times = [t0 + k * STEP for k in range(SCRAPES + 1)]
    fams: dict[str, _Family] = {}

    def fam(name: str, kind: str) -> _Family:
        if name not in fams:
            fams[name] = _Family(name, kind)
        return fams[name]

    # DCGM exporter: GPU utilisation in percent, framebuffer MiB, power W (etc/default-counters.csv).
    for host in GPU_HOSTS:
        base = {
            "Hostname": host,
            "gpu": "0",
            "UUID": f"GPU-{host}",
            "device": "nvidia0",
            "modelName": "NVIDIA L40S",
            "deployment": "chat-gpu",
        }
        for k, t in enumerate(times):
            if host == GAP_HOST and k in GAP:
                continue
            fam("DCGM_FI_DEV_GPU_UTIL", "gauge").add("DCGM_FI_DEV_GPU_UTIL", base, t, 20.0)
            fam("DCGM_FI_DEV_FB_USED", "gauge").add("DCGM_FI_DEV_FB_USED", base, t, 30000.0)
            fam("DCGM_FI_DEV_POWER_USAGE", "gauge").add("DCGM_FI_DEV_POWER_USAGE", base, t, 250.0)
    # vLLM on each GPU host.
    p, q = gpu.tpot_s, gpu.ttft_s
    for host in GPU_HOSTS:
        lab = {
            "model_name": "meta-llama/Llama-3.1-8B-Instruct",
            "instance": f"{host}:8000",
            "deployment": "chat-gpu",
        }
        gen = 0.0
        for k, t in enumerate(times):
            gen = 3000.0 if (host == RESET_HOST and k == RESET_AT) else gen + (3000.0 if k else 0.0)
            fam("vllm:generation_tokens", "counter").add("vllm:generation_tokens_total", lab, t, gen)
            fam("vllm:prompt_tokens", "counter").add("vllm:prompt_tokens_total", lab, t, 12000.0 * k)
            fam("vllm:num_requests_running", "gauge").add("vllm:num_requests_running", lab, t, 8.0)
        # TPOT: per scrape 60 observations in (0.5p, p], 40 in (p, 1.5p], sum 100p (mean exactly p).
        _histogram(
            fam("vllm:inter_token_latency_seconds", "histogram"),
            "vllm:inter_token_latency_seconds",
            lab,
            times,
            [(0.5 * p, 0), (p, 60), (1.5 * p, 40), (2 * p, 0)],
            lambda k: 100 * p,
        )
        # TTFT: per scrape 4 observations in (0.5q, q], sum 4q.
        _histogram(
            fam("vllm:time_to_first_token_seconds", "histogram"),
            "vllm:time_to_first_token_seconds",
            lab,
            times,
            [(0.5 * q, 0), (q, 4), (2 * q, 0)],
            lambda k: 4 * q,
        )
    # neuron-monitor-prometheus.py on the inf2 host: NeuronCore utilisation ratio, two cores.
    for core in ("0", "1"):
        lab = {
            "instance_id": NEURON_HOST,
            "instance_type": "inf2.xlarge",
            "neuroncore": core,
            "runtime_tag": "367",
            "deployment": "chat-neuron",
        }
        for t in times:
            fam("neuroncore_utilization_ratio", "gauge").add("neuroncore_utilization_ratio", lab, t, 0.6)
    p, q = neuron.tpot_s, neuron.ttft_s
    lab = {
        "model_name": "meta-llama/Llama-3.1-8B-Instruct",
        "instance": "inf2-0:8000",
        "deployment": "chat-neuron",
    }
    for k, t in enumerate(times):
        fam("vllm:generation_tokens", "counter").add("vllm:generation_tokens_total", lab, t, 6000.0 * k)
    slow = lambda k: k > SCRAPES // 2  # noqa: E731 - second hour
    _histogram(
        fam("vllm:inter_token_latency_seconds", "histogram"),
        "vllm:inter_token_latency_seconds",
        lab,
        times,
        [(0.5 * p, 0), (1.1 * p, 50), (1.5 * p, 50), (2 * p, 0)],
        lambda k: 100 * p * (SLOW if slow(k) else 1.0),
        split=slow,
    )
    _histogram(
        fam("vllm:time_to_first_token_seconds", "histogram"),
        "vllm:time_to_first_token_seconds",
        lab,
        times,
        [(0.5 * q, 0), (q, 2), (2 * q, 0)],
        lambda k: 2 * q,
    )
    body = [line for f in fams.values() for line in f.lines]
    return "\n".join(body) + "\n# EOF\n"


def _histogram(fam, name, labels, times, buckets, add_sum, split=None) -> None:  # type: ignore[no-untyped-def]
    """Cumulative buckets; with `split`, scrapes where split(k) put the second bucket's share one up."""
    counts = [0.0] * (len(buckets) + 1)
    total_sum = 0.0
    rows: list[tuple[float, list[float], float]] = []
    for k, t in enumerate(times):
        if k:
            per = [n for _, n in buckets]
            if split is not None and split(k):
                per = [0.0, 0.0, per[1] + per[2], 0.0]  # all observations in (1.1p, 1.5p]
            elif split is not None:
                per = [0.0, per[1] + per[2], 0.0, 0.0]  # all in (0.5p, 1.1p]
            for i, n in enumerate(per):
                counts[i] += n
            counts[-1] += sum(per)
            total_sum += add_sum(k)
        rows.append((t, list(counts), total_sum))
    for t, c, s in rows:
        cumulative = 0.0
        for (le, _), n in zip(buckets, c, strict=False):
            cumulative += n
            fam.add(f"{name}_bucket", {**labels, "le": _fmt(le)}, t, cumulative)
        fam.add(f"{name}_bucket", {**labels, "le": "+Inf"}, t, c[-1])
        fam.add(f"{name}_count", labels, t, c[-1])
        fam.add(f"{name}_sum", labels, t, s)


@dataclass(frozen=True)
class Hand:
    """The report's figures worked out by hand from the scenario (comments give the arithmetic)."""

    gpu_tokens: float = len(GPU_HOSTS) * SCRAPES * 3000.0  # 4 hosts x 240 scrapes x 3,000 = 2,880,000
    gpu_tokens_per_s: float = 2_880_000 / 7200  # = 400
    gpu_utilisation: float = 0.20
    # 3 hosts x 2 h + gpu-d 2 h less its 600 s gap
    gpu_instance_hours: float = (3 * 7200 + (7200 - 600)) / 3600  # = 7.8333
    neuron_tokens_per_s: float = 6000.0 / STEP  # = 200
    neuron_utilisation: float = 0.6


def tpot_quantiles(p: float) -> tuple[float, float, float]:
    """p50/p90/p99 of the GPU TPOT histogram, by histogram_quantile's linear interpolation, in ms.

    60% of observations in (0.5p, p], 40% in (p, 1.5p]:
    p50: 0.5p + 0.5p x 0.5/0.6;  p90: p + 0.5p x (0.9-0.6)/0.4;  p99: p + 0.5p x (0.99-0.6)/0.4.
    """
    return (
        (0.5 * p + 0.5 * p * 0.5 / 0.6) * 1000,
        (p + 0.5 * p * 0.3 / 0.4) * 1000,
        (p + 0.5 * p * 0.39 / 0.4) * 1000,
    )


def hour_aligned_start(now: float, hours_back: int = 3) -> float:
    return math.floor(now / 3600) * 3600 - hours_back * 3600
