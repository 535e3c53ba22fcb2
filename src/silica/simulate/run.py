"""Run requests through replicas behind a load balancer, and summarise what they saw.

The summary is what services are judged on: percentiles of time to first token (TTFT), time between
tokens (TBT, over every generated token after the first, as `vllm bench serve` reports its ITL),
end-to-end latency and queue time; throughput; goodput (requests per second that met every SLO);
busy share of the replicas; KV-cache occupancy; preemptions. Little's law (mean requests in the
system = arrival rate x mean time in it) is reported both ways as a check on the bookkeeping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from silica.errors import InputError
from silica.simulate.engine import EngineSettings, Records, Replica
from silica.simulate.steptime import StepTable
from silica.simulate.traffic import Requests

__all__ = ["BALANCERS", "Percentiles", "SimResult", "latency_vs_rate", "simulate", "weighted_percentiles"]

Array = NDArray[np.float64]
BALANCERS = ("round-robin", "least-outstanding")
PREEMPTIONS = ("recompute", "swap")
QUANTILES = (50.0, 90.0, 99.0)


@dataclass(frozen=True, slots=True)
class Percentiles:
    """p50, p90, p99 and the mean of one latency, in milliseconds."""

    p50: float
    p90: float
    p99: float
    mean: float

    @classmethod
    def of(cls, seconds: Array, weights: Array | None = None) -> Percentiles:
        ok = np.isfinite(seconds)
        if not ok.any():
            nan = float("nan")
            return cls(nan, nan, nan, nan)
        x = seconds[ok] * 1e3
        w = None if weights is None else weights[ok]
        p = weighted_percentiles(x, w, QUANTILES)
        mean = float(np.average(x, weights=w))
        return cls(p[0], p[1], p[2], mean)

    def to_dict(self) -> dict[str, float]:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "mean": self.mean}


def weighted_percentiles(x: Array, w: Array | None, qs: tuple[float, ...]) -> list[float]:
    """Percentiles of `x` where value i counts `w[i]` times (the lower value at a tie: 'inverted cdf')."""
    if w is None:
        return [float(v) for v in np.percentile(x, qs, method="inverted_cdf")]
    order = np.argsort(x, kind="stable")
    xs, cum = x[order], np.cumsum(w[order])
    total = cum[-1]
    return [float(xs[min(int(np.searchsorted(cum, q / 100.0 * total)), len(xs) - 1)]) for q in qs]


@dataclass(frozen=True, slots=True)
class SimResult:
    """Per-request records and the summary of one simulation."""

    deployment: str
    source: str
    replicas: int
    settings: EngineSettings
    requests: int
    completed: int
    span_s: float
    ttft: Percentiles
    tbt: Percentiles
    e2e: Percentiles
    queue: Percentiles
    tpot: Percentiles  # each request's mean time per output token after the first
    request_rate: float  # offered, requests per second
    throughput_req_s: float
    output_tok_s: float
    goodput_req_s: float | None
    slo: dict[str, float]
    utilisation: float
    kv_mean: float
    kv_peak: float
    kv_tokens: int
    preemptions: int
    little_l: float  # mean requests in the system, measured over time
    little_lambda_w: float  # completion rate x mean e2e
    records: Records = field(repr=False)

    def to_dict(self, per_request: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "deployment": self.deployment,
            "traffic": self.source,
            "replicas": self.replicas,
            "engine": {
                "max_num_seqs": self.settings.max_num_seqs,
                "max_batched_tokens": self.settings.max_batched_tokens,
                "chunked_prefill": True,
                "preemption": self.settings.preemption,
                "swap_gb_per_s": self.settings.swap_bytes_per_s / 1e9
                if self.settings.preemption == "swap"
                else None,
                "prefix_hit": self.settings.prefix_hit,
                "step_cv": self.settings.step_cv,
            },
            "requests": self.requests,
            "completed": self.completed,
            "span_s": self.span_s,
            "ttft_ms": self.ttft.to_dict(),
            "tbt_ms": self.tbt.to_dict(),
            "e2e_ms": self.e2e.to_dict(),
            "queue_ms": self.queue.to_dict(),
            "tpot_ms": self.tpot.to_dict(),
            "offered_req_s": self.request_rate,
            "throughput_req_s": self.throughput_req_s,
            "output_tok_s": self.output_tok_s,
            "goodput_req_s": self.goodput_req_s,
            "slo_ms": self.slo,
            "utilisation": self.utilisation,
            "kv_cache": {
                "tokens": self.kv_tokens,
                "mean_occupancy": self.kv_mean,
                "peak_occupancy": self.kv_peak,
            },
            "preemptions": self.preemptions,
            "littles_law": {"mean_in_system": self.little_l, "rate_x_mean_e2e": self.little_lambda_w},
        }
        if per_request:
            out["per_request"] = per_request_rows(self.records)
        return out


def per_request_rows(rec: Records) -> list[dict[str, float | int]]:
    """One row per request: arrival, lengths, replica and its latencies (ms; nan if unfinished)."""
    ttft = (rec.array(rec.first_token) - rec.arrival) * 1e3
    e2e = (rec.array(rec.finish) - rec.arrival) * 1e3
    queue = (rec.array(rec.scheduled) - rec.arrival - rec.front_s) * 1e3
    return [
        {
            "request": i,
            "arrival_s": float(rec.arrival[i]),
            "input_tokens": int(rec.prompt[i]),
            "output_tokens": int(rec.output[i]),
            "replica": int(rec.replica[i]),
            "queue_ms": float(queue[i]),
            "ttft_ms": float(ttft[i]),
            "e2e_ms": float(e2e[i]),
            "preemptions": int(rec.preemptions[i]),
        }
        for i in range(len(rec.arrival))
    ]


def simulate(
    requests: Requests,
    table: StepTable,
    *,
    replicas: int = 1,
    settings: EngineSettings | None = None,
    balancer: str = "round-robin",
    ttft_slo_ms: float | None = None,
    tbt_slo_ms: float | None = None,
) -> SimResult:
    """Serve `requests` on `replicas` replicas of the deployment `table` describes.

    A replica of pp pipeline stages runs pp micro-batches in flight; it is simulated as pp engines
    sharing its arrivals (each with the stage-local KV cache), which keeps latency per step and
    multiplies throughput by pp, as the steady-state model does.
    """
    settings = settings or EngineSettings(max_num_seqs=table.max_num_seqs)
    check(replicas, settings, balancer)
    if len(requests) == 0 or bool(np.any(np.diff(requests.arrival) < 0)):
        raise InputError(
            "The requests must be at least one, sorted by arrival time.", "sort the trace by its timestamps."
        )
    rec = Records(requests.arrival, requests.prompt, requests.output)
    engines = [Replica(i, table, settings, rec) for i in range(replicas * table.pipeline)]
    # The front end holds each request `request_s` before the engine sees it (a constant shift).
    rec.front_s = table.request_s
    drive(engines, (requests.arrival + table.request_s).tolist(), range(len(requests)), balancer)
    rec.in_system_s += table.request_s * len(requests)
    return summarise(requests, table, engines, rec, replicas, settings, ttft_slo_ms, tbt_slo_ms)


RATE_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)  # of the offered rate, for the latency-vs-rate curve


def latency_vs_rate(
    requests: Requests,
    table: StepTable,
    *,
    factors: tuple[float, ...] = RATE_FACTORS,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """The same requests replayed at `factors` x their rate (arrivals compressed or stretched, the
    lengths kept): TTFT and time-between-token percentiles, throughput and goodput per rate, the
    points of a latency-vs-rate chart. `kwargs` go to `simulate` (replicas, settings, SLOs)."""
    points = []
    for f in factors:
        r = simulate(requests.scaled(f), table, **kwargs)
        points.append(
            {
                "rate_factor": f,
                "offered_req_s": r.request_rate,
                "ttft_ms": r.ttft.to_dict(),
                "tbt_ms": r.tbt.to_dict(),
                "e2e_ms": r.e2e.to_dict(),
                "throughput_req_s": r.throughput_req_s,
                "output_tok_s": r.output_tok_s,
                "goodput_req_s": r.goodput_req_s,
                "utilisation": r.utilisation,
                "kv_peak_occupancy": r.kv_peak,
                "preemptions": r.preemptions,
            }
        )
    return points


def simulate_closed_loop(
    table: StepTable,
    *,
    concurrency: int,
    requests: int,
    input_len: int,
    output_len: int,
    settings: EngineSettings | None = None,
) -> SimResult:
    """`concurrency` clients each send a request, wait for its last token, and send the next one
    (how `vllm bench serve --max-concurrency`, AIPerf and genai-perf load a server), on one replica."""
    settings = settings or EngineSettings(max_num_seqs=table.max_num_seqs)
    check(1, settings, BALANCERS[0])
    if not 1 <= concurrency <= requests:
        raise InputError(
            f"Concurrency must be between 1 and the request count ({requests}), got {concurrency}.",
            "pass a concurrency of 1 or more and at least as many requests.",
        )
    arrival = np.zeros(requests)
    rec = Records(arrival, np.full(requests, float(input_len)), np.full(requests, float(output_len)))
    engine = Replica(0, table, settings, rec)
    # The front end holds each request `request_s` before the engine sees it: a client's next request
    # reaches the engine that long after its previous answer ended (sorted: the delay is constant).
    rec.front_s = front = table.request_s
    pending = [(front, r) for r in range(concurrency)]  # (when the engine sees it, request)
    issued, seen = concurrency, 0
    while engine.done < requests:
        while pending and (
            pending[0][0] <= engine.t or not (engine.running or engine.prefilling or engine.waiting)
        ):
            ta, r = pending.pop(0)
            engine.add(r, ta)  # an idle engine waits for it
        if not (engine.running or engine.prefilling or engine.waiting):
            break  # nothing left the engine can run (a request larger than the KV cache)
        engine.run(engine.t + 1e-9)  # one step, or one run of decode steps up to the next finish
        while seen < len(engine.finished):
            t = rec.finish[engine.finished[seen]]
            seen += 1
            if issued < requests:
                arrival[issued] = t
                pending.append((t + front, issued))
                issued += 1
    rec.in_system_s += front * issued
    traffic = Requests(
        arrival,
        rec.prompt,
        rec.output,
        f"{concurrency} closed-loop clients, {input_len} in, {output_len} out",
    )
    return summarise(traffic, table, [engine], rec, 1, settings, None, None)


def drive(engines: list[Replica], times: list[float], order: Any, balancer: str) -> None:
    """Hand request `order[i]` to a replica at `times[i]` (sorted), then run every replica dry.

    Round robin decides each request's replica without looking at the replicas, so each one serves
    its own share of the arrivals in one pass (`Replica.serve`); least outstanding looks at every
    replica at every arrival, so they advance together, arrival by arrival."""
    if len(engines) == 1 or balancer == "round-robin":
        ids, n = list(order), len(engines)
        for k, e in enumerate(engines):
            e.serve(ids[k::n], times[k::n])
        return
    for r, t in zip(order, times, strict=True):
        for e in engines:
            e.run(t)
        min(engines, key=lambda e: e.outstanding).add(r, t)
    for e in engines:
        e.run(math.inf)


def check(replicas: int, settings: EngineSettings, balancer: str) -> None:
    if replicas < 1:
        raise InputError(f"Replicas must be 1 or more, got {replicas}.", "pass --replicas >= 1.")
    if settings.max_num_seqs < 1:
        raise InputError(
            f"Max running sequences must be 1 or more, got {settings.max_num_seqs}.",
            "pass --max-num-seqs >= 1.",
        )
    if settings.max_batched_tokens < 1:
        raise InputError(
            f"Max batched tokens must be 1 or more, got {settings.max_batched_tokens}.",
            "pass --max-batched-tokens >= 1.",
        )
    if not (settings.step_cv >= 0 and math.isfinite(settings.step_cv)):
        raise InputError(
            f"The step-time coefficient of variation must be 0 or more, got {settings.step_cv}.",
            "pass --step-cv >= 0 (0: no host interference).",
        )
    if not 0.0 <= settings.prefix_hit < 1.0:
        raise InputError(
            f"The prefix-cache hit rate must be in [0, 1), got {settings.prefix_hit}.",
            "pass --prefix-hit between 0 and 1 (the share of prompt tokens found in the cache).",
        )
    if settings.preemption not in PREEMPTIONS:
        raise InputError(
            f"Unknown preemption mode {settings.preemption!r}.", f"use one of {', '.join(PREEMPTIONS)}."
        )
    if settings.preemption == "swap" and not (
        settings.swap_bytes_per_s > 0 and math.isfinite(settings.swap_bytes_per_s)
    ):
        raise InputError(
            "Swap preemption needs the host link's bandwidth.",
            "pass --swap-gbps (GB/s between accelerator and host memory, e.g. the PCIe link's).",
        )
    if balancer not in BALANCERS:
        raise InputError(f"Unknown load balancer {balancer!r}.", f"use one of {', '.join(BALANCERS)}.")


def summarise(
    requests: Requests,
    table: StepTable,
    engines: list[Replica],
    rec: Records,
    replicas: int,
    settings: EngineSettings,
    ttft_slo_ms: float | None,
    tbt_slo_ms: float | None,
) -> SimResult:
    finish, first_token = rec.array(rec.finish), rec.array(rec.first_token)
    done = np.isfinite(finish)
    n_done = int(done.sum())
    start = float(rec.arrival[0]) if len(rec.arrival) else 0.0
    end = float(np.nanmax(finish)) if n_done else start
    span = max(end - start, 1e-12)
    ttft = first_token - rec.arrival
    e2e = finish - rec.arrival
    gen_after_first = np.maximum(rec.output - 1.0, 1.0)
    tpot = np.where(rec.output > 1, (finish - first_token) / gen_after_first, np.nan)
    gaps = np.asarray(rec.gap_s)
    weights = np.asarray(rec.gap_n)
    slo: dict[str, float] = {}
    good = done.copy()
    if ttft_slo_ms is not None:
        slo["ttft"] = ttft_slo_ms
        good &= ttft * 1e3 <= ttft_slo_ms
    if tbt_slo_ms is not None:
        slo["tpot"] = tbt_slo_ms
        good &= ~(tpot * 1e3 > tbt_slo_ms)
    busy = sum(e.busy_s for e in engines)
    kv_s = sum(e.kv_token_s for e in engines)
    cap = table.kv_tokens * len(engines)
    mean_e2e = float(np.nanmean(e2e)) if n_done else float("nan")
    return SimResult(
        deployment=table.label,
        source=requests.source,
        replicas=replicas,
        settings=settings,
        requests=len(requests),
        completed=n_done,
        span_s=span,
        ttft=Percentiles.of(ttft),
        tbt=Percentiles.of(gaps, weights) if gaps.size else Percentiles.of(np.full(1, np.nan)),
        e2e=Percentiles.of(e2e),
        queue=Percentiles.of(rec.array(rec.scheduled) - rec.arrival - rec.front_s),
        tpot=Percentiles.of(tpot),
        request_rate=requests.rate,
        throughput_req_s=n_done / span,
        output_tok_s=float(rec.output[done].sum()) / span,
        goodput_req_s=float(good.sum()) / span if slo else None,
        slo=slo,
        utilisation=busy / (span * len(engines)),
        kv_mean=kv_s / (span * cap) if cap else 0.0,
        kv_peak=max((e.kv_peak for e in engines), default=0) / table.kv_tokens,
        kv_tokens=table.kv_tokens,
        preemptions=sum(rec.preemptions),
        little_l=rec.in_system_s / span,
        little_lambda_w=n_done / span * mean_e2e,
        records=rec,
    )
