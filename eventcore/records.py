"""What the journal records: one frozen attrs class per record type.

The journal holds everything needed to rebuild a pool:

| type      | class            | job id      | what                                               |
|-----------|------------------|-------------|----------------------------------------------------|
| `cluster` | `ClusterAd`      | `C.-1`      | the attributes common to a cluster, at submit      |
| `proc`    | `ProcAd`         | `C.P`       | a new job: its own attributes (JobStatus 1 or 5)   |
| `procs`   | `ProcBlock`      | `C.P0`      | new jobs of one cluster and their SUBMIT events    |
| `set`     | `SetAttributes`  | `C.P`/`C.-1`| attribute edits (set and delete), who asked        |
| `event`   | `EventRecord`    | `C.P`       | one user-log event (ULog number + payload)         |
| `action`  | `ActionRecord`   | `C.P`       | an action (hold, remove, ...), its reason, who     |
| `leave`   | `LeaveQueue`     | `C.P`       | the job left the queue (goes to history)           |
| `userrec` | `UserRecord`     | `0.0`       | a schedd's User or Project record changed          |

Job ads are mappings ``attribute -> ClassAd expression text`` (old-ClassAd
``Name = expr`` right-hand sides: ``"alice"``, ``1``, ``MY.X + 1``), so a
record never depends on a parsed expression tree.

A ``procs`` record is a submission's procs in one row: each proc's own ad
and its SUBMIT event (one event, the same for every proc but its ``proc``).
It stands for the ``proc`` and ``event`` records it replaces, at the
positions they would have had: the row is stored at the last of its
``2 * len(procs)`` positions and readers expand it (``eventcore.journal``),
so every entry keeps a position of its own.

Every record may carry a ``key``: an identity for idempotent ingestion (an
imported event's file identity and byte offset).  The journal refuses a
second record with a key it already holds, so re-importing adds nothing.

A decision also names what it assumed: an ``Assumed(job, status, claim)``
among the records of one append is no record (it is never journaled) but
the append's precondition, as an event store checks the version a command
was decided on.  The store checks it against the job's state at commit
time and refuses the whole append (``StaleDecision``) on a mismatch; the
part that decided reads the job again and decides again.

Payloads are versioned: ``RECORD_VERSIONS`` says what a writer writes today;
``eventcore.codecs.journal`` upcasts older versions when reading.  The
journal is never rewritten.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Union

import attrs

from jobledger.eventcore.ids import JobId

__all__ = [
    "ClusterAd", "ProcAd", "ProcBlock", "SetAttributes", "EventRecord", "ActionRecord", "LeaveQueue",
    "Record", "RECORD_TYPES", "RECORD_VERSIONS", "ACTIONS", "quote_string", "Assumed",
    "split_assumed", "UserRecord", "USERREC_OPS", "USERREC_JOB",
]


def _ad(value) -> dict:
    ad = dict(value)
    for name, expr in ad.items():
        if not isinstance(name, str) or not name or not isinstance(expr, str):
            raise TypeError(f"a job ad maps attribute names to expression text, got {name!r}: {expr!r}")
        if "\n" in expr:
            raise ValueError(f"attribute {name}: expression text may not contain a newline")
    return ad


def _job(value) -> JobId:
    if isinstance(value, JobId):
        return value
    if isinstance(value, tuple):
        return JobId(*value)
    return JobId.parse(str(value))


def quote_string(text: str) -> str:
    """A Python string as ClassAd string-literal text (``"a\\"b"``)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@attrs.frozen
class ClusterAd:
    """The cluster ad written at submit: attributes shared by every proc."""

    cluster: int
    ad: Mapping[str, str] = attrs.field(converter=_ad)
    key: str | None = None
    type = "cluster"

    @property
    def job(self) -> JobId:
        return JobId(self.cluster, -1)


@attrs.frozen
class ProcAd:
    """A new job.  ``ad`` holds its own attributes (JobStatus 1 or 5 among them)."""

    job: JobId = attrs.field(converter=_job)
    ad: Mapping[str, str] = attrs.field(converter=_ad)
    key: str | None = None
    type = "proc"


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _ints(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


def _ads(value) -> tuple:
    ads = tuple(value)
    for ad in ads:
        if not isinstance(ad, dict):
            raise TypeError(f"a block of procs holds job ads (dicts), got {ad!r}")
        for name, expr in ad.items():   # what _ad checks, without copying each ad
            if type(name) is not str or not name or type(expr) is not str or "\n" in expr:
                _ad(ad)
    return ads


@attrs.frozen
class ProcBlock:
    """New jobs of one cluster, each with its SUBMIT event, in one record.

    Proc ``procs[i]``'s own ad is ``common`` overlaid by ``ads[i]``, with
    ``ProcId`` = ``procs[i]`` (``ad_of(i)``): the writer keeps what the procs
    share in ``common`` once (``factored`` finds it).  ``submit`` is the
    SUBMIT event payload they all get with their own ``proc``
    (``eventcore.events.event_to_dict`` shape).  Reading expands it into
    ``proc`` and ``event`` entries, two positions a proc.
    """

    cluster: int
    procs: tuple[int, ...] = attrs.field(converter=_ints)
    ads: tuple = attrs.field(converter=_ads)
    submit: Mapping = attrs.field(converter=dict)
    common: Mapping[str, str] = attrs.field(factory=dict, converter=_ad)
    key: str | None = None
    type = "procs"

    def __attrs_post_init__(self):
        if not self.procs or len(self.procs) != len(self.ads):
            raise ValueError(f"a block of procs needs one ad per proc ({len(self.procs)} procs, "
                             f"{len(self.ads)} ads)")
        if "ProcId" in self.common or any("ProcId" in ad for ad in self.ads):
            raise ValueError(f"cluster {self.cluster}: a block's procs take their ProcId "
                             "from its procs, not from their ads")
        if int(self.submit.get("type", -1)) != 0:
            raise ValueError("a block of procs carries their SUBMIT event (type 0)")

    @classmethod
    def factored(cls, cluster: int, procs, ads, submit, key: str | None = None) -> "ProcBlock":
        """The block of procs whose own ads are ``ads`` (each with or without its
        ProcId), with what they all share in ``common``."""
        ads = [{k: v for k, v in ad.items() if k != "ProcId"} for ad in ads]
        common = {name: value for name, value in (ads[0].items() if ads else ())
                  if all(ad.get(name) == value for ad in ads)}
        return cls(cluster, procs, [{k: v for k, v in ad.items() if k not in common} for ad in ads],
                   submit, common, key=key)

    def ad_of(self, index: int) -> dict:
        """The own ad of the block's ``index``-th proc."""
        ad = dict(self.common)
        ad.update(self.ads[index])
        ad["ProcId"] = str(self.procs[index])
        return ad

    @property
    def job(self) -> JobId:
        return JobId(self.cluster, self.procs[0])

    @property
    def span(self) -> int:
        """The journal positions it stands for (a proc record and an event each)."""
        return 2 * len(self.procs)


@attrs.frozen
class SetAttributes:
    """Attribute edits of one job (or, with proc -1, of its cluster ad)."""

    job: JobId = attrs.field(converter=_job)
    set: Mapping[str, str] = attrs.field(factory=dict, converter=_ad)
    delete: tuple[str, ...] = attrs.field(default=(), converter=_names)
    by: str | None = None
    key: str | None = None
    type = "set"


@attrs.frozen
class EventRecord:
    """One user-log event of a job.

    ``event`` is the event's payload exactly as
    ``eventcore.events.event_to_dict`` gives it (``type`` = ULog number,
    ``cluster``, ``proc``, ``subproc``, ``timestamp``, ``attrs``), so the
    journal can be folded without building event objects.  ``imported``
    marks events read from a log written elsewhere: their order is what that
    log says, not what our schedd decided; ``source`` says where they were
    read (file, byte offsets, the file's fingerprint) so an audit can go back.
    """

    job: JobId = attrs.field(converter=_job)
    event: Mapping = attrs.field(converter=dict)
    imported: bool = False
    source: Mapping | None = None   # imported: {path, offset, end, fingerprint}
    key: str | None = None
    type = "event"

    @property
    def number(self) -> int:
        """The ULog event number."""
        return int(self.event["type"])

    @property
    def timestamp(self) -> float:
        """When the event happened (Unix seconds)."""
        return self.event.get("timestamp", 0)


ACTIONS = ("hold", "release", "remove", "removex", "vacate", "vacate_fast",
           "suspend", "continue", "edit", "submit")


@attrs.frozen
class ActionRecord:
    """Who asked for what, and why (audit trail; the state moves by events)."""

    job: JobId = attrs.field(converter=_job)
    action: str = attrs.field(validator=attrs.validators.in_(ACTIONS))
    reason: str | None = None
    by: str | None = None
    key: str | None = None
    type = "action"


@attrs.frozen
class LeaveQueue:
    """The job left the queue (COMPLETED or REMOVED only); its ad goes to history."""

    job: JobId = attrs.field(converter=_job)
    key: str | None = None
    type = "leave"


USERREC_OPS = ("add", "enable", "disable", "edit", "remove")
USERREC_JOB = JobId(0, 0)   # no job: HTCondor keeps these records beside the jobs, under cluster 0


@attrs.frozen
class UserRecord:
    """A change to one of the schedd's User (``kind`` "user", named by ``User``) or
    Project (``kind`` "project", named by ``Name``) records: the attributes set and
    deleted (``op`` "add" makes the record, "remove" drops it), who asked and why."""

    kind: str = attrs.field(validator=attrs.validators.in_(("user", "project")))
    name: str = attrs.field(validator=attrs.validators.instance_of(str))
    op: str = attrs.field(validator=attrs.validators.in_(USERREC_OPS))
    set: Mapping[str, str] = attrs.field(factory=dict, converter=_ad)
    delete: tuple[str, ...] = attrs.field(default=(), converter=_names)
    reason: str | None = None
    by: str | None = None
    key: str | None = None
    type = "userrec"

    @property
    def job(self) -> JobId:
        return USERREC_JOB


Record = Union[ClusterAd, ProcAd, ProcBlock, SetAttributes, EventRecord, ActionRecord, LeaveQueue,
               UserRecord]
RECORD_TYPES = {cls.type: cls for cls in
                (ClusterAd, ProcAd, ProcBlock, SetAttributes, EventRecord, ActionRecord, LeaveQueue,
                 UserRecord)}
# The payload version each record type is written with today.
RECORD_VERSIONS = {name: 1 for name in RECORD_TYPES}


@attrs.frozen
class Assumed:
    """What a decision about ``job`` assumed: its status (None: not in the queue) and
    its ``ClaimId`` as the ad's expression text (None: no claim), so a decision on one
    run never commits against the next.  Not a record: an append's precondition."""

    job: JobId = attrs.field(converter=_job)
    status: int | None
    claim: str | None = None

    @classmethod
    def of(cls, job, ad: Mapping[str, str] | None) -> "Assumed":
        """The state ``ad`` (as the queue gave it; None: no such job) shows."""
        if ad is None:
            return cls(job, None, None)
        return cls(job, int(ad.get("JobStatus", "1")), ad.get("ClaimId"))

    def holds(self, status: int | None, claim: str | None) -> bool:
        return self.status == status and self.claim == claim


def split_assumed(records: list) -> tuple[list, list["Assumed"]]:
    """(the records, the ``Assumed`` preconditions) of one append."""
    if not any(type(r) is Assumed for r in records):
        return records, []
    return ([r for r in records if type(r) is not Assumed],
            [r for r in records if type(r) is Assumed])
