"""What an action does to a job in each status: the action x status table.

``decide(action, job, ad, user, reason, subcode, now)`` gives the result
bucket the job lands in (HTCondor's ``TotalSuccess``, ``TotalBadStatus``...),
the records to append and, for a running job, the instruction for its
starter (kill, vacate, suspend, continue).  ``STATE_FILTER`` is the
constraint that picks the jobs an action applies to when it is given a
constraint instead of ids (schedd.md sections 3 and 4).
"""

from __future__ import annotations

from typing import Mapping

from jobledger.eventcore import adwire
from jobledger.eventcore.decide.runs import RUN_ATTRS, event
from jobledger.eventcore.enums import JobAction
from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ActionRecord, LeaveQueue, SetAttributes
from jobledger.eventcore.status import JobStatus

__all__ = ["decide", "STATE_FILTER", "ACTION_NAMES", "BUCKETS", "RUNNING", "status_of"]

I, R, X, C, H, T, S = (JobStatus.IDLE, JobStatus.RUNNING, JobStatus.REMOVED, JobStatus.COMPLETED,
                       JobStatus.HELD, JobStatus.TRANSFERRING_OUTPUT, JobStatus.SUSPENDED)
RUNNING = (R, T, S)
STATE_FILTER = {
    JobAction.Hold: "JobStatus != 3 && JobStatus != 4",
    JobAction.Release: "JobStatus == 5 && HoldReasonCode =!= 16",
    JobAction.Remove: "JobStatus != 3",
    JobAction.RemoveX: "JobStatus == 3 || (JobStatus == 5 && JobStatusOnRelease =?= 3)",
    JobAction.Vacate: "JobStatus == 2 || JobStatus == 6",
    JobAction.VacateFast: "JobStatus == 2 || JobStatus == 6",
    JobAction.Suspend: "JobStatus == 2 || JobStatus == 6",
    JobAction.Continue: "JobStatus == 7",
}
ACTION_NAMES = {JobAction.Hold: "hold", JobAction.Release: "release", JobAction.Remove: "remove",
                JobAction.RemoveX: "removex", JobAction.Vacate: "vacate",
                JobAction.VacateFast: "vacate_fast", JobAction.Suspend: "suspend",
                JobAction.Continue: "continue"}
BUCKETS = ("TotalError", "TotalSuccess", "TotalNotFound", "TotalBadStatus", "TotalAlreadyDone",
           "TotalPermissionDenied")


def status_of(ad: Mapping[str, str]) -> int:
    return int(adwire.literal(ad.get("JobStatus", "1")))


def decide(action: JobAction, job: JobId, ad: Mapping[str, str], user: str, reason: str | None,
           subcode: int | None, now: float) -> tuple[str, list, tuple | None]:
    """(result bucket, records to append, (claim, instruction) for its starter or None):
    what ``action`` by ``user`` does to ``job`` whose ad is ``ad``, at ``now``."""
    status = status_of(ad)
    claim = adwire.evaluate(ad, "ClaimId") if status in RUNNING else None
    said = f"{reason} (by user {user})" if reason else ""
    audit = ActionRecord(job, ACTION_NAMES[action], reason=said or None, by=user)
    clear = SetAttributes(job, delete=tuple(a for a in RUN_ATTRS if a in ad), by="schedd")
    if action is JobAction.Hold:
        if status in (X, C):
            return "TotalPermissionDenied", [], None
        if status == H and int(adwire.literal(ad.get("HoldReasonCode", "0"))) in (1, 16):
            return "TotalAlreadyDone", [], None
        recs = [audit, event(EventType.JOB_HELD, job, now, HoldReason=said, HoldReasonCode=1,
                             HoldReasonSubCode=int(subcode or 0))]
        if status == H:  # held for another reason: the code becomes 1
            recs = [audit, SetAttributes(job, set={
                "HoldReason": adwire.quote(said), "HoldReasonCode": "1",
                "HoldReasonSubCode": str(int(subcode or 0))}, by=user)]
        return "TotalSuccess", ([clear] if claim else []) + recs, (claim, "kill") if claim else None
    if action is JobAction.Release:
        if status != H or int(adwire.literal(ad.get("HoldReasonCode", "0"))) == 16:
            return "TotalBadStatus", [], None
        return "TotalSuccess", [audit, event(EventType.JOB_RELEASED, job, now, Reason=said or None)], None
    if action is JobAction.Remove:
        if status == X:
            return "TotalAlreadyDone", [], None
        recs = [audit, event(EventType.JOB_ABORTED, job, now, Reason=said or None), LeaveQueue(job)]
        return "TotalSuccess", ([clear] if claim else []) + recs, (claim, "kill") if claim else None
    if action is JobAction.RemoveX:
        if status != X and not (status == H and adwire.literal(ad.get("JobStatusOnRelease", "0")) == 3):
            return "TotalBadStatus", [], None
        return "TotalSuccess", [audit, LeaveQueue(job)], None
    if action in (JobAction.Vacate, JobAction.VacateFast):
        if status not in (R, T):
            return "TotalBadStatus", [], None
        what = "vacate" if action is JobAction.Vacate else "kill"
        return "TotalSuccess", [audit], (claim, what)
    if action is JobAction.Suspend:
        if status not in (R, T):
            return "TotalBadStatus", [], None
        return "TotalSuccess", [audit, event(EventType.JOB_SUSPENDED, job, now, NumberOfPIDs=1)], \
            (claim, "suspend")
    if action is JobAction.Continue:
        if status != S:
            return "TotalBadStatus", [], None
        return "TotalSuccess", [audit, event(EventType.JOB_UNSUSPENDED, job, now)], (claim, "continue")
    raise HTCondorException(f"action {action!r} is not supported")
