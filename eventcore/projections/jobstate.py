"""The tolerant job-state fold: events in, each job's state out.

This is the one fold every tracker feeds (user logs, the journal, and, for
the poll tracker, the ads it fetches are turned into the same ``JobState``).
It is pure: ``apply_event(state, event)`` returns a ``Step`` (new state, the
status change if any, the anomaly if any) and never raises for what real logs
contain.  The journal's status table is strict (an illegal event is refused);
this fold is not, because a tracker reads what was written, not what should
have been:

=====================  ==================================================
what the log contains  what the fold does (anomaly kind counted)
=====================  ==================================================
an event twice         the repeat changes nothing (``duplicate``)
terminated + aborted   the first end event wins (``after_end``)
execute before submit  the job starts at the event's status
                       (``no_submit``); the late submit only fills the
                       submit time (``late_submit``)
an unknown job         as above (``no_submit``)
an illegal transition  the event's status is taken anyway, because the log
                       says that is how the job is now
                       (``invalid_transition``); where the event implies no
                       new status it is ignored (same kind)
=====================  ==================================================

Events are read through a small protocol that ``htcondor2.JobEvent`` and our
``JobEventLog`` events both satisfy: ``.type`` (ULog event number, any
int-like), ``.cluster``, ``.proc``, ``.timestamp`` and ``.get(name)`` with the
user-log attribute names (``ReturnValue``, ``HoldReasonCode``, ...).
Events that belong to no job (cluster-level events 035..038, the global log
header, execution-point events 100+) are skipped by ``job_of``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.status import TRANSITIONS, JobStatus

__all__ = [
    "ANOMALY_KINDS",
    "Anomaly",
    "Change",
    "FoldResult",
    "JobState",
    "Step",
    "apply_event",
    "compare",
    "event_number",
    "fold",
    "job_of",
    "state_from_ad",
    "state_from_dict",
    "state_to_dict",
]

IDLE, RUNNING, REMOVED, COMPLETED, HELD, TRANSFERRING_OUTPUT, SUSPENDED = tuple(JobStatus)
TERMINAL = frozenset({REMOVED, COMPLETED})

# ULog event numbers (userlog.md §1) that the fold looks at.
SUBMIT, EXECUTE, EVICTED, TERMINATED, SHADOW_EXCEPTION = 0, 1, 4, 5, 7
ABORTED, SUSPENDED_EV, UNSUSPENDED, HELD_EV, RELEASED = 9, 10, 11, 12, 13
RECONNECT_FAILED = 24

# The journal's strict table (eventcore.status), minus the rows that leave an
# end state: in a log, an event after the job's end event is an anomaly (HTCondor's
# own checker wants exactly one 005 or 009 per job), so the first end wins.
STRICT: Mapping[tuple[int, int], JobStatus] = {
    (before, event): after for (before, event), after in TRANSITIONS.items()
    if before is not None and before not in TERMINAL and event != SUBMIT
}
# Where an event puts a job when the strict table has no entry (the event is the truth).
TARGET: Mapping[int, int] = {
    EXECUTE: RUNNING, TERMINATED: COMPLETED, ABORTED: REMOVED, HELD_EV: HELD,
    SUSPENDED_EV: SUSPENDED, UNSUSPENDED: RUNNING, RELEASED: IDLE,
}
# Events about a running instance leaving; elsewhere they are informational
# (a shadow can fail before the job ever starts; a hold kills the instance
# and the eviction may be logged after the hold).
RUN_ONLY = frozenset({EVICTED, SHADOW_EXCEPTION, RECONNECT_FAILED})
STATUS_EVENTS = frozenset(TARGET) | RUN_ONLY | {SUBMIT}

ANOMALY_KINDS = ("duplicate", "after_end", "no_submit", "late_submit", "invalid_transition")


class JobEventLike(Protocol):  # pragma: no cover - typing only
    type: Any
    cluster: int
    proc: int
    timestamp: int

    def get(self, key: str, default: Any = None) -> Any: ...


@attrs.frozen(slots=True)
class JobState:
    """What is known about one job after the events seen so far."""

    job: JobId
    status: int
    last_status: int | None = None
    entered_status: int | None = None      # EnteredCurrentStatus
    submitted: int | None = None           # QDate (from the submit event)
    first_start: int | None = None         # JobStartDate
    last_start: int | None = None          # JobCurrentStartDate
    completed: int | None = None           # CompletionDate (terminated or removed)
    exit_code: int | None = None
    exit_signal: int | None = None
    exit_by_signal: bool | None = None
    hold_reason: str | None = None
    hold_code: int | None = None
    hold_subcode: int | None = None
    starts: int = 0                        # NumJobStarts (execute events)
    holds: int = 0                         # NumHolds
    evictions: int = 0
    host: str | None = None                # slot name, or the execute host address
    seen_submit: bool = False
    last_event: int | None = None          # number of the last status event applied
    last_event_time: int | None = None
    events: int = 0                        # status events applied to this job

    @property
    def done(self) -> bool:
        """True once the job has ended (completed or removed)."""
        return self.status in TERMINAL

    def to_ad(self) -> dict[str, Any]:
        """The job as HTCondor attribute names (what ``condor_q`` would show)."""
        ad: dict[str, Any] = {"ClusterId": self.job.cluster, "ProcId": self.job.proc,
                              "JobStatus": self.status}
        optional = {
            "LastJobStatus": self.last_status, "EnteredCurrentStatus": self.entered_status,
            "QDate": self.submitted, "JobStartDate": self.first_start,
            "JobCurrentStartDate": self.last_start, "CompletionDate": self.completed,
            "ExitCode": self.exit_code, "ExitSignal": self.exit_signal,
            "ExitBySignal": self.exit_by_signal, "HoldReason": self.hold_reason,
            "HoldReasonCode": self.hold_code, "HoldReasonSubCode": self.hold_subcode,
        }
        running = self.status in (RUNNING, SUSPENDED, TRANSFERRING_OUTPUT)
        optional["RemoteHost" if running else "LastRemoteHost"] = self.host
        ad.update((k, v) for k, v in optional.items() if v is not None)
        ad["NumJobStarts"] = self.starts
        ad["NumHolds"] = self.holds
        return ad


@attrs.frozen(slots=True)
class Change:
    """A job's status changed (``old`` is None for the job's first event).

    ``event`` is the ULog number that caused it, or None when the change was
    seen in a schedd ad rather than read as an event.
    """

    job: JobId
    old: int | None
    new: int
    event: int | None
    timestamp: int | None
    state: JobState


@attrs.frozen(slots=True)
class Anomaly:
    """Something a well-formed log would not contain; counted, never raised."""

    kind: str
    job: JobId
    event: int
    timestamp: int
    status: int | None
    detail: str = ""


@attrs.frozen(slots=True)
class Step:
    """The result of one event: the new state and what to report."""

    state: JobState
    change: Change | None = None
    anomaly: Anomaly | None = None


def event_number(event: JobEventLike) -> int:
    """The ULog number of ``event``, also for numbers its enum does not know."""
    try:
        return int(event.type)
    except (ValueError, TypeError):
        return int(event.get("EventTypeNumber"))


_JOB_IDS: dict[tuple[int, int], JobId] = {}


def job_of(event: JobEventLike) -> JobId | None:
    """The job an event belongs to, or None for cluster, header and slot events."""
    cluster, proc = event.cluster, event.proc
    if cluster < 0 or proc < 0 or event_number(event) >= 100:
        return None
    job = _JOB_IDS.get((cluster, proc))
    if job is None:                       # a memo of immutable values: still pure
        if len(_JOB_IDS) >= 1 << 14:      # recent jobs only: a tracker's table owns the rest
            _JOB_IDS.clear()
        job = _JOB_IDS[(cluster, proc)] = JobId(cluster, proc)
    return job


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _details(state: JobState, number: int, event: JobEventLike) -> dict[str, Any]:
    """Attribute changes an event carries, whatever the status does."""
    get = event.get
    ts = event.timestamp
    if number == EXECUTE:
        host = get("SlotName") or get("ExecuteHost")
        return {"starts": state.starts + 1, "last_start": ts,
                "first_start": state.first_start if state.first_start is not None else ts,
                "host": host if isinstance(host, str) else state.host}
    if number in (TERMINATED, EVICTED):
        if number == EVICTED and not get("TerminatedAndRequeued"):
            return {"evictions": state.evictions + 1}
        extra = {"evictions": state.evictions + 1} if number == EVICTED else {"completed": ts}
        if get("TerminatedNormally"):
            return {**extra, "exit_code": _int(get("ReturnValue")), "exit_signal": None,
                    "exit_by_signal": False}
        return {**extra, "exit_code": None, "exit_signal": _int(get("TerminatedBySignal")),
                "exit_by_signal": True}
    if number == HELD_EV:
        reason = get("HoldReason")
        return {"holds": state.holds + 1, "hold_reason": reason if isinstance(reason, str) else "",
                "hold_code": _int(get("HoldReasonCode")) or 0,
                "hold_subcode": _int(get("HoldReasonSubCode")) or 0}
    if number == ABORTED:
        return {"completed": ts}
    return {}


def _cleared_hold(new_status: int) -> dict[str, Any]:
    if new_status == HELD:
        return {}
    return {"hold_reason": None, "hold_code": None, "hold_subcode": None}


def apply_event(state: JobState | None, event: JobEventLike, job: JobId | None = None) -> Step:
    """Fold one event of job ``job`` (default ``job_of(event)``) into ``state``.

    ``state`` is None for a job not seen before.  Never raises for odd logs:
    what does not fit is returned as ``Step.anomaly`` and changes nothing or,
    for an illegal transition, takes the status the event implies.  Events
    that cannot move a status (image size, file transfer, ...) return
    ``state`` itself.
    """
    number = event_number(event)
    job = job or job_of(event)
    if job is None:
        raise ValueError(f"event {number} belongs to no job (cluster {event.cluster}, proc {event.proc})")
    ts = event.timestamp
    if state is None:
        return _first_event(job, number, ts, event)
    if number not in STATUS_EVENTS:
        return Step(state)
    seen = {"last_event": number, "last_event_time": ts, "events": state.events + 1}
    if number == SUBMIT:
        submitted = ts if state.submitted is None or not state.seen_submit else state.submitted
        if not state.seen_submit and state.events == 0:     # born from its ad: the submit is due
            return Step(_evolve(state, {**seen, "seen_submit": True,
                                        "submitted": state.submitted or ts}))
        kind = "duplicate" if state.seen_submit else "late_submit"
        return Step(_evolve(state, {**seen, "seen_submit": True, "submitted": submitted}),
                    None, Anomaly(kind, job, number, ts, state.status))
    old = state.status
    repeat = (number, ts) == (state.last_event, state.last_event_time)
    if old in TERMINAL:
        return Step(state, None, Anomaly("duplicate" if repeat else "after_end", job, number, ts, old))
    new = STRICT.get((old, number))
    anomaly = None
    if new is None:
        if number in RUN_ONLY:
            return Step(state)
        if repeat:
            return Step(state, None, Anomaly("duplicate", job, number, ts, old))
        new = TARGET[number]
        anomaly = Anomaly("invalid_transition", job, number, ts, old, f"event {number} in status {old}")
        if new == old:
            return Step(_evolve(state, seen), None, anomaly)
    changes = _details(state, number, event)
    changes.update(_cleared_hold(new))
    changes.update(seen, status=new, last_status=old, entered_status=ts)
    state = _evolve(state, changes)
    return Step(state, Change(job, old, new, number, ts, state), anomaly)


def _first_event(job: JobId, number: int, ts: int, event: JobEventLike) -> Step:
    status = IDLE if number == SUBMIT else TARGET.get(number, IDLE)
    status_event = number in STATUS_EVENTS
    state = JobState(job=job, status=status, entered_status=ts, seen_submit=number == SUBMIT,
                     submitted=ts if number == SUBMIT else None,
                     last_event=number if status_event else None,
                     last_event_time=ts if status_event else None, events=1 if status_event else 0)
    anomaly = None
    if number != SUBMIT:
        anomaly = Anomaly("no_submit", job, number, ts, None, "first event of the job is not a submit")
        state = _evolve(state, _details(state, number, event))
    return Step(state, Change(job, None, state.status, number, ts, state), anomaly)


_FIELDS = tuple(f.name for f in attrs.fields(JobState))


def _evolve(state: JobState, changes: Mapping[str, Any]) -> JobState:
    """``attrs.evolve`` without its per-call introspection (the fold's hot path)."""
    return JobState(*[changes[f] if f in changes else getattr(state, f) for f in _FIELDS])


@attrs.frozen
class FoldResult:
    """Every job's state after a sequence of events, and what was odd about them."""

    states: Mapping[JobId, JobState]
    changes: tuple[Change, ...]
    anomalies: tuple[Anomaly, ...]
    skipped: int        # events that belong to no job

    def anomaly_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for a in self.anomalies:
            counts[a.kind] = counts.get(a.kind, 0) + 1
        return counts


def fold(events: Iterable[JobEventLike], states: Mapping[JobId, JobState] | None = None) -> FoldResult:
    """Fold ``events`` in order onto ``states`` (not modified); returns new values."""
    table = dict(states or {})
    changes: list[Change] = []
    anomalies: list[Anomaly] = []
    skipped = 0
    for event in events:
        job = job_of(event)
        if job is None:
            skipped += 1
            continue
        step = apply_event(table.get(job), event, job)
        table[job] = step.state
        if step.change is not None:
            changes.append(step.change)
        if step.anomaly is not None:
            anomalies.append(step.anomaly)
    return FoldResult(table, tuple(changes), tuple(anomalies), skipped)


# --- other ways in: schedd ads, and a JSON form for checkpoints ---------------

_AD_FIELDS = {
    "LastJobStatus": "last_status", "EnteredCurrentStatus": "entered_status", "QDate": "submitted",
    "JobStartDate": "first_start", "JobCurrentStartDate": "last_start",
    "CompletionDate": "completed", "ExitCode": "exit_code", "ExitSignal": "exit_signal",
    "HoldReasonCode": "hold_code", "HoldReasonSubCode": "hold_subcode",
}


def state_from_ad(ad: Mapping[str, Any], previous: JobState | None = None) -> JobState:
    """A job's state as a schedd ad (query or history) shows it.

    Attributes the ad lacks (a narrow projection) keep ``previous``'s values.
    ``ExitCode`` counts only when the job did not exit by a signal, and
    ``CompletionDate`` 0 means "not completed", as in HTCondor.
    """
    job = JobId(int(ad["ClusterId"]), int(ad["ProcId"]))
    base = previous if previous is not None and previous.job == job else JobState(job, IDLE)
    changes: dict[str, Any] = {"status": JobStatus(int(ad["JobStatus"]))}
    for name, field in _AD_FIELDS.items():
        value = _int(ad.get(name))
        if value is not None:
            changes[field] = value
    if changes.get("completed") == 0:
        changes["completed"] = None
    by_signal = ad.get("ExitBySignal")
    if isinstance(by_signal, bool):
        changes["exit_by_signal"] = by_signal
        if by_signal:
            changes["exit_code"] = None
        else:
            changes["exit_signal"] = None
    if "HoldReason" in ad:
        changes["hold_reason"] = str(ad["HoldReason"])
    if changes["status"] != HELD:
        changes.update(_cleared_hold(changes["status"]))
    for name, field in (("NumJobStarts", "starts"), ("NumHolds", "holds")):
        value = _int(ad.get(name))
        if value is not None:
            changes[field] = value
    host = ad.get("RemoteHost", ad.get("LastRemoteHost"))
    if isinstance(host, str):
        changes["host"] = host
    return attrs.evolve(base, **changes)


def compare(old: JobState | None, new: JobState) -> Change | None:
    """The status change from ``old`` to ``new`` seen without an event, if any."""
    if old is not None and old.status == new.status:
        return None
    return Change(new.job, None if old is None else old.status, new.status, None,
                  new.entered_status, new)


def state_to_dict(state: JobState) -> dict[str, Any]:
    """JSON-safe form of a state (checkpoints, ``--json``)."""
    data = attrs.asdict(state, recurse=False)
    data["job"] = [state.job.cluster, state.job.proc]
    data["status"] = int(state.status)
    if state.last_status is not None:
        data["last_status"] = int(state.last_status)
    return data


def state_from_dict(data: Mapping[str, Any]) -> JobState:
    """The inverse of ``state_to_dict``; unknown keys are an error (a bad checkpoint)."""
    fields = dict(data)
    cluster, proc = fields.pop("job")
    fields["status"] = JobStatus(fields["status"])
    if fields.get("last_status") is not None:
        fields["last_status"] = JobStatus(fields["last_status"])
    return JobState(job=JobId(cluster, proc), **fields)
