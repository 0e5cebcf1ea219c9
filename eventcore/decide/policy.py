"""The periodic policy's verdicts and the records that carry them out (schedd.md section 5).

``periodic_verdict(ad, now, max_releases, system)`` says what the policy does
to a job now -- ``("hold", reason, subcode[, code])``, ``("release", reason)``,
``("remove", reason)``, ``("vacate", reason)`` or None -- and
``verdict_records(job, ad, verdict, claim, now)`` the records that do it.  The
first rule that fires wins: for running jobs AllowedJobDuration (hold code 46),
AllowedExecuteDuration (47), PeriodicVacate; then TimerRemove, PeriodicHold
then SYSTEM_PERIODIC_HOLD (code 26; not for held/completed jobs),
PeriodicRelease (held jobs not held by the user, within SYSTEM_MAX_RELEASES;
then SYSTEM_PERIODIC_RELEASE), then PeriodicRemove, then SYSTEM_PERIODIC_REMOVE.
The exit policy (OnExitHold, OnExitRemove) is ``eventcore.decide.runs.exit_verdict``.
"""

from __future__ import annotations

from jobledger.eventcore import adwire
from jobledger.eventcore.decide.actions import ACTION_NAMES
from jobledger.eventcore.decide.runs import HOLD_POLICY, RUN_ATTRS, event
from jobledger.eventcore.enums import JobAction
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ActionRecord, LeaveQueue, SetAttributes

__all__ = ["periodic_verdict", "verdict_records", "POLICY_ATTRS", "SYSTEM_EXPRS", "QUIET"]

POLICY_ATTRS = ("PeriodicHold", "PeriodicRelease", "PeriodicRemove", "TimerRemove", "PeriodicVacate",
                "AllowedJobDuration", "AllowedExecuteDuration")
QUIET = {None, "false", "FALSE", "False", "0"}


def _fires(ad: dict, name: str) -> bool:
    if ad.get(name) in QUIET:
        return False
    value = adwire.evaluate(ad, name)
    return value is True or (type(value) in (int, float) and value != 0)


def periodic_verdict(ad: dict, now: float, max_releases: int, system: dict | None = None) -> tuple | None:
    """(action, reason[, subcode[, code]]) the policy takes on this job now, or None.

    ``system`` holds the pool's SYSTEM_PERIODIC_HOLD/RELEASE/REMOVE expressions
    (text), checked after the job's own (hold code 26 for the system hold).
    """
    system = system or {}
    status = int(adwire.literal(ad.get("JobStatus", "1")))
    if status == 3:
        return None
    if status in (2, 7):
        limits = _duration_verdict(ad, now)
        if limits is not None:
            return limits
        if _fires(ad, "PeriodicVacate"):
            return ("vacate", "The job attribute PeriodicVacate expression evaluated to TRUE")
    timer = adwire.evaluate(ad, "TimerRemove") if ad.get("TimerRemove") not in QUIET else None
    if isinstance(timer, (int, float)) and not isinstance(timer, bool) and now >= timer:
        return ("remove", "The job attribute TimerRemove expression evaluated to TRUE")
    if status not in (4, 5) and _fires(ad, "PeriodicHold"):
        reason = adwire.evaluate(ad, "PeriodicHoldReason")
        if not isinstance(reason, str):
            reason = f"The job attribute PeriodicHold expression '{ad['PeriodicHold']}' evaluated to TRUE"
        sub = adwire.evaluate(ad, "PeriodicHoldSubCode")
        return ("hold", reason, sub if isinstance(sub, int) else 0)
    if status not in (4, 5) and _system_fires(ad, system, "SYSTEM_PERIODIC_HOLD"):
        return ("hold", _system_reason(system, "SYSTEM_PERIODIC_HOLD"), 0, 26)
    if status == 5 and ad.get("HoldReasonCode") not in ("1", "16"):
        holds = int(adwire.evaluate(ad, "NumHolds") or 0)
        if max_releases < 0 or holds < max_releases:
            if _fires(ad, "PeriodicRelease"):
                return ("release", f"The job attribute PeriodicRelease expression '{ad['PeriodicRelease']}' evaluated to TRUE")
            if _system_fires(ad, system, "SYSTEM_PERIODIC_RELEASE"):
                return ("release", _system_reason(system, "SYSTEM_PERIODIC_RELEASE"))
    if _fires(ad, "PeriodicRemove"):
        return ("remove", f"The job attribute PeriodicRemove expression '{ad['PeriodicRemove']}' evaluated to TRUE")
    if _system_fires(ad, system, "SYSTEM_PERIODIC_REMOVE"):
        return ("remove", _system_reason(system, "SYSTEM_PERIODIC_REMOVE"))
    return None


def _system_fires(ad: dict, system: dict, name: str) -> bool:
    text = system.get(name)
    if not text:
        return False
    value = adwire.evaluate_expr(ad, text)
    return value is True or (type(value) in (int, float) and value != 0)


def _system_reason(system: dict, name: str) -> str:
    return f"The system macro {name} expression '{system[name]}' evaluated to TRUE"


def _duration_verdict(ad: dict, now: float) -> tuple | None:
    """AllowedJobDuration (code 46) / AllowedExecuteDuration (code 47) of a running job."""
    started = adwire.evaluate(ad, "JobCurrentStartDate")
    if not isinstance(started, int):
        return None
    for name, code in (("AllowedJobDuration", 46), ("AllowedExecuteDuration", 47)):
        allowed = adwire.evaluate(ad, name) if name in ad else None
        if isinstance(allowed, (int, float)) and not isinstance(allowed, bool) and now - started > allowed:
            what = "job" if code == 46 else "execute"
            return ("hold", f"The job exceeded allowed {what} duration of {_duration(allowed)}", 0, code)
    return None


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


SYSTEM_EXPRS = ("SYSTEM_PERIODIC_HOLD", "SYSTEM_PERIODIC_RELEASE", "SYSTEM_PERIODIC_REMOVE")


def verdict_records(job: JobId, ad: dict, verdict: tuple, claim, now: float) -> list:
    """The records that carry out ``verdict`` on ``job`` (its ``ad``, its run's ``claim``)."""
    clear = [SetAttributes(job, delete=tuple(a for a in RUN_ATTRS if a in ad), by="schedd")] \
        if claim else []
    kind = verdict[0]
    audit = ActionRecord(job, ACTION_NAMES[{"hold": JobAction.Hold, "release": JobAction.Release,
                                            "remove": JobAction.Remove,
                                            "vacate": JobAction.Vacate}[kind]],
                         reason=verdict[1], by="schedd")
    if kind == "vacate":
        return [ActionRecord(job, "vacate", reason=verdict[1], by="schedd")]
    if kind == "hold":
        code = verdict[3] if len(verdict) > 3 else HOLD_POLICY
        return clear + [audit, event(EventType.JOB_HELD, job, now, HoldReason=verdict[1],
                                     HoldReasonCode=code, HoldReasonSubCode=verdict[2])]
    if kind == "release":
        return [audit, event(EventType.JOB_RELEASED, job, now, Reason=verdict[1])]
    return clear + [audit, event(EventType.JOB_ABORTED, job, now, Reason=verdict[1]), LeaveQueue(job)]
