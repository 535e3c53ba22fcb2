"""Disaggregated serving (xPyD): prefill replicas hand each prompt's KV cache to decode replicas.

The prefill pool runs prompts only and returns the first token (NVIDIA Dynamo, llm-d, SGLang and
the DistServe / Splitwise designs); the KV cache then crosses the link between the pools and the
request joins a decode replica, whose steps are never stalled by a prefill chunk. The transfer
takes `latency + prompt x KV bytes per token / (link bandwidth x achieved share)`: over the
instances' network (EFA, ENA) when the pools sit on different instances, the calibrated collective
efficiency of that chip family as the achieved share, and no contention between transfers (each
request's KV moves while others decode; the link's busy share is reported so a saturated link
shows). The two pools do not feed back on each other, so the prefill pool is simulated first and its
finish times (plus the transfer) are the decode pool's arrivals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from silica.errors import InputError
from silica.simulate.engine import EngineSettings, Records, Replica
from silica.simulate.run import SimResult, check, drive, summarise
from silica.simulate.steptime import StepTable
from silica.simulate.traffic import Requests

__all__ = ["KvTransfer", "kv_transfer", "simulate_disaggregated"]


@dataclass(frozen=True, slots=True)
class KvTransfer:
    """What moving the KV caches costs: per request, and the share of the link it keeps busy."""

    link: str
    link_gbps: float
    mean_ms: float
    p99_ms: float
    bytes_per_request: float
    link_busy_share: float  # offered transfer bytes per second over the pool's link bandwidth

    def to_dict(self) -> dict[str, float | str]:
        return {
            "link": self.link,
            "link_gbps": self.link_gbps,
            "mean_ms": self.mean_ms,
            "p99_ms": self.p99_ms,
            "mb_per_request": self.bytes_per_request / 1e6,
            "link_busy_share": self.link_busy_share,
        }


def kv_transfer(
    table: StepTable, prompt: np.ndarray, rate: float, decode_instances: int
) -> tuple[np.ndarray, KvTransfer]:
    """Seconds to ship each prompt's KV cache between pools over the instances' network."""
    bw = table.link_bytes_per_s
    if not (bw > 0 and math.isfinite(bw)):
        raise InputError(
            f"{table.label}: the instance has no published network bandwidth for moving KV caches.",
            "choose an instance with a published network figure for disaggregated serving.",
        )
    achieved = bw * table.link_efficiency
    nbytes = prompt * table.kv_bytes_per_token
    seconds = table.link_latency_s + nbytes / achieved
    busy = rate * float(nbytes.mean()) / (achieved * max(decode_instances, 1))
    summary = KvTransfer(
        link="instance network (EFA/ENA)",
        link_gbps=bw * 8 / 1e9,
        mean_ms=float(seconds.mean() * 1e3),
        p99_ms=float(np.percentile(seconds, 99) * 1e3),
        bytes_per_request=float(nbytes.mean()),
        link_busy_share=busy,
    )
    return seconds, summary


def simulate_disaggregated(
    requests: Requests,
    prefill: StepTable,
    decode: StepTable,
    *,
    prefill_replicas: int,
    decode_replicas: int,
    decode_instances: int,
    prefill_settings: EngineSettings | None = None,
    decode_settings: EngineSettings | None = None,
    balancer: str = "least-outstanding",
    ttft_slo_ms: float | None = None,
    tbt_slo_ms: float | None = None,
) -> tuple[SimResult, KvTransfer]:
    """Serve `requests` on `prefill_replicas` prefill and `decode_replicas` decode replicas."""
    p_set = prefill_settings or EngineSettings(max_num_seqs=prefill.max_num_seqs, max_batched_tokens=8192)
    d_set = decode_settings or EngineSettings(max_num_seqs=decode.max_num_seqs)
    check(prefill_replicas, p_set, balancer)
    check(decode_replicas, d_set, balancer)
    n = len(requests)
    first = Records(requests.arrival, requests.prompt, np.ones(n))
    p_engines = [Replica(i, prefill, p_set, first) for i in range(prefill_replicas * prefill.pipeline)]
    # The front end holds each request `request_s` before a prefill replica sees it.
    drive(p_engines, (requests.arrival + prefill.request_s).tolist(), range(n), balancer)
    seconds, transfer = kv_transfer(prefill, requests.prompt, requests.rate, decode_instances)
    ready = first.array(first.finish) + seconds
    rec = Records(requests.arrival, requests.prompt, requests.output)
    rec.first_token = list(first.first_token)
    rec.scheduled = list(first.scheduled)
    rec.in_system_s = first.in_system_s + prefill.request_s * n
    rec.front_s = prefill.request_s
    done = np.isfinite(ready)
    order = np.flatnonzero(done)[np.argsort(ready[done], kind="stable")]
    d_engines = [
        Replica(i, decode, d_set, rec, prefilled=True) for i in range(decode_replicas * decode.pipeline)
    ]
    drive(d_engines, ready[order].tolist(), order.tolist(), balancer)
    rec.in_system_s += float(np.sum(seconds[done]))
    result = summarise(
        requests,
        decode,
        p_engines + d_engines,
        rec,
        prefill_replicas + decode_replicas,
        d_set,
        ttft_slo_ms,
        tbt_slo_ms,
    )
    return result, transfer
