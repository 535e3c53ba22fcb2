"""Long work (fleet sweeps, calibration fits) as jobs: `POST` answers 202 at once with a job id, and
`GET /api/v1/jobs/{id}` says queued, running, done (with the result), failed (with the problem) or
cancelled.

Work reports progress through the `JobControl` it is handed (a fraction done and a line saying what),
and each report is also where a cancel or an overrun of the job's time limit takes effect: a thread
cannot be stopped from outside, so a running job stops at its next report (`JobCancelled`). A queued
job is cancelled at once.

One worker thread runs jobs in order, so a burst of sweeps cannot starve the interactive endpoints of
the machine's few cores. A job that runs `GRACE_S` past its time limit without reaching a report (one
long step of its work) is given up: it is marked cancelled, its result will be dropped, and a fresh
worker takes the queue, so one stuck job cannot block the others (the old thread ends on its own). Jobs live in memory: a restart forgets them (their results that the library
stores, such as a sweep's scenarios, stay in the store). At most `max_jobs` are kept; the oldest
finished ones go first, and a new job is refused (429) while that many are still queued or running.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from silica.errors import SilicaError
from silica.jsonable import plain
from silica.serve.problems import ProblemError

__all__ = ["Job", "JobCancelled", "JobControl", "Jobs"]

log = logging.getLogger("silica.serve")
GRACE_S = 10.0  # past its time limit, a job that has not stopped at a report is given up


class JobCancelled(Exception):
    """Raised inside a job's work at its next progress report once it is cancelled or over its time."""


@dataclass
class Job:
    id: str
    kind: str
    name: str
    status: str = "queued"  # queued -> running -> done | failed | cancelled
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    result: Any = None
    error: dict[str, Any] | None = None
    progress: float | None = None  # 0..1 once the work reports it; unknown stays None
    stage: str = ""  # what the work is doing now, in its own words
    timeout_s: float | None = None
    cancel_requested: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "status": self.status,
            "submitted": self.submitted,
            "started": self.started,
            "finished": self.finished,
            "status_url": f"/api/v1/jobs/{self.id}",
            "result": self.result,
            "error": self.error,
            "progress": self.progress,
            "stage": self.stage,
            "timeout_s": self.timeout_s,
            "cancel_requested": self.cancel_requested,
        }


@dataclass
class JobControl:
    """What a job's work holds: report progress, and be stopped there when cancelled or overdue."""

    job: Job

    def report(self, done: float | None, stage: str = "") -> None:
        """Progress `done` in 0..1 (None: unknown) and what is being done; raises `JobCancelled` when
        the job was cancelled or has run past its time limit."""
        job = self.job
        if done is not None:
            job.progress = min(1.0, max(0.0, float(done)))
        if stage:
            job.stage = stage
        if job.cancel_requested:
            raise JobCancelled("cancelled by a user")
        started, limit = job.started, job.timeout_s
        if limit is not None and started is not None and time.time() - started > limit:
            raise JobCancelled(f"stopped after its time limit of {job.timeout_s:,.0f} s")


class Jobs:
    """The server's job table and its single worker."""

    def __init__(self, max_jobs: int = 100, grace_s: float = GRACE_S) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[Job, Callable[[JobControl], Any], Callable[[], None]] | None]
        self._queue = queue.Queue()
        self._max = max_jobs
        self._grace = grace_s
        self._generation = 0  # bumped when a stuck job is given up: that job's worker then retires
        self._start_worker()

    def _start_worker(self) -> None:
        generation = self._generation
        threading.Thread(
            target=self._worker, args=(generation,), daemon=True, name=f"silica-job-{generation}"
        ).start()

    def _worker(self, generation: int) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._run(*item)
            if generation != self._generation:
                return  # given up while stuck: a fresh worker has the queue now

    def submit(
        self,
        kind: str,
        name: str,
        work: Callable[[JobControl], Any],
        cleanup: Callable[[], None],
        timeout_s: float | None = None,
    ) -> Job:
        with self._lock:
            active = sum(j.status in ("queued", "running") for j in self._jobs.values())
            if active >= self._max:
                cleanup()
                raise ProblemError(
                    429, f"{active} jobs are already queued or running.", "wait for some to finish."
                )
            while len(self._jobs) >= self._max:
                oldest = next(k for k, j in self._jobs.items() if j.status in ("done", "failed", "cancelled"))
                del self._jobs[oldest]
            job = Job(id=uuid.uuid4().hex[:16], kind=kind, name=name, timeout_s=timeout_s)
            self._jobs[job.id] = job
        self._queue.put((job, work, cleanup))
        return job

    def cancel(self, job_id: str) -> Job:
        """Cancel a job: a queued one never starts; a running one stops at its next progress report;
        a finished one is left as it is (a 409 says so)."""
        job = self.get(job_id)
        with self._lock:
            if job.status in ("done", "failed", "cancelled"):
                raise ProblemError(409, f"Job {job_id} has already {job.status}.", "nothing to cancel.")
            job.cancel_requested = True
            if job.status == "queued":
                job.status, job.finished = "cancelled", time.time()
                job.error = {"detail": "Cancelled before it started."}
        return job

    def _run(self, job: Job, work: Callable[[JobControl], Any], cleanup: Callable[[], None]) -> None:
        with self._lock:
            if job.status == "cancelled":
                cleanup()
                return
            job.status, job.started = "running", time.time()
        watchdog = None
        if job.timeout_s is not None:
            watchdog = threading.Timer(job.timeout_s + self._grace, self._give_up, args=(job,))
            watchdog.daemon = True
            watchdog.start()
        status, result = "failed", None
        error: dict[str, Any] | None = None
        try:
            result = plain(work(JobControl(job)))
            status = "done"
        except JobCancelled as why:
            error = {"detail": f"Job {why}.", "problem": f"Job {why}.", "fix": "start it again."}
            status = "cancelled"
        except SilicaError as err:
            error = {"detail": str(err), "problem": err.problem, "fix": err.fix}
        except Exception as err:  # a bug: log it, and report only a reference
            ref = uuid.uuid4().hex[:12]
            log.error("internal error %s in job %s", ref, job.id, exc_info=err)
            error = {"detail": f"Internal error (log reference {ref}).", "log_ref": ref}
        finally:
            if watchdog is not None:
                watchdog.cancel()
            with self._lock:
                if job.status == "running":  # not given up meanwhile: its outcome stands
                    job.result, job.error, job.status = result, error, status
                    if status == "done":
                        job.progress = 1.0
                    job.finished = time.time()
            cleanup()

    def _give_up(self, job: Job) -> None:
        """The watchdog: a job still running `grace` past its time limit never reached a report."""
        with self._lock:
            if job.status != "running":
                return
            limit = (
                f"{job.timeout_s:,.0f} s" if job.timeout_s and job.timeout_s >= 1 else f"{job.timeout_s} s"
            )
            detail = (
                f"Job stopped after its time limit of {limit}: it did not reach a progress report, so it "
                "was given up and its result will be dropped."
            )
            job.status, job.finished, job.cancel_requested = "cancelled", time.time(), True
            job.error = {"detail": detail, "problem": detail, "fix": "start it again with less work."}
            self._generation += 1
        log.warning("job %s given up after its time limit; a fresh worker takes the queue", job.id)
        self._start_worker()

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise ProblemError(404, f"No job {job_id!r}.", "use the id a POST to /api/v1/jobs/... returned.")
        return job

    def list(self) -> list[Job]:
        with self._lock:
            return list(reversed(self._jobs.values()))

    def close(self) -> None:
        """Stop taking jobs: queued ones are dropped (their files removed), running ones end alone."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[2]()
        self._queue.put(None)
