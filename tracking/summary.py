"""Per-batch summaries of tracked jobs, as condor_watch_q shows them.

A batch is a cluster.  ``summarize(states)`` counts each batch's jobs by
state; ``progress_bar`` draws done / running / held / idle as one bar.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import JobState
from jobledger.eventcore.status import JobStatus
from jobledger.tracking.jobtable import JobTable

__all__ = ["BatchSummary", "progress_bar", "summarize"]


@attrs.frozen
class BatchSummary:
    cluster: int
    idle: int = 0
    running: int = 0
    held: int = 0
    completed: int = 0
    removed: int = 0
    failed: int = 0               # completed with a non-zero exit code or a signal
    procs: tuple[int, ...] = ()

    @property
    def total(self) -> int:
        return self.idle + self.running + self.held + self.completed + self.removed

    @property
    def done(self) -> int:
        return self.completed + self.removed

    def job_ids(self) -> str:
        """``12.0-9`` for a run of procs, else the ids listed (first and last if many)."""
        procs = sorted(self.procs)
        if not procs:
            return ""
        if procs == list(range(procs[0], procs[-1] + 1)) and len(procs) > 1:
            return f"{self.cluster}.{procs[0]}-{procs[-1]}"
        if len(procs) <= 3:
            return " ".join(f"{self.cluster}.{p}" for p in procs)
        return f"{self.cluster}.{procs[0]} ... {self.cluster}.{procs[-1]}"


_FIELD = {JobStatus.IDLE: "idle", JobStatus.RUNNING: "running",
          JobStatus.TRANSFERRING_OUTPUT: "running", JobStatus.SUSPENDED: "running",
          JobStatus.HELD: "held", JobStatus.COMPLETED: "completed", JobStatus.REMOVED: "removed"}


def summarize(states: Mapping[JobId, JobState]) -> list[BatchSummary]:
    """One summary per cluster, by cluster id."""
    counts: dict[int, dict] = {}
    if isinstance(states, JobTable):          # finished jobs counted without building their states
        jobs = states.brief()
    else:
        jobs = ((job.cluster, job.proc, int(state.status), state.status == JobStatus.COMPLETED
                 and bool(state.exit_by_signal or state.exit_code)) for job, state in states.items())
    for cluster, proc, status, failed in jobs:
        c = counts.setdefault(cluster, {"procs": []})
        field = _FIELD[JobStatus(status)]
        c[field] = c.get(field, 0) + 1
        if failed:
            c["failed"] = c.get("failed", 0) + 1
        c["procs"].append(proc)
    return [BatchSummary(cluster, **{**c, "procs": tuple(c["procs"])})
            for cluster, c in sorted(counts.items())]


def progress_bar(summary: BatchSummary, width: int = 20) -> str:
    """``#`` done, ``=`` running, ``!`` held, ``.`` idle; and the percentage done."""
    total = summary.total or 1
    parts = [("#", summary.done), ("=", summary.running), ("!", summary.held)]
    bar = ""
    for char, n in parts:
        bar += char * round(width * n / total)
    bar = bar[:width].ljust(width, ".")
    return f"[{bar}] {100 * summary.done // total:3d}%"
