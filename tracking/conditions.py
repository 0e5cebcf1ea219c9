"""Conditions for ``Tracker.wait_until``: predicates over the job table.

Each takes the tracked states (``{JobId: JobState}``) and says whether to stop
waiting.  ``cluster`` narrows a condition to one cluster; ``expected`` (a
number of jobs) keeps ``all_done`` false until that many jobs are known, so
waiting on a batch that has not shown up yet does not end at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import JobState
from jobledger.eventcore.status import JobStatus
from jobledger.tracking.jobtable import JobTable

__all__ = ["all_done", "any_failed", "any_held", "failed"]

Condition = Callable[[Mapping[JobId, JobState]], bool]


def _jobs(states: Mapping[JobId, JobState], cluster: int | None):
    return [s for j, s in states.items() if cluster is None or j.cluster == cluster]


def all_done(cluster: int | None = None, expected: int = 1) -> Condition:
    """Every job (of ``cluster``) has completed or been removed."""
    def condition(states):
        if isinstance(states, JobTable):      # jobs on disk are finished: count them, no more
            live = states.live(cluster)
            return len(live) + states.finished(cluster) >= expected and all(s.done for s in live)
        jobs = _jobs(states, cluster)
        return len(jobs) >= expected and all(s.done for s in jobs)
    return condition


def any_held(cluster: int | None = None) -> Condition:
    """Some job (of ``cluster``) is held."""
    def condition(states):
        jobs = states.live(cluster) if isinstance(states, JobTable) else _jobs(states, cluster)
        return any(s.status == JobStatus.HELD for s in jobs)
    return condition


def failed(state: JobState) -> bool:
    """Completed with a non-zero exit code or by a signal."""
    return state.status == JobStatus.COMPLETED and (bool(state.exit_by_signal) or bool(state.exit_code))


def any_failed(cluster: int | None = None) -> Condition:
    """Some job (of ``cluster``) completed with a non-zero exit code or a signal."""
    def condition(states):
        if isinstance(states, JobTable):
            return (any(failed(s) for s in states.live(cluster))
                    or any(f for *_, f in states.outcomes(cluster)))
        return any(failed(s) for s in _jobs(states, cluster))
    return condition
