"""Validate the request-level simulator against a real server on loopback (issue 29, first "done when").

    nice -n -10 python scripts/simulate_validation.py      # measure (~2 min), save, print the table
    python scripts/simulate_validation.py --requests 40    # a smaller run (what the e2e test does)

The server is `transformers serve` with a tiny random-weight Llama built on the spot
(tests/pilot/tiny_server.py; nothing is downloaded), with one torch compute thread. On a shared
machine other jobs' bursts land in the measured latencies (the simulator cannot know them), so the
saved run was made at raised priority (`nice -n -10`, root). The experiment:

1. Closed loop, to fit the step-time model: one client sends requests back to back at three prompt
   sizes; the mean time to first streamed text against prompt tokens gives prefill time (a line),
   the mean time per output token gives the decode step. `transformers serve` without
   `--continuous-batching` runs `generate` for one request at a time (its sequential
   GenerateManager), so the simulator is given max running sequences = 1; two clients are run as a
   check. The spread of the one-client requests' service times (their coefficient of variation)
   is the simulator's step noise (`EngineSettings.step_cv`): on a shared CPU host the server's
   steps are slowed at random by other processes. A short one-client probe runs again before each
   open-loop rate and joins the fit, so the fit covers the whole run's conditions.
2. Open loop: Poisson arrivals (seeded) at three rates, 25%, 45% and 65% of the fitted capacity,
   each request sent at its scheduled time by the pilot's streaming client.
3. The simulator replays the same send times and token counts (from the server's usage) on the
   fitted table, under 20 seeds of the step noise pooled; p50/p90/p99 of TTFT and of time between
   tokens are compared. Nothing is fitted to the open-loop runs.

`transformers serve` streams text at word boundaries, so one event can carry several tokens; time
between tokens is therefore compared as each request's mean time per output token after the first
(TPOT = (last event - first event) / (tokens - 1)), measured and simulated alike.

The measurements are saved to `src/silica/data/benchmarks/load/loopback_transformers_serve.json`;
`scripts/simulate_docs.py` fits, simulates and writes the table in docs/simulate.md from that file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
DATA = ROOT / "src" / "silica" / "data" / "benchmarks" / "load" / "loopback_transformers_serve.json"
PROMPT_WORDS = (8, 64, 256)  # prefill points
INPUT_WORDS = 24  # the open-loop prompts
OUTPUT_LEN = 16
LOAD_SHARES = (0.25, 0.45, 0.65)  # of the fitted capacity (requests per second)
FIT_REQUESTS = 15  # per closed-loop point
TOLERANCE = {"p50": 0.20, "p90": 0.20, "p99": 0.30}
SIM_SEEDS = 20  # draws of the simulated step noise pooled per rate


async def _closed(
    url: str,
    model: str,
    words: int,
    max_tokens: int,
    concurrency: int,
    n: int,
    extra: dict[str, Any] | None = None,
) -> Any:
    """`concurrency` workers each send the next request when their last one ends; returns the records
    and the wall time. `extra`: fields added to every request body."""
    from silica.pilot.client import RequestRecord, StreamClient, payload_for
    from silica.pilot.prompts import PromptMaker

    prompt = PromptMaker(words, seed=concurrency)  # a fresh draw per request: no shared prefix to cache
    records: list[RequestRecord] = []
    issued = 0

    async with StreamClient(read_timeout_s=30.0) as client:

        async def worker() -> None:
            nonlocal issued
            while issued < n:
                issued += 1
                body = payload_for("chat", model, prompt(0, issued), max_tokens, False) | (extra or {})
                records.append(await client.stream(url, body))

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return records, time.perf_counter() - t0


async def _open(
    url: str,
    model: str,
    arrivals: list[float],
    words: int,
    max_tokens: int,
    extra: dict[str, Any] | None = None,
) -> Any:
    """Send request i at `arrivals[i]` seconds after the start, whatever is still running."""
    from silica.pilot.client import RequestRecord, StreamClient, payload_for
    from silica.pilot.prompts import PromptMaker

    prompt = PromptMaker(words, seed=len(arrivals))
    async with StreamClient(read_timeout_s=60.0) as client:
        t0 = time.perf_counter()

        async def one(i: int, at: float) -> tuple[float, RequestRecord]:
            await asyncio.sleep(max(0.0, t0 + at - time.perf_counter()))
            body = payload_for("chat", model, prompt(1, i), max_tokens, False) | (extra or {})
            rec = await client.stream(url, body)
            return rec.start - t0, rec

        return await asyncio.gather(*(one(i, a) for i, a in enumerate(arrivals)))


def _tpot(rec: Any) -> float | None:
    n = rec.tokens
    if not rec.ok or n < 2 or len(rec.events) < 2:
        return None
    return float((rec.events[-1] - rec.events[0]) / (n - 1))


def _samples(recs: list[Any]) -> list[list[float]]:
    """Per request: prompt tokens, output tokens, TTFT (s), TPOT (s) of the successful ones."""
    return [
        [float(r.prompt_tokens), float(r.tokens), float(r.ttft_s), t]
        for r in recs
        if r.ok and r.prompt_tokens and (t := _tpot(r)) is not None
    ]


def measure(url: str, model: str, *, requests: int, seed: int = 0) -> dict[str, Any]:
    """Run the closed-loop fit points and the open-loop rates against the server at `url`.

    Before each open-loop rate a short closed-loop probe (one client, the load's request shape)
    runs again, so the fit pools step times measured throughout the run, not only before it: on a
    shared machine the server's speed drifts with the other jobs over minutes."""
    from silica.simulate import synthetic

    chat = url + "/v1/chat/completions"
    asyncio.run(_closed(chat, model, INPUT_WORDS, OUTPUT_LEN, 1, 3))  # warm-up
    sizes: list[list[list[float]]] = []
    wall1, n1 = 0.0, 0
    for words in PROMPT_WORDS:
        # The load's own response shape (OUTPUT_LEN tokens): the first event comes once the first
        # whole word is decoded, so "prefill" here is the time to the first streamed text.
        recs, wall = asyncio.run(_closed(chat, model, words, OUTPUT_LEN, 1, FIT_REQUESTS))
        sizes.append(_samples(recs))
        wall1 += wall
        n1 += len(sizes[-1])
    recs, wall2 = asyncio.run(_closed(chat, model, INPUT_WORDS, OUTPUT_LEN, 2, 2 * FIT_REQUESTS))
    pair = _samples(recs)
    throughput = {1: n1 / wall1, 2: len(pair) / wall2}
    # transformers serve without --continuous-batching runs model.generate() for one request at a
    # time on one inference thread (its GenerateManager, transformers/cli/serving/utils.py): the
    # simulator is given max running sequences = 1 by that design. The closed loop is a check only:
    # on a busy 2-core machine the client's own turnaround between requests, which a second client
    # hides, can make two clients look faster than one.
    closed = {
        "sizes": sizes,
        "pair": pair,
        "probes": [],
        "req_per_s": throughput,
        "serialised": True,
        "closed_loop_check": "2 clients faster than 1 by "
        f"{100 * (throughput[2] / throughput[1] - 1):+.0f}% (a batching server would be near +100%)",
    }
    table, _ = fit(closed)
    prompt_tokens = statistics.median(row[0] for row in pair)  # the load's prompt (INPUT_WORDS)
    service_s = table.prefill_s(prompt_tokens) + (OUTPUT_LEN - 1) * table.decode_s(1, 0.0)
    runs = []
    for k, share in enumerate(LOAD_SHARES):
        recs, _ = asyncio.run(_closed(chat, model, INPUT_WORDS, OUTPUT_LEN, 1, FIT_REQUESTS))
        closed["probes"].append(_samples(recs))
        rate = share / service_s
        arrivals = synthetic(rate=rate, n=requests, input_len=1, output_len=1, seed=seed + k).arrival
        sent = asyncio.run(_open(chat, model, arrivals.tolist(), INPUT_WORDS, OUTPUT_LEN))
        rows = [
            [round(t, 6), rec.prompt_tokens, rec.tokens, round(rec.ttft_s, 6), _tpot(rec)]
            for t, rec in sorted(sent, key=lambda x: x[0])
            if rec.ok and rec.prompt_tokens
        ]
        runs.append({"share_of_capacity": share, "rate_req_s": rate, "requests": requests, "rows": rows})
    return {
        "source": "measured by scripts/simulate_validation.py: transformers serve (no continuous batching), "
        "tiny random-weight Llama (2 layers, d 64) on CPU, loopback, pilot streaming client",
        "date": datetime.now(UTC).date().isoformat(),
        "host": f"{platform.machine()} {platform.python_version()}",
        "closed_loop": closed,
        "closed_rows": "prompt_tokens, output_tokens, ttft_s, tpot_s",
        "rows": "sent_s, prompt_tokens, output_tokens, ttft_s, tpot_s",
        "open_loop": runs,
    }


def fit(closed: dict[str, Any], probe: int | None = None) -> tuple[Any, float]:
    """The step table the closed-loop requests give, and the spread of their service times.

    Prefill: a line through the mean time to first text at each prompt size (slope >= 0, so one
    noisy point cannot make a longer prompt faster). Decode: the mean time per output token of one
    client (the server runs one request at a time, so no batch of two is fitted). Means, not
    medians: host noise lengthens the mean, and the mean is what sets the server's load.

    `probe` k: the level from the one-client probe run just before open-loop rate k (the same
    request shape as the load): its mean time per output token is the decode step, and the
    prefill line is moved to pass through its mean time to first text. On a shared machine the
    server's speed drifts over minutes with the other jobs (the probes differ by 2-3x), and the
    probe measures it in the conditions of that rate's run. Without `probe`, every closed-loop
    request is pooled.

    The spread: the coefficient of variation of the one-client probes' service times (TTFT +
    (tokens - 1) x TPOT), each probe about its own mean (RMS over the probes), turned into the
    simulator's step noise (`EngineSettings.step_cv`) that gives that service-time spread.
    Everything comes from closed-loop requests; nothing from the open-loop runs compared.
    """
    import numpy as np

    from silica.simulate import StepTable

    sizes = [np.asarray(rows, dtype=float) for rows in closed["sizes"]]
    probes = [np.asarray(rows, dtype=float) for rows in closed["probes"] if rows]
    tokens = [float(np.median(a[:, 0])) for a in sizes]
    ttfts = [float(a[:, 2].mean()) for a in sizes]
    slope = max(float(np.polyfit(tokens, ttfts, 1)[0]), 0.0)
    intercept = float(np.mean(ttfts)) - slope * float(np.mean(tokens))
    if probe is not None and probe < len(probes):
        level = probes[probe]
        intercept = float(level[:, 2].mean()) - slope * float(np.median(level[:, 0]))
        step = float(level[:, 3].mean())
    else:
        step = float(np.concatenate([*sizes, *probes])[:, 3].mean())
    spreads = []
    for a in probes or sizes[:1]:
        service = a[:, 2] + (a[:, 1] - 1) * a[:, 3]
        spreads.append(float(service.std() / service.mean()))
    spread = float(np.sqrt(np.mean(np.square(spreads))))
    # A one-client request is two engine steps here: its prefill (P) and one run of (tokens - 1)
    # decode steps (R), each scaled by its own noise factor, so its service time spreads less than
    # a step does: CV(P + R) = cv sqrt(P^2 + R^2) / (P + R). The step CV is the one that gives the
    # measured service-time CV (what a closed-loop simulation of the probe reproduces).
    shape = probes[probe if probe is not None and probe < len(probes) else 0] if probes else sizes[0]
    p_s = max(intercept + slope * float(np.median(shape[:, 0])), 1e-6)
    r_s = (float(np.median(shape[:, 1])) - 1) * step
    cv = spread * (p_s + r_s) / float(np.hypot(p_s, r_s))
    table = StepTable.from_measurements(
        "transformers serve (fitted), one request at a time",
        prefill=[(t, max(intercept + slope * t, 1e-6)) for t in tokens],
        decode=[(1, step)],
        kv_tokens=1_000_000,  # CPU memory: the tiny model's KV cache never limits
        max_num_seqs=1,  # transformers serve's sequential GenerateManager (see `measure`)
    )
    return table, cv


def compare(data: dict[str, Any], *, levels: bool = True, noise: bool = True) -> list[dict[str, Any]]:
    """Per rate: measured and simulated p50/p90/p99 of TTFT and TPOT (ms) on the same arrivals.

    `levels`: each rate's step times from the probe before it (else all closed-loop requests
    pooled); `noise`: the fitted step noise (else steps take their mean time every time)."""
    import numpy as np

    from silica.simulate import EngineSettings, Requests, simulate
    from silica.simulate.run import QUANTILES, weighted_percentiles

    out = []
    for k, run in enumerate(data["open_loop"]):
        table, cv = fit(data["closed_loop"], probe=k if levels else None)
        cv = cv if noise else 0.0
        rows = np.asarray([[np.nan if v is None else v for v in row] for row in run["rows"]], dtype=float)
        t = rows[:, 0] - rows[0, 0]
        reqs = Requests(t, rows[:, 1], rows[:, 2], f"replayed loopback run at {run['rate_req_s']:.2f}/s")
        # The same arrivals under SIM_SEEDS draws of the step noise, pooled: the percentiles the
        # simulator expects for these arrivals, not one draw's.
        ttfts, tpots = [], []
        for seed in range(SIM_SEEDS if cv > 0 else 1):
            settings = EngineSettings(max_num_seqs=table.max_num_seqs, step_cv=cv, seed=seed)
            rec = simulate(reqs, table, settings=settings).records
            first, finish = np.asarray(rec.first_token), np.asarray(rec.finish)
            ttfts.append((first - rec.arrival) * 1e3)
            tpots.append((finish - first) / np.maximum(rec.output - 1, 1) * 1e3)
        sim_ttft, sim_tpot = np.concatenate(ttfts), np.concatenate(tpots)

        def pct(x: Any) -> list[float]:
            x = x[np.isfinite(x)]
            return weighted_percentiles(x, None, QUANTILES)

        measured_tpot = rows[:, 4] * 1e3
        out.append(
            {
                "rate": run["rate_req_s"],
                "share": run["share_of_capacity"],
                "n": len(rows),
                "ttft": (pct(rows[:, 3] * 1e3), pct(sim_ttft)),
                "tpot": (pct(measured_tpot), pct(sim_tpot)),
            }
        )
    return out


def errors(result: dict[str, Any]) -> dict[str, float]:
    """Relative error (simulated / measured - 1) per metric and percentile, e.g. 'ttft p90'."""
    errs = {}
    for metric in ("ttft", "tpot"):
        measured, simulated = result[metric]
        for name, m, s in zip(("p50", "p90", "p99"), measured, simulated, strict=True):
            errs[f"{metric} {name}"] = s / m - 1.0
    return errs


def table_text(data: dict[str, Any]) -> str:
    """The doc table: one line per rate and metric, measured vs simulated, and the errors."""
    import numpy as np

    cl = data["closed_loop"]
    table, cv = fit(cl)
    pre = ", ".join(f"{t:.0f} tok {1e3 * s:.1f} ms" for t, s in zip(table.tokens, table.prefill, strict=True))
    rps = ", ".join(f"c={c} {float(v):.1f}/s" for c, v in cl["req_per_s"].items())
    n = sum(len(rows) for rows in cl["sizes"]) + sum(len(rows) for rows in cl["probes"])
    levels = []
    for k, rows in enumerate(cl["probes"]):
        t, _ = fit(cl, probe=k)
        size = float(np.median(np.asarray(rows, dtype=float)[:, 0]))
        levels.append(f"{1e3 * t.decode[0][0]:.2f} ms/token, {1e3 * t.prefill_s(size):.1f} ms to first text")
    lines = [
        f"fit ({n} closed-loop requests, one client), all pooled: prefill {pre}; decode step "
        f"{1e3 * table.decode[0][0]:.2f} ms; requests/s {rps}",
        "server runs one request at a time (transformers serve's sequential GenerateManager): "
        f"max running sequences = 1; closed-loop check: {cl.get('closed_loop_check', 'n/a')}",
        "level from the one-client probe before each rate: " + "; ".join(levels),
        f"step noise: CV {cv:.2f} per step, from the probes' service-time spread ({SIM_SEEDS} draws "
        "pooled per rate)",
        "",
        "rate/s (load)  metric  measured p50/p90/p99 ms   simulated p50/p90/p99 ms  error p50  p90    p99",
    ]
    worst = {"p50": 0.0, "p90": 0.0, "p99": 0.0}
    for r in compare(data):
        errs = errors(r)
        for metric in ("ttft", "tpot"):
            m, s = r[metric]
            e = [errs[f"{metric} {q}"] for q in ("p50", "p90", "p99")]
            for q, v in zip(("p50", "p90", "p99"), e, strict=True):
                worst[q] = max(worst[q], abs(v))
            lines.append(
                f"{r['rate']:5.2f} ({100 * r['share']:.0f}%, n={r['n']:<3}) {metric.upper():<5} "
                f"{m[0]:7.1f} {m[1]:7.1f} {m[2]:7.1f}   {s[0]:7.1f} {s[1]:7.1f} {s[2]:7.1f}     "
                f"{100 * e[0]:+5.0f}% {100 * e[1]:+5.0f}% {100 * e[2]:+5.0f}%"
            )
    lines.append(
        "largest |error|: p50 {:.0f}%, p90 {:.0f}%, p99 {:.0f}% (targets 20%, 20%, 30%); measured {}".format(
            *(100 * worst[q] for q in ("p50", "p90", "p99")), data["date"]
        )
    )
    for what, kw in (
        ("without the step noise", {"noise": False}),
        ("with all closed-loop requests pooled (no level per rate)", {"levels": False}),
        ("with neither (steps at the pooled mean, no noise)", {"levels": False, "noise": False}),
    ):
        worst_of = {
            q: max(abs(e) for r in compare(data, **kw) for k, e in errors(r).items() if k.endswith(q))
            for q in worst
        }
        lines.append(
            f"  {what}: largest |error| p50 {100 * worst_of['p50']:.0f}%, p90 {100 * worst_of['p90']:.0f}%, "
            f"p99 {100 * worst_of['p99']:.0f}%"
        )
    return "\n".join(lines)


def run_experiment(requests: int, seed: int = 0) -> dict[str, Any]:
    """Build the tiny model, start the server, measure, stop it."""
    from tests.pilot.tiny_server import build_tiny_model, start_server, stop_server

    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny_model(Path(tmp) / "tiny-llama")
        proc, url = start_server(model, Path(tmp) / "server.log", threads=1)
        try:
            return measure(url, str(model), requests=requests, seed=seed)
        finally:
            stop_server(proc)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=120, help="requests per rate (default 120)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-save", action="store_true", help="print only; keep the bundled measurements")
    args = ap.parse_args()
    data = run_experiment(args.requests, args.seed)
    if not args.no_save:  # saved before the analysis, so a measurement is never lost to it
        DATA.write_text(json.dumps(data, indent=1) + "\n")
        print(f"saved {DATA.relative_to(ROOT)}; run scripts/simulate_docs.py to update docs/simulate.md")
    print(table_text(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
