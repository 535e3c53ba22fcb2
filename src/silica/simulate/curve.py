"""Latency against request rate: the series behind the latency-vs-rate charts.

A service's tails are not one number but a curve: flat while the replica has room, then rising as
queues form. `latency_curve` replays the same requests at several multiples of their rate
(`run.latency_vs_rate`: arrivals compressed or stretched, lengths kept) and returns, per rate, the
p50/p90/p99 of time to first token and of time between tokens. Where the performance model has a
band (the chip family's p10-p90 validation error, `InferenceEstimate.bands`), the same sweep is run
again with every prefill step scaled to the TTFT band's ends and every decode step to the TPOT band's
ends, so each percentile carries a low and a high: the curve the model cannot tell apart from the
central one. Reports and the web app draw these series (`silica.report.simulate`); nothing here draws.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from silica.simulate.run import RATE_FACTORS, latency_vs_rate
from silica.simulate.steptime import StepTable
from silica.simulate.traffic import Requests

__all__ = [
    "METRICS",
    "PERCENTILES",
    "LatencyCurve",
    "band_factors",
    "latency_curve",
    "scaled_table",
    "simulate_load",
]

METRICS = ("ttft_ms", "tbt_ms")
PERCENTILES = ("p50", "p90", "p99")


@dataclass(frozen=True, slots=True)
class LatencyCurve:
    """Per offered rate: p50/p90/p99 of TTFT and time between tokens (ms), with the band's ends.

    `points` are `latency_vs_rate`'s dictionaries (throughput, goodput, utilisation as well);
    `low` and `high` the same sweep on the band's fast and slow step tables, or None without a band
    (`series` and `to_dict` give the band as the envelope of the three sweeps, see `_end`).
    `band` is (prefill low, prefill high, decode low, decode high) as factors on the step times.
    """

    deployment: str
    traffic: str
    points: list[dict[str, Any]]
    low: list[dict[str, Any]] | None = None
    high: list[dict[str, Any]] | None = None
    band: tuple[float, float, float, float] | None = None

    @property
    def rates(self) -> list[float]:
        """Offered requests per second of each point."""
        return [float(p["offered_req_s"]) for p in self.points]

    def series(self, metric: str, percentile: str, end: str = "value") -> list[float | None]:
        """One line of the chart: `metric` (ttft_ms, tbt_ms) at `percentile` (p50, p90, p99) over
        the rates; `end` "low" or "high" reads the band's sweep (None where there is no band)."""
        if metric not in METRICS or percentile not in PERCENTILES:
            raise ValueError(f"unknown series {metric} {percentile}")
        if end == "value":
            return [_finite(p[metric][percentile]) for p in self.points]
        if self.low is None or self.high is None:
            return [None] * len(self.points)
        return [self._end(k, metric, percentile, end) for k in range(len(self.points))]

    def _end(self, k: int, metric: str, percentile: str, end: str) -> float | None:
        """The band's `end` at point `k`: the lowest (or highest) of the three sweeps. Below the
        replica's capacity the fast sweep is the low end and the slow one the high end; past it the
        queue and the scheduler's step boundaries decide a percentile, and a few per cent slower
        steps can shift it either way, so the band is the envelope of what the model cannot tell
        apart, never a range that leaves out the central curve."""
        assert self.low is not None and self.high is not None
        values = [_finite(p[k][metric][percentile]) for p in (self.low, self.points, self.high)]
        known = [v for v in values if v is not None]
        if len(known) < len(values):
            return None
        return min(known) if end == "low" else max(known)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the points, each percentile with its band's low and high when there is one."""
        out = []
        for k, p in enumerate(self.points):
            point = dict(p)
            if self.low is not None and self.high is not None:
                for metric in METRICS:
                    point[f"{metric}_low"] = {q: self._end(k, metric, q, "low") for q in PERCENTILES}
                    point[f"{metric}_high"] = {q: self._end(k, metric, q, "high") for q in PERCENTILES}
            out.append(point)
        return {
            "deployment": self.deployment,
            "traffic": self.traffic,
            "band_step_factors": None
            if self.band is None
            else dict(
                zip(("prefill_low", "prefill_high", "decode_low", "decode_high"), self.band, strict=True)
            ),
            "points": out,
        }


def _finite(v: Any) -> float | None:
    x = float(v)
    return x if x == x and x not in (float("inf"), float("-inf")) else None


def scaled_table(table: StepTable, prefill: float, decode: float) -> StepTable:
    """The same replica with every prefill step `prefill` times and every decode step `decode` times
    as long (a faster or slower chip within the model's band); memory and links unchanged."""
    return replace(
        table,
        label=f"{table.label} (steps x{prefill:.2f} prefill, x{decode:.2f} decode)",
        prefill=tuple(prefill * t for t in table.prefill),
        decode=tuple(tuple(decode * t for t in row) for row in table.decode),
    )


def band_factors(estimate: Any) -> tuple[float, float, float, float] | None:
    """(prefill low, prefill high, decode low, decode high) step-time factors from an estimate's
    TTFT and TPOT bands (low/value and high/value), or None when it has no band for either."""
    bands = getattr(estimate, "bands", None) or {}
    ttft, tpot = bands.get("ttft_ms"), bands.get("tpot_ms")
    t_value, d_value = getattr(estimate, "ttft_ms", None), getattr(estimate, "tpot_ms", None)
    if ttft is None or tpot is None or not t_value or not d_value:
        return None
    return (ttft.low / t_value, ttft.high / t_value, tpot.low / d_value, tpot.high / d_value)


def latency_curve(
    requests: Requests,
    table: StepTable,
    *,
    band: tuple[float, float, float, float] | None = None,
    factors: tuple[float, ...] = RATE_FACTORS,
    **kwargs: Any,
) -> LatencyCurve:
    """Tail latencies of `requests` on `table`'s replica at `factors` x their rate, with the band.

    `kwargs` go to `simulate` (replicas, settings, balancer, SLOs). With `band`, two more sweeps run
    on the step tables scaled to the band's fast and slow ends (three sweeps in all)."""
    points = latency_vs_rate(requests, table, factors=factors, **kwargs)
    low = high = None
    if band is not None:
        p_lo, p_hi, d_lo, d_hi = band
        low = latency_vs_rate(requests, scaled_table(table, p_lo, d_lo), factors=factors, **kwargs)
        high = latency_vs_rate(requests, scaled_table(table, p_hi, d_hi), factors=factors, **kwargs)
    return LatencyCurve(table.label, requests.source, points, low, high, band)


MAX_WEB_REQUESTS = 5_000  # requests one web page simulates (three sweeps of six rates each, ~1 s)


def simulate_load(
    model: str,
    instance: str,
    *,
    rate: float,
    requests: int = 2000,
    input_len: int = 1024,
    output_len: int = 256,
    seed: int = 0,
    max_requests: int | None = None,
) -> tuple[Any, LatencyCurve]:
    """Poisson requests of fixed lengths at `rate` on one replica of `instance` (layout chosen by the
    planner): the simulation at that rate and its latency-vs-rate curve with the band, as the web
    app's simulate page shows them. Bad values are one `InputError` naming the field."""
    from silica.errors import InputError
    from silica.limits import MAX_RATE, MAX_TOKENS
    from silica.simulate.deploy import plan_replica
    from silica.simulate.engine import EngineSettings
    from silica.simulate.run import simulate
    from silica.simulate.traffic import synthetic
    from silica.workload import InferenceWorkload

    cap = max_requests or 1_000_000
    checks = (
        ("rate", rate, 0.0, MAX_RATE, "requests per second above 0, e.g. 4"),
        ("requests", requests, 10, cap, f"between 10 and {cap:,}"),
        ("input_len", input_len, 1, MAX_TOKENS, "prompt tokens, e.g. 1024"),
        ("output_len", output_len, 1, MAX_TOKENS, "generated tokens, e.g. 256"),
    )
    for name, value, low, high, fix in checks:
        if not (value > low if name == "rate" else value >= low) or value > high or value != value:
            raise InputError(f"{name} = {value:g} is out of range.", f"give {fix}.")
    wl = InferenceWorkload(input_len=int(input_len), output_len=int(output_len))
    planned = plan_replica(model, instance, wl)
    reqs = synthetic(
        rate=rate, n=int(requests), input_len=int(input_len), output_len=int(output_len), seed=seed
    )
    settings = EngineSettings(seed=seed)
    result = simulate(reqs, planned.table, settings=settings)
    curve = latency_curve(reqs, planned.table, band=band_factors(planned.estimate), settings=settings)
    return result, curve
