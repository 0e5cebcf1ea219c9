"""``Schedd.watch``: the journal's job events as a stream, filtered by the schedd, resumable.

A client asks for the events after a journal position (``since``) of the
jobs a constraint picks; the schedd reads the journal from there a chunk at a
time and sends each matching event with its position, then waits on the
store's commit notification for more (no polling on either side).  The
position is the resume token: a client whose connection dropped (a schedd
killed and restarted) asks again from the last position it was sent, and
gets every later event once -- the journal's positions have no gaps and
never change.  A chunk whose last entry matched nothing ends with a mark
``{"position": N}`` so the token moves past it; an idle stream sends such a
mark every ``MARK_EVERY`` seconds, which also finds a client that went away.

The constraint is tested on each job's ad (in the queue, else in the history;
a cluster's own events on the cluster ad) the first time the stream meets
the job; attributes that do not change (Owner, ClusterId, JobBatchName, ...)
make a filter that picks the same events on every resume.
"""

from __future__ import annotations

import threading
from typing import Iterator

from jobledger.eventcore import adwire
from jobledger.daemons import ipc
from jobledger.daemons.schedd.query import check_constraint
from jobledger.eventcore.errors import HTCondorValueError
from jobledger.eventcore.ids import JobId
from jobledger.daemons.storage.interfaces import WatchReads

__all__ = ["watch_stream", "MARK_EVERY"]

MARK_EVERY = 5.0      # seconds an idle stream waits before it sends a mark
READ = 2000           # journal entries read at a time
_VERDICTS = 50_000    # jobs whose verdict a stream keeps


def watch_stream(store, constraint=None, since: int = 0, stop: threading.Event | None = None,
                 mark_every: float = MARK_EVERY) -> ipc.Streamed:
    """The schedd's ``watch`` command (see the module docstring)."""
    check_constraint(constraint)
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise HTCondorValueError("since must be a journal position (an int >= 0)")
    head = store.head()
    if since > head:
        raise HTCondorValueError(f"position {since} is past the end of this schedd's journal ({head}): "
                                 "a position from another pool, or from a journal started over")
    return ipc.Streamed(_batches(store, constraint or None, since, stop or threading.Event(), mark_every))


def _batches(store, constraint, after: int, stop: threading.Event, mark_every: float) -> Iterator[list]:
    wanted = _Picker(store, constraint)
    while not stop.is_set():
        entries = list(store.entries(after, READ))
        if not entries:
            if not store.wait_for_position(after + 1, mark_every, stop):
                yield [{"position": after}]
            continue
        batch = [{"position": e.position, "time": e.time, "event": e.payload["event"]}
                 for e in entries if e.type == "event" and e.job.cluster >= 0 and wanted(e.job)]
        after = entries[-1].position
        if not batch or batch[-1]["position"] != after:
            batch.append({"position": after})
        yield batch


class _Picker:
    """Does ``constraint`` pick a job (cached per job for the stream's life)?"""

    def __init__(self, store: WatchReads, constraint: str | None):
        self.store = store
        self.constraint = constraint
        self.verdicts: dict[tuple[int, int], bool] = {}

    def __call__(self, job: JobId) -> bool:
        if self.constraint is None:
            return True
        key = (job.cluster, job.proc)
        verdict = self.verdicts.get(key)
        if verdict is None:
            ad = self._ad(job)
            verdict = ad is not None and adwire.matches(self.constraint, ad)
            if len(self.verdicts) >= _VERDICTS:
                self.verdicts.clear()
            self.verdicts[key] = verdict
        return verdict

    def _ad(self, job: JobId) -> dict | None:
        if job.proc < 0:
            return self.store.cluster_ad(job.cluster)
        ad = self.store.job_ad(job)
        if ad is None:
            gone = self.store.history(f"ClusterId == {job.cluster} && ProcId == {job.proc}", None, 1)
            ad = gone[0] if gone else None
        return ad
