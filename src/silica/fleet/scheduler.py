"""Training jobs on the room inference leaves: earliest deadline first, gang-scheduled, preemptible.

The loop visits only steps where something happens (a job arrives or finishes, or the room a policy
leaves for training changes), never each chip and rarely each step, so its cost grows with jobs and
capacity changes, not with fleet size. Rules:

- a job needs all its chips in one pool; waiting jobs are tried in deadline order, and a job that
  fits starts even if an earlier one does not (backfill, no reservations);
- it prefers pools billed whatever it does (not elastic), then the fastest chip, then the most room;
- non-checkpointable jobs only use a pool's floor, the chips inference never claims;
- when room shrinks, checkpointable jobs are preempted, least urgent first; each loses the work since
  its last periodic checkpoint, and every (re)start spends `restart_minutes` loading before progress.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from silica.fleet.jobs import TrainingJob

__all__ = ["Schedule", "schedule"]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Schedule:
    used: IntArray  # chips held by training, per pool (rows) and step (columns)
    finish_step: IntArray  # per job: the step it finished at, -1 if it did not
    first_start: IntArray  # per job: first step it ran, -1 if never
    preemptions: IntArray  # per job
    done_chip_hours: FloatArray  # per job: reference chip-hours of work done, kept or in flight
    lost_chip_hours: float  # chip-hours held without lasting progress (restarts, work since checkpoint)


def schedule(
    jobs: list[TrainingJob],
    train_cap: IntArray,
    floor: IntArray,
    speeds: list[float | None],
    elastic: list[bool],
    step_s: float,
    restart_minutes: float = 10.0,
    checkpoint_minutes: float = 30.0,
) -> Schedule:
    """Run `jobs` on `train_cap[p, t]` chips per pool and step; see the module rules."""
    n_pools, steps = train_cap.shape
    n = len(jobs)
    step_min = step_s / 60.0
    restart = math.ceil(restart_minutes / step_min - 1e-9)
    ckpt = math.ceil(checkpoint_minutes / step_min - 1e-9)
    cap = train_cap.tolist()
    floors = [int(f) for f in floor]
    chips = [j.chips for j in jobs]
    ckptable = [j.checkpointable for j in jobs]
    urgency = [j.deadline_h if j.deadline_h is not None else math.inf for j in jobs]
    remaining = [j.chip_hours * 60.0 for j in jobs]  # reference chip-minutes
    arrival = [math.ceil(j.earliest_start_h * 60.0 / step_min - 1e-9) for j in jobs]
    by_arrival = sorted(range(n), key=lambda j: arrival[j])
    prefer = sorted(
        (p for p in range(n_pools) if speeds[p] is not None),
        key=lambda p: (elastic[p], -(speeds[p] or 0.0), p),
    )
    changes = (np.flatnonzero(np.any(np.diff(train_cap, axis=1) != 0, axis=0)) + 1).tolist()

    used = [0] * n_pools
    fixed_used = [0] * n_pools
    running: list[dict[int, int]] = [{} for _ in range(n_pools)]  # job -> start step
    where = [-1] * n
    rate = [0.0] * n
    version = [0] * n
    finish = [-1] * n
    first = [-1] * n
    preempted = [0] * n
    lost = 0.0
    buckets: list[list[tuple[float, int, int]]] = [[] for _ in range(64)]  # by chips.bit_length()
    queued: dict[int, int] = defaultdict(int)  # chips -> queued jobs of that size
    smallest: list[int] = []  # a heap of the sizes queued (some may have left: see smallest_queued)
    heap: list[tuple[int, int, int]] = []
    snap_steps: list[int] = []
    snaps: list[list[int]] = []
    ai = ci = 0

    def stop(j: int, t: int, keep: bool) -> None:
        nonlocal lost
        p = where[j]
        start = running[p].pop(j)
        ran = t - start
        productive = max(0, ran - restart)
        saved = productive if not keep else (productive // ckpt) * ckpt if ckpt else productive
        if keep:
            remaining[j] = max(0.0, remaining[j] - saved * rate[j])
        lost += (ran - (saved if keep else 0)) * chips[j] * step_min / 60.0
        used[p] -= chips[j]
        if not ckptable[j]:
            fixed_used[p] -= chips[j]
        version[j] += 1
        preempted[j] += 1
        where[j] = -1
        enqueue(j)

    def smallest_queued() -> int:
        while queued[smallest[0]] == 0:
            heapq.heappop(smallest)  # lazily drop sizes no longer queued
        return smallest[0]

    def enqueue(j: int) -> None:
        bisect.insort(buckets[chips[j].bit_length()], (urgency[j], arrival[j], j))
        if queued[chips[j]] == 0:
            heapq.heappush(smallest, chips[j])
        queued[chips[j]] += 1

    def try_start(t: int) -> list[int]:
        """Start what fits at step t, in deadline order over every size that can fit; return each
        pool's free chips afterwards.

        The queue is kept in buckets by size (a bucket holds sizes in [2^(b-1), 2^b)), each in
        deadline order; a pass merges only the buckets whose smallest size fits the largest free room,
        so a nearly full fleet looks at its small jobs, not at every job waiting for a big gap.
        """
        free = [cap[p][t] - used[p] for p in range(n_pools)]
        most = max((free[p] for p in prefer), default=0)
        least = smallest_queued()  # no queued job fits in less: stop scanning once `most` is below it
        if most < least:
            return free  # the common case of a full fleet: O(1), not a pass over a long queue
        merge = [(bucket[0], b, 0) for b, bucket in enumerate(buckets) if bucket and 1 << (b - 1) <= most]
        heapq.heapify(merge)
        started: dict[int, list[int]] = defaultdict(list)
        while merge and most >= least:
            item, b, i = heapq.heappop(merge)
            if 1 << (b - 1) > most:
                continue  # nothing in this bucket fits any more: drop it from the merge
            if i + 1 < len(buckets[b]):
                heapq.heappush(merge, (buckets[b][i + 1], b, i + 1))
            j = item[2]
            need = chips[j]
            if need > most:
                continue
            for p in prefer:
                if free[p] >= need and (ckptable[j] or fixed_used[p] + need <= floors[p]):
                    break
            else:
                continue
            started[b].append(i)
            queued[need] -= 1
            used[p] += need
            free[p] -= need
            if not ckptable[j]:
                fixed_used[p] += need
            most = max((free[q] for q in prefer), default=0)
            running[p][j] = t
            where[j] = p
            rate[j] = need * (speeds[p] or 0.0) * step_min
            if first[j] < 0:
                first[j] = t
            done_at = t + restart + math.ceil(remaining[j] / rate[j] - 1e-9)
            heapq.heappush(heap, (done_at, j, version[j]))
        for b, indices in started.items():
            for index in reversed(indices):  # each bucket's indices were taken in increasing order
                del buckets[b][index]
        return free

    # Free chips per pool after the last pass over the queue. A later step where no job arrived,
    # finished or was preempted and no pool has more room than then cannot start anything that pass
    # did not: skipping it keeps the loop linear in jobs when the room changes every step.
    last_free: list[int] | None = None
    while True:
        t = min(
            arrival[by_arrival[ai]] if ai < n else steps,
            changes[ci] if ci < len(changes) else steps,
            heap[0][0] if heap else steps,
        )
        if t >= steps:
            break
        happened = False
        while heap and heap[0][0] <= t:
            _, j, ver = heapq.heappop(heap)
            if ver == version[j]:
                p = where[j]
                running[p].pop(j)
                used[p] -= chips[j]
                if not ckptable[j]:
                    fixed_used[p] -= chips[j]
                remaining[j] = 0.0
                finish[j] = t
                where[j] = -1
                happened = True
        while ai < n and arrival[by_arrival[ai]] <= t:
            enqueue(by_arrival[ai])
            ai += 1
            happened = True
        while ci < len(changes) and changes[ci] <= t:
            ci += 1
        for p in range(n_pools):
            if used[p] > cap[p][t]:
                victims = sorted(running[p], key=lambda j: (ckptable[j], urgency[j], running[p][j]))
                while used[p] > cap[p][t] and victims:
                    j = victims.pop()
                    stop(j, t, keep=ckptable[j])
                    happened = True
        if any(buckets) and (
            happened or last_free is None or any(cap[p][t] - used[p] > last_free[p] for p in range(n_pools))
        ):
            last_free = try_start(t)
        snap_steps.append(t)
        snaps.append(list(used))

    done = np.array([j.chip_hours for j in jobs], dtype=np.float64)
    for j in range(n):
        if finish[j] < 0:
            in_flight = 0.0
            if where[j] >= 0:
                in_flight = max(0, steps - running[where[j]][j] - restart) * rate[j]
            done[j] -= max(0.0, remaining[j] - in_flight) / 60.0
    return Schedule(
        used=_series(snap_steps, snaps, n_pools, steps),
        finish_step=np.array(finish, dtype=np.int64),
        first_start=np.array(first, dtype=np.int64),
        preemptions=np.array(preempted, dtype=np.int64),
        done_chip_hours=done,
        lost_chip_hours=lost,
    )


def _series(at: list[int], snaps: list[list[int]], n_pools: int, steps: int) -> IntArray:
    """Chips in use per pool and step, from the snapshots taken after each event."""
    if not at:
        return np.zeros((n_pools, steps), dtype=np.int64)
    table = np.vstack([np.zeros((1, n_pools), dtype=np.int64), np.array(snaps, dtype=np.int64)])
    index = np.searchsorted(np.array(at), np.arange(steps), side="right")
    return np.ascontiguousarray(table[index].T)
