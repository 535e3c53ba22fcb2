"""Long work (fleet sweeps, calibration fits) as jobs: `POST` answers 202 at once with a job id, and
`GET /api/v1/jobs/{id}` says queued, running, done (with the result), failed (with the problem) or
cancelled.

Work reports progress through the `JobControl` it is handed (a fraction done and a line saying what),
and each report is also where a cancel or an overrun of the job's time limit takes effect: a thread
cannot be stopped from outside, so a running job stops at its next report (`JobCancelled`). A queued
job is cancelled at once.

One worker thread runs jobs in order, so a burst of sweeps cannot starve the interactive endpoints of
the machine's few cores. Jobs live in memory: a restart forgets them (their results that the library
stores, such as a sweep's scenarios, stay in the store). At most `max_jobs` are kept; the oldest
finished ones go first, and a new job is refused (429) while that many are still queued or running.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from silica.errors import SilicaError
from silica.jsonable import plain
from silica.serve.problems import ProblemError

__all__ = ["Job", "JobCancelled", "JobControl", "Jobs"]

log = logging.getLogger("silica.serve")


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

    def __init__(self, max_jobs: int = 100) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="silica-job")
        self._max = max_jobs

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
        self._pool.submit(self._run, job, work, cleanup)
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
        try:
            job.result = plain(work(JobControl(job)))
            job.progress, job.status = 1.0, "done"
        except JobCancelled as why:
            job.error = {"detail": f"Job {why}.", "problem": f"Job {why}.", "fix": "start it again."}
            job.status = "cancelled"
        except SilicaError as err:
            job.error = {"detail": str(err), "problem": err.problem, "fix": err.fix}
            job.status = "failed"
        except Exception as err:  # a bug: log it, and report only a reference
            ref = uuid.uuid4().hex[:12]
            log.error("internal error %s in job %s", ref, job.id, exc_info=err)
            job.error = {"detail": f"Internal error (log reference {ref}).", "log_ref": ref}
            job.status = "failed"
        finally:
            job.finished = time.time()
            cleanup()

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
        self._pool.shutdown(wait=False, cancel_futures=True)
