"""`silica pilot run`: drive an endpoint through the load plan, step by step, and summarise each step.

Each step runs `concurrency` closed-loop streams until `requests_per_step` requests are done. A step
that ends in an error status, or with every request failed, stops the run: the steps already
finished are kept and the failure is recorded in the result. Ctrl-C does the same.
"""

from __future__ import annotations

import asyncio
import csv
import io
import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from silica.errors import InputError
from silica.pilot.client import RequestRecord, StreamClient, payload_for
from silica.pilot.loadplan import LoadPlan
from silica.pilot.power import DcgmMeter

__all__ = ["PilotResult", "StepResult", "check_endpoint", "run_plan", "summarise_step"]

SCHEMA = "silica.pilot.result/1"
_WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "silica",
    "measures",
    "every",
    "token",
]
Progress = Callable[[int, int, int], None]  # (step index, requests done, requests in step)


def _pct(values: list[float], q: float) -> float | None:
    """Percentile by linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _dist(values_s: list[float]) -> dict[str, float | None]:
    ms = [v * 1e3 for v in values_s]
    return {
        "mean": sum(ms) / len(ms) if ms else None,
        "p50": _pct(ms, 50),
        "p90": _pct(ms, 90),
        "p99": _pct(ms, 99),
    }


@dataclass(frozen=True, slots=True)
class StepResult:
    concurrency: int
    requests: int
    completed: int
    failed: int
    duration_s: float
    ttft_ms: dict[str, float | None]
    tpot_ms: dict[str, float | None]
    itl_ms: dict[str, float | None]
    e2e_ms: dict[str, float | None]
    output_tokens: int
    prompt_tokens_mean: float | None
    output_tokens_per_s: float
    requests_per_s: float
    goodput_requests_per_s: float | None  # requests per second that met every SLO given
    slo_attainment: float | None
    errors: tuple[str, ...] = ()
    measured_power: dict[str, Any] | None = None  # GPU power from a DCGM exporter (`pilot.power`)


@dataclass(frozen=True, slots=True)
class PilotResult:
    endpoint: str
    model: str
    started_at: str
    plan: LoadPlan
    steps: tuple[StepResult, ...]
    stopped: str | None = None  # why the run ended before the plan did
    source: str = "silica pilot run"
    engine_version: str | None = None

    @property
    def summary(self) -> str:
        done = f"{len(self.steps)}/{len(self.plan.concurrency)} steps"
        where = self.plan.deployed.instance if self.plan.deployed else self.endpoint
        best = max((s.output_tokens_per_s for s in self.steps), default=0.0)
        tail = f"; stopped: {self.stopped}" if self.stopped else ""
        return f"pilot of {self.model} on {where}: {done}, best {best:,.0f} output tok/s{tail}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "summary": self.summary,
            "endpoint": self.endpoint,
            "model": self.model,
            "started_at": self.started_at,
            "source": self.source,
            "engine_version": self.engine_version,
            "stopped": self.stopped,
            "plan": self.plan.to_dict(),
            "steps": [asdict(s) | {"errors": list(s.errors)} for s in self.steps],
        }

    def to_csv(self) -> str:
        out = io.StringIO()
        cols = [
            "concurrency",
            "requests",
            "completed",
            "failed",
            "duration_s",
            "output_tokens_per_s",
            "requests_per_s",
        ]
        cols += ["goodput_requests_per_s", "slo_attainment"]
        dists = ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"]
        head = cols + [f"{d}_{q}" for d in dists for q in ("p50", "p90", "p99")]
        w = csv.writer(out)
        w.writerow(head)
        for s in self.steps:
            row: list[Any] = [getattr(s, c) for c in cols]
            row += [getattr(s, d)[q] for d in dists for q in ("p50", "p90", "p99")]
            w.writerow(["" if v is None else (round(v, 4) if isinstance(v, float) else v) for v in row])
        return out.getvalue()


def summarise_step(
    plan: LoadPlan, concurrency: int, records: list[RequestRecord], duration_s: float
) -> StepResult:
    ok = [r for r in records if r.ok]
    ttft = [r.ttft_s for r in ok if r.ttft_s is not None]
    tpot = [r.tpot_s for r in ok if r.tpot_s is not None]
    e2e = [r.e2e_s for r in ok if r.e2e_s is not None]
    itl = [g for r in ok for g in r.itl_s()]
    tokens = sum(r.tokens for r in ok)
    prompts = [r.prompt_tokens for r in ok if r.prompt_tokens]
    good: float | None = None
    attained: float | None = None
    if plan.ttft_slo_ms is not None or plan.tpot_slo_ms is not None:

        def meets(r: RequestRecord) -> bool:
            t, p = r.ttft_s, r.tpot_s
            return (plan.ttft_slo_ms is None or (t is not None and t * 1e3 <= plan.ttft_slo_ms)) and (
                plan.tpot_slo_ms is None or (p is not None and p * 1e3 <= plan.tpot_slo_ms)
            )

        n_good = sum(1 for r in ok if meets(r))
        good = n_good / duration_s if duration_s > 0 else None
        attained = n_good / len(records) if records else None
    errors = sorted({r.error for r in records if r.error})
    return StepResult(
        concurrency=concurrency,
        requests=len(records),
        completed=len(ok),
        failed=len(records) - len(ok),
        duration_s=duration_s,
        ttft_ms=_dist(ttft),
        tpot_ms=_dist(tpot),
        itl_ms=_dist(itl),
        e2e_ms=_dist(e2e),
        output_tokens=tokens,
        prompt_tokens_mean=sum(prompts) / len(prompts) if prompts else None,
        output_tokens_per_s=tokens / duration_s if duration_s > 0 else 0.0,
        requests_per_s=len(ok) / duration_s if duration_s > 0 else 0.0,
        goodput_requests_per_s=good,
        slo_attainment=attained,
        errors=tuple(errors[:5]),
    )


def _prompt(input_len: int, salt: int) -> str:
    # Words rather than token ids: the client has no tokenizer; the server's usage gives the real count.
    words = [_WORDS[(i + salt) % len(_WORDS)] for i in range(input_len)]
    return " ".join(words)


def _url(endpoint: str, api: str) -> str:
    base = endpoint.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    return base + ("/chat/completions" if api == "chat" else "/completions")


def check_endpoint(endpoint: str, timeout_s: float = 5.0) -> None:
    """One clear line when nothing answers at the endpoint, before any step starts."""
    if not endpoint.startswith(("http://", "https://")):
        raise InputError(f"Endpoint {endpoint!r} is not an http(s) URL.", "pass --endpoint http://HOST:PORT.")
    base = endpoint.rstrip("/")
    url = base + ("/models" if base.endswith("/v1") else "/v1/models")

    async def probe() -> RequestRecord:
        async with StreamClient(connect_timeout_s=timeout_s, read_timeout_s=timeout_s) as client:
            return await client.get(url)

    try:
        rec = asyncio.run(probe())
    except ValueError as err:  # a URL that urllib cannot split into host and port
        raise InputError(
            f"Endpoint {endpoint!r} is not a valid URL ({err}).", "pass --endpoint http://HOST:PORT."
        ) from err
    if rec.status is None:  # any HTTP answer, even 404, means a server is there
        raise InputError(
            f"Nothing answers at {endpoint} ({rec.error}).",
            "start the server (see the kit's launch.sh) or fix --endpoint.",
        )


async def _step(
    client: StreamClient,
    url: str,
    model: str,
    plan: LoadPlan,
    concurrency: int,
    index: int,
    progress: Progress | None,
) -> tuple[list[RequestRecord], float]:
    records: list[RequestRecord] = []
    total = plan.requests_per_step
    issued = 0

    async def worker(w: int) -> None:
        nonlocal issued
        while issued < total:
            issued += 1
            body = payload_for(
                plan.api, model, _prompt(plan.input_len, issued + w), plan.output_len, plan.ignore_eos
            )
            rec = await client.stream(url, body)
            records.append(rec)
            if progress:
                progress(index, len(records), total)
            if rec.status is not None and rec.status >= 400:
                return  # an error status: the server refuses; do not hammer it

    for _ in range(plan.warmup_requests if index == 0 else 0):
        await client.stream(
            url,
            payload_for(plan.api, model, _prompt(plan.input_len, 0), plan.output_len, plan.ignore_eos),
        )
    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return records, time.perf_counter() - t0


def run_plan(
    endpoint: str,
    model: str,
    plan: LoadPlan,
    *,
    progress: Progress | None = None,
    read_timeout_s: float = 60.0,
    dcgm: DcgmMeter | None = None,
) -> PilotResult:
    """Every step of the plan against the endpoint; a failure or Ctrl-C keeps the finished steps.
    With `dcgm`, each step also records the GPU power and measured J per output token it drew."""
    check_endpoint(endpoint)
    if dcgm is not None:
        dcgm.check()
    url = _url(endpoint, plan.api)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    steps: list[StepResult] = []
    stopped: str | None = None
    for index, c in enumerate(plan.concurrency):

        async def one(c: int = c, index: int = index) -> tuple[list[RequestRecord], float]:
            async with StreamClient(connect_timeout_s=10.0, read_timeout_s=read_timeout_s) as client:
                return await _step(client, url, model, plan, c, index, progress)

        try:
            with dcgm.step() if dcgm is not None else nullcontext() as reading:
                records, duration = asyncio.run(one())
        except KeyboardInterrupt:
            stopped = f"interrupted (Ctrl-C) during the step at concurrency {c}"
            break
        result = summarise_step(plan, c, records, duration)
        if reading is not None:
            result = replace(result, measured_power=reading.summary(duration, result.output_tokens))
        statuses = sorted({r.status for r in records if r.status is not None and r.status >= 400})
        if statuses or result.completed == 0:
            first = result.errors[0] if result.errors else "no request completed"
            stopped = f"step at concurrency {c} failed: {first}"
            if result.completed:
                steps.append(result)
            break
        steps.append(result)
    return PilotResult(
        endpoint=endpoint, model=model, started_at=started, plan=plan, steps=tuple(steps), stopped=stopped
    )
