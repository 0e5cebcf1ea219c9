"""The queue as it stood at a journal position or a moment: a fold with a cut.

``replay(entries, position=None, as_of=None)`` folds the entries up to
``position`` (inclusive), or those that had happened by ``as_of`` (Unix
time: an event counts from its own timestamp, any other record from the
time it was appended, since an imported event happened long before it was
appended).  A moment is read on one clock for every record: whole seconds,
the resolution of event timestamps (user logs have no finer), so the cut at
second T takes all that happened within T -- a submit appended at T.4 and its
job's execute event stamped T both, never the event without its job.  Jobs
that left the queue before the cut are not shown.
``summary(job, ad)`` is the condor_q-like row: id, status, owner, times,
exit code, hold reason.  Pure.
"""

from __future__ import annotations

import math
from typing import Iterable

from jobledger.eventcore.projections.jobad import int_attr
from jobledger.eventcore.projections.queue import QueueFold, merged_ad
from jobledger.eventcore.projections.userlog import unquote
from jobledger.eventcore.status import STATUS_LETTER, JobStatus

__all__ = ["replay", "summary", "effective_time", "STATUS_LETTER"]



def effective_time(entry) -> int:
    """When what the entry records happened, in whole seconds (see the module docstring)."""
    if entry.type == "event":
        stamp = entry.payload["event"].get("timestamp")
        if stamp:
            return math.floor(stamp)
    return math.floor(entry.time)


def replay(entries: Iterable, position: int | None = None, as_of: float | None = None) -> QueueFold:
    """The queue fold at the cut (see the module docstring)."""
    fold = QueueFold()
    cut = None if as_of is None else math.floor(as_of)
    for e in entries:
        if position is not None and e.position > position:
            break
        if cut is not None and effective_time(e) > cut:
            continue
        fold.apply(e.position, e.time, e.job, e.type, e.payload)
    fold.take_changes()
    return fold


def summary(cluster: int, proc: int, fold: QueueFold) -> dict:
    """One job's replay row (JSON-ready)."""
    row = fold.proc(cluster, proc)
    ad = merged_ad(fold.cluster(cluster), row.ad)
    out = {"cluster": cluster, "proc": proc, "JobStatus": row.status,
           "Status": JobStatus(row.status).name}
    owner = unquote(ad.get("Owner"))
    if owner is not None:
        out["Owner"] = owner
    for name in ("QDate", "EnteredCurrentStatus", "JobStartDate", "CompletionDate",
                 "ExitCode", "ExitSignal", "HoldReasonCode"):
        if name in ad:
            out[name] = int_attr(ad, name)
    for name in ("HoldReason", "RemoveReason", "Cmd"):
        value = unquote(ad.get(name))
        if value is not None:
            out[name] = value
    return out
