"""Job epochs: one record per run attempt, as HTCondor's JOB_EPOCH_HISTORY holds them.  Pure.

HTCondor's shadow appends the job's ad to the epoch history each time a run
ends (evicted, held, removed or terminated): the whole job ad as the run left
it, with ``RunInstanceID`` (``NumShadowStarts`` - 1: 0 for the first run),
``EpochAdType = "EPOCH"`` and ``EpochWriteDate`` (the time written), under a
banner ``*** EPOCH ClusterId=C ProcId=P RunInstanceId=R Owner="o" CurrentTime=T``
(condor_utils/job_ad_instance_recording.cpp).

Here the journal holds every attempt, so the records are a fold of it:
``epoch_ads(entries)`` folds the entries through a ``QueueFold`` and, each time
a job leaves the running states (running, transferring output, suspended),
takes its ad once the rest of that append (the run's usage attributes are
committed with its end) has been folded.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from jobledger.eventcore.projections.jobad import int_attr
from jobledger.eventcore.projections.queue import QueueFold, merged_ad
from jobledger.eventcore.records import quote_string
from jobledger.eventcore.status import EXECUTE, JobStatus

__all__ = ["epoch_ads", "EPOCH"]

EPOCH = "EPOCH"
_RUNNING = {JobStatus.RUNNING, JobStatus.TRANSFERRING_OUTPUT, JobStatus.SUSPENDED}


def _status(fold: QueueFold, key: tuple[int, int]) -> int | None:
    row = fold.proc(*key)
    return None if row is None else row.status


def epoch_ads(entries: Iterable) -> Iterator[tuple[int, dict]]:
    """``(position, ad)`` of each run's end, in journal order (``position``: the
    entry that ended the run).  ``ad`` is attribute -> ClassAd expression text."""
    fold = QueueFold()
    pending: dict[tuple[int, int], tuple[int, float, dict]] = {}   # run ended, append not over
    for e in entries:
        key = (e.job.cluster, e.job.proc)
        if pending:
            done = [k for k, (_, when, _) in pending.items()
                    if when != e.time or (k == key and (e.type == "leave" or _is_execute(e)))]
            for k in done:
                yield _epoch(fold, k, *pending.pop(k))
        before = _status(fold, key) if e.job.proc >= 0 else None
        fold.apply(e.position, e.time, e.job, e.type, e.payload)
        if before in _RUNNING and _status(fold, key) not in _RUNNING:
            row = fold.proc(*key)
            last = merged_ad(fold.cluster(key[0]), row.ad) if row is not None else {}
            pending[key] = (e.position, e.time, last)
        fold.take_changes()
    for k, (position, when, last) in sorted(pending.items(), key=lambda item: item[1][0]):
        yield _epoch(fold, k, position, when, last)


def _is_execute(e) -> bool:
    return e.type == "event" and int(e.payload["event"]["type"]) == EXECUTE


def _epoch(fold: QueueFold, key: tuple[int, int], position: int, when: float,
           last: dict) -> tuple[int, dict]:
    row = fold.proc(*key)
    ad = merged_ad(fold.cluster(key[0]), row.ad) if row is not None else dict(last)
    ad.setdefault("ClusterId", str(key[0]))
    ad.setdefault("ProcId", str(key[1]))
    ad["RunInstanceID"] = str(max(int_attr(ad, "NumShadowStarts", 1) - 1, 0))
    ad["EpochAdType"] = quote_string(EPOCH)
    ad["EpochWriteDate"] = str(int(when))
    return position, ad

