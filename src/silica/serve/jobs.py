"""Long work (fleet sweeps, calibration fits) as jobs: `POST` answers 202 at once with a job id, and
`GET /api/v1/jobs/{id}` says queued, running, done (with the result) or failed (with the problem).

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

__all__ = ["Job", "Jobs"]

log = logging.getLogger("silica.serve")


@dataclass
class Job:
    id: str
    kind: str
    name: str
    status: str = "queued"  # queued -> running -> done | failed
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    result: Any = None
    error: dict[str, Any] | None = None

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
        }


class Jobs:
    """The server's job table and its single worker."""

    def __init__(self, max_jobs: int = 100) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="silica-job")
        self._max = max_jobs

    def submit(self, kind: str, name: str, work: Callable[[], Any], cleanup: Callable[[], None]) -> Job:
        with self._lock:
            active = sum(j.status in ("queued", "running") for j in self._jobs.values())
            if active >= self._max:
                cleanup()
                raise ProblemError(
                    429, f"{active} jobs are already queued or running.", "wait for some to finish."
                )
            while len(self._jobs) >= self._max:
                oldest = next(k for k, j in self._jobs.items() if j.status in ("done", "failed"))
                del self._jobs[oldest]
            job = Job(id=uuid.uuid4().hex[:16], kind=kind, name=name)
            self._jobs[job.id] = job
        self._pool.submit(self._run, job, work, cleanup)
        return job

    def _run(self, job: Job, work: Callable[[], Any], cleanup: Callable[[], None]) -> None:
        job.status, job.started = "running", time.time()
        try:
            job.result = plain(work())
            job.status = "done"
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
