"""`silica pilot compare`: each step's measurement against the estimate's prediction and its band.

A figure inside the band confirms the estimate; outside it, the step is faster or slower than
expected by the ratio of measured to predicted. Throughput decides what the pilot changes for
`advise`: cost per token scales with the inverse of the tokens per second actually delivered.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Any

from silica.errors import DataFileError, InputError
from silica.pilot.kit import predict_steps
from silica.pilot.loadplan import LoadPlan

__all__ = ["PilotComparison", "StepCheck", "TtftSplit", "compare_pilot", "ttft_split"]

# metric in the result -> (prediction key, "lower" if a smaller value is faster)
METRICS = {
    "ttft_ms": ("ttft_ms", "lower"),
    "tpot_ms": ("tpot_ms", "lower"),
    "output_tokens_per_s": ("output_tokens_per_s", "higher"),
}


@dataclass(frozen=True, slots=True)
class StepCheck:
    concurrency: int
    metric: str
    measured: float
    predicted: float | None
    low: float | None
    high: float | None
    ratio: float | None  # measured / predicted
    verdict: str  # confirmed | faster than expected | slower than expected | not predicted
    why: str = ""  # for a slower step: what the engine's metrics say (queueing, preemption, compute)
    input_len: int | None = None  # prompt tokens of the step (a sweep step's own)
    sweep: bool = False  # a prompt-length sweep step (not at the plan's prompt length)


@dataclass(frozen=True, slots=True)
class TtftSplit:
    """One step's TTFT as the client measured it and as the engine's own histogram saw it.

    The engine's clock starts when its front end has the request and stops at the first token it
    produced; the client's also holds the network, the HTTP handling before and the streaming after.
    Means are comparable (the mean difference is the mean time outside the engine); p50s are shown
    for reading, not subtracted. The engine's figure covers the requests whose first token fell
    between the step's first and last scrape, the client's those started in the steady window.
    """

    step: str  # "concurrency 4" or "rate 2/s"
    concurrency: int
    client_p50_ms: float | None
    client_mean_ms: float | None
    engine_p50_ms: float | None
    engine_mean_ms: float
    engine_requests: float
    outside_engine_ms: float | None  # client mean - engine mean: network, front end, streaming
    outside_share: float | None  # of the client's mean TTFT


def ttft_split(steps: list[dict[str, Any]], input_len: int | None = None) -> tuple[TtftSplit, ...]:
    """Client against engine TTFT per step, where the pilot scraped the engine's TTFT histogram.
    A step whose prompt length is not `input_len` (the plan's) is named with its own."""

    def num(value: Any) -> float | None:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if ok else None

    out = []
    for s in steps:
        raw_engine, raw_client = s.get("engine"), s.get("ttft_ms")
        engine: dict[str, Any] = raw_engine if isinstance(raw_engine, dict) else {}
        mean = num(engine.get("ttft_mean_ms"))
        if mean is None or not isinstance(s.get("concurrency"), int):
            continue
        client: dict[str, Any] = raw_client if isinstance(raw_client, dict) else {}
        c_mean, c_p50 = num(client.get("mean")), num(client.get("p50"))
        outside = c_mean - mean if c_mean is not None else None
        rate = num(s.get("rate"))
        label = f"rate {rate:g}/s" if s.get("mode") == "open" and rate else f"concurrency {s['concurrency']}"
        n = s.get("input_len")
        if input_len is not None and isinstance(n, int) and n and n != input_len:
            label += f", prompt {n} tokens"
        out.append(
            TtftSplit(
                step=label,
                concurrency=int(s["concurrency"]),
                client_p50_ms=c_p50,
                client_mean_ms=c_mean,
                engine_p50_ms=num(engine.get("ttft_p50_ms")),
                engine_mean_ms=mean,
                engine_requests=num(engine.get("ttft_requests")) or 0.0,
                outside_engine_ms=outside,
                outside_share=outside / c_mean if outside is not None and c_mean else None,
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PilotComparison:
    model: str
    instance: str
    engine: str
    calibration: str
    checks: tuple[StepCheck, ...]
    verdict: str
    speed_ratio: float | None  # median measured/predicted throughput
    advise_effect: str
    prediction_source: str
    ttft_split: tuple[TtftSplit, ...] = ()  # client vs engine TTFT per step (engine histogram scraped)

    @property
    def summary(self) -> str:
        return f"pilot compare {self.model} on {self.instance} ({self.engine}): {self.verdict}"

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        out = asdict(self)
        out["summary"] = self.summary
        return out


def _verdict(measured: float, low: float | None, high: float | None, direction: str) -> str:
    if low is None or high is None:
        return "not predicted"
    if low <= measured <= high:
        return "confirmed"
    faster = measured < low if direction == "lower" else measured > high
    return "faster than expected" if faster else "slower than expected"


def _how_much(ratio: float) -> str:
    if ratio >= 1:
        return f"{ratio:.2f}x the predicted throughput"
    return f"{1 / ratio:.2f}x below the predicted throughput"


def _reach(vendor: str, engine: str) -> str:
    """Which estimates a calibration from this pilot changes: those for the engine it measured."""
    from silica.perf.stacks import default_stack

    default = default_stack(vendor, "inference")[0].name
    if default == engine:
        return f"estimates and advise on this chip family ({engine}, the default engine) then use the measured speed"
    return (
        f"estimates with --engine {engine} on this chip family then use the measured speed; those with "
        f"the default engine ({default}), and advise's ranking, keep the shipped calibration"
    )


def explain_miss(engine: Any, concurrency: int) -> str:
    """Why a step ran slower than predicted, from the engine's own metrics over it (when scraped).

    Queueing: requests waited, so fewer ran at once than the step asked and TTFT includes the wait.
    Preemption: the KV cache filled and sequences were evicted and recomputed. Otherwise the engine ran
    the batch asked for and was simply slower: compute or memory speed, what calibration corrects.
    """
    if not isinstance(engine, dict) or not engine.get("scrapes"):
        return "no engine metrics for this step"
    parts = []
    waiting, running = engine.get("waiting_mean"), engine.get("running_mean")
    if isinstance(waiting, int | float) and waiting >= 0.5:
        ran = f", {running:.1f} running of {concurrency}" if isinstance(running, int | float) else ""
        parts.append(f"queueing ({waiting:.1f} requests waiting on average{ran})")
    pre = engine.get("preemptions")
    kv = engine.get("kv_cache_usage_max")
    if isinstance(pre, int | float) and pre > 0:
        full = f", KV cache up to {kv:.0%}" if isinstance(kv, int | float) else ""
        parts.append(f"preemption ({pre:.0f} sequences preempted{full})")
    if parts:
        return "; ".join(parts)
    return "compute: the engine ran the batch asked for without queueing or preemption"


def compare_pilot(
    result: dict[str, Any],
    prediction: dict[str, Any] | None = None,
    where: str = "result",
    calibration: Any = None,
) -> PilotComparison:
    """Measured (p50 latencies, throughput) against predicted, step by step, with the overall verdict.

    Without a kit's `prediction`, the steps are predicted now with `calibration` (the plan context's,
    with the user's overlay; None: the bundled one)."""
    try:
        plan = LoadPlan.from_dict(result["plan"], where)
        steps = list(result["steps"])
    except (KeyError, TypeError) as err:
        raise DataFileError(
            f"{where} is not a pilot result.", "pass the JSON `silica pilot run` wrote."
        ) from err
    dep = plan.deployed
    source = "prediction.json of the kit"
    if prediction is None:
        if dep is None:
            raise InputError(
                f"{where} was run without a kit: there is no prediction to compare with.",
                "pass --plan KIT_DIR, or run with `silica pilot run --plan KIT_DIR`.",
            )
        prediction = predict_steps(dep.model, plan, calibration)
        source = "estimate now (current calibration)"
    # A step is predicted at its concurrency and prompt length (a kit before the sweep: the plan's).
    predicted = {
        (int(p["concurrency"]), int(p.get("input_len") or plan.input_len)): p
        for p in prediction.get("steps", [])
    }
    checks: list[StepCheck] = []
    for s in steps:
        c = int(s["concurrency"])
        n = int(s.get("input_len") or plan.input_len)
        p = predicted.get((c, n), {})
        for metric, (key, direction) in METRICS.items():
            raw = s.get(metric)
            measured = raw.get("p50") if isinstance(raw, dict) else raw
            if not isinstance(measured, int | float) or not s.get("completed"):
                continue
            pred = p.get(key)
            band = (p.get("bands") or {}).get(key) or [None, None]
            checks.append(
                StepCheck(
                    concurrency=c,
                    metric=metric,
                    measured=float(measured),
                    predicted=pred,
                    low=band[0],
                    high=band[1],
                    ratio=float(measured) / pred if pred else None,
                    verdict=_verdict(float(measured), band[0], band[1], direction),
                    input_len=n,
                    sweep=n != plan.input_len,
                )
            )
            if checks[-1].verdict == "slower than expected":
                checks[-1] = replace(checks[-1], why=explain_miss(s.get("engine"), c))
    # Throughput decides for advise at the plan's request shape; the sweep's steps inform TTFT.
    speed = [k.ratio for k in checks if k.metric == "output_tokens_per_s" and k.ratio and not k.sweep]
    ratio = statistics.median(speed) if speed else None
    tput = [k for k in checks if k.metric == "output_tokens_per_s" and not k.sweep]
    if ratio is None:
        verdict, effect = "no step could be compared", "nothing changes for advise"
    elif all(k.verdict == "confirmed" for k in tput):
        verdict = f"confirmed: throughput within the band at every step ({_how_much(ratio)})"
        effect = "advise's verdict stands: the cost per token it used is inside the measured band"
    else:
        word = "faster" if ratio > 1 else "slower"
        verdict = f"{word} than expected: {_how_much(ratio)} (median over steps)"
        usd = prediction.get("usd_per_hour")
        cost = f"; at ${usd:g}/h" if isinstance(usd, int | float) else ""
        effect = (
            f"cost per 1M output tokens on {dep.instance if dep else 'this instance'} is {1 / ratio:.2f}x "
            f"the advised figure{cost}; run `silica calibrate --from-pilot`: {_reach(dep.vendor, dep.engine) if dep else ''}"
        )
    return PilotComparison(
        model=str(dep.model if dep else result.get("model")),
        instance=dep.instance if dep else "?",
        engine=dep.engine if dep else "?",
        calibration=str(prediction.get("calibration", "")),
        checks=tuple(checks),
        verdict=verdict,
        speed_ratio=ratio,
        advise_effect=effect,
        prediction_source=source,
        ttft_split=ttft_split(steps, plan.input_len),
    )
