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
few of these runs, not one per generated token.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

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

    # -- the load balancer's view
    def add(self, r: int, t: float) -> None:
        if self.t < t:
            self.t = t  # idle until now
        else:
            self.rec.in_system_s += self.t - t  # arrived mid-step: waits for the step to end
        self.waiting.append(r)
        self.outstanding += 1
        self.rec.replica[r] = self.index

    # -- the scheduler
    def _admit(self) -> None:
        rec, waiting, running, prefilling = self.rec, self.waiting, self.running, self.prefilling
        while waiting and len(running) + len(prefilling) < self.max_seqs:
            r = waiting[0]
            need = rec.prompt_n[r] + (self._generated(r) if r in self.left else 0)
            if need + 1 > self.cap:  # can never fit: refused (left unfinished in the records)
                self.waiting.popleft()
                self.outstanding -= 1
                continue
            if self.ctx_sum + self.reserved + need > self.cap:
                return
            self.waiting.popleft()
            if math.isnan(rec.scheduled[r]):
                rec.scheduled[r] = self.t
            if self.prefilled and r not in self.left:
                self._join(r, need, rec.output_n[r] - 1)
                self._record(self.t - rec.first_token[r], 1.0)  # first token -> KV arrived and admitted
                continue
            self.reserved += need
            self.prefilling.append([r, need, need])

    def _generated(self, r: int) -> int:
        """Tokens a preempted request generated before it was evicted (recomputed as prompt)."""
        return self.rec.output_n[r] - self.left[r] - 1 if r in self.left else 0

    def _record(self, gap: float, tokens: float) -> None:
        self.rec.gap_s.append(gap)
        self.rec.gap_n.append(tokens)

    def _account(self, dt: float) -> None:
        self.busy_s += dt
        used = self.ctx_sum + self.reserved
        self.kv_token_s += used * dt
        if used > self.kv_peak:
            self.kv_peak = used
        self.rec.in_system_s += dt * self.outstanding

    def _finish(self, r: int, t: float) -> None:
        self.rec.finish[r] = t
        self.outstanding -= 1
        self.done += 1
        self.finished.append(r)

    def _preempt(self) -> None:
        r = self.running.pop()
        gen = self.steps - self.join[r]
        self.ctx_sum -= self.context0[r] + gen
        self.left[r] -= gen
        self.rec.preemptions[r] += 1
        self.preempted_at[r] = self.t
        del self.join[r]
        self.waiting.appendleft(r)

    def _pop_finished(self) -> None:
        heap = self.finish_at
        while heap and heap[0][0] <= self.steps:
            g, r = heapq.heappop(heap)
            j = self.join.get(r)
            if j is None or j + self.left[r] != g:
                continue  # stale: the request was preempted after this entry was made
            if self.running[-1] == r:
                self.running.pop()
            else:
                self.running.remove(r)
            self.ctx_sum -= self.context0[r] + (g - j)
            del self.join[r], self.context0[r], self.left[r]
            self._finish(r, self.t)

    def _mixed_step(self) -> None:
        """One step that prefills (chunks of) waiting prompts alongside the running decodes."""
        rec, b = self.rec, len(self.running)
        room = self.budget - b
        chunk = 0
        done: list[list[int]] = []
        for item in self.prefilling:
            if room <= 0:
                break
            take = item[1] if item[1] < room else room
            chunk += take
            room -= take
            item[1] -= take
            if item[1] == 0:
                done.append(item)
        dt = self.table.mixed_s(chunk, b, self.ctx_sum / b if b else 0.0)
        self.busy_s += dt
        used = self.ctx_sum + self.reserved
        self.kv_token_s += used * dt
        if used > self.kv_peak:
            self.kv_peak = used
        rec.in_system_s += dt * self.outstanding
        self.t += dt
        self.n_steps += 1
        if b:
            rec.gap_s.append(dt)
            rec.gap_n.append(b)
            self.steps += 1
            self.ctx_sum += b
        for item in done:
            self.prefilling.popleft()  # completed chunks are always at the front
            r, need = item[0], item[2]
            self.reserved -= need
            if math.isnan(rec.first_token[r]):
                rec.first_token[r] = self.t
            elif r in self.preempted_at:
                self._record(self.t - self.preempted_at.pop(r), 1.0)
            self._join(r, need, self.left.get(r, rec.output_n[r] - 1))
        if self.finish_at and self.finish_at[0][0] <= self.steps:
            self._pop_finished()

    def _join(self, r: int, context: int, left: int) -> None:
        """Request `r`, its prompt in the KV cache, joins the decoding batch with `left` tokens to go."""
        if left <= 0:
            self.left.pop(r, None)
            self._finish(r, self.t)
            return
        self.left[r] = left
        self.join[r] = self.steps
        self.context0[r] = context
        self.ctx_sum += context
        self.running.append(r)
        heapq.heappush(self.finish_at, (self.steps + left, r))

    def run(self, horizon: float) -> None:
        """Advance until idle or until the clock reaches `horizon`."""
        decode_s = self.table.decode_s
        while self.t < horizon:
            if self.waiting:
                self._admit()
            b = len(self.running)
            if self.prefilling:
                while b and self.ctx_sum + self.reserved + b > self.cap:
                    self._preempt()
                    b -= 1
                self._mixed_step()
                continue
            if not b:
                return  # idle: nothing admitted and nothing running
            # KV room for the next decode step
            while b and self.ctx_sum + b > self.cap:
                self._preempt()
                b -= 1
            if not b:
                continue
            # A run of identical decode steps up to the next finish, a full cache or the horizon.
            k = self.finish_at[0][0] - self.steps
            room = (self.cap - self.ctx_sum - self.reserved) // b
            if room < k:
                k = max(int(room), 1)
            mean_ctx = self.ctx_sum / b
            dt = decode_s(b, mean_ctx + k / 2.0)
            # A blocked queue stays blocked until a finish; otherwise stop at the next arrival.
            if not self.waiting and self.t + k * dt > horizon:
                k = max(1, math.ceil((horizon - self.t) / dt))
            span = k * dt
            self.busy_s += span
            used = self.ctx_sum + self.reserved
            self.kv_token_s += (used + b * k / 2.0) * span
            self.kv_peak = max(self.kv_peak, used + b * k)
            self.rec.in_system_s += span * self.outstanding
            self.t += span
            self.steps += k
            self.ctx_sum += b * k
            self.n_steps += k
            self.rec.gap_s.append(dt)
            self.rec.gap_n.append(b * k)
            if self.finish_at[0][0] <= self.steps:
                self._pop_finished()
