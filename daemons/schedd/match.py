"""How the schedd starts runs: the negotiator's matches, and claim reuse.

The negotiator asks for ``idle_by_submitter`` (daemons.schedd.submitters) and sends back ``matches`` (job, startd,
request); each match gets a claim from ``Runs.reserve`` and is activated on its
startd in a worker thread; the run is recorded (run attributes + EXECUTE) when
the starter is up.  Claim reuse: when a job exits normally, the next idle job
of the same kind (same Requirements, requests, owner) takes over its claim at
once, as HTCondor's schedd reuses claims, instead of waiting for a
negotiation cycle; a starter that offered to (``more``) runs that next job
itself, handed to it in the answer to its outcome (``daemons.starter``).

Queued behind (``lookahead``): a starter whose job runs somewhere with a queue of
its own (a Dask worker) may ask for its claim's next job while the current one
runs, and queue it there behind it.  That job is reserved (being started: no
other match takes it) and its claim made on the startd, but nothing is recorded:
its EXECUTE goes into the same commit as the current job's end, when the handover
names it, exactly as for a next job found then.  An end that hands nothing over,
or a current run that ended any other way, lets the reservation go (the starter
cancels the queued task: ``daemons.dask_starter``).  The reservations live in the
schedd's memory; a schedd that starts takes them back from the startds' claims
(``restore_queued``) before any match, and leaves a saved outcome to its live starter
(``Runs`` reconcile), whose report then hands the claim over as before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor

from jobledger.daemons import spool
from jobledger.daemons.joint_commit import JointCommit
from jobledger.daemons.schedd.moves import slot_job
from jobledger.daemons.negotiator import request_of
from jobledger.eventcore import adwire, interleave
from jobledger.eventcore.claims import ClaimEvent
from jobledger.eventcore.decide.runs import (event, first_start_attrs, startd_address, starter_job,
                                              with_transfer_limits)
from jobledger.eventcore.errors import HTCondorException, InvalidTransition
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.ocus import wants
from jobledger.eventcore.records import Assumed, SetAttributes
from jobledger.eventcore.status import JobStatus
from jobledger.eventcore.transfer import output_on_evict
from jobledger.daemons.storage.interfaces import JobLedger

MATCH_ATTRS = ("Requirements", "Rank", "RequestCpus", "RequestMemory", "RequestDisk", "JobPrio",
               "Owner", "JobUniverse", "ClusterId", "ProcId", "QDate", "DiskUsage", "ImageSize",
               "FileSystemDomain", "TransferInputSizeMB",  # should_transfer_files = NO/IF_NEEDED refer to these
               "RequestGPUs",                              # request_gpus' Requirements clause refers to it
               "AccountingGroup",                          # the submitter, when not the Owner
               "ProjectName",                              # its Project record's MaxJobsRunning
               "Managed",                                  # "External": exported, not ours to start
               "OCUWanted")                                # runs on its owner's OCU claims only
# Jobs alike in these may take over each other's claim (claim reuse).
REUSE_ATTRS = ("Requirements", "RequestCpus", "RequestMemory", "RequestDisk", "Owner", "JobUniverse",
               "AccountingGroup")   # a claim stays with its submitter, as HTCondor's does
REUSE_SCAN = 20     # idle jobs of other clusters looked at for one that may take a freed claim
ACTIVATE_WORKERS = 8
CONTINUED_KEPT = 256    # next jobs remembered for a starter's retried report
QUEUED_GRACE = 30.0     # seconds a queued-behind job stays reserved after its claim's run ended


def externally_managed(ad: dict) -> bool:
    """An exported job (``Managed = "External"``, daemons.schedd.export): another manager
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
        self._queued: dict[str, dict] = {}      # running claim -> the job queued behind it (lookahead)
        self.transfer_limits: dict = {}          # MAX_TRANSFER_*_MB (the schedd sets them)
        self.may_start: Callable[[dict], bool] = lambda ad: True   # the owner under their MaxJobsRunning?
        self.on_ocu: Callable[[str], bool] = lambda claim: False   # a run on an OCU's claim? (no reuse)
        # tells a startd, after the fact, of a claim moved without asking it (None: always ask)
        self.tell_moved: Callable[[str, dict], None] | None = None

    def stop(self) -> None:
        self._workers.shutdown(wait=True, cancel_futures=True)

    def matched(self, matches: list) -> int:
        """The negotiator's matches: each job is started on its startd in a worker."""
        for match in matches:
            job = JobId.parse(match["job"])
            claim = self.runs.reserve(job)
            if claim is not None:
                self._workers.submit(self._activate, job, claim, match)
        return len(matches)

    def in_worker(self, fn, *args) -> Future:
        """Run ``fn(*args)`` in one of the workers that activate claims (the OCU part's claims)."""
        return self._workers.submit(fn, *args)

    def start_on(self, job: JobId, claim: str, match: dict) -> Future:
        """Start ``job`` (reserved under ``claim``) as ``match`` says (``startd``, ``request``,
        and ``within``: an OCU's claim), in a worker, as a negotiator's match is started."""
        return self._workers.submit(self._activate, job, claim, match)

    def starting(self, jobs: list) -> list[str]:
        """Which of ``jobs`` (ids the negotiator matched) are still being started: their
        claims are not on a startd yet (``matched`` reserved them before answering)."""
        busy = self.runs.busy()
        return [job for job in jobs if JobId.parse(job) in busy]

    def finished(self, job: JobId, claim: str, outcome: dict, more: bool = False,
                 joint: JointCommit | None = None, direct: bool = False,
                 ad: dict | None = None) -> Future | None:
        """A run ended (its outcome is about to be recorded): an exit hands its claim on
        (not after vacate/shutdown).  Returns a future done once the claim is handed
        over (the startd moved it to the next job) or the handover found none: the
        starter is answered after it, so the startd never sees the slot free.  With
        ``more`` (the starter offered to run the next job itself) its result is what
        that starter is to run -- ``{"claim", "job", "scratch"}`` -- or None; the next
        job's EXECUTE is recorded meanwhile (a report of its end waits for that), through
        ``joint`` if given (withdrawn when there is no next run).  With ``direct`` as well
        the claim is moved without asking the startd (``_moved_here``).  ``ad``: the job's,
        read once its start was recorded (None: read here)."""
        handover = self._hand_over(job, claim, outcome, more, joint, direct, ad)
        if handover is None and joint is not None:
            joint.withdraw()
        return handover

    def _hand_over(self, job: JobId, claim: str, outcome: dict, more: bool, joint,
                   direct: bool = False, ad: dict | None = None) -> Future | None:
        if not (self.reuse_claims and outcome.get("kind") == "exit") or self.on_ocu(claim):
            self._drop_queued(claim)    # (an OCU's claim takes its next job from daemons.schedd.ocus)
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
        if ad is None:
            ad = self.store.job_ad(job)     # (and then its ad would name no startd)
        if ad is None or not self.runs.is_current(ad, claim):
            return None                 # already recorded: its claim went on then
        if not more:
            self._drop_queued(claim)    # its starter leaves: the queued job is not run
        if more and direct and joint is not None:
            # A plain starter's next job is found and its records offered here, in the
            # thread that commits the end: no hand-off to a worker (both would share the
            # one interpreter lock, the hand-off only adds its delay to every job).
            try:
                self._reuse_claim(claim, ad, handed, joint, direct=True, offer=True)
            except Exception as exc:  # noqa: BLE001 - no next job: the end is recorded alone
                self.log.info("job %s: its claim found no next job: %r", job, exc)
            _settle(handed, None)
            return handed
        self.reuse_in_worker(claim, ad, handed, joint, direct=more and direct, runs_it=more)
        return handed

    def reuse_in_worker(self, claim: str, finished: dict, handed: Future, joint,
                        direct: bool = False, runs_it: bool = True) -> None:
        """``_reuse_claim`` in a worker; ``handed`` is settled when it is over, with None
        if it found no next job (or was cancelled).  ``runs_it``: the finished job's
        starter runs the next job (``handed`` names it), else the claim goes on without
        it.  RuntimeError: stopping."""
        work = self._workers.submit(self._reuse_claim, claim, finished, handed if runs_it else None,
                                    joint, direct)
        work.add_done_callback(lambda _: _settle(handed, None))   # none found (or cancelled)

    def _reuse_claim(self, old_claim: str, finished: dict, handed: Future | None = None,
                     joint: JointCommit | None = None, direct: bool = False, offer: bool = False) -> None:
        """HTCondor's claim reuse: the next idle job of the same kind takes the finished
        job's slot at once, without waiting for a negotiation cycle; with ``handed``,
        the finished job's starter runs it (``finished`` tells).  With ``offer`` the next
        run's records are offered to ``joint`` without waiting (``_start_run``)."""
        try:
            self._next_on_claim(old_claim, finished, handed, joint, direct, offer)
        finally:
            if joint is not None:
                joint.withdraw()    # no next run (or its records went): the end goes alone

    def _next_on_claim(self, old_claim: str, finished: dict, handed: Future | None, joint,
                       direct: bool = False, offer: bool = False) -> None:
        startd = startd_address(finished)
        if startd is None:
            return
        with self.runs.lock:
            queued = self._queued.pop(old_claim, None)
        if queued is not None:      # already on its way behind the finished job
            self._activate(queued["job"], queued["claim"], {
                "startd": startd, "request": queued["request"], "reuse": old_claim,
                "handed": handed, "joint": joint, "offer": offer, "values": queued["given"]["job"]})
            return
        found = self._reserve_next(finished)
        if found is not None:
            job, claim, ad = found
            self._activate(job, claim, {"startd": startd, "request": request_of(ad), "ad": ad,
                                        "reuse": old_claim, "handed": handed, "joint": joint,
                                        "offer": offer, "finished": finished if direct else None})

    def _reserve_next(self, finished: dict) -> tuple | None:
        """The next idle job of ``finished``'s kind, reserved: (job, its claim, its whole ad)."""
        kind = tuple(finished.get(a) for a in REUSE_ATTRS)
        # Jobs being started are idle too: read just enough rows to get past them (with
        # jobs queued behind runs there are dozens; one read, their ads not decoded), the
        # ads of the others only.  The same cluster first; then any cluster, as HTCondor reuses
        # a claim across its autocluster (a DAG's node jobs are one cluster each).
        busy = self.runs.busy()
        seen: set[JobId] = set(busy)
        for cluster, limit in ((int(finished["ClusterId"]), 2 + len(busy)),
                               (None, REUSE_SCAN + len(busy))):
            for job, ad in self.store.idle_ads(cluster, limit, seen):   # (whole: its start needs it too)
                seen.add(job)
                if adwire.evaluate(ad, "JobStatus") != JobStatus.IDLE:
                    continue
                if tuple(ad.get(a) for a in REUSE_ATTRS) != kind or externally_managed(ad) \
                        or wants(ad) or not self.may_start(ad):     # (OCUWanted: OCU claims only)
                    continue
                claim = self.runs.reserve(job)
                if claim is not None:
                    return job, claim, ad
        return None

    # -- queued behind a running job (lookahead) -------------------------------------------
    def lookahead(self, job: JobId, claim: str) -> dict | None:
        """The next job of ``claim``'s kind, to be queued behind ``job`` by its starter:
        ``{"claim", "job", "scratch"}``, or None.  ``job`` runs under ``claim``, or is
        queued itself (a queue of several).  Reserved and its claim made on the startd
        (``activate_many`` with ``queued``), nothing recorded: the handover at the end of the
        job before it records its start (``_next_on_claim``)."""
        given = self.lookahead_many(job, claim, 1)
        return given[0] if given else None

    def lookahead_many(self, job: JobId, claim: str, count: int) -> list[dict]:
        """Up to ``count`` next jobs of ``claim``'s kind, each to be queued behind the one
        before (the first behind ``job``), as ``lookahead`` gives one: reserved, and their
        claims made on the startd in one call.  A retried call gets the jobs queued
        behind ``claim`` already first."""
        if not self.reuse_claims:
            return []
        with self.runs.lock:
            queued = self._queued.get(claim)
            ahead = next((q for q in self._queued.values() if q["claim"] == claim), None)
            found: list[dict] = []
            while queued is not None and len(found) < count:
                found.append(queued["given"])
                last, queued = queued, self._queued.get(queued["claim"])
        if found:
            if len(found) >= count:
                return found
            ad, startd, behind = self.store.job_ad(last["job"]), last["startd"], (last["job"], last["claim"])
        elif ahead is not None:        # ``job`` is queued itself
            ad, startd, behind = self.store.job_ad(job), ahead["startd"], (job, claim)
        else:
            self.runs.wait_started(claim)   # (a handed-over job asks as soon as it has its answer)
            ad = self.store.job_ad(job)
            if ad is None or not self.runs.is_current(ad, claim):
                return []
            startd, behind = startd_address(ad), (job, claim)
        if ad is None or startd is None:
            return found
        return found + self._queue_behind(ad, startd, behind, count - len(found))

    def _queue_behind(self, ad: dict, startd: str, behind: tuple[JobId, str], count: int) -> list[dict]:
        """Up to ``count`` idle jobs of ``ad``'s kind reserved and queued, one behind the
        other, behind the run ``behind`` (job, claim) on ``startd``: their claims made there
        in one ``activate_many``.  What ``lookahead`` gives for each made."""
        reserved: list[tuple] = []
        while len(reserved) < count:
            next_one = self._reserve_next(ad)
            if next_one is None:
                break
            reserved.append(next_one)
        if not reserved:
            return []
        steps = []
        for nxt, nxt_claim, nxt_ad in reserved:
            values = self._starter_job(nxt, nxt_ad)
            steps.append({"job": nxt, "claim": nxt_claim, "request": request_of(nxt_ad), "values": values,
                          "behind": behind})
            behind = (nxt, nxt_claim)
        try:
            answer = self.runs.startd_call("activate_many", address=startd, calls=[
                {"claim": s["claim"], "request": s["request"], "reuse": s["behind"][1], "queued": True,
                 "job": slot_job(s["values"])} for s in steps])
            made, error = answer.get("done") or [], answer.get("error")
        except Exception as exc:  # noqa: BLE001 - nothing queued: the handover finds a job then
            made, error = [], exc
        if error:
            self.log.info("job %s: not queued behind %s: %s", steps[len(made)]["job"], steps[0]["behind"][0], error)
        found = []
        with self.runs.lock:
            for step, answer in zip(steps, made):
                given = {"claim": step["claim"], "job": step["values"], "scratch": answer["scratch"]}
                self._queued[step["behind"][1]] = {"job": step["job"], "claim": step["claim"],
                                                   "request": step["request"], "given": given,
                                                   "startd": startd, "behind": step["behind"][0], "ended": None}
                found.append(given)
        for step in steps[len(made):]:
            self.runs.started(step["job"], step["claim"], ClaimEvent.FAILED)
        return found

    def restore_queued(self) -> int:
        """At start-up, before any match: the jobs queued behind runs on their startds (a
        Dask startd keeps each as a claim ``behind`` another) are reserved again under
        their claims, as the schedd that queued them had them, so that no match takes
        them and the handover at the end of the run before records their start (a queued
        job may start on its worker while the schedd is down).  A queued job that is no
        longer idle (removed or held meanwhile) is cancelled on its startd, with the jobs
        behind it.  Returns how many were reserved again."""
        running = {adwire.evaluate(ad, "ClaimId"): (job, startd_address(ad)) for job, ad in self.runs.running_jobs()}
        restored = 0
        for startd in {address for _, address in running.values() if address}:
            try:
                claims = self.runs.startd_call("claims", address=startd)
            except HTCondorException as exc:
                self.log.info("could not ask %s for the jobs queued on it: %s", startd, exc)
                continue
            behind = {entry["behind"]: claim for claim, entry in claims.items()
                      if isinstance(entry, dict) and isinstance(entry.get("behind"), str)}
            for ahead, (ahead_job, address) in running.items():
                while address == startd and ahead in behind:
                    claim = behind.pop(ahead)
                    job = self._restore_one(claim, claims[claim], ahead, ahead_job, startd)
                    if job is None:
                        behind[ahead] = claim     # cancelled below, with those behind it
                        break
                    restored += 1
                    ahead, ahead_job = claim, job
            for claim in behind.values():
                self.log.info("claim %s: its queued job is not to run: cancelled", claim)
                try:
                    self.runs.startd_call("signal", address=startd, claim=claim, what="kill")
                except HTCondorException as exc:
                    self.log.info("claim %s: could not cancel it: %s", claim, exc)
        return restored

    def _restore_one(self, claim: str, entry: dict, ahead: str, ahead_job: JobId, startd: str) -> JobId | None:
        """Reserve the job the startd queued under ``claim`` behind ``ahead``: its id, or
        None if it is not to run (not idle, or already being started)."""
        try:
            job = JobId.parse(str(entry.get("job")))
        except (ValueError, TypeError):
            return None
        ad = self.store.job_ad(job)
        if ad is None or adwire.evaluate(ad, "JobStatus") != JobStatus.IDLE or externally_managed(ad) \
                or not self.runs.reserve_as(job, claim):
            return None
        given = {"claim": claim, "job": self._starter_job(job, ad), "scratch": entry.get("scratch")}
        with self.runs.lock:
            self._queued[ahead] = {"job": job, "claim": claim, "request": request_of(ad), "given": given,
                                   "startd": startd, "behind": ahead_job, "ended": None}
        self.log.info("job %s: queued behind job %s on %s, reserved again", job, ahead_job, startd)
        return job

    def _drop_queued(self, claim: str) -> None:
        """The jobs queued behind ``claim`` will not run there: their reservations go."""
        while True:
            with self.runs.lock:
                queued = self._queued.pop(claim, None)
            if queued is None:
                return
            self.runs.started(queued["job"], queued["claim"], ClaimEvent.FAILED)
            claim = queued["claim"]

    def unqueue(self, jobs: list) -> None:
        """``jobs`` were removed or held: any of them queued behind a run is cancelled on its
        startd before it could start (and the jobs queued behind it with it)."""
        wanted = set(jobs)
        with self.runs.lock:
            hit = [(claim, q) for claim, q in self._queued.items() if q["job"] in wanted]
        for claim, queued in hit:
            self._drop_queued(claim)
            try:
                self.runs.startd_call("signal", address=queued["startd"], claim=queued["claim"], what="kill")
            except HTCondorException as exc:
                self.log.info("job %s: could not cancel it on its startd: %s", queued["job"], exc)

    def _sweep_queued(self) -> None:
        """Reservations queued behind runs that ended without a word from their starter
        (it died; the run was requeued) go after QUEUED_GRACE seconds."""
        now = time.monotonic()
        with self.runs.lock:
            entries = list(self._queued.items())
            queued_claims = {q["claim"] for q in self._queued.values()}
        for claim, queued in entries:
            if claim in queued_claims:
                continue                # behind another queued job: goes with it
            ad = self.store.job_ad(queued["behind"])
            if ad is not None and self.runs.is_current(ad, claim):
                queued["ended"] = None
            elif queued["ended"] is None:
                queued["ended"] = now
            elif now - queued["ended"] >= QUEUED_GRACE:
                self._drop_queued(claim)

    def _activate(self, job: JobId, claim: str, match: dict) -> None:
        how: ClaimEvent | None = ClaimEvent.FAILED
        try:
            how = self._start_run(job, claim, match)
        except Exception as exc:  # noqa: BLE001 - a failed start leaves the job idle
            self.log.info("job %s: could not start: %s", job, exc)
        finally:
            if how is not None:     # (None: offered, ``_executed`` once committed)
                self.runs.started(job, claim, how)

    def _start_run(self, job: JobId, claim: str, match: dict) -> ClaimEvent | None:
        """Start ``job``: on its startd (a new starter), or -- a match with ``handed``, a
        future -- by the reused claim's starter: ``handed`` gets what that starter is to
        run as soon as the startd moved the claim, before the EXECUTE is recorded (as
        a new starter starts its job while it is).  With ``offer`` the EXECUTE is offered
        to the joint commit (None: its start is over once ``_executed`` learns its result)."""
        ad = match.get("ad") or self.store.job_ad(job)    # (read just now by _reserve_next)
        if ad is None or adwire.evaluate(ad, "JobStatus") != JobStatus.IDLE:
            return ClaimEvent.FAILED
        address, handed = match["startd"], match.get("handed")
        # (A job queued behind the run runs as its starter was given it then.)
        values = match.get("values") or self._starter_job(job, ad)
        if handed is not None:      # the startd needs only whose job it is
            kept = slot_job(values)
            started = self._moved_here(claim, match, kept) or self.runs.startd_call(
                "activate", address=address, claim=claim, request=match["request"],
                job=kept, reuse=match["reuse"], continuing=True)
            given = {"claim": claim, "job": values, "scratch": started["scratch"]}
            with self.runs.lock:
                self._continue(match["reuse"], given)
            _settle(handed, given)
        else:
            within = {"within": match["within"]} if match.get("within") else {}   # an OCU's claim
            started = self.runs.startd_call(
                "activate", address=address, claim=claim, job=values, request=match["request"],
                reuse=match.get("reuse"), slot=match.get("slot"), **within)
        records = execute_records(job, ad, claim, started, address, time.time())
        joint = match.get("joint")
        interleave.point("start.before-execute")
        if match.get("offer") and joint is not None:
            joint.offer(records, lambda result: self._executed(job, claim, address, result))
            return None
        try:
            result = (self.store if joint is None else joint).append(records)
        except InvalidTransition as exc:
            result = exc
        how = self._start_ended_by(address, claim, result)
        interleave.point("start.after-execute")
        return how

    def _executed(self, job: JobId, claim: str, address: str, result) -> None:
        """An offered EXECUTE's ``result`` (a position, or what refused it): its start is
        over, as ``_start_run`` ends one it appended itself."""
        how = ClaimEvent.FAILED
        try:
            how = self._start_ended_by(address, claim, result)
        except Exception as exc:  # noqa: BLE001 - a failed start leaves the job idle
            self.log.info("job %s: could not start: %s", job, exc)
        finally:
            interleave.point("start.after-execute")
            self.runs.started(job, claim, how)

    def _start_ended_by(self, address: str, claim: str, result) -> ClaimEvent:
        """How the start ends by its EXECUTE's commit ``result`` (a position, or what
        refused it): EXECUTED; REFUSED when the job was held or removed while it was
        started (InvalidTransition, StaleDecision: its starter is killed); any other
        failure is raised."""
        if isinstance(result, InvalidTransition):
            self.runs.startd_call("signal", address=address, claim=claim, what="kill")
            return ClaimEvent.REFUSED
        if isinstance(result, BaseException):
            raise result
        return ClaimEvent.EXECUTED

    def _moved_here(self, claim: str, match: dict, kept: dict) -> dict | None:
        """What the startd would answer to moving ``match["reuse"]`` to ``claim`` (the same
        slot and starter, a new scratch directory), worked out from the finished job's ad
        (``match["finished"]``, a ``direct`` offer) and the move queued to be told to the
        startd after; None when the startd is to be asked (no direct offer, a request other
        than the finished job's, an ad without its run's attributes)."""
        finished, tell = match.get("finished"), self.tell_moved
        if finished is None or tell is None or request_of(finished) != match["request"]:
            return None
        slot, scratch = adwire.evaluate(finished, "RemoteSlot"), adwire.evaluate(finished, "ScratchDir")
        pid, start = adwire.evaluate(finished, "StarterPid"), finished.get("StarterStart")
        if not isinstance(slot, str) or not isinstance(scratch, str) or not isinstance(pid, int) \
                or isinstance(pid, bool) or start is None:
            return None
        scratch = os.path.join(os.path.dirname(scratch), f"dir_{pid}_{claim[:12]}")
        # (queued before the EXECUTE is appended: a kill after a refused one finds the claim)
        tell(match["startd"], {"from": match["reuse"], "claim": claim, "job": kept, "scratch": scratch})
        return {"slot": slot, "pid": pid, "start": start, "scratch": scratch}

    # -- chained reports (daemons.schedd.chain) ---------------------------------------------
    def take_queued(self, claim: str, chain: list[tuple[str, JobId]]) -> list[dict]:
        """The jobs queued one behind the other from ``claim`` that are ``chain``'s (claim,
        job) pairs, in order, taken out of the queue (each entry with ``ahead``: the claim
        it was queued behind); the first that differs ends them."""
        taken = []
        with self.runs.lock:
            for step_claim, step_job in chain:
                queued = self._queued.get(claim)
                if queued is None or queued["claim"] != step_claim or queued["job"] != step_job:
                    break
                taken.append(dict(self._queued.pop(claim), ahead=claim))
                claim = step_claim
        return taken

    def put_back(self, steps: list[dict]) -> None:
        """Steps ``take_queued`` took that are not run as a chain: queued again."""
        with self.runs.lock:
            for step in steps:
                self._queued[step["ahead"]] = {k: v for k, v in step.items() if k != "ahead"}

    def promote(self, steps: list[dict], address: str) -> list[dict]:
        """The startd at ``address`` moves the claim along ``steps`` (each to the job queued
        behind the claim before), in one call: its answers (what each EXECUTE names) for
        the steps it took, in order; the first it refused ends them (said in the log)."""
        answer = self.runs.startd_call("activate_many", address=address, calls=[
            {"claim": step["claim"], "request": step["request"], "reuse": step["ahead"], "continuing": True,
             "job": slot_job(step["given"]["job"])}
            for step in steps])
        done = answer.get("done") or []
        if answer.get("error"):
            self.log.info("job %s: not chained: %s", steps[len(done)]["job"], answer["error"])
        with self.runs.lock:
            for step, started in zip(steps, done):
                self._continue(step["ahead"], {"claim": step["claim"], "job": step["given"]["job"],
                                               "scratch": started["scratch"]})
        return done[:len(steps)]

    def _continue(self, old_claim: str, given: dict) -> None:
        """(Under ``runs.lock``.)  Remember what the starter of ``old_claim`` was given to
        run next (a retried report gets the same), the last CONTINUED_KEPT of them."""
        self._continued[old_claim] = given
        while len(self._continued) > CONTINUED_KEPT:
            del self._continued[next(iter(self._continued))]

    def forget_continued(self, claims: list[str]) -> None:
        with self.runs.lock:
            for claim in claims:
                self._continued.pop(claim, None)

    def _starter_job(self, job: JobId, ad: dict) -> dict:
        """What the starter gets: the job's values, and where ON_EXIT_OR_EVICT keeps files."""
        values = with_transfer_limits(starter_job(ad), ad, self.transfer_limits)
        if output_on_evict(values):
            values["_EvictedFiles"] = str(spool.job_spool(self.spool_dir, job) / "evicted")
        return values


def execute_records(job: JobId, ad: dict, claim: str, started: dict, address: str, now: float) -> list:
    """A run's start: its attributes and EXECUTE, named on the idle ``ad`` it was decided on
    (``started``: the startd's answer to ``activate``)."""
    return [Assumed.of(job, ad), SetAttributes(job, set={
        "ClaimId": adwire.quote(claim), "StarterPid": str(started["pid"]),
        "StarterStart": str(started["start"]), "ScratchDir": adwire.quote(started["scratch"]),
        "RemoteSlot": adwire.quote(started["slot"]), "StartdIpAddr": adwire.quote(address),
        **started.get("attrs", {}),   # the slot's, for the job's ad (AssignedGPUs)
        **first_start_attrs(ad, now),
    }, by="schedd"), event(EventType.EXECUTE, job, now, ExecuteHost=started.get("host") or address,
                           SlotName=started["slot"])]


def _settle(future: Future, result) -> None:
    """``future``'s result, unless it has one already."""
    try:
        future.set_result(result)
    except InvalidStateError:
        pass
