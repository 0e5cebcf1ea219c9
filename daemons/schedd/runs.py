"""The schedd's side of running jobs: claims, outcomes, reconnects.

What a run leaves in the journal (all in the job's ad, so a restarted
schedd knows it): ``ClaimId``, ``StarterPid``, ``StarterStart`` (the
starter's start time: a pid plus start time names one process for good),
``ScratchDir`` and ``RemoteSlot``, set together with the EXECUTE event.

A run ends in exactly one way, decided by the journal: the first outcome
recorded for the job's *current* claim wins; any later report (the starter
retrying, a stale claim, the outcome file read after a restart) finds the
job no longer running under that claim and is dropped.  So no job ever gets
two terminated events.

``Runs.reconcile(startup)`` looks at every job the queue says is running:
its outcome file written meanwhile is recorded; a live starter is kept (at
startup: JOB_DISCONNECTED then JOB_RECONNECTED, as HTCondor writes when the
schedd comes back); a starter gone without an outcome sends the job back to
idle (SHADOW_EXCEPTION, or JOB_RECONNECT_FAILED at startup).

What the records of a run's end are (the exit policy) is
``eventcore.decide.runs``; how matches become runs, ``daemons.schedd.match``.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager

from jobledger.daemons.daemon import alive
from jobledger.daemons.schedd.moves import SLOT_ATTRS
from jobledger.daemons.spool import job_spool
from jobledger.daemons.starter import OUTCOME, STARTER_RECORD, read_outcome
from jobledger.eventcore import adwire, interleave
from jobledger.eventcore.claims import ClaimEvent, ClaimState, next_state
from jobledger.eventcore.decide.runs import (HOLD_SPAWN, RUN_ATTRS, event, exit_records,
                                             file_transfer_events, startd_address)
from jobledger.eventcore.errors import HTCondorException, InvalidTransition
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import Assumed, SetAttributes
from jobledger.eventcore.status import JobStatus
from jobledger.eventcore.transfer import output_on_evict, size_mb
from jobledger.daemons.storage.interfaces import JobLedger

MAX_START_FAILURES = 3          # starters gone without an outcome before the job is held
STARTED_WAIT = 10.0             # seconds a report waits for its run's start to be recorded
# Seconds a live starter's saved outcome is left to it to report (its retries last
# SCHEDD_RECONNECT_TIMEOUT, 60 s by default); an older one is read (a stuck starter).
LIVE_REPORT_GRACE = 90.0


class Runs:
    """Claims and runs of one schedd, thread-safe under one lock (``lock``).

    A claim moves as ``eventcore.claims.TABLE`` says.  Its state is the
    journal's (each running job's ``ClaimId``: ACTIVE) but while it is
    STARTING, which only this object holds: ``reserve`` one for a job,
    ``started(job, claim, how)`` once the start is recorded, refused or failed,
    or both as ``with runs.starting(job) as claim``.  ``lock`` also orders every change
    of a job's run (actions, policy, outcomes), so a report and an action
    never both end one run.

    ``startd_call(cmd, address=None, **args)`` talks to a startd;
    ``signal_local(ad, what)`` signals a scheduler-universe job's starter and
    says whether the job was one.
    """

    def __init__(self, store: JobLedger, log, startd_call, spool_dir=None, signal_local=None):
        self.spool_dir = spool_dir
        self.store = store
        self.log = log
        self.startd_call = startd_call
        self.signal_local = signal_local or (lambda ad, what: False)
        self.lock = threading.RLock()
        self._starting: dict[str, threading.Event] = {}   # claim -> set once its start is recorded
        self._starting_jobs: dict[JobId, str] = {}     # job -> the claim it is being started under
        # the periodic policy's records for a job that just exited, checked before its exit
        # policy (the schedd's Policy.at_exit); None: the exit policy alone
        self.at_exit: Callable[[JobId, dict, float], list | None] | None = None
        # told once a DAG node's run end is committed: DAGMan acts on it when it reads it in
        # the nodes log, so the user logs are written soon, not at the end of a widened
        # gathering window (the schedd's Projector.hurry)
        self.node_ended: Callable[[], None] = lambda: None

    # -- claims being started ---------------------------------------------------------
    def reserve(self, job: JobId) -> str | None:
        """A new claim id for ``job``, or None if the job is already being started."""
        with self.lock:
            if job in self._starting_jobs:
                return None
            claim = uuid.uuid4().hex
            self._starting[claim] = threading.Event()
            self._starting_jobs[job] = claim
            return claim

    def reserve_as(self, job: JobId, claim: str) -> bool:
        """``reserve`` under a given ``claim`` (one a startd holds already, see
        ``Matches.restore_queued``); False if the job or the claim is being started."""
        with self.lock:
            if job in self._starting_jobs or claim in self._starting:
                return False
            self._starting[claim] = threading.Event()
            self._starting_jobs[job] = claim
            return True

    def started(self, job: JobId, claim: str,
                how: ClaimEvent = ClaimEvent.FAILED) -> ClaimState | None:
        """The start of ``job`` under ``claim`` is over -- ``how``: its EXECUTE committed
        (EXECUTED), refused and its starter killed (REFUSED), or no starter runs
        (FAILED) -- and reports may go on.  Its claim's next state (``eventcore.claims``);
        None if its start was over already (a second word on it changes nothing)."""
        with self.lock:
            pending = self._starting.pop(claim, None)
            if pending is None:
                return None
            pending.set()
            if self._starting_jobs.get(job) == claim:
                del self._starting_jobs[job]
            return next_state(claim, ClaimState.STARTING, how)

    @contextmanager
    def starting(self, job: JobId):
        """``reserve`` a claim for ``job`` (None if it is being started); the start ends
        FAILED unless ``started`` said otherwise before the block ended."""
        claim = self.reserve(job)
        try:
            yield claim
        finally:
            if claim is not None:
                self.started(job, claim)

    def busy(self) -> frozenset:
        """The jobs being started right now (idle in the queue, not to be matched again)."""
        with self.lock:
            return frozenset(self._starting_jobs)

    def is_starting(self, claim: str) -> bool:
        with self.lock:
            return claim in self._starting

    def wait_started(self, claim: str, timeout: float = STARTED_WAIT) -> None:
        """A report about ``claim`` waits for its start to be recorded (outside the lock)."""
        with self.lock:
            pending = self._starting.get(claim)
        if pending is not None:
            pending.wait(timeout)

    # -- outcomes -------------------------------------------------------------------
    def record_outcome(self, job: JobId, claim: str, outcome: dict, wait: float = STARTED_WAIT,
                       reported: bool = False, joint=None, ad: dict | None = None) -> str:
        """Record ``outcome`` if ``claim`` is still the job's run.  The scratch directory
        goes too, unless the starter ``reported`` it: a live starter removes its own once
        answered (and left the outcome in it only when a report had failed).  With
        ``joint`` (a ``daemons.joint_commit.JointCommit``) the records go into one commit
        with the next run's on the claim.

        The records are decided (once a plain starter's next run was found in this thread,
        or while the handover's worker looks for it) and
        committed outside ``lock``, naming the state they were decided on (``Assumed``):
        another slot's end commits beside this one (one group commit, one fsync), and an
        action or the policy that changed the run meanwhile makes this commit refuse (the
        report is then stale), as theirs refuse after it.  ``ad``: the job's, read once the
        run's start was recorded (the handover read it too), else read here."""
        self.wait_started(claim, wait)
        decided, exited = self.outcome_records(job, claim, outcome, ad), outcome.get("kind") == "exit"
        # (a starter that reports on its first try saved nothing in its scratch directory,
        # and removes it itself: not even looked at here, before its answer)
        cleans = reported and outcome.get("saved") is not True
        if joint is None:
            return "stale" if decided is None else \
                self._commit_outcome(job, decided, exited, reported, cleans, self.store.append)
        joint.take()      # outside the lock: the handover's worker takes it meanwhile
        try:
            return "stale" if decided is None else \
                self._commit_outcome(job, decided, exited, reported, cleans, joint.commit)
        finally:
            joint.release()

    def outcome_records(self, job: JobId, claim: str, outcome: dict,
                        ad: dict | None = None) -> tuple[dict, list] | None:
        """(the job's ad, the records ending its run as ``outcome`` says), or None when
        ``claim`` is not its run (a stale report).  Decided outside ``lock``: the records
        name the state they were decided on (``Assumed``), so an action or the policy that
        changes the run before they are committed makes their commit refuse, as it would
        under the lock; the short sections of the parts that start runs do not queue
        behind a read and an exit policy at every job's end.  (``ad``: the job's as read
        since its start was recorded; None: read it.)"""
        if ad is None:
            ad = self.store.job_ad(job)
        if ad is None or not self.is_current(ad, claim):
            return None
        return ad, self.end_records(job, ad, outcome, time.time())

    def end_records(self, job: JobId, ad: dict, outcome: dict, now: float) -> list:
        """The records that end the run of ``job`` (its ``ad`` as it runs) as ``outcome``
        says, named on that ad (pure but for the log: ``daemons.schedd.chain`` decides
        them inside a commit)."""
        return [Assumed.of(job, ad), *self._input_records(job, ad, outcome.get("inputs")),
                *exit_records(job, ad, outcome, now, self.at_exit)]

    def _commit_outcome(self, job: JobId, decided: tuple[dict, list], exited: bool, reported: bool,
                        cleans: bool, append) -> str:
        ad, records = decided
        interleave.point("outcome.append")
        try:
            append(records)
        except InvalidTransition:    # (StaleDecision: the run changed since it was decided)
            return "stale"
        self.ended(job, ad, exited, reported, cleans)
        return "recorded"

    def ended(self, job: JobId, ad: dict, exited: bool, reported: bool, cleans: bool = False) -> None:
        """A run's end is recorded: its scratch directory goes (see ``record_outcome``; not
        looked at when its starter ``cleans`` it), and after an exit the files an eviction
        left in the spool (only a job whose output is kept on eviction has them; an empty
        ``ad``, not known, may).  A DAG node's end is told to ``node_ended``."""
        if "DAGManNodesLog" in ad:
            self.node_ended()
        if not cleans:
            self._remove_scratch(ad, only_saved=reported)
        if exited and self.spool_dir is not None and (not ad or output_on_evict(
                {"WhenToTransferOutput": adwire.evaluate(ad, "WhenToTransferOutput")})):
            shutil.rmtree(job_spool(self.spool_dir, job) / "evicted", ignore_errors=True)

    def record_input(self, job: JobId, claim: str, events: list, input_bytes: int) -> str:
        """The starter copied the inputs: FILE_TRANSFER events and TransferInputSizeMB."""
        self.wait_started(claim)
        with self.lock:
            ad = self.store.job_ad(job)
            if ad is None or not self.is_current(ad, claim):
                return "stale"
            self._append(job, self._input_records(job, ad, {"events": events, "input_bytes": int(input_bytes)}))
            return "recorded"

    def _input_records(self, job: JobId, ad: dict, inputs) -> list:
        """The input transfer's records: those of ``record_input``, or none for no
        ``inputs``.  A starter whose job ended before it had reported its input transfer
        sends that report in the outcome (``"inputs"``): one commit, the events in order.
        A malformed one is left out (said in the log): the outcome is recorded all the same."""
        if inputs is None:
            return []
        events, size = (inputs.get("events"), inputs.get("input_bytes")) if isinstance(inputs, dict) else (None, None)
        if not isinstance(events, list) or isinstance(size, bool) or not isinstance(size, int) \
                or not all(isinstance(e, list) and len(e) == 2 for e in events):
            self.log.info("job %s: an outcome's inputs are not {events: [[type, time], ...], "
                          "input_bytes: int}: %.200r left out", job, inputs)
            return []
        return [SetAttributes(job, set={"TransferInputSizeMB": str(size_mb(size))}, by="schedd"),
                *file_transfer_events(job, ad, events)]

    def record_size(self, job: JobId, claim: str, image_size_kb: int, rss_kb: int) -> str:
        """A running job's memory changed: IMAGE_SIZE event and the usage attributes."""
        with self.lock:
            ad = self.store.job_ad(job)
            if ad is None or not self.is_current(ad, claim):
                return "stale"
            memory_mb = (int(rss_kb) + 1023) // 1024
            self._append(job, [
                SetAttributes(job, set={"ImageSize": str(int(image_size_kb)),
                                        "ResidentSetSize": str(int(rss_kb)),
                                        "MemoryUsage": str(memory_mb)}, by="schedd"),
                event(EventType.IMAGE_SIZE, job, time.time(), Size=int(image_size_kb),
                      ResidentSetSize=int(rss_kb), MemoryUsage=memory_mb)])
            return "recorded"

    @staticmethod
    def is_current(ad: dict, claim: str) -> bool:
        """``ad``'s job is running under ``claim``."""
        status = adwire.evaluate(ad, "JobStatus")
        return status in (JobStatus.RUNNING, JobStatus.SUSPENDED, JobStatus.TRANSFERRING_OUTPUT) \
            and adwire.evaluate(ad, "ClaimId") == claim

    @staticmethod
    def _remove_scratch(ad: dict, only_saved: bool = False) -> None:
        """The run's scratch directory (``only_saved``: only if it holds a saved outcome)."""
        scratch = adwire.evaluate(ad, "ScratchDir")
        if isinstance(scratch, str) and os.path.basename(scratch).startswith("dir_"):
            if not only_saved or os.path.exists(os.path.join(scratch, OUTCOME)):
                shutil.rmtree(scratch, ignore_errors=True)

    # -- reconcile ----------------------------------------------------------------------
    def running_jobs(self) -> list[tuple[JobId, dict]]:
        out = []
        for status in (JobStatus.RUNNING, JobStatus.SUSPENDED, JobStatus.TRANSFERRING_OUTPUT):
            for ad in self.store.query(f"JobStatus == {int(status)}"):
                out.append((JobId(int(ad["ClusterId"]), int(ad["ProcId"])), ad))
        return out

    def reconcile(self, startup: bool = False) -> int:
        """Settle every running job whose starter finished or vanished; returns how many."""
        settled = 0
        for job, ad in self.running_jobs():
            claim = adwire.evaluate(ad, "ClaimId")
            if not isinstance(claim, str) or self.is_starting(claim):
                continue
            settled += self._settle(job, ad, claim, startup)
        return settled

    def _settle(self, job: JobId, ad: dict, claim: str, startup: bool) -> int:
        scratch = adwire.evaluate(ad, "ScratchDir")
        pid, start = adwire.evaluate(ad, "StarterPid"), adwire.evaluate(ad, "StarterStart")
        outcome = read_outcome(scratch) if isinstance(scratch, str) else None
        if outcome is not None and alive(pid, start) and _recent(scratch, LIVE_REPORT_GRACE):
            # Its starter, alive, saved it when a first report failed and is still trying:
            # its report hands the claim over (to the jobs queued behind the run, too).
            outcome = None
        running = outcome is None and alive(pid, start)
        if outcome is None and not running and isinstance(scratch, str):
            outcome = read_outcome(scratch)  # it may have finished between the two looks
        now = time.time()
        slot = adwire.evaluate(ad, "RemoteSlot") or ""
        host = startd_address(ad) or ""
        if startup:
            self._append(job, [event(EventType.JOB_DISCONNECTED, job, now, StartdName=slot,
                                     StartdAddr=host, DisconnectReason="The schedd restarted")])
        if outcome is not None and outcome.get("claim") == claim:
            if startup:
                self._append(job, [event(EventType.JOB_RECONNECTED, job, now, StartdName=slot,
                                         StartdAddr=host, StarterAddr=host)])
            return int(self.record_outcome(job, claim, outcome) == "recorded")
        if running:
            if startup:
                self._append(job, [event(EventType.JOB_RECONNECTED, job, now, StartdName=slot,
                                         StartdAddr=host, StarterAddr=host)])
            return 0
        clear = tuple(a for a in RUN_ATTRS if a in ad)
        with self.lock:
            current = self.store.job_ad(job)
            if current is None or not self.is_current(current, claim):
                return 0
            failures = int(adwire.evaluate(current, "NumShadowExceptions") or 0) + (not startup)
            # A starter that had started the job was killed (a scheduler-universe starter
            # says so in starter.json): the job is started again, never held for it.
            started = isinstance(scratch, str) and os.path.exists(os.path.join(scratch, STARTER_RECORD))
            if startup:
                lost = event(EventType.JOB_RECONNECT_FAILED, job, now, StartdName=slot,
                             Reason="the starter is gone")
            else:
                lost = event(EventType.SHADOW_EXCEPTION, job, now,
                             Message="the starter exited without an outcome" +
                             (" (killed after it started the job)" if started else ""))
            # (named on the state it was decided on: an outcome committed meanwhile wins)
            records = [Assumed.of(job, current),
                       SetAttributes(job, set={"NumShadowExceptions": str(failures)}, delete=clear,
                                     by="schedd"), lost]
            if failures % MAX_START_FAILURES == 0 and failures and not started:   # held, not restarted in a tight loop
                records.append(event(EventType.JOB_HELD, job, now, HoldReasonCode=HOLD_SPAWN,
                                     HoldReasonSubCode=0,
                                     HoldReason=f"The job failed {failures} times without an outcome "
                                                "from its starter (it cannot be started); fix it, then "
                                                "release it"))
            self._append(job, records)
            self._remove_scratch(current)
        self.log.info("job %s: starter gone without an outcome; requeued", job)
        return 1

    def _append(self, job: JobId, records: list) -> None:
        try:
            self.store.append(records)
        except InvalidTransition as exc:
            self.log.info("job %s: %s", job, exc)

    # -- telling starters -------------------------------------------------------------
    def tell(self, claim, what: str, ad: dict | None = None) -> None:
        """Tell the starter of ``claim`` to kill, vacate, suspend or continue its job."""
        if not isinstance(claim, str):
            return
        # A scheduler-universe job (DAGMan) is told to stop with a grace period, so it
        # can clean up (remove_kill_sig); its starter is the schedd's, not a startd's.
        if ad is not None and self.signal_local(ad, "vacate" if what == "kill" else what):
            return
        startd = startd_address(ad) if ad is not None else None
        try:   # the startd that runs it (the local one, or the Dask workers' one)
            self.startd_call("signal", address=startd,
                             claim=claim, what=what)
        except HTCondorException as exc:
            self.log.info("could not tell claim %s to %s: %s", claim, what, exc)

    def kill_unknown_claims(self) -> None:
        """Starters whose run the journal never recorded (we died while starting them).
        A starter the journal says runs a later job under another claim (a claim moved
        without asking the startd, which we died before telling: daemons.schedd.moves)
        is told to the startd instead."""
        try:
            claims = self.startd_call("claims")
        except HTCondorException:
            return
        running = [ad for _, ad in self.running_jobs()]
        current = {adwire.evaluate(ad, "ClaimId") for ad in running}
        moved = self._untold_moves(claims, running, current)
        if moved:
            try:
                self.startd_call("claims_moved", moves=moved)
            except HTCondorException as exc:
                self.log.info("could not tell the startd of %d claim moves: %s", len(moved), exc)
            claims = {c: s for c, s in claims.items() if c not in {m["from"] for m in moved}}
        for claim in claims:
            if claim not in current and not self.is_starting(claim):   # (reserved: being started)
                self.log.info("claim %s is not in the journal: killing its starter", claim)
                try:
                    self.startd_call("signal", claim=claim, what="kill")
                except HTCondorException:
                    pass


    @staticmethod
    def _untold_moves(claims: dict, running: list[dict], current: set) -> list[dict]:
        """The moves the startd (its ``claims``) has not been told: a claim of a starter
        (pid, start) that the journal says runs a job under another claim."""
        by_starter = {(adwire.evaluate(ad, "StarterPid"), ad.get("StarterStart")): ad for ad in running}
        moves = []
        for claim, slot in claims.items():
            if claim in current or not isinstance(slot, dict) or not slot.get("pid"):
                continue
            ad = by_starter.get((slot["pid"], str(slot.get("start"))))
            if ad is None or adwire.evaluate(ad, "ClaimId") in claims:
                continue
            job = {a: adwire.evaluate(ad, a) for a in SLOT_ATTRS if a in ad}
            moves.append({"from": claim, "claim": adwire.evaluate(ad, "ClaimId"), "job": job,
                          "scratch": adwire.evaluate(ad, "ScratchDir")})
        return moves


def _recent(scratch: str, seconds: float) -> bool:
    """Was the outcome saved in ``scratch`` less than ``seconds`` ago?"""
    try:
        return time.time() - os.stat(os.path.join(scratch, OUTCOME)).st_mtime < seconds
    except OSError:
        return False
