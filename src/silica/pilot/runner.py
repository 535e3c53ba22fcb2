"""`silica pilot run`: drive an endpoint through the load plan, step by step, and summarise each step.

Closed-loop steps hold `concurrency` requests in flight (each stream sends its next request as soon
as one ends); open-loop steps send requests at a rate, Poisson or evenly spaced, whatever the
server's pace. A timed step (`duration_s` in the plan) counts only the requests that start in its
steady window: warm-up load before it, cool-down load after it, so every counted request met a full
server. The result records what the step really did: the mean number in flight and the rate sent in
the steady window, next to what was asked.

Every answer's length is checked against `max_tokens` (the server's usage, or the token events when
it reports none): an answer shorter than asked (a `--max-model-len` too tight, an EOS honoured) is
counted as short, and kept out of TPOT and ITL, whose per-token time it would skew.

A step that ends in an error status, or with every request failed, stops the run: the steps already
finished are kept and the failure is recorded in the result. Ctrl-C does the same.
"""

from __future__ import annotations

import asyncio
import csv
import io
import math
import random
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from silica.errors import InputError
from silica.pilot.client import RequestRecord, StreamClient, payload_for
from silica.pilot.engine_metrics import Scraper, summarise
from silica.pilot.loadplan import LoadPlan
from silica.pilot.power import DcgmMeter
from silica.pilot.prompts import PromptMaker, Tokenizer

__all__ = [
    "PilotResult",
    "StepResult",
    "check_endpoint",
    "run_plan",
    "step_label",
    "steps_of",
    "summarise_step",
]

SCHEMA = "silica.pilot.result/1"
# The per-step columns of `PilotResult.to_csv`, in order (the latency percentiles follow them).
CSV_COLUMNS: tuple[str, ...] = (
    "mode",
    "concurrency",
    "rate",
    "achieved_rate",
    "mean_in_flight",
    "requests",
    "completed",
    "failed",
    "short_answers",
    "duration_s",
    "output_tokens_per_s",
    "requests_per_s",
    "goodput_requests_per_s",
    "slo_attainment",
    "input_len",  # a prompt-length sweep's steps differ here, not in concurrency
)
Progress = Callable[[int, int, int], None]  # (step index, done, total): requests, or seconds if timed


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
    mode: str = "closed"  # closed (concurrency held) or open (request rate)
    rate: float | None = None  # asked requests per second (open loop)
    achieved_rate: float | None = None  # requests started per second in the steady window
    mean_in_flight: float | None = None  # time-averaged requests in flight in the steady window
    short_answers: int = 0  # completed with fewer output tokens than asked: not in TPOT/ITL
    excluded: int = 0  # warm-up and cool-down requests, not counted
    engine: dict[str, Any] | None = None  # the engine's /metrics over the step (engine_metrics.summarise)
    input_len: int | None = None  # prompt tokens asked in this step (a sweep step's own; else the plan's)
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
    notes: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        done = f"{len(self.steps)}/{len(steps_of(self.plan))} steps"
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
            "notes": list(self.notes),
        }

    def to_csv(self) -> str:
        out = io.StringIO()
        cols = list(CSV_COLUMNS)
        dists = ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"]
        head = cols + [f"{d}_{q}" for d in dists for q in ("p50", "p90", "p99")]
        w = csv.writer(out)
        w.writerow(head)
        for s in self.steps:
            row: list[Any] = [getattr(s, c) for c in cols]
            row += [getattr(s, d)[q] for d in dists for q in ("p50", "p90", "p99")]
            w.writerow(["" if v is None else (round(v, 4) if isinstance(v, float) else v) for v in row])
        return out.getvalue()


def _in_flight(records: list[RequestRecord], t0: float, t1: float) -> float | None:
    """Time-averaged number of requests in flight between t0 and t1 (from each one's start and end)."""
    if t1 <= t0:
        return None
    busy = sum(max(0.0, min(r.end, t1) - max(r.start, t0)) for r in records if r.end is not None)
    return busy / (t1 - t0)


def summarise_step(
    plan: LoadPlan,
    concurrency: int,
    records: list[RequestRecord],
    duration_s: float,
    *,
    mode: str = "closed",
    rate: float | None = None,
    window: tuple[float, float] | None = None,
    excluded: int = 0,
) -> StepResult:
    """The step's figures from the requests it counts.

    `window` (perf_counter start and end of the steady window) is given for timed steps: `records`
    are then the requests that started in it and rates are per second of it.
    """
    ok = [r for r in records if r.ok]
    short = [r for r in ok if plan.ignore_eos and r.tokens < (r.asked_tokens or plan.output_len)]
    cut = {id(r) for r in short}
    full = [r for r in ok if id(r) not in cut]
    ttft = [r.ttft_s for r in ok if r.ttft_s is not None]
    tpot = [r.tpot_s for r in full if r.tpot_s is not None]
    e2e = [r.e2e_s for r in full if r.e2e_s is not None]
    itl = [g for r in full for g in r.itl_s()]
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

        n_good = sum(1 for r in full if meets(r))
        good = n_good / duration_s if duration_s > 0 else None
        attained = n_good / len(records) if records else None
    errors = sorted({r.error for r in records if r.error})
    if short:
        got = sorted(r.tokens for r in short)
        errors.insert(
            0,
            f"{len(short)} answers shorter than the "
            + (f"{plan.output_len} tokens asked" if plan.dataset is None else "tokens each asked")
            + " (median "
            f"{got[len(got) // 2]}): left out of TPOT; check --max-model-len and ignore_eos",
        )
    achieved = len(records) / duration_s if window is not None and duration_s > 0 else None
    flight = None
    if window is not None:
        flight = _in_flight(records, *window)
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
        mode=mode,
        rate=rate,
        achieved_rate=achieved,
        mean_in_flight=flight,
        short_answers=len(short),
        excluded=excluded,
    )


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


class _Step:
    """One step's load: closed loop at `concurrency`, or open loop at `rate`; the records it made."""

    def __init__(
        self,
        client: StreamClient,
        url: str,
        model: str,
        plan: LoadPlan,
        prompts: PromptMaker,
        index: int,
        progress: Progress | None,
    ) -> None:
        self.client, self.url, self.model, self.plan = client, url, model, plan
        self.prompts, self.index, self.progress = prompts, index, progress
        self.records: list[RequestRecord] = []
        self.sent = 0
        self.refused = False  # an error status: stop sending, do not hammer a refusing server
        self.window: tuple[float, float] | None = None  # the counted part of the step (perf_counter)

    async def send(self) -> RequestRecord:
        plan = self.plan
        self.sent += 1
        prompt = self.prompts(self.index, self.sent)
        asked = self.prompts.pair(self.index, self.sent)[1]
        body = payload_for(plan.api, self.model, prompt, asked or plan.output_len, plan.ignore_eos)
        rec = await self.client.stream(self.url, body)
        rec.asked_tokens = asked
        if rec.prompt_tokens is None:
            rec.prompt_tokens = self.prompts.tokens(prompt)
        self.records.append(rec)
        if rec.status is not None and rec.status >= 400:
            self.refused = True
        return rec

    def tick(self, done: int, total: int) -> None:
        if self.progress:
            self.progress(self.index, done, total)

    async def closed_count(self, concurrency: int) -> tuple[float, float]:
        """`requests_per_step` requests over `concurrency` streams; the whole step is counted."""
        total = self.plan.requests_per_step

        async def worker() -> None:
            while self.sent < total and not self.refused:
                await self.send()
                self.tick(len(self.records), total)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return t0, time.perf_counter()

    async def closed_timed(self, concurrency: int) -> tuple[float, float]:
        """`concurrency` streams back to back from the start of warm-up to the end of cool-down."""
        plan = self.plan
        assert plan.duration_s is not None
        t0 = time.perf_counter()
        steady = (t0 + plan.warmup_s, t0 + plan.warmup_s + plan.duration_s)
        stop = steady[1] + plan.cooldown_s
        span = plan.warmup_s + plan.duration_s + plan.cooldown_s

        async def worker() -> None:
            while time.perf_counter() < stop and not self.refused:
                await self.send()
                self.tick(min(int(time.perf_counter() - t0), int(span)), int(span))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return steady

    async def open_timed(self, rate: float) -> tuple[float, float]:
        """Requests sent at `rate` per second (Poisson or evenly spaced), none waiting for another."""
        plan = self.plan
        assert plan.duration_s is not None
        rng = random.Random(f"{plan.seed}/arrivals/{self.index}")
        span = plan.warmup_s + plan.duration_s + plan.cooldown_s
        tasks: list[asyncio.Task[RequestRecord]] = []
        t0 = time.perf_counter()
        at = 0.0
        while not self.refused:
            at += rng.expovariate(rate) if plan.arrival == "poisson" else 1.0 / rate
            if at >= span:
                break
            delay = t0 + at - time.perf_counter()
            if delay > 0:  # a late loop sends at once: the schedule, not the pace, sets the rate
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(self.send()))
            self.tick(int(at), int(span))
        await asyncio.gather(*tasks)
        return t0 + plan.warmup_s, t0 + plan.warmup_s + plan.duration_s


async def _run_step(
    client: StreamClient,
    url: str,
    model: str,
    plan: LoadPlan,
    prompts: PromptMaker,
    index: int,
    load: tuple[str, float],
    progress: Progress | None,
    metrics: tuple[str, float] | None = None,
) -> tuple[StepResult, bool, str | None]:
    """The step's result, whether the server refused a request with an error status, and why the
    engine's metrics were not read (None when they were, or were not asked for)."""
    mode, level = load
    step = _Step(client, url, model, plan, prompts, index, progress)
    if index == 0:  # connections opened and the first compile done before anything is timed
        for _ in range(plan.warmup_requests):
            await client.stream(
                url, payload_for(plan.api, model, prompts(-1, 0), plan.output_len, plan.ignore_eos)
            )
    scraper = Scraper(*metrics) if metrics else None
    scraping = asyncio.create_task(scraper.run()) if scraper else None
    try:
        result = await _load(step, plan, mode, level)
    finally:
        if scraping is not None:
            scraping.cancel()
            await asyncio.gather(scraping, return_exceptions=True)
    if scraper is None:
        return result, step.refused, None
    window = step.window
    engine = summarise(scraper.samples, window)
    return replace(result, engine=engine), step.refused, None if engine else scraper.error


async def _load(step: _Step, plan: LoadPlan, mode: str, level: float) -> StepResult:
    if mode == "length":  # a sweep step: closed loop at the sweep's concurrency, its own prompt length
        result = await _load(step, plan, "closed", float(plan.sweep_concurrency))
        return replace(result, input_len=int(level))
    if mode == "open":
        window = await step.open_timed(level)
    elif plan.duration_s is not None:
        window = await step.closed_timed(int(level))
    else:
        t0, t1 = await step.closed_count(int(level))
        step.window = (t0, t1)
        return replace(summarise_step(plan, int(level), step.records, t1 - t0), input_len=plan.input_len)
    step.window = window
    counted = [r for r in step.records if window[0] <= r.start < window[1]]
    result = summarise_step(
        plan,
        int(level),
        counted,
        window[1] - window[0],
        mode=mode,
        rate=level if mode == "open" else None,
        window=window,
        excluded=len(step.records) - len(counted),
    )
    flight = _in_flight(step.records, *window)  # every request overlapping the window is in flight
    if mode == "open":
        return replace(
            result, concurrency=max(1, round(flight or 0.0)), mean_in_flight=flight, input_len=plan.input_len
        )
    return replace(result, mean_in_flight=flight, input_len=plan.input_len)


def step_label(mode: str, level: float) -> str:
    """How a step is named in progress bars and messages."""
    if mode == "length":
        return f"prompt {int(level)} tokens"
    return f"rate {level:g}/s" if mode == "open" else f"concurrency {int(level)}"


def steps_of(plan: LoadPlan) -> list[tuple[str, float]]:
    """The plan's steps in order: closed-loop concurrencies, open-loop rates, then the prompt-length
    sweep ("length", tokens), closed loop at the plan's `sweep_concurrency`."""
    return (
        [("closed", float(c)) for c in plan.concurrency]
        + [("open", r) for r in plan.rates]
        + [("length", float(n)) for n in plan.input_lens]
    )


def run_plan(
    endpoint: str,
    model: str,
    plan: LoadPlan,
    *,
    progress: Progress | None = None,
    read_timeout_s: float = 60.0,
    tokenizer: Tokenizer | None = None,
    metrics_url: str | None = None,
    scrape_interval_s: float = 1.0,
    dcgm: DcgmMeter | None = None,
    lengths: list[tuple[int, int]] | None = None,
) -> PilotResult:
    """Every step of the plan against the endpoint; a failure or Ctrl-C keeps the finished steps.

    `metrics_url`: the engine's Prometheus endpoint, scraped every `scrape_interval_s` during each step
    (running, waiting, KV-cache use, preemptions, prefix-cache hits) and kept with the step. With
    `dcgm`, each step also records the GPU power and measured J per output token it drew. With
    `lengths` ((prompt, answer) pairs, `prompts.read_length_pairs`), every request of the load steps
    draws its lengths from them; the sweep's steps keep their own prompt length."""
    check_endpoint(endpoint)
    if dcgm is not None:
        dcgm.check()
    metrics = (metrics_url, scrape_interval_s) if metrics_url else None
    if metrics:
        import httpx  # noqa: F401 - imported now: an import inside a step would stall its event loop
    notes: list[str] = []
    url = _url(endpoint, plan.api)
    prompts = PromptMaker(plan.input_len, plan.seed, tokenizer, list(lengths) if lengths else None)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    steps: list[StepResult] = []
    stopped: str | None = None
    for index, load in enumerate(steps_of(plan)):

        async def one(
            index: int = index, load: tuple[str, float] = load
        ) -> tuple[StepResult, bool, str | None]:
            maker = PromptMaker(int(load[1]), plan.seed, tokenizer) if load[0] == "length" else prompts
            async with StreamClient(connect_timeout_s=10.0, read_timeout_s=read_timeout_s) as client:
                return await _run_step(client, url, model, plan, maker, index, load, progress, metrics)

        try:
            with dcgm.step() if dcgm is not None else nullcontext() as reading:
                result, refused, unread = asyncio.run(one())
        except KeyboardInterrupt:
            stopped = f"interrupted (Ctrl-C) during the step at {step_label(*load)}"
            break
        if reading is not None:
            # A timed step's power covers its warm-up and cool-down too: J per token is then the mean
            # power over the steady window's token rate, never the whole step's energy over its tokens.
            timed = plan.duration_s is not None
            result = replace(
                result,
                measured_power=reading.summary(
                    result.duration_s, result.output_tokens, use_counter=not timed
                ),
            )
        if unread and not notes:
            notes.append(f"engine metrics not read: {unread}")
        if refused or result.completed == 0:
            http = [e for e in result.errors if e.startswith("HTTP ")]
            first = (http or list(result.errors) or ["no request completed"])[0]
            stopped = f"step at {step_label(*load)} failed: {first}"
            if result.completed:
                steps.append(result)
            break
        steps.append(result)
    return PilotResult(
        endpoint=endpoint,
        model=model,
        started_at=started,
        plan=plan,
        steps=tuple(steps),
        stopped=stopped,
        notes=tuple(notes),
    )
