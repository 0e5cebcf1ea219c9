"""Job status and the one table that moves it.

``JobStatus`` has htcondor2's values (IDLE 1 .. SUSPENDED 7).  Every status
change a job can go through is one row of ``TRANSITIONS``:
``(status before, ULog event number) -> status after`` (schedd.md section 2).
Event numbers are plain ints (``EventType`` members compare equal to them).

- ``next_status(status, event)`` looks a pair up; a pair that is not in the
  table raises ``InvalidTransition`` and nothing changes.
- Events that do not move a job (image size, file transfer, job ad
  information, ...) are *informational*: allowed in every state of a job
  that exists, status unchanged.
- ``implied_status(event)`` is the status an event implies on its own (the
  reading guidance of userlog.md section 1).  It is used only for events
  imported from logs written elsewhere, whose history may start midway
  (a log without the submit event, say).
- ``state_diagram()`` draws the table (Mermaid text) for the docs.

Status ``None`` means "no such job yet".
"""

from __future__ import annotations

import enum

from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.events import EventType

__all__ = [
    "JobStatus", "TRANSITIONS", "STATUS_EVENTS", "next_status", "implied_status",
    "is_status_event", "state_diagram", "ACTIVE", "TERMINAL", "STATUS_NAMES", "STATUS_LETTER",
]


class JobStatus(enum.IntEnum):
    """``htcondor2.JobStatus``: the job's ``JobStatus`` attribute."""

    IDLE = 1
    RUNNING = 2
    REMOVED = 3
    COMPLETED = 4
    HELD = 5
    TRANSFERRING_OUTPUT = 6
    SUSPENDED = 7


# JobStatus as HTCondor's tools write it: the word (getJobStatusString) and condor_q's letter.
STATUS_NAMES = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held",
                6: "TransferringOutput", 7: "Suspended"}
STATUS_LETTER = {1: "I", 2: "R", 3: "X", 4: "C", 5: "H", 6: ">", 7: "S"}


# ULog event numbers that can change a job's status, as plain ints (their one
# definition is ``events.EventType``, htcondor2.JobEventType's values).
SUBMIT = int(EventType.SUBMIT)
EXECUTE = int(EventType.EXECUTE)
JOB_EVICTED = int(EventType.JOB_EVICTED)
JOB_TERMINATED = int(EventType.JOB_TERMINATED)
SHADOW_EXCEPTION = int(EventType.SHADOW_EXCEPTION)
JOB_ABORTED = int(EventType.JOB_ABORTED)
JOB_SUSPENDED = int(EventType.JOB_SUSPENDED)
JOB_UNSUSPENDED = int(EventType.JOB_UNSUSPENDED)
JOB_HELD = int(EventType.JOB_HELD)
JOB_RELEASED = int(EventType.JOB_RELEASED)
JOB_RECONNECT_FAILED = int(EventType.JOB_RECONNECT_FAILED)

STATUS_EVENTS = frozenset({
    SUBMIT, EXECUTE, JOB_EVICTED, JOB_TERMINATED, SHADOW_EXCEPTION, JOB_ABORTED,
    JOB_SUSPENDED, JOB_UNSUSPENDED, JOB_HELD, JOB_RELEASED, JOB_RECONNECT_FAILED,
})

I, R, X, C, H, T, S = (JobStatus.IDLE, JobStatus.RUNNING, JobStatus.REMOVED,
                       JobStatus.COMPLETED, JobStatus.HELD,
                       JobStatus.TRANSFERRING_OUTPUT, JobStatus.SUSPENDED)


def _running_rows(status: JobStatus) -> dict:
    """What can happen to a job that has a running instance (2, and 6 like it)."""
    return {
        (status, JOB_TERMINATED): C,       # exited, OnExitRemove true
        (status, JOB_EVICTED): I,          # vacated, or exited and requeued
        (status, SHADOW_EXCEPTION): I,     # shadow died: back to idle
        (status, JOB_RECONNECT_FAILED): I, # lost the execution point: rescheduled
        (status, JOB_HELD): H,             # instance killed, then held
        (status, JOB_ABORTED): X,          # removed once the instance is gone
        (status, JOB_SUSPENDED): S,
    }


TRANSITIONS: dict[tuple[JobStatus | None, int], JobStatus] = {
    # submit: the proc ad says IDLE or HELD (submitted on hold writes SUBMIT only)
    (None, SUBMIT): I,
    (I, SUBMIT): I,
    (H, SUBMIT): H,
    # idle
    (I, EXECUTE): R,
    (I, JOB_HELD): H,
    (I, JOB_ABORTED): X,
    # running / transferring output
    **_running_rows(R),
    **_running_rows(T),
    # suspended
    (S, JOB_UNSUSPENDED): R,
    (S, JOB_HELD): H,
    (S, JOB_ABORTED): X,
    (S, JOB_EVICTED): I,
    (S, SHADOW_EXCEPTION): I,
    (S, JOB_RECONNECT_FAILED): I,
    # held
    (H, JOB_RELEASED): I,                  # (JobStatusOnRelease overrides: see fold)
    (H, JOB_ABORTED): X,
    # removed: only to 3 or 5 (a removed job may be held, then released back to 3)
    (X, JOB_ABORTED): X,
    (X, JOB_HELD): H,
    # completed and left in the queue (LeaveJobInQueue): removable
    (C, JOB_ABORTED): X,
}

# Jobs leave the queue (to history) only from these states.
TERMINAL = frozenset({C, X})
# States with a running instance.
ACTIVE = frozenset({R, T, S})

_IMPLIED = {
    SUBMIT: I, EXECUTE: R, JOB_EVICTED: I, SHADOW_EXCEPTION: I, JOB_RECONNECT_FAILED: I,
    JOB_TERMINATED: C, JOB_ABORTED: X, JOB_HELD: H, JOB_RELEASED: I,
    JOB_SUSPENDED: S, JOB_UNSUSPENDED: R,
}


def is_status_event(event: int) -> bool:
    """True if ``event`` (a ULog number) can change a job's status."""
    return int(event) in STATUS_EVENTS


def next_status(status: JobStatus | None, event: int, job=None) -> JobStatus:
    """The status after ``event`` happens to a job in ``status``.

    Informational events keep the status of an existing job.  Anything not in
    the table raises ``InvalidTransition`` (carrying status, event and job).
    """
    event = int(event)
    if event not in STATUS_EVENTS:
        if status is None:
            raise InvalidTransition(status, event, job)
        return status
    try:
        return TRANSITIONS[(status, event)]
    except KeyError:
        raise InvalidTransition(status, event, job) from None


def implied_status(event: int) -> JobStatus | None:
    """The status ``event`` implies by itself, or None for informational events."""
    return _IMPLIED.get(int(event))


def state_diagram() -> str:
    """The transition table as a Mermaid state diagram (docs are drawn from this)."""
    lines = ["stateDiagram-v2"]
    for (before, event), after in sorted(
            TRANSITIONS.items(), key=lambda kv: (kv[0][0] or 0, kv[0][1])):
        start = "[*]" if before is None else before.name
        lines.append(f"    {start} --> {after.name}: {event:03d}")
    for status in TERMINAL:
        lines.append(f"    {status.name} --> [*]: leaves the queue")
    return "\n".join(lines)
