"""A starter's report of a job's end, outside a chain (``daemons.schedd.chain``): the end's
records and the next run's start, found by the handover, go into one commit
(``daemons.joint_commit``).  The job's ad is read once: the handover and the end both need it."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Callable

from jobledger.daemons.joint_commit import JointCommit
from jobledger.eventcore.ids import JobId

__all__ = ["record_end"]


def record_end(store, runs, matches, job: JobId, claim: str, outcome: dict, more: bool, direct: bool,
               ahead: Callable[[Future | None], None] | None = None) -> tuple[str, Future | None]:
    """(what ``Runs.record_outcome`` says, the handover's future or None) for the end of ``job``
    under ``claim``; ``ahead(handover)`` is called once the handover is under way, before the
    commit."""
    joint = JointCommit(store)
    try:
        runs.wait_started(claim)        # (a short job can end before its run is recorded)
        ad = store.job_ad(job)
        handover = matches.finished(job, claim, outcome, more, joint, direct=direct, ad=ad)
        if ahead is not None:
            ahead(handover)
        result = runs.record_outcome(job, claim, outcome, reported=True, joint=joint, ad=ad)
    finally:
        joint.finish()      # (a next run this thread found: its start is over)
    return result, handover
