"""Training demand as jobs: chips x hours, earliest start, deadline, and whether it can be preempted.

A job's size is gang-scheduled: it runs on `chips` chips of one pool or not at all. Its work is
`chips x hours` chip-hours on the fleet's reference training chip; a faster chip finishes it sooner
in proportion to the performance model's training tokens/s per chip. Checkpointable jobs can run on
capacity lent by inference and be preempted; the others only run where nothing will take it back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from silica.errors import InputError
from silica.fleet.traces import PhillyJobs

__all__ = ["TrainingJob", "from_philly"]


@dataclass(frozen=True, slots=True)
class TrainingJob:
    """One training job. Times are hours from the start of the simulation."""

    name: str
    chips: int
    hours: float  # run time at `chips` chips of the reference chip, without interruptions
    earliest_start_h: float = 0.0
    deadline_h: float | None = None
    checkpointable: bool = True

    def __post_init__(self) -> None:
        if self.chips < 1:
            raise InputError(f"Job {self.name!r}: chips must be at least 1, got {self.chips}.", None)
        if not (self.hours > 0 and math.isfinite(self.hours)):
            raise InputError(f"Job {self.name!r}: hours must be positive, got {self.hours}.", None)
        if self.earliest_start_h < 0:
            raise InputError(f"Job {self.name!r}: earliest start must be 0 or later.", None)
        if self.deadline_h is not None and self.deadline_h <= self.earliest_start_h:
            raise InputError(
                f"Job {self.name!r}: deadline {self.deadline_h:g} h is not after its earliest start "
                f"{self.earliest_start_h:g} h.",
                "move the deadline later or the earliest start earlier.",
            )

    @property
    def chip_hours(self) -> float:
        return self.chips * self.hours

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "chips": self.chips,
            "hours": self.hours,
            "chip_hours": self.chip_hours,
            "earliest_start_h": self.earliest_start_h,
            "deadline_h": self.deadline_h,
            "checkpointable": self.checkpointable,
        }


def from_philly(
    trace: PhillyJobs,
    *,
    start: datetime | None = None,
    days: float = 7.0,
    chips_per_gpu: float = 1.0,
    speedup: float = 1.0,
    deadline_slack: float | None = None,
    checkpointable: bool = True,
    max_jobs: int | None = None,
) -> list[TrainingJob]:
    """Jobs submitted in [start, start + days), in submit order, as `TrainingJob`s.

    Philly has no deadlines and no checkpoint flags: a deadline, if wanted, is submit + slack x run
    time, and every job gets the same `checkpointable`. A Philly GPU (K80/P100-era, 2017) becomes
    `chips_per_gpu` chips, and its recorded run time is divided by `speedup`: both are the user's
    stated assumptions, since the trace cannot say how a 2017 job would run on today's chips.
    """
    if chips_per_gpu <= 0 or speedup <= 0:
        raise InputError("chips_per_gpu and speedup must be positive.", "use e.g. 1.0.")
    if deadline_slack is not None and deadline_slack < 1:
        raise InputError(f"deadline_slack must be at least 1, got {deadline_slack}.", "use e.g. 3.0.")
    t0 = trace.first_submit.timestamp()
    offset = 0.0 if start is None else start.timestamp() - t0
    window = (trace.submit_s >= offset) & (trace.submit_s < offset + days * 86400.0)
    index = np.flatnonzero(window)
    if max_jobs is not None:
        index = index[:max_jobs]
    if not len(index):
        first = trace.first_submit.date().isoformat()
        raise InputError(
            f"No Philly jobs are submitted in the {days:g} days from {start or trace.first_submit}.",
            f"choose a start between {first} and 2017-12-22 (jobs are dense from October 2017).",
        )
    jobs = []
    for i in index:
        hours = float(trace.duration_s[i]) / 3600.0 / speedup
        if hours <= 0:
            continue
        begin = (float(trace.submit_s[i]) - offset) / 3600.0
        jobs.append(
            TrainingJob(
                name=f"philly-{int(i)}",
                chips=max(1, math.ceil(int(trace.gpus[i]) * chips_per_gpu)),
                hours=hours,
                earliest_start_h=begin,
                deadline_h=None if deadline_slack is None else begin + deadline_slack * hours,
                checkpointable=checkpointable,
            )
        )
    return jobs
