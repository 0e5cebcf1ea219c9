"""Job export (HTCondor 23's EXPORT_JOBS, IMPORT_EXPORTED_JOB_RESULTS, UNEXPORT_JOBS):
whole clusters leave the schedd's management for an external one and come back.

``export`` writes the clusters' ads to ``<export_dir>/job_queue.log`` (HTCondor's job
queue log: the header ad with ``NextClusterNum``, each cluster ad with ``LeaveJobInQueue =
true``, each job's ad with ``Iwd`` rewritten to its place under ``new_spool_dir``, HTCondor's
spool layout ``<dir>/<cluster % 10000>/<proc % 10000>/cluster<C>.proc<P>.subproc0``), and
appends to the journal, for each job not already externally managed, ``Managed =
"External"`` and ``ManagedManager = "Lumberjack"``: such a job is not matched or started
here.  The clusters must all be one owner's.  ``import_results`` reads the job queue log
back and, for each exported job still here (not held, not removed), merges the attributes
the external manager changed and takes the job back (``Managed``/``ManagedManager``
deleted), all in one append.  ``unexport`` takes jobs back without results.

As HTCondor's schedd: job ids select their clusters (``3.1`` exports cluster 3), a
constraint selects the clusters of the jobs it is true of.  Each answer is the result ad
HTCondor's has (``TotalJobAds``, ``TotalClusterAds``, ``Log``, ``User``); a refusal is
a ``HTCondorException`` with HTCondor's ``ErrorString``.  What HTCondor merges back
as it is and the journal does not: ``JobStatus`` (status moves only by events here), and
the attributes no edit may change; they are named in the answer's ``NotMerged``.
"""

from __future__ import annotations

import time
from pathlib import Path

from jobledger.daemons.schedd.act import IMMUTABLE
from jobledger.daemons.whole_file import write_whole
from jobledger.eventcore import adwire
from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.queuelog_live import ad_lines, cluster_key, file_header, proc_key
from jobledger.eventcore.projections.queuelog_read import QueueLogError, read_queue_log
from jobledger.eventcore.records import SetAttributes
from jobledger.eventcore.status import JobStatus
from jobledger.daemons.storage.interfaces import ClusterLedger

MANAGED, MANAGER, LUMBERJACK, EXTERNAL = "Managed", "ManagedManager", "Lumberjack", "External"
QUEUE_LOG = "job_queue.log"
MAX_IMPORT_BYTES = 1 << 30
# never merged back: HTCondor deletes these from the external ad before merging
DROPPED = {"leavejobinqueue", "iwd", "owner", "user", "mytype", "targettype"}


def spool_name(directory: str, cluster: int, proc: int) -> str:
    """HTCondor's gen_ckpt_name(directory, cluster, proc, 0)."""
    return f"{directory}/{cluster % 10000}/{proc % 10000}/cluster{cluster}.proc{proc}.subproc0"


def _value(text):
    """A literal's value (None for an expression or nothing)."""
    try:
        return adwire.literal(text)
    except adwire.NotLiteral:
        return None


def _managed_externally(ad: dict) -> bool:
    return _value(ad.get(MANAGED)) == EXTERNAL


def _refuse(text: str) -> HTCondorException:
    return HTCondorException(text)


def _absolute_dir(path, what: str) -> Path:
    if not isinstance(path, str) or not path or "\x00" in path:
        raise _refuse(f"Invalid arguments: {what} must be a directory's path")
    where = Path(path)
    if not where.is_absolute():
        raise _refuse(f"Invalid arguments: {what} {path!r} is not an absolute path")
    if not where.is_dir():
        raise _refuse(f"{what} {path} is not a directory")
    return where


class Exports:
    """Export, import and unexport over one schedd's ``store`` (under ``lock``, the lock
    that orders every change of a run)."""

    def __init__(self, store: ClusterLedger, lock, log=None):
        self.store, self.lock, self.log = store, lock, log

    def _clusters(self, ids: list | None, constraint: str | None) -> list[int]:
        if ids is not None:
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise _refuse("Invalid arguments: ids must be a list of job ids")
            out = set()
            for text in ids:
                try:
                    out.add(JobId.parse(text.strip()).cluster if "." in text else int(text.strip()))
                except ValueError:
                    raise _refuse(f"Invalid arguments: {text!r} is not a job id") from None
            return sorted(out)
        if constraint is not None and not isinstance(constraint, str):
            raise _refuse("Invalid arguments: the constraint must be a string")
        return sorted({int(ad["ClusterId"]) for ad in self.store.query(constraint or None, ["ClusterId"])})

    def _jobs_of(self, cluster: int) -> list[dict]:
        return self.store.query(f"ClusterId == {cluster}")

    def export(self, owner_only: tuple[str, str] | None, export_dir, new_spool_dir="##",
               ids: list | None = None, constraint: str | None = None) -> dict:
        where = _absolute_dir(export_dir, "ExportDir")
        if not isinstance(new_spool_dir, str) or "\n" in new_spool_dir or "\x00" in new_spool_dir:
            raise _refuse("Invalid arguments: NewSpoolDir must be a path")
        with self.lock:
            clusters = []
            for cluster in self._clusters(ids, constraint):
                cluster_ad, jobs = self.store.cluster_ad(cluster), self._jobs_of(cluster)
                if cluster_ad is not None and jobs:
                    clusters.append((cluster, cluster_ad, jobs))
            if not clusters:
                raise _refuse("No clusters to export")
            owners = {jobs[0].get("Owner") for _, _, jobs in clusters}
            if len(owners) > 1:
                raise _refuse("Cannot export for more than one user")
            owner = _value(owners.pop()) or ""
            if owner_only is not None and owner != owner_only[0]:
                raise _refuse("User not authorized to export given jobs")
            lines, records = [], []
            lines += ad_lines("0.0", None, {"NextClusterNum": str(self.store.next_cluster_id())})[1:]
            for cluster, cluster_ad, jobs in clusters:
                lines += ad_lines(cluster_key(cluster), None, {**{k: v for k, v in cluster_ad.items()
                                                                   if k.lower() != "leavejobinqueue"},
                                                               "LeaveJobInQueue": "true"})
                for ad in jobs:
                    if _managed_externally(ad):
                        continue
                    proc = int(ad["ProcId"])
                    own = {k: v for k, v in ad.items() if cluster_ad.get(k) != v and k.lower() != "leavejobinqueue"}
                    own["Iwd"] = adwire.quote(spool_name(new_spool_dir, cluster, proc))
                    own.setdefault("ProcId", str(proc))
                    lines += ad_lines(proc_key(cluster, proc), None, own)
                    records.append(SetAttributes(JobId(cluster, proc), set={
                        MANAGED: adwire.quote(EXTERNAL), MANAGER: adwire.quote(LUMBERJACK)}, by="export"))
            path = where / QUEUE_LOG
            text = file_header(int(time.time())) + "".join(line + "\n" for line in lines)
            _write_whole(path, text)
            if records:
                self.store.append(records)
        return {"Log": str(path), "User": owner, "TotalJobAds": len(records), "TotalClusterAds": len(clusters)}

    def import_results(self, owner_only: tuple[str, str] | None, import_dir) -> dict:
        where = _absolute_dir(import_dir, "ExportDir")
        path = where / QUEUE_LOG
        try:
            if path.stat().st_size > MAX_IMPORT_BYTES:
                raise _refuse(f"{path} is larger than {MAX_IMPORT_BYTES} bytes")
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _refuse(f"Failed to initialize import job log {path}: {exc}") from None
        try:
            external = read_queue_log(text, str(path))
        except QueueLogError as exc:
            raise _refuse(f"Failed to initialize import job log: {exc}") from None
        records, not_merged = [], set()
        with self.lock:
            for (cluster, proc), ad in sorted(external.items()):
                if cluster <= 0 or proc < 0:
                    continue
                job = JobId(cluster, proc)
                ours = self.store.job_ad(job)
                if ours is None:
                    continue
                if owner_only is not None and _value(ours.get("Owner")) != owner_only[0]:
                    raise _refuse("User not authorized to import given jobs")
                status = JobStatus(int(_value(ours.get("JobStatus")) or 1))
                if status in (JobStatus.HELD, JobStatus.REMOVED) or not _managed_externally(ours) or \
                        _value(ours.get(MANAGER)) != LUMBERJACK:
                    continue
                changed = {}
                for name, value in ad.items():
                    low = name.lower()
                    if low in DROPPED or low in (MANAGED.lower(), MANAGER.lower()):
                        continue
                    known = next((k for k in ours if k.lower() == low), name)
                    if ours.get(known) == value:
                        continue
                    if low in IMMUTABLE:
                        not_merged.add(known)
                        continue
                    changed[known] = value
                records.append(SetAttributes(job, set=changed, delete=(MANAGED, MANAGER), by="import"))
            if records:
                self.store.append(records)
        answer: dict = {"TotalJobAds": len(records)}
        if not_merged:
            answer["NotMerged"] = ", ".join(sorted(not_merged))
        return answer

    def unexport(self, owner_only: tuple[str, str] | None, ids: list | None = None,
                 constraint: str | None = None) -> dict:
        with self.lock:
            clusters = self._clusters(ids, constraint)
            if not clusters:
                raise _refuse("No clusters to unexport")
            records = []
            for cluster in clusters:
                jobs = self._jobs_of(cluster)
                if jobs and owner_only is not None and _value(jobs[0].get("Owner")) != owner_only[0]:
                    raise _refuse("User not authorized to unexport given jobs")
                records += [SetAttributes(JobId(cluster, int(ad["ProcId"])), delete=(MANAGED, MANAGER), by="unexport")
                            for ad in jobs if _managed_externally(ad)]
            if records:
                self.store.append(records)
        return {"TotalJobAds": len(records), "TotalClusterAds": len(clusters)}


def _write_whole(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole or is left as it was."""
    try:
        write_whole(path, text.encode("utf-8"))
    except OSError as exc:
        raise _refuse(f"Failed to initialize export job log {path}: {exc.strerror or exc}") from None
