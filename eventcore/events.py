"""Job events: HTCondor's user-log event types as frozen attrs records.

Events are plain values.  Time and ids are fields; nothing here reads a clock.

API summary (what other modules use)
------------------------------------
``EventType``
    IntEnum with HTCondor's ULog numbers and ``htcondor2.JobEventType`` names
    (``SUBMIT = 0``, ``EXECUTE = 1``, ... ``JOB_TERMINATED = 5``,
    ``JOB_ABORTED = 9``, ``JOB_HELD = 12``, ``JOB_RELEASED = 13``, ...,
    ``COMMON_FILES = 47``, ``EP_STARTUP = 100`` ... ``EP_RESOURCE_MEND = 111``).

One record class per event number, e.g. ``SubmitEvent``, ``ExecuteEvent``,
``JobTerminatedEvent``, ``JobHeldEvent`` (``EVENT_CLASSES[number]``), plus
``FutureEvent`` for numbers HTCondor has no dedicated reader for.  Every
record has the keyword-only fields

    cluster: int      ClusterId (-1: none)
    proc: int         ProcId (-1: none, e.g. cluster-level events 035..038)
    subproc: int = 0
    timestamp: int | float   epoch seconds (UTC); a float keeps sub-seconds

and its own fields in snake_case, each bound to the HTCondor attribute name
it stands for (``JobHeldEvent(hold_reason="x", hold_reason_code=1, ...)`` is
``HoldReason``/``HoldReasonCode``).  Fields whose value is ``None`` are
absent from the event's ClassAd (HTCondor only writes them when set).
Records of 005/015 (usage-table attributes), 028 and future events carry
additional HTCondor-named attributes in ``extra`` (a dict).

Uniform access:

``event.type``                 the ULog number (``EventType`` when known)
``event.job_id``               ``JobId(cluster, proc)``
``event.attributes()``         dict of the type's HTCondor attributes
                               (``{"HoldReason": "x", "HoldReasonCode": 1, ...}``),
                               without the common ones (ids, time, MyType)
``event.parts()``              ``EventParts(type, cluster, proc, subproc, timestamp, attrs)``
``make_event(type, cluster=, proc=, timestamp=, attrs=, subproc=0)``
                               the inverse: a record from HTCondor attributes
``event.hidden()``             writer-only fields that are no HTCondor attribute
                               (033 ``old_value``, 035 ``log_notes``/``user_notes``,
                               a future event's raw ``payload``) -- kept so the
                               text writer can reproduce what it read
``event_to_dict(event)``       JSON-safe dict, versioned (``"v": 1``):
                               ``{"v", "type", "cluster", "proc", "subproc",
                               "timestamp", "attrs", ["hidden"]}``, values encoded
                               as in the oracle corpus (``{"$expr": ...}`` etc.)
``event_from_dict(d)``         the inverse (refuses unknown versions)

Writing and reading the user-log formats: ``eventcore.codecs.userlog``
(``render(event, "text"|"json"|"xml", TextFormat(...), tz)``,
``read_events(bytes)``); the text writer alone is
``eventcore.codecs.userlog_text_write.render_text``.

Attribute values are ``int``, ``float``, ``bool``, ``str``, ``list``,
``dict`` (a nested ClassAd, e.g. ``ExecuteProps``), ``Expr`` (an unevaluated
ClassAd expression, kept as its source text) or the ``UNDEFINED``/``ERROR``
markers.  These stay independent of the ClassAd engine; readers that hand
values to users convert them there.
"""

from __future__ import annotations

import enum
import math
from typing import Any, ClassVar, Mapping, NamedTuple

import attrs

from jobledger.eventcore.ids import JobId

__all__ = [
    "EVENT_CLASSES", "ERROR", "Event", "EventParts", "EventType", "Expr",
    "FileTransferEventType", "CommonFilesEventType",
    "FutureEvent", "MY_TYPES", "Special", "UNDEFINED", "event_from_dict",
    "event_to_dict", "make_event", "encode_value", "decode_value",
    "PAYLOAD_VERSION",
]

PAYLOAD_VERSION = 1


class EventType(enum.IntEnum):
    """HTCondor's ULog event numbers (names as ``htcondor2.JobEventType``)."""

    SUBMIT = 0
    EXECUTE = 1
    EXECUTABLE_ERROR = 2
    CHECKPOINTED = 3
    JOB_EVICTED = 4
    JOB_TERMINATED = 5
    IMAGE_SIZE = 6
    SHADOW_EXCEPTION = 7
    GENERIC = 8
    JOB_ABORTED = 9
    JOB_SUSPENDED = 10
    JOB_UNSUSPENDED = 11
    JOB_HELD = 12
    JOB_RELEASED = 13
    NODE_EXECUTE = 14
    NODE_TERMINATED = 15
    POST_SCRIPT_TERMINATED = 16
    GLOBUS_SUBMIT = 17
    GLOBUS_SUBMIT_FAILED = 18
    GLOBUS_RESOURCE_UP = 19
    GLOBUS_RESOURCE_DOWN = 20
    REMOTE_ERROR = 21
    JOB_DISCONNECTED = 22
    JOB_RECONNECTED = 23
    JOB_RECONNECT_FAILED = 24
    GRID_RESOURCE_UP = 25
    GRID_RESOURCE_DOWN = 26
    GRID_SUBMIT = 27
    JOB_AD_INFORMATION = 28
    JOB_STATUS_UNKNOWN = 29
    JOB_STATUS_KNOWN = 30
    JOB_STAGE_IN = 31
    JOB_STAGE_OUT = 32
    ATTRIBUTE_UPDATE = 33
    PRESKIP = 34
    CLUSTER_SUBMIT = 35
    CLUSTER_REMOVE = 36
    FACTORY_PAUSED = 37
    FACTORY_RESUMED = 38
    NONE = 39
    FILE_TRANSFER = 40
    RESERVE_SPACE = 41
    RELEASE_SPACE = 42
    FILE_COMPLETE = 43
    FILE_USED = 44
    FILE_REMOVED = 45
    DATAFLOW_JOB_SKIPPED = 46
    COMMON_FILES = 47
    EP_STARTUP = 100
    EP_READY = 101
    EP_RECONFIG = 102
    EP_SHUTDOWN = 103
    EP_REQUEST_CLAIM = 104
    EP_RELEASE_CLAIM = 105
    EP_ACTIVATE_CLAIM = 106
    EP_DEACTIVATE_CLAIM = 107
    EP_VACATE_CLAIM = 108
    EP_DRAIN = 109
    EP_RESOURCE_BREAK = 110
    EP_RESOURCE_MEND = 111


_ENUM_VALUES = {m.value: m for m in EventType}


class FileTransferEventType(enum.IntEnum):
    """040's ``Type`` (htcondor2's names; the attribute itself is a plain int)."""

    IN_QUEUED = 1
    IN_STARTED = 2
    IN_FINISHED = 3
    OUT_QUEUED = 4
    OUT_STARTED = 5
    OUT_FINISHED = 6


class CommonFilesEventType(enum.IntEnum):
    """047's kinds (htcondor2's names; the ``Type`` attribute itself is a string)."""

    TransferQueued = 1
    TransferStarted = 2
    TransferFinished = 3
    WaitStarted = 4
    WaitFinished = 5


# ------------------------------------------------------------------ values --

@attrs.frozen
class Expr:
    """An unevaluated ClassAd expression, kept as its (old ClassAd) text."""

    text: str

    def __str__(self) -> str:
        return self.text


class Special(enum.Enum):
    """ClassAd's ``undefined`` and ``error`` literals."""

    UNDEFINED = "undefined"
    ERROR = "error"

    def __repr__(self) -> str:
        return self.value


UNDEFINED = Special.UNDEFINED
ERROR = Special.ERROR


def encode_value(value: Any) -> Any:
    """An attribute value as JSON-safe data (the oracle corpus's mapping)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$real": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): encode_value(v) for k, v in value.items()}
    if isinstance(value, Expr):
        return {"$expr": value.text}
    if value is UNDEFINED:
        return {"$undefined": True}
    if value is ERROR:
        return {"$error": True}
    raise TypeError(f"not an event attribute value: {value!r}")


def decode_value(data: Any) -> Any:
    """The inverse of ``encode_value``."""
    if isinstance(data, list):
        return [decode_value(v) for v in data]
    if isinstance(data, dict):
        if len(data) == 1:
            ((key, val),) = data.items()
            if key == "$expr":
                return Expr(val)
            if key == "$undefined":
                return UNDEFINED
            if key == "$error":
                return ERROR
            if key == "$real":
                return float(val)
        return {k: decode_value(v) for k, v in data.items()}
    return data


# ---------------------------------------------------------------- records --

class EventParts(NamedTuple):
    """An event taken apart: what the journal and the codecs exchange."""

    type: int
    cluster: int
    proc: int
    subproc: int
    timestamp: int | float
    attrs: dict


@attrs.frozen(kw_only=True)
class Event:
    """Base of every event record (see the module docstring)."""

    TYPE: ClassVar[Any] = None          # the ULog number
    MY_TYPE: ClassVar[str] = ""         # HTCondor's MyType
    _AD_FIELDS: ClassVar[tuple] = ()    # ((AdName, py_name), ...)
    _HAS_EXTRA: ClassVar[bool] = False
    _HIDDEN: ClassVar[tuple] = ()
    _AD_TO_PY: ClassVar[dict] = {}

    cluster: int = attrs.field(default=-1)
    proc: int = attrs.field(default=-1)
    subproc: int = attrs.field(default=0)
    timestamp: int | float = attrs.field(default=0)

    @property
    def type(self) -> int:
        return self.TYPE

    @property
    def job_id(self) -> JobId:
        return JobId(self.cluster, self.proc)

    def attributes(self) -> dict:
        """The type's HTCondor attributes (None-valued fields left out)."""
        out = {}
        for ad_name, py in self._AD_FIELDS:
            value = getattr(self, py)
            if value is not None:
                out[ad_name] = value
        if self._HAS_EXTRA:
            for key, value in self.extra.items():
                out.setdefault(key, value)
        return out

    def hidden(self) -> dict:
        """Writer-only fields that are no HTCondor attribute (e.g. a raw body)."""
        return {}

    def parts(self) -> EventParts:
        return EventParts(int(self.type), self.cluster, self.proc, self.subproc,
                          self.timestamp, self.attributes())


def _spec(number, cls_name, my_type, fields=(), extra=False, hidden=()):
    return (number, cls_name, my_type, fields, extra, hidden)


# Field kinds: a default that is not None means "always present" (HTCondor
# always writes it); None means "absent unless set".
_USAGE0 = "Usr 0 00:00:00, Sys 0 00:00:00"
_TERM_FIELDS = (
    ("TerminatedNormally", "terminated_normally", False),
    ("ReturnValue", "return_value", None),
    ("TerminatedBySignal", "terminated_by_signal", None),
    ("CoreFile", "core_file", None),
    ("RunLocalUsage", "run_local_usage", _USAGE0),
    ("RunRemoteUsage", "run_remote_usage", _USAGE0),
    ("TotalLocalUsage", "total_local_usage", _USAGE0),
    ("TotalRemoteUsage", "total_remote_usage", _USAGE0),
    ("SentBytes", "sent_bytes", 0.0),
    ("ReceivedBytes", "received_bytes", 0.0),
    ("TotalSentBytes", "total_sent_bytes", 0.0),
    ("TotalReceivedBytes", "total_received_bytes", 0.0),
)
_FUTURE = (("EventHead", "event_head", None),)

_CATALOG = [
    _spec(0, "SubmitEvent", "SubmitEvent", (
        ("SubmitHost", "submit_host", None), ("LogNotes", "log_notes", None),
        ("UserNotes", "user_notes", None), ("Warnings", "warnings", None),
        ("StructuredNotes", "structured_notes", None))),
    _spec(1, "ExecuteEvent", "ExecuteEvent", (
        ("ExecuteHost", "execute_host", None), ("SlotName", "slot_name", None),
        ("ExecuteProps", "execute_props", None))),
    _spec(2, "ExecutableErrorEvent", "ExecutableErrorEvent", (
        ("ExecuteErrorType", "execute_error_type", None),)),
    _spec(3, "CheckpointedEvent", "CheckpointedEvent", (
        ("RunLocalUsage", "run_local_usage", _USAGE0),
        ("RunRemoteUsage", "run_remote_usage", _USAGE0),
        ("SentBytes", "sent_bytes", 0.0))),
    _spec(4, "JobEvictedEvent", "JobEvictedEvent", (
        ("Checkpointed", "checkpointed", False),
        ("RunLocalUsage", "run_local_usage", _USAGE0),
        ("RunRemoteUsage", "run_remote_usage", _USAGE0),
        ("SentBytes", "sent_bytes", 0.0), ("ReceivedBytes", "received_bytes", 0.0),
        ("TerminatedAndRequeued", "terminated_and_requeued", False),
        ("TerminatedNormally", "terminated_normally", False),
        ("ReturnValue", "return_value", None),
        ("TerminatedBySignal", "terminated_by_signal", None),
        ("Reason", "reason", None), ("ReasonCode", "reason_code", None),
        ("ReasonSubCode", "reason_sub_code", None), ("CoreFile", "core_file", None))),
    # toe: the ToE tag (who ended the job, when, how), a line of the text after the usage table
    _spec(5, "JobTerminatedEvent", "JobTerminatedEvent", _TERM_FIELDS, extra=True, hidden=("toe",)),
    _spec(6, "JobImageSizeEvent", "JobImageSizeEvent", (
        ("Size", "size", 0), ("MemoryUsage", "memory_usage", None),
        ("ResidentSetSize", "resident_set_size", 0),
        ("ProportionalSetSize", "proportional_set_size", None))),
    _spec(7, "ShadowExceptionEvent", "ShadowExceptionEvent", (
        ("Message", "message", ""), ("SentBytes", "sent_bytes", 0.0),
        ("ReceivedBytes", "received_bytes", 0.0))),
    _spec(8, "GenericEvent", "GenericEvent", (("Info", "info", None),)),
    _spec(9, "JobAbortedEvent", "JobAbortedEvent", (("Reason", "reason", None),)),
    _spec(10, "JobSuspendedEvent", "JobSuspendedEvent", (
        ("NumberOfPIDs", "number_of_pids", 0),)),
    _spec(11, "JobUnsuspendedEvent", "JobUnsuspendedEvent"),
    _spec(12, "JobHeldEvent", "JobHeldEvent", (
        ("HoldReason", "hold_reason", None), ("HoldReasonCode", "hold_reason_code", 0),
        ("HoldReasonSubCode", "hold_reason_sub_code", 0))),
    _spec(13, "JobReleasedEvent", "JobReleaseEvent", (("Reason", "reason", None),)),
    _spec(14, "NodeExecuteEvent", "NodeExecuteEvent", (
        ("ExecuteHost", "execute_host", None), ("Node", "node", 0),
        ("SlotName", "slot_name", None), ("ExecuteProps", "execute_props", None))),
    _spec(15, "NodeTerminatedEvent", "NodeTerminatedEvent", tuple(
        (a, p, -1 if a in ("ReturnValue", "TerminatedBySignal") else d)
        for a, p, d in _TERM_FIELDS) + (("Node", "node", None),), extra=True),
    _spec(16, "PostScriptTerminatedEvent", "PostScriptTerminatedEvent", (
        ("TerminatedNormally", "terminated_normally", False),
        ("ReturnValue", "return_value", None),
        ("TerminatedBySignal", "terminated_by_signal", None),
        ("DAGNodeName", "dag_node_name", None))),
    _spec(17, "GlobusSubmitEvent", "FutureEvent", _FUTURE, extra=True, hidden=("payload",)),
    _spec(18, "GlobusSubmitFailedEvent", "FutureEvent", _FUTURE, extra=True, hidden=("payload",)),
    _spec(19, "GlobusResourceUpEvent", "FutureEvent", _FUTURE, extra=True, hidden=("payload",)),
    _spec(20, "GlobusResourceDownEvent", "FutureEvent", _FUTURE, extra=True, hidden=("payload",)),
    _spec(21, "RemoteErrorEvent", "RemoteErrorEvent", (
        ("Daemon", "daemon", None), ("ExecuteHost", "execute_host", None),
        ("ErrorMsg", "error_msg", None), ("CriticalError", "critical_error", None),
        ("HoldReasonCode", "hold_reason_code", None),
        ("HoldReasonSubCode", "hold_reason_sub_code", None))),
    _spec(22, "JobDisconnectedEvent", "JobDisconnectedEvent", (
        ("StartdAddr", "startd_addr", ""), ("StartdName", "startd_name", ""),
        ("DisconnectReason", "disconnect_reason", ""),
        ("EventDescription", "event_description", "Job disconnected, attempting to reconnect"))),
    _spec(23, "JobReconnectedEvent", "JobReconnectedEvent", (
        ("StartdAddr", "startd_addr", ""), ("StartdName", "startd_name", ""),
        ("StarterAddr", "starter_addr", ""),
        ("EventDescription", "event_description", "Job reconnected"))),
    _spec(24, "JobReconnectFailedEvent", "JobReconnectFailedEvent", (
        ("StartdName", "startd_name", ""), ("Reason", "reason", ""),
        ("EventDescription", "event_description", "Job reconnect impossible: rescheduling job"))),
    _spec(25, "GridResourceUpEvent", "GridResourceUpEvent", (
        ("GridResource", "grid_resource", None),)),
    _spec(26, "GridResourceDownEvent", "GridResourceDownEvent", (
        ("GridResource", "grid_resource", None),)),
    _spec(27, "GridSubmitEvent", "GridSubmitEvent", (
        ("GridResource", "grid_resource", None), ("GridJobId", "grid_job_id", None))),
    _spec(28, "JobAdInformationEvent", "JobAdInformationEvent", (), extra=True),
    _spec(29, "JobStatusUnknownEvent", "FutureEvent"),
    _spec(30, "JobStatusKnownEvent", "FutureEvent"),
    _spec(31, "JobStageInEvent", "FutureEvent", _FUTURE, extra=True, hidden=("payload",)),
    _spec(32, "JobStageOutEvent", "FutureEvent", _FUTURE, extra=True, hidden=("payload",)),
    _spec(33, "AttributeUpdateEvent", "AttributeUpdateEvent", (
        ("Attribute", "attribute", ""), ("Value", "value", "")),
        hidden=("old_value",)),
    _spec(34, "PreSkipEvent", "FutureEvent", (
        ("SkipEventLogNotes", "skip_event_log_notes", ""),)),
    _spec(35, "ClusterSubmitEvent", "ClusterSubmitEvent", (
        ("SubmitHost", "submit_host", None), ("StructuredNotes", "structured_notes", None)),
        hidden=("log_notes", "user_notes")),
    _spec(36, "ClusterRemoveEvent", "ClusterRemoveEvent", (
        ("NextProcId", "next_proc_id", 0), ("NextRow", "next_row", 0),
        ("Completion", "completion", 0), ("Notes", "notes", None))),
    _spec(37, "FactoryPausedEvent", "FactoryPausedEvent", (
        ("Reason", "reason", None), ("PauseCode", "pause_code", 0),
        ("HoldCode", "hold_code", 0))),
    _spec(38, "FactoryResumedEvent", "FactoryResumedEvent", (("Reason", "reason", None),)),
    _spec(39, "NoneEvent", "FutureEvent", _FUTURE, extra=True, hidden=("payload",)),
    _spec(40, "FileTransferEvent", "FileTransferEvent", (
        ("Type", "transfer_type", 1), ("QueueingDelay", "queueing_delay", None),
        ("Host", "host", None))),
    _spec(41, "ReserveSpaceEvent", "ReserveSpaceEvent", (
        ("ExpirationTime", "expiration_time", 0), ("ReservedSpace", "reserved_space", 0),
        ("UUID", "uuid", ""), ("Tag", "tag", ""))),
    _spec(42, "ReleaseSpaceEvent", "ReleaseSpaceEvent", (("UUID", "uuid", ""),)),
    _spec(43, "FileCompleteEvent", "FileCompleteEvent", (
        ("Size", "size", 0), ("Checksum", "checksum", ""),
        ("ChecksumType", "checksum_type", ""), ("UUID", "uuid", ""))),
    _spec(44, "FileUsedEvent", "FileUsedEvent", (
        ("Checksum", "checksum", ""), ("ChecksumType", "checksum_type", ""),
        ("Tag", "tag", ""))),
    _spec(45, "FileRemovedEvent", "FileRemovedEvent", (
        ("Size", "size", 0), ("Checksum", "checksum", ""),
        ("ChecksumType", "checksum_type", ""), ("Tag", "tag", ""))),
    _spec(46, "DataflowJobSkippedEvent", "DataflowJobSkippedEvent", (
        ("Reason", "reason", None),)),
    _spec(47, "CommonFilesEvent", "CommonFilesEvent", (("Type", "files_type", ""),)),
]
_EP_NAMES = ["EPStartupEvent", "EPReadyEvent", "EPReconfigEvent", "EPShutdownEvent",
             "RequestClaimEvent", "ReleaseClaimEvent", "ActivateClaimEvent",
             "DeactivateClaimEvent", "VacateClaimEvent", "DrainEvent",
             "ResourceBreakEvent", "ResourceMendEvent"]
for _i, _n in enumerate(_EP_NAMES):
    _CATALOG.append(_spec(100 + _i, _n, _n, _FUTURE, extra=True, hidden=("payload",)))

#: MyType for every number (HTCondor's, including its oddities).
MY_TYPES: dict[int, str] = {}
#: The record class for each ULog number with a dedicated record.
EVENT_CLASSES: dict[int, type] = {}


def _frozen_dict(value):
    return dict(value) if value is not None else {}


def _build(number, cls_name, my_type, fields, extra, hidden):
    body = {}
    for ad_name, py, default in fields:
        body[py] = attrs.field(default=default, metadata={"ad": ad_name})
    if extra:
        body["extra"] = attrs.field(factory=dict, converter=_frozen_dict)
    for py in hidden:
        body[py] = attrs.field(default=None, metadata={"hidden": True})
    cls = attrs.make_class(cls_name, body, bases=(Event,), frozen=True, kw_only=True,
                           slots=True)
    cls.TYPE = _ENUM_VALUES.get(number, number)
    cls.MY_TYPE = my_type
    cls._AD_FIELDS = tuple((a, p) for a, p, _ in fields)
    cls._HAS_EXTRA = extra
    cls._HIDDEN = tuple(hidden)
    cls._AD_TO_PY = {a: p for a, p, _ in fields}
    cls.hidden = lambda self: {h: getattr(self, h) for h in self._HIDDEN
                               if getattr(self, h) is not None}
    cls.__doc__ = (f"ULog event {number:03d} ({my_type}).  Fields -> attributes: "
                   + (", ".join(f"{p}->{a}" for a, p, _ in fields) or "none")
                   + ("; plus extra attributes" if extra else "") + ".")
    cls.__module__ = __name__
    return cls


for _entry in _CATALOG:
    _cls = _build(*_entry)
    EVENT_CLASSES[_entry[0]] = _cls
    MY_TYPES[_entry[0]] = _entry[2]
    globals()[_entry[1]] = _cls
    __all__.append(_entry[1])


@attrs.frozen(kw_only=True)
class FutureEvent(Event):
    """An event number with no dedicated record (HTCondor's "future" event).

    ``number`` is the ULog number; ``event_head`` the header line's text;
    ``extra`` the body's attribute lines; ``payload`` the raw body (for
    re-rendering).  Numbers >= 100 use cluster/proc as SlotId/DSlotId.
    """

    number: int = 0
    event_head: str | None = None
    extra: dict = attrs.field(factory=dict, converter=_frozen_dict)
    payload: str | None = None

    @property
    def type(self) -> int:
        return self.number

    @property
    def MY_TYPE(self) -> str:  # noqa: N802 - mirrors the class attribute of the others
        return "EPFutureEvent" if self.number == 112 else "FutureEvent"

    _AD_FIELDS = (("EventHead", "event_head"),)
    _HAS_EXTRA = True
    _HIDDEN = ("payload",)
    _AD_TO_PY = {"EventHead": "event_head"}

    def hidden(self) -> dict:
        return {"payload": self.payload} if self.payload is not None else {}


def my_type(number: int) -> str:
    """HTCondor's MyType for a ULog number."""
    if number in MY_TYPES:
        return MY_TYPES[number]
    return "EPFutureEvent" if number == 112 else "FutureEvent"


def make_event(type: int, *, cluster: int = -1, proc: int = -1, timestamp: int | float = 0,
               attrs: Mapping[str, Any] | None = None, subproc: int = 0,
               hidden: Mapping[str, Any] | None = None) -> Event:
    """Build the record for ``type`` from HTCondor-named attributes.

    Attributes the record has no field for go to ``extra`` where the type
    has one; otherwise ``ValueError``.
    """
    number = int(type)
    cls = EVENT_CLASSES.get(number)
    kwargs: dict[str, Any] = dict(cluster=cluster, proc=proc, subproc=subproc,
                                  timestamp=timestamp)
    extra = {}
    if cls is None:
        kwargs["number"] = number
        cls = FutureEvent
    ad_to_py = cls._AD_TO_PY
    for name, value in (attrs or {}).items():
        py = ad_to_py.get(name)
        if py is not None:
            kwargs[py] = value
        elif cls._HAS_EXTRA:
            extra[name] = value
        else:
            raise ValueError(f"event {number:03d} ({cls.__name__}) has no attribute {name!r}")
    if cls._HAS_EXTRA:
        kwargs["extra"] = extra
    for name, value in (hidden or {}).items():
        if name not in cls._HIDDEN:
            raise ValueError(f"event {number:03d} ({cls.__name__}) has no field {name!r}")
        kwargs[name] = value
    return cls(**kwargs)


def event_to_dict(event: Event) -> dict:
    """A JSON-safe, versioned dict for ``event`` (see ``event_from_dict``)."""
    out = {
        "v": PAYLOAD_VERSION,
        "type": int(event.type),
        "cluster": event.cluster,
        "proc": event.proc,
        "subproc": event.subproc,
        "timestamp": event.timestamp,
        "attrs": {k: encode_value(v) for k, v in event.attributes().items()},
    }
    hidden = event.hidden()
    if hidden:
        out["hidden"] = {k: encode_value(v) for k, v in hidden.items()}
    return out


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """Rebuild an event from ``event_to_dict`` output (any known version)."""
    version = data.get("v")
    if version != PAYLOAD_VERSION:
        raise ValueError(f"unknown event payload version {version!r}")
    return make_event(
        data["type"], cluster=data["cluster"], proc=data["proc"],
        subproc=data.get("subproc", 0), timestamp=data["timestamp"],
        attrs={k: decode_value(v) for k, v in data.get("attrs", {}).items()},
        hidden={k: decode_value(v) for k, v in data.get("hidden", {}).items()})
