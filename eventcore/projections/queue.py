"""The job queue as a fold over journal entries.

``QueueFold.apply(position, time, job, type, payload)`` folds one record
into the queue: cluster ads, proc ads with their status, and the history
rows of jobs that leave.  It checks every status change against
``eventcore.status`` first; an illegal one raises ``InvalidTransition``.
Between ``begin()`` and ``commit()``/``rollback()`` every change is undoable,
so a batch that fails half-way leaves the fold exactly as it was.

``take_changes()`` says what to persist: the cluster and proc keys touched
(present in the fold = upsert, absent = delete), each proc's status before its
first change since the last ``take_changes()`` (None: it was not in the queue;
the store keeps its per-cluster status counts from these), and the history rows.  The
SQLite store writes them in the transaction that appends the records, so
"rebuild from scratch" and "apply incrementally" are the same code.

The fold keeps what it has seen in dicts; ``loader`` (optional) fetches a
job or cluster it has not seen (the store passes one reading its tables, so
a restart loads nothing up front).  Pure: no I/O of its own, no clock.

Imported events (from logs written elsewhere) may break the table (a log
that starts midway); for them the status an event implies by itself is
used instead (``implied_status``), and a job seen only through its events
gets a minimal ad (ClusterId, ProcId, QDate, JobStatus).

A POST_SCRIPT_TERMINATED event (016) is DAGMan's record of a node's POST
script: it names the node's job but never creates or moves it (the job has
usually left the queue by then); imported from a log, it is read like any
other event.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, NamedTuple, Protocol

from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobad import event_updates, int_attr
from jobledger.eventcore.status import (
    JOB_RELEASED, STATUS_EVENTS, SUBMIT, TERMINAL, JobStatus, implied_status, next_status,
)

_DAGMAN_NOTE = int(EventType.POST_SCRIPT_TERMINATED)

__all__ = ["factory_pending", "Proc", "HistoryRow", "Changes", "QueueFold", "Loader", "owner_of", "merged_ad",
           "fold_entries"]


class Proc:
    """One job in the queue: its status and its own attributes."""

    __slots__ = ("status", "ad")

    def __init__(self, status: int, ad: dict):
        self.status = status
        self.ad = ad

    def copy(self) -> "Proc":
        return Proc(self.status, dict(self.ad))

    def __eq__(self, other):
        return isinstance(other, Proc) and (self.status, self.ad) == (other.status, other.ad)

    def __repr__(self) -> str:
        return f"Proc({self.status}, {self.ad!r})"


class HistoryRow(NamedTuple):
    """A job that left the queue, at the position of its ``leave`` record."""

    position: int
    cluster: int
    proc: int
    owner: str | None
    completion_date: int
    ad: dict


class Changes(NamedTuple):
    procs: dict      # (cluster, proc) -> its status before the changes (None: absent)
    clusters: set
    history: list


class Loader(Protocol):
    def proc(self, cluster: int, proc: int) -> Proc | None: ...
    def cluster(self, cluster: int) -> dict | None: ...
    def proc_count(self, cluster: int) -> int: ...


_ABSENT = object()
_STATUS = {s.value: s for s in JobStatus}


def owner_of(ad: Mapping[str, str]) -> str | None:
    """The Owner attribute as a plain string (None if absent or not a literal)."""
    text = ad.get("Owner")
    if text is None or len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")


def merged_ad(cluster_ad: Mapping[str, str] | None, proc_ad: Mapping[str, str]) -> dict:
    """The job's full ad: cluster attributes overlaid by its own."""
    if not cluster_ad:
        return dict(proc_ad)
    ad = dict(cluster_ad)
    ad.update(proc_ad)
    return ad


class QueueFold:
    """Queue state plus an undo log (see the module docstring)."""

    keeps_history = True      # a fold that writes no history (a subclass) makes no rows

    def __init__(self, loader: Loader | None = None):
        self.clusters: dict[int, dict | None] = {}
        self.procs: dict[tuple[int, int], Proc | None] = {}
        self.counts: dict[int, int] = {}
        # clusters the loader holds no procs of: their unseen procs need no look-up
        self._loader_empty: set[int] = set()
        self.position = 0
        self._loader = loader
        self._undo: dict | None = None
        self._changes = Changes({}, set(), [])
        self._mark: tuple[dict, set, int, int] = ({}, set(), 0, 0)

    # ---------------------------------------------------------- lookups --
    def proc(self, cluster: int, proc: int) -> Proc | None:
        key = (cluster, proc)
        found = self.procs.get(key, _ABSENT)
        if found is _ABSENT:
            if self._loader is None or cluster in self._loader_empty:
                return None
            found = self._loader.proc(cluster, proc)
            if found is not None:     # a job not in the queue is not kept (see ``forget``)
                self.procs[key] = found
        return found

    def cluster(self, cluster: int) -> dict | None:
        found = self.clusters.get(cluster, _ABSENT)
        if found is _ABSENT:
            found = self._loader.cluster(cluster) if self._loader else None
            self.clusters[cluster] = found
        return found

    def count(self, cluster: int) -> int:
        found = self.counts.get(cluster)
        if found is None:
            found = self._loader.proc_count(cluster) if self._loader else 0
            if found == 0:
                self._loader_empty.add(cluster)
            self.counts[cluster] = found
        return found

    def job_ad(self, job: JobId) -> dict | None:
        """The merged ad of a job in the queue, or None."""
        row = self.proc(job.cluster, job.proc)
        if row is None:
            return None
        return merged_ad(self.cluster(job.cluster), row.ad)

    def jobs(self) -> Iterable[tuple[tuple[int, int], Proc]]:
        """Every job this fold holds in memory, ordered by (cluster, proc)."""
        return sorted((k, v) for k, v in self.procs.items() if v is not None)

    # ------------------------------------------------------ transactions --
    def begin(self) -> None:
        self._undo = {}
        changes = self._changes
        self._mark = (dict(changes.procs), set(changes.clusters), len(changes.history),
                      self.position)

    def commit(self) -> None:
        self._undo = None

    def rollback(self) -> None:
        undo, self._undo = self._undo or {}, None
        tables = {"p": self.procs, "c": self.clusters, "n": self.counts}
        for (table, key), old in undo.items():
            target = tables[table]
            if old is _ABSENT:
                target.pop(key, None)
            else:
                target[key] = old
        procs, clusters, history, self.position = self._mark
        self._changes = Changes(procs, clusters, self._changes.history[:history])

    def before_proc(self, key: tuple[int, int]) -> Proc | None:
        """Between ``begin()`` and ``commit()``: the proc ``key`` as it was at ``begin()``,
        if the transaction changed it (rows are copied before they change); None when
        it was not there."""
        old = (self._undo or {}).get(("p", key))
        return old if isinstance(old, Proc) else None

    def before_cluster(self, cluster: int) -> dict | None:
        """Between ``begin()`` and ``commit()``: the ad of ``cluster`` as it was at
        ``begin()``, if the transaction changed it (cluster ads are replaced, never
        changed in place); None when it was not there."""
        old = (self._undo or {}).get(("c", cluster))
        return old if isinstance(old, dict) else None

    def _save(self, table: str, key, store: dict) -> None:
        if self._undo is not None and (table, key) not in self._undo:
            self._undo[(table, key)] = store.get(key, _ABSENT)

    def forget(self, procs, clusters) -> None:
        """Forget jobs and clusters that left the queue, once their rows are deleted from
        the tables (a look-up then finds them gone there): what the fold keeps follows
        the queue, not the history."""
        for key in procs:
            if key in self.procs and self.procs[key] is None:
                del self.procs[key]
        for cluster in clusters:
            if cluster in self.clusters and self.clusters[cluster] is None:
                del self.clusters[cluster]
                if not self.counts.get(cluster):
                    self.counts.pop(cluster, None)
                self._loader_empty.discard(cluster)

    def evict(self, keys) -> None:
        """Drop the procs ``keys`` from memory: the fold's loader gives them back when
        asked (a loader that keeps them elsewhere, as JOB_QUEUE_LOG's writer does)."""
        for key in keys:
            if self.procs.get(key) is not None:
                del self.procs[key]
                self._loader_empty.discard(key[0])

    def evict_clusters(self, clusters) -> None:
        """Drop the ads and proc counts of ``clusters`` from memory: the fold's loader
        gives them back when asked (as for ``evict``)."""
        for cluster in clusters:
            self.clusters.pop(cluster, None)
            self.counts.pop(cluster, None)
            self._loader_empty.discard(cluster)

    def take_changes(self) -> Changes:
        changes, self._changes = self._changes, Changes({}, set(), [])
        return changes

    # ------------------------------------------------------------- apply --
    def apply(self, position: int, time: float, job: JobId, kind: str, payload: Mapping) -> None:
        """Fold one journal record (see the module docstring)."""
        _HANDLERS[kind](self, position, time, job, payload)
        self.position = position

    def passes_over(self, job: JobId, number: int) -> bool:
        """True if an event ``number`` of ``job`` cannot change the fold (no need to decode it)."""
        if job.cluster < 0 or job.proc < 0 or number >= 100:
            return True
        return number not in STATUS_EVENTS and self.proc(job.cluster, job.proc) is not None

    def _put_proc(self, key, row: Proc | None) -> None:
        self._save("p", key, self.procs)
        changed = self._changes.procs
        if key not in changed:
            old = self.procs.get(key)
            changed[key] = None if old is None else old.status
        self.procs[key] = row

    def _put_cluster(self, cluster: int, ad: dict | None) -> None:
        self._save("c", cluster, self.clusters)
        self.clusters[cluster] = ad
        self._changes.clusters.add(cluster)

    def _put_count(self, cluster: int, count: int) -> None:
        self._save("n", cluster, self.counts)
        self.counts[cluster] = count

    def _writable(self, key, row: Proc) -> Proc:
        """The proc ``row`` at ``key``, copied once per transaction so rollback can restore it."""
        undo = self._undo
        if undo is not None and ("p", key) not in undo:
            undo[("p", key)] = row
            row = Proc(row.status, dict(row.ad))
            self.procs[key] = row
        changed = self._changes.procs
        if key not in changed:
            changed[key] = row.status    # (callers change the status after this)
        return row

    def _on_cluster(self, position, time, job, payload):
        self.count(job.cluster)   # a new cluster's procs then need no look-up each
        ad = dict(self.cluster(job.cluster) or {})
        ad.update(payload["ad"])
        ad.setdefault("ClusterId", str(job.cluster))
        self._put_cluster(job.cluster, ad)

    def _on_proc(self, position, time, job, payload):
        key = (job.cluster, job.proc)
        existing = self.proc(*key)
        if existing is not None or job.proc < 0:
            raise InvalidTransition(existing and JobStatus(existing.status), "submit", job)
        ad = dict(payload["ad"])
        status = int_attr(ad, "JobStatus", 1)
        if status not in (JobStatus.IDLE, JobStatus.HELD):
            raise InvalidTransition(None, f"submit with JobStatus {status}", job)
        ad["JobStatus"] = str(status)
        ad.setdefault("ClusterId", str(job.cluster))
        ad.setdefault("ProcId", str(job.proc))
        self._put_proc(key, Proc(status, ad))
        self._put_count(job.cluster, self.count(job.cluster) + 1)

    def _on_procs(self, position, time, job, payload):
        """A block of new procs: each as ``_on_proc`` (their SUBMIT events move nothing)."""
        cluster, base = job.cluster, dict(payload["common"])
        base.setdefault("ClusterId", str(cluster))
        shared_status = int_attr(base, "JobStatus", 1)
        count = self.count(cluster)
        procs, put, absent = self.procs, self._put_proc, cluster in self._loader_empty
        for proc, own in zip(payload["procs"], payload["ads"]):
            key = (cluster, proc)
            existing = None if absent and key not in procs else self.proc(cluster, proc)
            if existing is not None or proc < 0:
                raise InvalidTransition(existing and JobStatus(existing.status), "submit",
                                        JobId(cluster, proc))
            ad = dict(base)
            ad.update(own)
            status = int_attr(ad, "JobStatus", 1) if "JobStatus" in own else shared_status
            if status != 1 and status != 5:
                raise InvalidTransition(None, f"submit with JobStatus {status}", JobId(cluster, proc))
            ad["JobStatus"] = str(status)
            ad["ProcId"] = str(proc)
            put(key, Proc(status, ad))
            count += 1
        self._put_count(cluster, count)

    def _on_set(self, position, time, job, payload):
        sets, deletes = payload["set"], payload["delete"]
        if job.proc < 0:
            ad = self.cluster(job.cluster)
            if ad is None:
                raise InvalidTransition(None, "set attributes", job)
            ad = dict(ad)
            ad.update(sets)
            for name in deletes:
                ad.pop(name, None)
            # a job factory done (or removed) with no jobs left: the cluster goes with it
            gone = ("JobMaterializeDigestFile" in ad and not factory_pending(ad)
                    and self.count(job.cluster) <= 0)
            self._put_cluster(job.cluster, None if gone else ad)
            return
        row = self.proc(job.cluster, job.proc)
        if row is None:
            raise InvalidTransition(None, "set attributes", job)
        if "JobStatus" in sets or "JobStatus" in deletes:
            raise InvalidTransition(JobStatus(row.status), "set JobStatus (status moves by events)", job)
        self._change_proc((job.cluster, job.proc), row, sets, deletes, row.status)

    def _change_proc(self, key, row: Proc, sets: Mapping[str, str], deletes, status: int) -> None:
        """Change the attributes of the proc ``row`` at ``key`` (in the fold) in place,
        and its status: the one way a handler changes a proc it does not replace."""
        row = self._writable(key, row)
        ad = row.ad
        ad.update(sets)
        for name in deletes:
            ad.pop(name, None)
        row.status = status

    def _on_event(self, position, time, job, payload):
        event = payload["event"]
        number = int(event["type"])
        if job.cluster < 0 or job.proc < 0 or number >= 100:
            return  # cluster-level and execution-point (slot) events do not move a job
        if number == _DAGMAN_NOTE and not payload.get("imported", False):
            return  # DAGMan's record of a node's POST script, for a job that may have left
        key = (job.cluster, job.proc)
        row = self.proc(*key)
        before = _STATUS[row.status] if row is not None else None
        imported = payload.get("imported", False)
        if row is not None and number not in STATUS_EVENTS:
            return  # informational (image size, transfers, ...): the ad does not change
        try:
            after = next_status(before, number, job)
        except InvalidTransition:
            if not imported:
                raise
            after = implied_status(number) or before or JobStatus.IDLE
        if number == SUBMIT and after == before:
            return  # the SUBMIT of a folded proc ad: event_updates would change nothing
        if number == JOB_RELEASED and row is not None and int_attr(row.ad, "JobStatusOnRelease") == 3:
            after = JobStatus.REMOVED
        if row is None:
            stamp = str(int(event.get("timestamp") or 0))
            ad = {"ClusterId": str(job.cluster), "ProcId": str(job.proc), "QDate": stamp,
                  "JobStatus": str(int(after)), "EnteredCurrentStatus": stamp}
            self._put_proc(key, Proc(int(after), ad))
            self._put_count(job.cluster, self.count(job.cluster) + 1)
            if number == SUBMIT:
                return
            before = after
        row = self.procs[key]
        sets, deletes = event_updates(before, after, event, row.ad)
        self._change_proc(key, row, sets, deletes, int(after))

    def _on_action(self, position, time, job, payload):
        return  # the audit trail; the state moves by the events that follow

    def _on_userrec(self, position, time, job, payload):
        return  # a User or Project record: no job (eventcore.projections.userrecs)

    def _on_leave(self, position, time, job, payload):
        key = (job.cluster, job.proc)
        row = self.proc(*key)
        if row is None or row.status not in TERMINAL:
            raise InvalidTransition(row and JobStatus(row.status), "leave the queue", job)
        if self.keeps_history:
            ad = merged_ad(self.cluster(job.cluster), row.ad)
            completion = int_attr(ad, "CompletionDate", 0) or -1
            self._changes.history.append(
                HistoryRow(position, job.cluster, job.proc, owner_of(ad), completion, ad))
        self._put_proc(key, None)
        left = self.count(job.cluster) - 1
        self._put_count(job.cluster, left)
        cluster_ad = self.cluster(job.cluster)
        if left <= 0 and cluster_ad is not None and not factory_pending(cluster_ad):
            self._put_cluster(job.cluster, None)


def factory_pending(cluster_ad: Mapping[str, str]) -> bool:
    """Whether a cluster's job factory (late materialization: ``JobMaterializeDigestFile``)
    has jobs still to make: ``JobMaterializeNextProcId`` below ``TotalSubmitProcs`` and
    not removed (``JobMaterializePaused`` 3, HTCondor's mmClusterRemoved).  As HTCondor's
    schedd (``JobFactoryAllowsClusterRemoval``), such a cluster ad stays in the queue
    while it has no jobs."""
    if "JobMaterializeDigestFile" not in cluster_ad:
        return False
    try:
        next_proc = int(cluster_ad.get("JobMaterializeNextProcId", "0"))
        total = int(cluster_ad.get("TotalSubmitProcs", "0"))
        paused = int(cluster_ad.get("JobMaterializePaused", "0"))
    except ValueError:
        return False
    return next_proc < total and paused < 3


_HANDLERS: dict[str, Callable] = {
    "cluster": QueueFold._on_cluster,
    "proc": QueueFold._on_proc,
    "procs": QueueFold._on_procs,
    "set": QueueFold._on_set,
    "event": QueueFold._on_event,
    "action": QueueFold._on_action,
    "leave": QueueFold._on_leave,
    "userrec": QueueFold._on_userrec,
}


def fold_entries(entries: Iterable, fold: QueueFold | None = None) -> QueueFold:
    """Fold journal entries (``eventcore.journal.Entry``) into a new (or given) fold."""
    fold = fold or QueueFold()
    for e in entries:
        fold.apply(e.position, e.time, e.job, e.type, e.payload)
    fold.take_changes()
    return fold
