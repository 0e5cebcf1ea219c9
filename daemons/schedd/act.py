"""``Schedd.act`` and ``Schedd.edit`` on the schedd's side (schedd.md sections 3 and 4).

Jobs are chosen by an id list (every id lands in exactly one result bucket)
or by a constraint (ANDed with the action's state filter, so jobs in the
wrong state are simply not matched).  All records of one call are one
journal append; if no job succeeded nothing is appended, but the result ad
is still returned.  The append names the state each job was decided on
(``Assumed``): a job whose run started meanwhile (its EXECUTE is appended
outside the lock actions hold) makes the store refuse it, and the action
decides again on what the queue holds now, killing the run it then sees.  What
an action does to a job in each status is ``eventcore.decide.actions``.  After
the commit the running instances are told (kill, vacate, suspend, continue)
through the startd.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from jobledger.daemons import ipc, spool, spool_net
from jobledger.eventcore import transfer as plan
from jobledger.eventcore import adwire, interleave
from jobledger.eventcore.attrnames import attr_name
from jobledger.eventcore.decide.actions import (
    ACTION_NAMES, BUCKETS, STATE_FILTER, decide, status_of as _status)
from jobledger.eventcore.decide.runs import RUN_ATTRS, event, starter_job
from jobledger.eventcore.enums import JobAction, TransactionFlag
from jobledger.eventcore.errors import (HTCondorException, HTCondorValueError, PermissionDenied, StaleDecision,
                                        TransferError)
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ActionRecord, Assumed, Record, SetAttributes
from jobledger.eventcore.status import JobStatus
from jobledger.daemons.storage.interfaces import ActionLedger

DECIDE_AGAIN = 16   # decisions made afresh when jobs moved under them (only a run's start can)
IMMUTABLE = {"owner", "clusterid", "jobuniverse", "procid", "mytype", "targettype", "user", "osuser",
             "jobstatus", "globaljobid", "qdate"} | {a.lower() for a in RUN_ATTRS}
SECURE = {a.lower() for a in (
    "x509userProxySubject", "x509UserProxyEmail", "x509UserProxyVOName", "x509UserProxyFirstFQAN",
    "x509UserProxyFQAN", "TotalSubmitProcs", "AuthTokenSubject", "AuthTokenIssuer", "AuthTokenGroups",
    "AuthTokenId", "AuthTokenScopes", "AuthTokenProject")}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def parse_ids(ids: list[str]) -> list[JobId]:
    out = []
    for text in ids:
        job = JobId.parse(text)
        if job.proc < 0:
            raise ValueError("Invalid ID")
        out.append(job)
    return out


class Actions:
    """act/edit/spool/retrieve of one schedd: ``store``, ``runs`` (its lock orders
    every change of a run; ``tell`` reaches starters), the spool, and ``poke``, which
    asks for a negotiation cycle when jobs became idle."""

    def __init__(self, store: ActionLedger, runs, spool_dir, poke):
        self.store = store
        self.runs = runs
        self.spool_dir = spool_dir
        self.poke = poke
        self.left_queue: Callable[[list], None] = lambda jobs: None   # removed or held: not to start
        # (action, constraint, only): the job factories a constraint names act too
        self.factories_act: Callable[[JobAction, str | None, tuple[str, str] | None], int] = \
            lambda action, constraint, only: 0

    # -- act -------------------------------------------------------------------------
    def act(self, user: str, action: int, ids: list | None = None, constraint: str | None = None,
            reason: str | None = None, subcode: int | None = None,
            only: tuple[str, str] | None = None) -> dict:
        """``action`` on the jobs ``ids`` or ``constraint`` names; ``only`` (Owner,
        identity) limits a network user to their own jobs: naming another's job is a
        ``PermissionDenied``, another's job a constraint matches is counted as
        TotalPermissionDenied (and a ``PermissionDenied`` when it matched no job of theirs)."""
        action = JobAction(action)
        factories = self.factories_act(action, constraint, only) if ids is None else 0
        with self.runs.lock:
            for _ in range(DECIDE_AGAIN):
                counts = dict.fromkeys(BUCKETS, 0)
                chosen = self._choose(action, ids, constraint, counts)
                if only is not None:
                    chosen = _own_jobs(chosen, only, ACTION_NAMES[action], ids is not None, counts)
                interleave.point("act.chosen")
                records, effects = [], []
                now = time.time()
                for job, ad in chosen:
                    bucket, recs, effect = decide(action, job, ad, user, reason, subcode, now)
                    counts[bucket] += 1
                    if recs:    # the state it was decided on: the commit refuses another
                        records += [Assumed.of(job, ad), *recs]
                    if effect:
                        effects.append((*effect, ad))
                total_ads = self._count_jobs()
                if not counts["TotalSuccess"]:
                    break
                interleave.point("act.append")
                try:
                    self.store.append(records)
                    interleave.point("act.committed")
                    break
                except StaleDecision:   # a job moved meanwhile (a run started): decide again
                    continue
            else:
                raise HTCondorException(f"{ACTION_NAMES[action]}: the jobs kept changing while "
                                        "it was decided; nothing was done")
        for claim, what, ad in effects:
            self.runs.tell(claim, what, ad)
        if action in (JobAction.Remove, JobAction.Hold) and counts["TotalSuccess"]:
            self.left_queue([job for job, _ in chosen])
        if action is JobAction.Remove and counts["TotalSuccess"]:
            self._remove_others(user, chosen)
        if action is JobAction.Release and counts["TotalSuccess"]:
            self.poke()
        counts["TotalJobAds"] = total_ads
        counts["TotalSuccess"] += factories      # HTCondor counts a factory acted on as a success
        counts["TotalChangedAds"] = 1 if counts["TotalSuccess"] else 0
        return counts

    def _count_jobs(self) -> int:
        """Jobs in the whole queue (TotalJobAds), counted by SQLite, not by loading ads."""
        return self.store.job_count()

    def _choose(self, action, ids, constraint, counts) -> list:
        if ids is not None:
            chosen = []
            for job in parse_ids(ids):
                ad = self.store.job_ad(job)
                if ad is None:
                    counts["TotalNotFound"] += 1
                else:
                    chosen.append((job, ad))
            return chosen
        text = f"({constraint}) && ({STATE_FILTER[action]})" if constraint and constraint.strip() \
            else STATE_FILTER[action]
        return [(JobId(int(ad["ClusterId"]), int(ad["ProcId"])), ad) for ad in self.store.query(text)]

    def spooled(self, user: str, ids: list) -> int:
        """``Schedd.spool``: copy the inputs of jobs held for spooling (code 16) into
        the spool, point them there and release them.  A job whose input cannot be
        read is held with code 13 instead."""
        staged: dict[JobId, dict | TransferError] = {}
        for job in parse_ids(ids):
            ad = self.store.job_ad(job)
            if ad is None or _status(ad) != JobStatus.HELD or ad.get("HoldReasonCode") != "16":
                continue
            try:
                staged[job] = spool.spool_inputs(self.spool_dir, job, ad, starter_job(ad))
            except TransferError as failed:
                staged[job] = failed
        with self.runs.lock:
            now = time.time()
            records: list = []
            for job, changes in staged.items():
                if isinstance(changes, TransferError):
                    records += [SetAttributes(job, set={"HoldReasonCode": str(changes.code),
                                                        "HoldReasonSubCode": str(changes.subcode),
                                                        "HoldReason": adwire.quote(
                                                            f"Spooling input files failed: {changes.message}")},
                                              by=user)]
                    continue
                records += [SetAttributes(job, set=changes, by=user),
                            ActionRecord(job, "release", reason="Data files spooled", by=user),
                            event(EventType.JOB_RELEASED, job, now, Reason="Data files spooled")]
            if records:
                self.store.append(records)
        if records:
            self.poke()
        return sum(1 for changes in staged.values() if isinstance(changes, dict))

    def retrieve(self, user: str, ids: list | None = None, constraint: str | None = None) -> int:
        """``Schedd.retrieve``: bring the spooled outputs of completed jobs back into
        their submitters' directories.  As in HTCondor the jobs stay (LeaveJobInQueue
        keeps them ten days) until removed; their spool goes once they have left."""
        if ids is not None:
            ads = [(job, self.store.job_ad(job)) for job in parse_ids(ids)]
        else:
            ads = [(JobId(int(ad["ClusterId"]), int(ad["ProcId"])), ad)
                   for ad in self.store.query(constraint or None)]
        done = 0
        for job, ad in ads:
            if ad is None or _status(ad) != JobStatus.COMPLETED or "SUBMIT_Iwd" not in ad:
                continue
            try:
                spool.retrieve_outputs(self.spool_dir, job, ad)
            except TransferError as failed:
                raise HTCondorException(f"retrieving the output of job {job} failed: {failed.message}") from failed
            done += 1
        return done

    # -- spool and retrieve for a client on another machine (daemons/spool_net.py) ------
    def spool_upload(self, user: str, ids: list, upload, only: tuple[str, str] | None,
                     max_bytes: int, max_files: int) -> int:
        """``Schedd.spool`` over the network: the inputs of jobs held for spooling (code
        16) arrive as ``upload``; once all are there, the jobs run from their spool.
        Every job named must be waiting for its input (and, for a network user, be
        theirs); else nothing is read.  Nothing is kept of a refused or broken upload."""
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise HTCondorValueError("spool: name the jobs to spool (a list of 'C.P' ids)")
        if upload is None:
            raise HTCondorValueError("spool: the input files must come as an upload")
        jobs = self._waiting_for_input(ids, only)
        plans = {}
        for job, ad in jobs:
            try:
                plans[job] = plan.input_plan(starter_job(ad))
            except TransferError as failed:
                raise HTCondorValueError(f"spool: job {job}: {failed.message}") from None
        with spool_net.Incoming(self.spool_dir, [str(job) for job, _ in jobs], max_bytes, max_files) as incoming:
            for chunk in upload:
                incoming.take(chunk)
            for job, _ in jobs:
                incoming.check(str(job), plans[job])
            with self.runs.lock:
                jobs = self._waiting_for_input([str(job) for job, _ in jobs], only)  # as they are now
                now, installed = time.time(), []
                records: list[Record] = []
                try:
                    for job, ad in jobs:
                        where = incoming.install(job)
                        installed.append(job)
                        records += [SetAttributes(job, set=spool.spooled_changes(
                                        where, ad, starter_job(ad), plans[job]), by=user),
                                    ActionRecord(job, "release", reason="Data files spooled", by=user),
                                    event(EventType.JOB_RELEASED, job, now, Reason="Data files spooled")]
                    self.store.append(records)
                except BaseException:
                    for job in installed:
                        spool.remove_job_spool(self.spool_dir, job)
                    raise
        self.poke()
        return len(jobs)

    def _waiting_for_input(self, ids: list, only) -> list:
        """(job, ad) of each of ``ids``: every one in the queue, the caller's, and held
        waiting for its input files (HoldReasonCode 16); else a refusal naming it."""
        chosen = []
        for job in parse_ids(ids):
            ad = self.store.job_ad(job)
            if ad is None:
                raise HTCondorValueError(f"spool: no job {job} in the queue")
            chosen.append((job, ad))
        if only is not None:
            _own_jobs(chosen, only, "spool", True, None)
        for job, ad in chosen:
            if _status(ad) != JobStatus.HELD or ad.get("HoldReasonCode") != "16":
                raise HTCondorValueError(f"spool: job {job} is not waiting for its input files "
                                         "(it must be held with HoldReasonCode 16, as a job "
                                         "submitted with spool is until spooled)")
        return chosen

    def retrieve_files(self, user: str, ids: list | None = None, constraint: str | None = None,
                       only: tuple[str, str] | None = None) -> ipc.Streamed:
        """``Schedd.retrieve`` over the network: the returned files of the completed
        spooled jobs chosen, streamed to the client (daemons/spool_net.py), which
        writes them where the job was submitted.  A network user's own jobs only."""
        if ids is not None:
            found = [(job, self.store.job_ad(job)) for job in parse_ids(ids)]
            missing = [job for job, ad in found if ad is None]
            if missing:
                raise HTCondorValueError(f"retrieve: no job {missing[0]} in the queue")
            chosen = [(job, ad) for job, ad in found if ad is not None]
        else:
            chosen = [(JobId(int(ad["ClusterId"]), int(ad["ProcId"])), ad)
                      for ad in self.store.query(constraint or None)]
        if only is not None:
            chosen = _own_jobs(chosen, only, "retrieve", ids is not None, None)
        ready = [(job, ad) for job, ad in chosen
                 if _status(ad) == JobStatus.COMPLETED and "SUBMIT_Iwd" in ad]
        return ipc.Streamed(spool_net.outputs(self.spool_dir, ready))

    def _remove_others(self, user: str, removed: list) -> None:
        """OtherJobRemoveRequirements: removing a job (a DAGMan job) removes the jobs
        that expression matches (its node jobs), as HTCondor's schedd does."""
        for job, ad in removed:
            other = adwire.evaluate(ad, "OtherJobRemoveRequirements")
            if isinstance(other, str) and other.strip():
                reason = f"removed because OtherJobRemoveRequirements of job {job} matched"
                self.act(user, JobAction.Remove, constraint=other, reason=reason)

    # -- edit ------------------------------------------------------------------------
    def edit(self, user: str, attr: str, value: str, ids: list | None = None,
             constraint: str | None = None, flags: int = 0, only: tuple[str, str] | None = None) -> int:
        flags = TransactionFlag(flags)
        if not isinstance(attr, str) or not _NAME.match(attr):
            raise HTCondorException(f"Unable to commit transaction: invalid attribute name {attr!r}")
        try:    # "My.Owner" and "OWNER" are Owner: the checks below see the attribute itself
            attr = attr_name(attr)
        except ValueError as exc:
            raise HTCondorException(f"Unable to commit transaction: {exc}") from None
        if not isinstance(value, str) or "\n" in value or "\x00" in value:
            raise HTCondorException("Unable to commit transaction: invalid value"
                                    + (" (a NUL byte)" if isinstance(value, str) and "\x00" in value else ""))
        try:
            adwire.check_constraint(value)
        except Exception as exc:
            raise HTCondorException(f"Unable to commit transaction: {value!r} is not a ClassAd expression") from exc
        if attr.lower() in IMMUTABLE:
            raise HTCondorException(f"Unable to commit transaction: attribute {attr} may not be changed")
        with self.runs.lock:
            if ids is not None:
                jobs = parse_ids(ids)
                missing = [str(j) for j in jobs if self.store.job_status(j) is None]
                if missing:
                    raise HTCondorException(f"Unable to commit transaction: no job {missing[0]}")
            else:
                jobs = [JobId(int(ad["ClusterId"]), int(ad["ProcId"]))
                        for ad in self.store.query(constraint or None, ["ClusterId", "ProcId"])]
                if not jobs:
                    raise HTCondorException("Unable to edit jobs matching constraint")
            if only is not None:
                named = [(job, self.store.job_ad(job) or {}) for job in jobs]
                jobs = [job for job, _ in _own_jobs(named, only, "edit", ids is not None, None)]
            if attr.lower() in SECURE:
                return len(jobs)  # IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS: silently ignored
            known = self.store.job_ad(jobs[0]) or {}
            attr = next((name for name in known if name.lower() == attr.lower()), attr)  # one spelling
            now = time.time()
            records: list = []
            for job in jobs:
                records.append(SetAttributes(job, set={attr: value}, by=user))
                if flags & TransactionFlag.ShouldLog:
                    records.append(event(EventType.ATTRIBUTE_UPDATE, job, now, Attribute=attr, Value=value))
            self.store.append(records)
        return len(jobs)


def _own_jobs(chosen: list, only: tuple[str, str], command: str, named: bool, counts: dict | None) -> list:
    """The (job, ad) pairs of ``chosen`` whose Owner is ``only``'s; the others refused."""
    owner, identity = only
    mine = adwire.quote(owner)
    kept = [(job, ad) for job, ad in chosen if ad.get("Owner") == mine]
    others = [job for job, ad in chosen if ad.get("Owner") != mine]
    if others and (named or not kept):
        raise PermissionDenied(identity, f"{command} of job {others[0]}", "OWNER",
                               "it is another user's job, and QUEUE_SUPER_USERS does not name "
                               f"{identity}")
    if counts is not None:
        counts["TotalPermissionDenied"] += len(others)
    return kept
