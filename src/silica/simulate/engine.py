"""The event-driven serving engine: continuous batching with chunked prefill, one replica at a time.

Each replica follows the scheduler the open engines share (vLLM V1, SGLang, TensorRT-LLM's
in-flight batching, NxD Inference's continuous batching): every step, the running sequences each
decode one token and the remaining token budget (`max_batched_tokens`) prefills waiting prompts in
arrival order, in chunks. A request is admitted when fewer than `max_num_seqs` sequences are in the
engine and the KV cache has room for its prompt; when a decode step would overflow the cache the
most recently admitted sequence is preempted and later recomputed (vLLM's default, recompute).

Speed: between two events (an arrival the engine could admit, a sequence finishing, the cache
filling) the batch does not change, so the engine advances a whole run of identical decode steps
at once, charging each the step time at the run's mid context. A replica's work per request is a
few of these runs, not one per generated token. The scheduler runs as one loop over local variables
(`Replica.serve`), fed a replica's whole share of the arrivals when the balancer does not need to
look at the replicas (round robin, one replica): 124,000 to 147,000 simulated requests per
CPU-second on the 2-core development machine (benchmarks/simulate_speed.py).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from silica.errors import InputError
from silica.simulate.steptime import StepTable

__all__ = ["EngineSettings", "Records", "Replica"]

Array = NDArray[np.float64]
INF = math.inf


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Scheduler limits. Defaults: vLLM V1's for online serving on GPUs below H100-class
    (`max_num_seqs` 256, `max_num_batched_tokens` 2048, chunked prefill on; vLLM engine arguments)."""

    max_num_seqs: int = 256
    max_batched_tokens: int = 2048
    # Host interference: each step (or run of identical decode steps) takes its table time times an
    # independent lognormal factor of mean 1 and this coefficient of variation. 0 on a dedicated
    # accelerator host; on a shared CPU host, the spread of closed-loop request times (a server's
    # steps are then slowed at random by other processes, and by its own front end holding the GIL).
    step_cv: float = 0.0
    seed: int = 0  # of the step factors
    # Share of each prompt's tokens found in the prefix cache (vLLM's automatic prefix caching): they
    # are not recomputed (at least one token always is). Their KV blocks still count against each
    # sequence's room (shared blocks counted once per sequence: conservative on memory).
    prefix_hit: float = 0.0
    # How a sequence evicted for KV room comes back: "recompute" (vLLM's default: its prompt and
    # generated tokens are prefilled again) or "swap" (its KV cache is copied to host memory and
    # back over a link of `swap_bytes_per_s`, stalling the engine for each copy; host memory is
    # taken as large enough).
    preemption: str = "recompute"
    swap_bytes_per_s: float = 0.0


class Records:
    """Per-request outcomes and the engine-wide tallies, filled in by the replicas.

    The engine writes Python lists (element access on numpy arrays costs more than the rest of a
    step); `array` turns one into an array for the summary."""

    def __init__(self, arrival: Array, prompt: Array, output: Array) -> None:
        n = len(arrival)
        self.arrival = arrival
        self.prompt = prompt
        self.output = output
        self.prompt_n: list[int] = [int(x) for x in prompt.tolist()]
        self.output_n: list[int] = [int(x) for x in output.tolist()]
        nan = math.nan
        self.scheduled: list[float] = [nan] * n  # first step that worked on the request
        self.first_token: list[float] = [nan] * n
        self.finish: list[float] = [nan] * n
        self.replica: list[int] = [-1] * n
        self.preemptions: list[int] = [0] * n
        self.gap_s: list[float] = []  # time between tokens: value ...
        self.gap_n: list[float] = []  # ... and how many tokens saw it
        self.in_system_s = 0.0  # integral over time of the requests in the engines (Little's law)
        self.front_s = 0.0  # each request's fixed time before the engine sees it (`StepTable.request_s`)

    @staticmethod
    def array(values: list[float] | list[int]) -> Array:
        return np.asarray(values, dtype=np.float64)


class Replica:
    """One engine replica. `add` hands it a request at its arrival; `run(h)` advances it until it is
    idle or its clock reaches `h` (the next arrival anywhere), so replicas behind a load balancer
    stay in step with the arrivals."""

    def __init__(
        self, index: int, table: StepTable, settings: EngineSettings, rec: Records, *, prefilled: bool = False
    ) -> None:
        self.index = index
        # A decode replica of a disaggregated deployment: prompts arrive with their KV cache already
        # computed (and the first token generated) by a prefill replica.
        self.prefilled = prefilled
        self.table = table
        self.max_seqs = min(settings.max_num_seqs, table.max_num_seqs)
        self.budget = settings.max_batched_tokens
        self.cap = table.kv_tokens
        self.rec = rec
        self.t = 0.0
        self.waiting: deque[int] = deque()
        self.prefilling: deque[list[int]] = deque()  # [request, prompt tokens left, prompt tokens]
        self.running: list[int] = []  # admission order (the last is preempted first)
        self.finish_at: list[tuple[int, int]] = []  # heap of (decode step count, request)
        self.join: dict[int, int] = {}  # request -> decode step count when it joined
        self.context0: dict[int, int] = {}  # request -> its KV tokens when it joined
        self.left: dict[int, int] = {}  # request -> tokens still to generate after its prefill
        self.preempted_at: dict[int, float] = {}
        self.steps = 0  # decode step counter G
        self.ctx_sum = 0  # KV tokens of the running sequences
        self.reserved = 0  # KV tokens reserved for prompts being prefilled
        self.busy_s = 0.0
        self.kv_token_s = 0.0  # integral of KV tokens in use over busy time
        self.kv_peak = 0
        self.outstanding = 0
        self.done = 0
        self.finished: list[int] = []  # requests in the order they finished (closed-loop clients)
        self.n_steps = 0
        self.step_cv = settings.step_cv
        self.hit = settings.prefix_hit
        self.swap_s = 0.0  # seconds to copy one token's KV cache to or from host memory
        if settings.preemption == "swap":
            per_token = table.kv_bytes_per_token
            if not (per_token > 0 and math.isfinite(per_token)):
                raise InputError(
                    f"{table.label}: swap preemption needs the KV bytes per token, which this table lacks.",
                    "use recompute preemption with a measured step table.",
                )
            self.swap_s = per_token / settings.swap_bytes_per_s
        self.swapped: dict[int, int] = {}  # request -> KV tokens held in host memory
        self._rng = np.random.default_rng((settings.seed, index)) if settings.step_cv > 0 else None
        self._factors: list[float] = []

    def _draw(self) -> list[float]:
        """The next block of step-time factors (lognormal, mean 1, CV `step_cv`), taken by pop()."""
        assert self._rng is not None
        sigma2 = math.log1p(self.step_cv**2)
        block: list[float] = self._rng.lognormal(-sigma2 / 2.0, math.sqrt(sigma2), 4096).tolist()
        return block

    # -- the load balancer's view
    def add(self, r: int, t: float) -> None:
        if self.t < t:
            self.t = t  # idle until now
        else:
            self.rec.in_system_s += self.t - t  # arrived mid-step: waits for the step to end
        self.waiting.append(r)
        self.outstanding += 1
        self.rec.replica[r] = self.index

    def run(self, horizon: float) -> None:
        """Advance until idle or until the clock reaches `horizon`."""
        self.serve((), (), horizon)

    def serve(self, ids: Sequence[int], times: Sequence[float], horizon: float = INF) -> None:
        """Take requests `ids` at their arrival `times` (sorted), then run until idle or `horizon`.

        The same as `run(t); add(r, t)` for each arrival and `run(horizon)` after the last, in one
        loop over local variables: the per-step work is a few list and arithmetic operations, and
        the attribute look-ups and calls of a method per scheduler phase would cost more than it.
        A replica that receives its arrivals without looking at the others (round robin, or one
        replica) is driven this way, once, over all its requests.
        """
        rec, table = self.rec, self.table
        prompt_n, output_n = rec.prompt_n, rec.output_n
        first_token, scheduled, finish = rec.first_token, rec.scheduled, rec.finish
        preemptions, replica_of = rec.preemptions, rec.replica
        gap_s, gap_n = rec.gap_s, rec.gap_n
        waiting, prefilling, running = self.waiting, self.prefilling, self.running
        heap, join, context0, left, preempted_at = (
            self.finish_at,
            self.join,
            self.context0,
            self.left,
            self.preempted_at,
        )
        finished = self.finished
        # Step times: `StepTable.decode_s` and `mixed_s`, inlined below (a call per step costs as much
        # as the interpolation itself); tests/simulate check the two agree.
        ctxs, rows, toks, pre = table.contexts, table.decode, table.tokens, table.prefill
        seq_s = table.seq_step_s
        c_last, t_last = len(ctxs) - 1, len(toks) - 1
        top_row = table.max_num_seqs - 1
        bisect = bisect_left
        noisy, factors = self._rng is not None, self._factors
        hit, swap_s, swapped = self.hit, self.swap_s, self.swapped
        cap, budget, max_seqs, prefilled, index = (
            self.cap,
            self.budget,
            self.max_seqs,
            self.prefilled,
            self.index,
        )
        heappush, heappop = heapq.heappush, heapq.heappop
        t, steps, ctx_sum, reserved = self.t, self.steps, self.ctx_sum, self.reserved
        busy, kv_s, kv_peak, in_sys = self.busy_s, self.kv_token_s, self.kv_peak, rec.in_system_s
        outstanding, done_n, n_steps = self.outstanding, self.done, self.n_steps

        n, i = len(ids), 0
        h = times[0] if n else horizon
        while True:
            while t < h:
                if waiting:  # admit in arrival order while a sequence slot and KV room last
                    while waiting and len(running) + len(prefilling) < max_seqs:
                        r = waiting[0]
                        if r in swapped:  # swap preemption: its KV cache comes back from host memory
                            need = swapped[r]
                            if ctx_sum + reserved + need > cap:
                                break
                            waiting.popleft()
                            del swapped[r]
                            dt = need * swap_s
                            busy += dt
                            kv_s += (ctx_sum + reserved) * dt
                            in_sys += dt * outstanding
                            t += dt
                            join[r] = steps
                            context0[r] = need
                            ctx_sum += need
                            running.append(r)
                            heappush(heap, (steps + left[r], r))
                            gap_s.append(t - preempted_at.pop(r))
                            gap_n.append(1.0)
                            continue
                        resumed = r in left
                        need = prompt_n[r] + (output_n[r] - left[r] - 1 if resumed else 0)
                        if need + 1 > cap:  # can never fit: refused (left unfinished in the records)
                            waiting.popleft()
                            outstanding -= 1
                            continue
                        if ctx_sum + reserved + need > cap:
                            break
                        waiting.popleft()
                        if scheduled[r] != scheduled[r]:  # nan: first time scheduled
                            scheduled[r] = t
                        if prefilled and not resumed:
                            # KV computed by a prefill replica: joins the decodes at once
                            togo = output_n[r] - 1
                            if togo <= 0:
                                finish[r] = t
                                outstanding -= 1
                                done_n += 1
                                finished.append(r)
                            else:
                                left[r] = togo
                                join[r] = steps
                                context0[r] = need
                                ctx_sum += need
                                running.append(r)
                                heappush(heap, (steps + togo, r))
                            gap_s.append(t - first_token[r])  # first token -> KV arrived and admitted
                            gap_n.append(1.0)
                            continue
                        reserved += need
                        if hit:
                            compute = need - int(prompt_n[r] * hit)
                            prefilling.append([r, compute if compute > 1 else 1, need])
                        else:
                            prefilling.append([r, need, need])
                b = len(running)
                if not prefilling and not b:
                    break  # idle: nothing admitted and nothing running
                # KV room for this step (prompts admitted to it hold `reserved`): preempt the newest
                held = reserved if prefilling else 0
                while b and ctx_sum + held + b > cap:
                    r = running.pop()
                    gen = steps - join[r]
                    ctx = context0[r] + gen
                    ctx_sum -= ctx
                    left[r] -= gen
                    preemptions[r] += 1
                    preempted_at[r] = t
                    del join[r]
                    if swap_s:  # its KV cache goes to host memory: the copy stalls the engine
                        swapped[r] = ctx
                        dt = ctx * swap_s
                        busy += dt
                        kv_s += (ctx_sum + reserved) * dt
                        in_sys += dt * outstanding
                        t += dt
                    waiting.appendleft(r)
                    b -= 1
                if prefilling:
                    # one step that prefills (chunks of) waiting prompts alongside the running decodes
                    room = budget - b
                    chunk = 0
                    completed = 0
                    for item in prefilling:
                        if room <= 0:
                            break
                        take = item[1] if item[1] < room else room
                        chunk += take
                        room -= take
                        item[1] -= take
                        if item[1] == 0:
                            completed += 1
                    if b == 0 or chunk > 0:  # prefill of the chunk and the decodes' new tokens
                        x = chunk + b
                        j = bisect(toks, x)
                        if j <= 0:
                            dt = pre[0]
                        else:
                            if j > t_last:
                                j = t_last
                            x0 = toks[j - 1]
                            dt = pre[j - 1] + (pre[j] - pre[j - 1]) * (x - x0) / (toks[j] - x0)
                    else:
                        dt = 0.0
                    if b:  # the decodes' KV-cache reads beyond an empty context
                        row = rows[b - 1 if b <= top_row else top_row]
                        c = ctx_sum / b
                        j = bisect(ctxs, c)
                        if j <= 0:
                            d = row[0]
                        else:
                            if j > c_last:
                                j = c_last
                            x0 = ctxs[j - 1]
                            d = row[j - 1] + (row[j] - row[j - 1]) * (c - x0) / (ctxs[j] - x0)
                        if chunk <= 0:
                            dt = d
                        else:
                            if d > row[0]:
                                dt += d - row[0]
                            dt += seq_s * b
                    if noisy:
                        if not factors:
                            factors = self._factors = self._draw()
                        dt *= factors.pop()
                    busy += dt
                    used = ctx_sum + reserved
                    kv_s += used * dt
                    if used > kv_peak:
                        kv_peak = used
                    in_sys += dt * outstanding
                    t += dt
                    n_steps += 1
                    if b:
                        gap_s.append(dt)
                        gap_n.append(b)
                        steps += 1
                        ctx_sum += b
                    for _ in range(completed):  # completed prompts are always at the front
                        r, _left, need = prefilling.popleft()
                        reserved -= need
                        if first_token[r] != first_token[r]:
                            first_token[r] = t
                        elif r in preempted_at:
                            gap_s.append(t - preempted_at.pop(r))
                            gap_n.append(1.0)
                        togo = left.get(r, output_n[r] - 1)
                        if togo <= 0:
                            left.pop(r, None)
                            finish[r] = t
                            outstanding -= 1
                            done_n += 1
                            finished.append(r)
                            continue
                        left[r] = togo
                        join[r] = steps
                        context0[r] = need
                        ctx_sum += need
                        running.append(r)
                        heappush(heap, (steps + togo, r))
                else:
                    if not b:
                        continue
                    # A run of identical decode steps up to the next finish, a full cache or the horizon.
                    k = heap[0][0] - steps
                    room = (cap - ctx_sum - reserved) // b
                    if room < k:
                        k = room if room > 1 else 1
                    row = rows[b - 1 if b <= top_row else top_row]
                    c = ctx_sum / b + k / 2.0  # the run's mid context
                    j = bisect(ctxs, c)
                    if j <= 0:
                        dt = row[0]
                    else:
                        if j > c_last:
                            j = c_last
                        x0 = ctxs[j - 1]
                        dt = row[j - 1] + (row[j] - row[j - 1]) * (c - x0) / (ctxs[j] - x0)
                    if noisy:
                        if not factors:
                            factors = self._factors = self._draw()
                        dt *= factors.pop()
                    # A blocked queue stays blocked until a finish; otherwise stop at the next arrival.
                    if not waiting and t + k * dt > h:
                        k = max(1, math.ceil((h - t) / dt))
                    span = k * dt
                    busy += span
                    used = ctx_sum + reserved
                    kv_s += (used + b * k / 2.0) * span
                    if used + b * k > kv_peak:
                        kv_peak = used + b * k
                    in_sys += span * outstanding
                    t += span
                    steps += k
                    ctx_sum += b * k
                    n_steps += k
                    gap_s.append(dt)
                    gap_n.append(b * k)
                while heap and heap[0][0] <= steps:  # sequences that generated their last token
                    g, r = heappop(heap)
                    joined = join.get(r)
                    if joined is None or joined + left[r] != g:
                        continue  # stale: the request was preempted after this entry was made
                    if running[-1] == r:
                        running.pop()
                    else:
                        running.remove(r)
                    ctx_sum -= context0[r] + (g - joined)
                    del join[r], context0[r], left[r]
                    finish[r] = t
                    outstanding -= 1
                    done_n += 1
                    finished.append(r)
            if i == n:
                break
            r, ta = ids[i], times[i]  # the next arrival
            if t < ta:
                t = ta  # idle until now
            else:
                in_sys += t - ta  # arrived mid-step: waits for the step to end
            waiting.append(r)
            outstanding += 1
            replica_of[r] = index
            i += 1
            h = times[i] if i < n else horizon

        self.t, self.steps, self.ctx_sum, self.reserved = t, steps, ctx_sum, reserved
        self.busy_s, self.kv_token_s, self.kv_peak, rec.in_system_s = busy, kv_s, kv_peak, in_sys
        self.outstanding, self.done, self.n_steps = outstanding, done_n, n_steps
