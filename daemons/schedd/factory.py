"""Late materialization: a cluster's job factory, as HTCondor's schedd keeps one.

A submit that makes a job factory (``max_materialize``, ``max_idle`` or
``materialize_max_idle``, or ``condor_submit -factory``: ``daemons.client.factory``)
comes with the submit digest and the item rows.  As HTCondor's schedd does, this part
keeps them in the spool -- ``<cluster % 10000>/condor_submit.<cluster>.digest`` and
``condor_submit.<cluster>.items`` -- and names them in the cluster ad
(``JobMaterializeDigestFile``, ``JobMaterializeItemsFile``), which also holds the
limits (``JobMaterializeLimit``, ``JobMaterializeMaxIdle``), the next proc to make
(``JobMaterializeNextProcId``) and the cluster's whole size (``TotalSubmitProcs``).

Where HTCondor's schedd expands the digest again for each job, this schedd keeps the
jobs' own ads as the client made them from the same description
(``condor_submit.<cluster>.jobs``, a JSON line per proc, written and synced before
the submit commits), so a job made late is the job an early submit would have made.

A job is made when the rules HTCondor's ``MaterializeJobs`` applies allow it: fewer
jobs of the cluster in the queue than ``JobMaterializeLimit``, and (with
``JobMaterializeMaxIdle``) fewer idle or held than that.  The submit commits the first
jobs the limits allow; the rest are made by ``tick`` after each journal commit (a
job leaving the queue or starting to run).  Each making is one append: the new procs
(a ``ProcBlock``, each with ``JobMaterializeDate``, and their SUBMIT events) and the
cluster ad's new ``JobMaterializeNextProcId``, together, so that a schedd killed at any
point restarts from the journal's count: no job made twice, none lost.  The cluster ad
stays in the queue while the factory has jobs to make (``eventcore.projections.queue.
factory_pending``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from jobledger.daemons.storage.interfaces import FactoryLedger
from jobledger.eventcore import adwire
from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.queue import factory_pending
from jobledger.eventcore.records import SetAttributes
from jobledger.eventcore.submit.digest import queue_line

__all__ = ["Factories", "factory_paths", "initial_count"]

UNLIMITED = 2 ** 31 - 1
MATERIALIZE_ATTRS = ("JobMaterializeDigestFile", "JobMaterializeItemsFile", "JobMaterializeNextProcId",
                     "JobMaterializePaused", "JobMaterializeNextRow")


def factory_paths(spool_dir: Path, cluster: int) -> tuple[Path, Path, Path]:
    """The digest, items and jobs files of ``cluster`` (HTCondor's
    GetSpooledSubmitDigestPath / GetSpooledMaterializeDataPath, and the jobs beside)."""
    base = Path(spool_dir) / str(cluster % 10000)
    return (base / f"condor_submit.{cluster}.digest", base / f"condor_submit.{cluster}.items",
            base / f"condor_submit.{cluster}.jobs")


def _limit(ad: dict, name: str) -> int:
    """An integer limit of the cluster ad; absent, not an integer or not positive: none."""
    value = adwire.evaluate(ad, name) if name in ad else None
    if isinstance(value, bool) or not isinstance(value, int):
        return UNLIMITED
    if name == "JobMaterializeLimit" and value <= 0:
        return UNLIMITED
    return value if value >= 0 else UNLIMITED


def allowed(ad: dict, in_queue: int, not_running: int) -> int:
    """How many jobs the factory may make now (HTCondor's MaterializeJobs and
    CheckMaterializePolicyExpression): up to ``JobMaterializeLimit`` jobs in the queue,
    up to ``JobMaterializeMaxIdle`` idle or held."""
    room = _limit(ad, "JobMaterializeLimit") - in_queue
    if "JobMaterializeMaxIdle" in ad:
        room = min(room, _limit(ad, "JobMaterializeMaxIdle") - not_running)
    return max(room, 0)


def initial_count(ad: dict, total: int) -> int:
    """The jobs a new factory makes at once (none in the queue yet)."""
    return min(allowed(ad, 0, 0), total)


def _write_synced(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


LOG_ATTRS = ("UserLog", "UserLogUseXML", "DAGManNodesLog", "Iwd")


def _log_attrs(cluster_ad: dict) -> dict:
    """The user-log attributes of the cluster ad, which a job made late carries in its own
    ad: the user-log projection (``eventcore.projections.userlog.LogTargets``) forgets a
    cluster's log once its last job left, as a factory's cluster may be between two jobs,
    and takes a new job's log from its own ad.  Its merged ad is the same."""
    if "UserLog" not in cluster_ad and "DAGManNodesLog" not in cluster_ad:
        return {}
    return {name: cluster_ad[name] for name in LOG_ATTRS if name in cluster_ad}


def _hoisted(cluster_ad: dict, ads: list[dict]) -> tuple[dict, list[dict]]:
    """The cluster ad made from the first job, as HTCondor's factory makes it: proc 0's
    own attributes (its first item's values) join the cluster ad, and each job keeps only
    what differs from it (proc 0 then nothing of its own)."""
    ad = dict(cluster_ad)
    lowered = {name.lower(): name for name in ad}
    for name, value in ads[0].items():
        if name.lower() not in ("procid", "clusterid"):
            ad[lowered.get(name.lower(), name)] = value
    lowered = {name.lower(): name for name in ad}
    kept = []
    for own in ads:
        kept.append({name: value for name, value in own.items()
                     if ad.get(lowered.get(name.lower(), name)) != value})
    return ad, kept


class _Jobs:
    """A factory's jobs file, read by proc index (line offsets found once)."""

    def __init__(self, path: Path):
        self.path = path
        self.offsets: list[int] = []
        with open(path, "rb") as f:
            pos = 0
            for line in f:
                self.offsets.append(pos)
                pos += len(line)

    def __len__(self) -> int:
        return len(self.offsets)

    def ads(self, first: int, count: int) -> list[dict]:
        out = []
        with open(self.path, "rb") as f:
            f.seek(self.offsets[first])
            for _ in range(count):
                out.append(json.loads(f.readline()))
        return out


class Factories:
    """The schedd's job factories: ``prepare`` at submit, ``tick`` after commits."""

    def __init__(self, store: FactoryLedger, spool_dir: Path, log, builder):
        self.store = store
        self.spool_dir = Path(spool_dir)
        self.log = log
        self.builder = builder     # (owner, cluster, ad, num_procs, now, identity) -> (shared, head, build)
        self.live: dict[int, _Jobs] = {}
        # told of the jobs made after commit (the scheduler universe notes its own)
        self.made: Callable[[list[dict]], None] = lambda clusters: None
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.seen = 0

    # -- submit -------------------------------------------------------------------------
    def prepare(self, item: dict, upload, factory: dict) -> dict:
        """The submit of a factory cluster: every proc ad read (from ``item`` or the
        upload's chunks) into the jobs file; the digest and items written; the item to
        commit holding the cluster ad with its JobMaterialize* attributes and the jobs
        the limits allow at once."""
        cluster = item["cluster"]
        if not isinstance(factory, dict) or not isinstance(factory.get("digest"), str):
            raise HTCondorException(f"cluster {cluster}: a job factory needs its submit digest")
        ad = dict(item["cluster_ad"])
        ads = list(item["proc_ads"] or []) if upload is None else [a for chunk in upload for a in chunk]
        if not ads or not all(isinstance(a, dict) for a in ads):
            raise HTCondorException(f"cluster {cluster}: a job factory needs its jobs")
        digest_path, items_path, jobs_path = factory_paths(self.spool_dir, cluster)
        items = factory.get("items")
        variables = tuple(str(v) for v in factory.get("variables") or ())
        count = factory.get("count")
        count = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
        if isinstance(items, str):
            _write_synced(items_path, items.encode())
            ad["JobMaterializeItemsFile"] = adwire.quote(str(items_path))
        digest = factory["digest"] + queue_line(count, variables, str(items_path) if isinstance(items, str) else None)
        _write_synced(digest_path, digest.encode())
        _write_synced(jobs_path, "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in ads).encode())
        ad, ads = _hoisted(ad, ads)
        first = initial_count(ad, len(ads))
        ad["JobMaterializeDigestFile"] = adwire.quote(str(digest_path))
        ad["JobMaterializeNextProcId"] = str(first)
        ad["TotalSubmitProcs"] = str(len(ads))
        ad.pop("JobMaterializePaused", None)
        now = str(int(time.time()))
        made = [dict(a, JobMaterializeDate=now) for a in ads[:first]]
        return dict(item, cluster_ad=ad, proc_ads=made, num_procs=None)

    def committed(self, cluster: int) -> None:
        """A factory cluster is in the journal: watch it."""
        self._load(cluster)

    # -- after commits ------------------------------------------------------------------
    def recover(self) -> None:
        """At start: every factory cluster in the queue (its files go when it leaves)."""
        for cluster, _ in self._factory_clusters():
            self._load(cluster)

    def _factory_clusters(self):
        for cluster in self.store.cluster_ids():
            ad = self.store.cluster_ad(cluster)
            if ad is not None and "JobMaterializeDigestFile" in ad:
                yield cluster, ad

    def _load(self, cluster: int) -> None:
        _, _, jobs_path = factory_paths(self.spool_dir, cluster)
        try:
            jobs = _Jobs(jobs_path)
        except OSError as exc:
            self.log.warning(f"job factory of cluster {cluster}: its jobs file cannot be read ({exc}); paused")
            self._pause(cluster, 1, f"cannot read {jobs_path}")
            return
        with self.lock:
            self.live[cluster] = jobs
        self.wake.set()

    def _pause(self, cluster: int, code: int, reason: str) -> None:
        """HTCondor's setJobFactoryPauseAndLog: the cluster ad says why it stopped."""
        try:
            self.store.append([SetAttributes(JobId(cluster, -1), {
                "JobMaterializePaused": str(code), "JobMaterializePauseReason": adwire.quote(reason)})])
        except Exception as exc:  # noqa: BLE001 - the cluster may be gone
            self.log.warning(f"job factory of cluster {cluster}: not paused ({exc})")

    def act(self, action, constraint: str | None, only: tuple[str, str] | None) -> int:
        """condor_rm, condor_hold and condor_release by constraint act on the job factories
        whose cluster ads it matches, as HTCondor's actOnJobs does: a hold pauses the
        factory (``JobMaterializePaused`` 1 with its reason), a release resumes it (0), a
        removal ends it (3, HTCondor's mmClusterRemoved; kept in the journal here, where
        HTCondor keeps it in the schedd's memory).  The number of factories acted on."""
        name = getattr(action, "name", str(action))
        if name not in ("Remove", "RemoveX", "Hold", "Release"):
            return 0
        with self.lock:
            clusters = sorted(self.live)
        acted = 0
        for cluster in clusters:
            ad = self.store.cluster_ad(cluster)
            if ad is None or not factory_pending(ad) or not adwire.matches(constraint, ad):
                continue
            if only is not None and adwire.evaluate(ad, "Owner") != only[0]:
                continue
            paused = adwire.evaluate(ad, "JobMaterializePaused") if "JobMaterializePaused" in ad else 0
            if name == "Hold":
                change = {"JobMaterializePaused": "1",
                          "JobMaterializePauseReason": adwire.quote("via condor_hold")}
            elif name == "Release":
                if paused != 1:
                    continue
                change = {"JobMaterializePaused": "0"}
            else:
                change = {"JobMaterializePaused": "3"}
            deleted = ("JobMaterializePauseReason",) if name == "Release" else ()
            self.store.append([SetAttributes(JobId(cluster, -1), change, deleted)])
            acted += 1
        self.wake.set()
        return acted

    def wait(self, timeout: float = 1.0) -> None:
        """Until the journal moves past what ``tick`` last saw (or ``timeout``); with no
        factory to serve, until a submit makes one (no reads of an idle schedd)."""
        with self.lock:
            idle = not self.live
        if idle:
            self.wake.wait(timeout)
            self.wake.clear()
            return
        self.store.wait_for_position(self.seen + 1, timeout=timeout)

    def tick(self) -> None:
        """Make the jobs each live factory may make now."""
        with self.lock:
            live = dict(self.live)
        if not live:
            return
        self.seen = self.store.head()
        for cluster, jobs in live.items():
            try:
                done = self._materialize(cluster, jobs)
            except Exception as exc:  # noqa: BLE001 - one factory's fault stops only it
                self.log.warning(f"job factory of cluster {cluster}: {exc}; paused")
                self._pause(cluster, 1, str(exc))
                done = True
            if done:
                with self.lock:
                    self.live.pop(cluster, None)

    def _materialize(self, cluster: int, jobs: _Jobs) -> bool:
        """Make what the limits allow; True once this factory has no more to make."""
        ad = self.store.cluster_ad(cluster)
        if ad is None:
            self._remove_files(cluster)
            return True
        if not factory_pending(ad):
            return False       # its files stay while the cluster does
        if "JobMaterializePaused" in ad and adwire.evaluate(ad, "JobMaterializePaused") != 0:
            return False       # held (condor_hold of the cluster): until released
        statuses = [row.get("JobStatus") for row in
                    self.store.query(f"ClusterId == {cluster}", ["JobStatus"])]
        not_running = sum(1 for s in statuses if str(s) in ("1", "5"))
        next_proc = int(ad["JobMaterializeNextProcId"])
        count = min(allowed(ad, len(statuses), not_running), len(jobs) - next_proc)
        if count <= 0:
            return False
        now = int(time.time())
        owner, user = adwire.evaluate(ad, "Owner"), adwire.evaluate(ad, "User")
        _, _, build = self.builder(owner if isinstance(owner, str) else "", cluster, ad, len(jobs), now,
                                   user if isinstance(user, str) else None)
        made = [dict(a, JobMaterializeDate=str(now), **_log_attrs(ad)) for a in jobs.ads(next_proc, count)]
        records = [*build(made, next_proc),
                   SetAttributes(JobId(cluster, -1), {"JobMaterializeNextProcId": str(next_proc + count)})]
        self.store.append(records)
        self.made([{"cluster": cluster, "cluster_ad": ad,
                    "proc_ads": [{"ProcId": str(proc)} for proc in range(next_proc, next_proc + count)]}])
        self.log.info(f"job factory of cluster {cluster}: materialized {cluster}.{next_proc}"
                 f"{'' if count == 1 else f' to {cluster}.{next_proc + count - 1}'}")
        return False

    def _remove_files(self, cluster: int) -> None:
        """The cluster has left the queue: its factory's files go (HTCondor's ClusterCleanup)."""
        for path in factory_paths(self.spool_dir, cluster):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
