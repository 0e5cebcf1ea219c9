"""How the schedd starts runs: the negotiator's matches, and claim reuse.

The negotiator asks for ``idle_jobs`` and sends back ``matches`` (job, startd,
request); each match gets a claim from ``Runs.reserve`` and is activated on its
startd in a worker thread; the run is recorded (run attributes + EXECUTE) when
the starter is up.  Claim reuse: when a job exits normally, the next idle job
of the same kind (same Requirements, requests, owner) takes over its claim at
once, as HTCondor's schedd reuses claims, instead of waiting for a
negotiation cycle; a starter that offered to (``more``) runs that next job
itself, handed to it in the answer to its outcome (``daemons.starter``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor

from jobledger.daemons import spool
from jobledger.daemons.joint_commit import JointCommit
from jobledger.daemons.negotiator import request_of
from jobledger.daemons.schedd_local import SCHEDULER
from jobledger.eventcore import adwire, interleave
from jobledger.eventcore.claims import ClaimEvent
from jobledger.eventcore.decide.runs import (event, first_start_attrs, startd_address, starter_job,
                                              with_transfer_limits)
from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import Assumed, Record, SetAttributes
from jobledger.eventcore.status import JobStatus
from jobledger.eventcore.transfer import output_on_evict
from jobledger.daemons.storage.interfaces import JobLedger

MATCH_ATTRS = ("Requirements", "Rank", "RequestCpus", "RequestMemory", "RequestDisk", "JobPrio",
               "Owner", "JobUniverse", "ClusterId", "ProcId", "QDate", "DiskUsage", "ImageSize",
               "FileSystemDomain", "TransferInputSizeMB",  # should_transfer_files = NO/IF_NEEDED refer to these
               "RequestGPUs",                              # request_gpus' Requirements clause refers to it
               "AccountingGroup",                          # the submitter, when not the Owner
               "ProjectName",                              # its Project record's MaxJobsRunning
               "Managed")                                  # "External": exported, not ours to start
# Jobs alike in these may take over each other's claim (claim reuse).
REUSE_ATTRS = ("Requirements", "RequestCpus", "RequestMemory", "RequestDisk", "Owner", "JobUniverse",
               "AccountingGroup")   # a claim stays with its submitter, as HTCondor's does
REUSE_SCAN = 20     # idle jobs of other clusters looked at for one that may take a freed claim
ACTIVATE_WORKERS = 8
CONTINUED_KEPT = 256    # next jobs remembered for a starter's retried report
SLOT_ATTRS = ("Owner", "ClusterId", "ProcId", "AccountingGroup", "User", "MaxJobRetirementTime")   # what a startd keeps of a job it runs


def externally_managed(ad: dict) -> bool:
    """An exported job (``Managed = "External"``, daemons.schedd_export): another manager
    runs it; the schedd neither matches nor starts it."""
    return ad.get("Managed") == '"External"'


class Matches:
    """Starts runs of matched jobs (``store``, ``runs``, ``log``, the spool for evicted files)."""

    def __init__(self, store: JobLedger, runs, log, spool_dir, reuse_claims: bool = True):
        self.store = store
        self.runs = runs
        self.log = log
        self.spool_dir = spool_dir
        self.reuse_claims = reuse_claims
        self._workers = ThreadPoolExecutor(max_workers=ACTIVATE_WORKERS, thread_name_prefix="activate")
        self._continued: dict[str, dict] = {}   # finished claim -> the next job its starter runs
        self.transfer_limits: dict = {}          # MAX_TRANSFER_*_MB (the schedd sets them)
        self.may_start: Callable[[dict], bool] = lambda ad: True   # the owner under their MaxJobsRunning?

    def stop(self) -> None:
        self._workers.shutdown(wait=True, cancel_futures=True)

    def idle_jobs(self, limit: int = 1000) -> list:
        """Idle jobs for the negotiator: not being started, not the scheduler universe's."""
        busy = self.runs.busy()
        out = []
        for ad in self.store.query("JobStatus == 1", MATCH_ATTRS, limit + len(busy)):
            job = JobId(int(ad["ClusterId"]), int(ad["ProcId"]))
            if job in busy or ad.get("JobUniverse") == str(SCHEDULER) or externally_managed(ad):
                continue  # scheduler-universe jobs are ours to start, not matched to a slot
            out.append(ad)
            if len(out) >= limit:
                break
        return out

    def matched(self, matches: list) -> int:
        """The negotiator's matches: each job is started on its startd in a worker."""
        for match in matches:
            job = JobId.parse(match["job"])
            claim = self.runs.reserve(job)
            if claim is not None:
                self._workers.submit(self._activate, job, claim, match)
        return len(matches)

    def starting(self, jobs: list) -> list[str]:
        """Which of ``jobs`` (ids the negotiator matched) are still being started: their
        claims are not on a startd yet (``matched`` reserved them before answering)."""
        busy = self.runs.busy()
        return [job for job in jobs if JobId.parse(job) in busy]

    def finished(self, job: JobId, claim: str, outcome: dict, more: bool = False,
                 joint: JointCommit | None = None) -> Future | None:
        """A run ended (its outcome is about to be recorded): an exit hands its claim on
        (not after vacate/shutdown).  Returns a future done once the claim is handed
        over (the startd moved it to the next job) or the handover found none: the
        starter is answered after it, so the startd never sees the slot free.  With
        ``more`` (the starter offered to run the next job itself) its result is what
        that starter is to run -- ``{"claim", "job", "scratch"}`` -- or None; the next
        job's EXECUTE is recorded meanwhile (a report of its end waits for that), through
        ``joint`` if given (withdrawn when there is no next run)."""
        handover = self._hand_over(job, claim, outcome, more, joint)
        if handover is None and joint is not None:
            joint.withdraw()
        return handover

    def _hand_over(self, job: JobId, claim: str, outcome: dict, more: bool, joint) -> Future | None:
        if not (self.reuse_claims and outcome.get("kind") == "exit"):
            return None
        self.runs.wait_started(claim)   # a short job can end before its run is recorded
        handed: Future = Future()
        with self.runs.lock:
            given = self._continued.get(claim)
        if more and given is not None:   # a retried report: the same next job
            if joint is not None:
                joint.withdraw()         # (its run was recorded then)
            handed.set_result(given)
            return handed
        ad = self.store.job_ad(job)     # (and then its ad would name no startd)
        if ad is None or not self.runs.is_current(ad, claim):
            return None                 # already recorded: its claim went on then
        work = self._workers.submit(self._reuse_claim, claim, ad, handed if more else None, joint)
        work.add_done_callback(lambda _: _settle(handed, None))   # none found (or cancelled)
        return handed

    def _reuse_claim(self, old_claim: str, finished: dict, handed: Future | None = None,
                     joint: JointCommit | None = None) -> None:
        """HTCondor's claim reuse: the next idle job of the same kind takes the finished
        job's slot at once, without waiting for a negotiation cycle; with ``handed``,
        the finished job's starter runs it (``finished`` tells)."""
        try:
            self._next_on_claim(old_claim, finished, handed, joint)
        finally:
            if joint is not None:
                joint.withdraw()    # no next run (or its records went): the end goes alone

    def _next_on_claim(self, old_claim: str, finished: dict, handed: Future | None, joint) -> None:
        startd = startd_address(finished)
        if startd is None:
            return
        kind = tuple(finished.get(a) for a in REUSE_ATTRS)
        # Jobs being started are idle too: fetch just enough to get past them.  The same
        # cluster first; then any cluster, as HTCondor reuses a claim across its autocluster
        # (a DAG's node jobs are one cluster each).
        busy = len(self.runs.busy())
        for constraint, limit in ((f"ClusterId == {int(finished['ClusterId'])} && JobStatus == 1", 2 + busy),
                                  ("JobStatus == 1", REUSE_SCAN + busy)):
            for ad in self.store.query(constraint, MATCH_ATTRS, limit):
                if tuple(ad.get(a) for a in REUSE_ATTRS) != kind or externally_managed(ad) \
                        or not self.may_start(ad):
                    continue
                job = JobId(int(ad["ClusterId"]), int(ad["ProcId"]))
                claim = self.runs.reserve(job)
                if claim is not None:
                    self._activate(job, claim, {"startd": startd, "request": request_of(ad),
                                                "reuse": old_claim, "handed": handed,
                                                "joint": joint})
                    return

    def _activate(self, job: JobId, claim: str, match: dict) -> None:
        how = ClaimEvent.FAILED
        try:
            how = self._start_run(job, claim, match)
        except Exception as exc:  # noqa: BLE001 - a failed start leaves the job idle
            self.log.info("job %s: could not start: %s", job, exc)
        finally:
            self.runs.started(job, claim, how)

    def _start_run(self, job: JobId, claim: str, match: dict) -> ClaimEvent:
        """Start ``job``: on its startd (a new starter), or -- a match with ``handed``, a
        future -- by the reused claim's starter: ``handed`` gets what that starter is to
        run as soon as the startd moved the claim, before the EXECUTE is recorded (as
        a new starter starts its job while it is)."""
        ad = self.store.job_ad(job)
        if ad is None or adwire.evaluate(ad, "JobStatus") != JobStatus.IDLE:
            return ClaimEvent.FAILED
        address, handed = match["startd"], match.get("handed")
        values = self._starter_job(job, ad)
        if handed is not None:      # the startd needs only whose job it is
            started = self.runs.startd_call(
                "activate", address=address, claim=claim, request=match["request"],
                job={a: values[a] for a in SLOT_ATTRS if a in values}, reuse=match["reuse"],
                continuing=True)
            given = {"claim": claim, "job": values, "scratch": started["scratch"]}
            with self.runs.lock:
                self._continued[match["reuse"]] = given
                while len(self._continued) > CONTINUED_KEPT:
                    del self._continued[next(iter(self._continued))]
            _settle(handed, given)
        else:
            started = self.runs.startd_call(
                "activate", address=address, claim=claim, job=values, request=match["request"],
                reuse=match.get("reuse"), slot=match.get("slot"))
        now = time.time()
        records: list[Record | Assumed] = [Assumed.of(job, ad), SetAttributes(job, set={
            "ClaimId": adwire.quote(claim), "StarterPid": str(started["pid"]),
            "StarterStart": str(started["start"]), "ScratchDir": adwire.quote(started["scratch"]),
            "RemoteSlot": adwire.quote(started["slot"]), "StartdIpAddr": adwire.quote(address),
            **started.get("attrs", {}),   # the slot's, for the job's ad (AssignedGPUs)
            **first_start_attrs(ad, now),
        }, by="schedd"), event(EventType.EXECUTE, job, now, ExecuteHost=started.get("host") or address,
                               SlotName=started["slot"])]
        joint = match.get("joint")
        interleave.point("start.before-execute")
        try:
            (self.store if joint is None else joint).append(records)
            how = ClaimEvent.EXECUTED
        except InvalidTransition:   # (StaleDecision: held or removed while it was started)
            self.runs.startd_call("signal", address=address, claim=claim, what="kill")
            how = ClaimEvent.REFUSED
        interleave.point("start.after-execute")
        return how

    def _starter_job(self, job: JobId, ad: dict) -> dict:
        """What the starter gets: the job's values, and where ON_EXIT_OR_EVICT keeps files."""
        values = with_transfer_limits(starter_job(ad), ad, self.transfer_limits)
        if output_on_evict(values):
            values["_EvictedFiles"] = str(spool.job_spool(self.spool_dir, job) / "evicted")
        return values


def _settle(future: Future, result) -> None:
    """``future``'s result, unless it has one already."""
    try:
        future.set_result(result)
    except InvalidStateError:
        pass
