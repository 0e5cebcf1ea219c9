"""What an event does to a job ad (schedd.md section 2, "Queue ops").

``event_updates(before, after, event, ad)`` returns ``(set, delete)``: the
attributes to set (name -> ClassAd expression text) and to delete, given
the status before and after and the event payload (``event_to_dict``
shape: ``type``, ``timestamp``, ``attrs``).  Pure; the caller applies it.
"""

from __future__ import annotations

import re
from typing import Mapping

from jobledger.eventcore.hold_codes import hold_code_name
from jobledger.eventcore.records import quote_string
from jobledger.eventcore.status import (
    EXECUTE, JOB_ABORTED, JOB_EVICTED, JOB_HELD, JOB_RELEASED, JOB_SUSPENDED,
    JOB_TERMINATED, JOB_UNSUSPENDED, JobStatus,
)

__all__ = ["event_updates", "int_attr"]

_HOLD = ("HoldReason", "HoldReasonCode", "HoldReasonSubCode")


def int_attr(ad: Mapping[str, str], name: str, default: int = 0) -> int:
    """An integer attribute of an ad given as expression text (default if not a literal)."""
    text = ad.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        try:
            return int(float(text))
        except ValueError:
            return default


def _bump(ad, out, name):
    out[name] = str(int_attr(ad, name) + 1)


def _move_hold_to_last(ad, out, delete):
    for name in _HOLD:
        if name in ad:
            out["Last" + name] = ad[name]
            delete.append(name)


def _execute(ad, attrs, now, before, out, delete):
    out["JobCurrentStartDate"] = now
    if "JobStartDate" not in ad:
        out["JobStartDate"] = now
    _bump(ad, out, "NumJobStarts")
    _bump(ad, out, "NumShadowStarts")
    host = attrs.get("ExecuteHost")
    if isinstance(host, str) and host:
        out["RemoteHost"] = quote_string(host)


def _terminated(ad, attrs, now, before, out, delete):
    normal = bool(attrs.get("TerminatedNormally", True))
    out["ExitBySignal"] = "false" if normal else "true"
    if normal and isinstance(attrs.get("ReturnValue"), int):
        out["ExitCode"] = str(attrs["ReturnValue"])
    if not normal and isinstance(attrs.get("TerminatedBySignal"), int):
        out["ExitSignal"] = str(attrs["TerminatedBySignal"])
    out["CompletionDate"] = now
    _bump(ad, out, "NumJobCompletions")


def _evicted(ad, attrs, now, before, out, delete):
    out["LastVacateTime"] = now
    if attrs.get("TerminatedAndRequeued"):
        _bump(ad, out, "NumJobCompletions")


def _held(ad, attrs, now, before, out, delete):
    reason = attrs.get("HoldReason")
    out["HoldReason"] = quote_string(reason if isinstance(reason, str) else "")
    out["HoldReasonCode"] = str(int(attrs.get("HoldReasonCode") or 0))
    out["HoldReasonSubCode"] = str(int(attrs.get("HoldReasonSubCode") or 0))
    _bump(ad, out, "NumHolds")
    out["NumHoldsByReason"] = holds_by_reason(ad.get("NumHoldsByReason"), int(attrs.get("HoldReasonCode") or 0))
    if before == JobStatus.REMOVED:
        out["JobStatusOnRelease"] = "3"
    if "ReleaseReason" in ad:
        out["LastReleaseReason"] = ad["ReleaseReason"]
        delete.append("ReleaseReason")


_COUNT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)")


def holds_by_reason(text: str | None, code: int) -> str:
    """``NumHoldsByReason`` (a nested ad of counts by hold code name, as HTCondor's schedd
    keeps it) after one more hold of ``code``."""
    counts = {name: int(number) for name, number in _COUNT.findall(text or "")}
    name = hold_code_name(code)
    counts[name] = counts.get(name, 0) + 1
    return "[ " + "; ".join(f"{key} = {value}" for key, value in counts.items()) + " ]"


def _released(ad, attrs, now, before, out, delete):
    _move_hold_to_last(ad, out, delete)
    if "JobStatusOnRelease" in ad:
        delete.append("JobStatusOnRelease")
    if isinstance(attrs.get("Reason"), str):
        out["ReleaseReason"] = quote_string(attrs["Reason"])


def _aborted(ad, attrs, now, before, out, delete):
    _move_hold_to_last(ad, out, delete)
    if isinstance(attrs.get("Reason"), str):
        out["RemoveReason"] = quote_string(attrs["Reason"])


def _suspended(ad, attrs, now, before, out, delete):
    _bump(ad, out, "TotalSuspensions")
    out["LastSuspensionTime"] = now


def _unsuspended(ad, attrs, now, before, out, delete):
    since = int_attr(ad, "LastSuspensionTime")
    if since:
        total = int_attr(ad, "CumulativeSuspensionTime") + max(0, int(now) - since)
        out["CumulativeSuspensionTime"] = str(total)
    out["LastSuspensionTime"] = "0"


_BY_EVENT = {
    EXECUTE: _execute, JOB_TERMINATED: _terminated, JOB_EVICTED: _evicted, JOB_HELD: _held,
    JOB_RELEASED: _released, JOB_ABORTED: _aborted, JOB_SUSPENDED: _suspended,
    JOB_UNSUSPENDED: _unsuspended,
}


def event_updates(before: JobStatus | None, after: JobStatus, event: Mapping,
                  ad: Mapping[str, str]) -> tuple[dict, list]:
    """Attribute changes for one event (see module docstring)."""
    number = int(event["type"])
    now = str(int(event.get("timestamp") or 0))
    out: dict[str, str] = {}
    delete: list[str] = []
    if after != before:
        out["JobStatus"] = str(int(after))
        out["EnteredCurrentStatus"] = now
        if before is not None:
            out["LastJobStatus"] = str(int(before))
        if before in (JobStatus.RUNNING, JobStatus.SUSPENDED) and number in (JOB_HELD, EXECUTE):
            out["LastSuspensionTime"] = "0"
    handler = _BY_EVENT.get(number)
    if handler is not None:
        handler(ad, event.get("attrs") or {}, now, before, out, delete)
    return out, [d for d in delete if d not in out]
