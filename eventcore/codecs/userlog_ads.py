"""Shared by the JSON and XML user-log codecs: event <-> event ClassAd.

``ad_to_parsed(ad, state, text, offset, end)`` turns one decoded event ad
(a dict of HTCondor attributes) into a ``Parsed`` item the way HTCondor's
reader does for these formats: it keeps only the attributes the event type
knows (028 and future events keep everything), fills the always-present
ones with their defaults, truncates reals read into integer attributes, and
reads ``EventTime`` with the ISO-8601 rules.  ``event_ad(event, fmt, tz)``
is the writer's side: the ordered ad HTCondor writes for an event.
"""

from __future__ import annotations

import calendar
import datetime
import math

from jobledger.eventcore.codecs.userlog_text_read import Garbled, Header, Parsed, Skipped
from jobledger.eventcore.codecs.userlog_text_write import TextFormat
from jobledger.eventcore.codecs.userlog_time import event_time_text, iso_fields
from jobledger.eventcore.codecs.userlog_values import unparse
from jobledger.eventcore.events import EVENT_CLASSES, Event, make_event, my_type

__all__ = ["ad_to_parsed", "event_ad", "event_time_iso", "COMMON"]

COMMON = ("MyType", "EventTypeNumber", "EventTime", "Cluster", "Proc", "Subproc")
_INT_ATTRS = {
    "MemoryUsage", "ResidentSetSize", "ProportionalSetSize", "Size", "ReturnValue",
    "TerminatedBySignal", "ReasonCode", "ReasonSubCode", "Node", "ExecuteErrorType",
    "CriticalError", "HoldReasonCode", "HoldReasonSubCode", "QueueingDelay", "NumberOfPIDs",
    "NextProcId", "NextRow", "Completion", "PauseCode", "HoldCode", "ExpirationTime",
    "ReservedSpace"}
_REAL_ATTRS = {"SentBytes", "ReceivedBytes", "TotalSentBytes", "TotalReceivedBytes"}
_BOOL_ATTRS = {"TerminatedNormally", "Checkpointed", "TerminatedAndRequeued"}


def _coerce(number: int, name: str, value):
    if (name in _INT_ATTRS or (name == "Type" and number == 40)) and isinstance(value, float):
        return math.trunc(value) if math.isfinite(value) else value
    if name in _REAL_ATTRS and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if name in _BOOL_ATTRS and isinstance(value, int) and not isinstance(value, bool):
        return value != 0
    return value


def _int_or(value, default=-1):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value)


def ad_to_parsed(ad: dict, state, text: str, offset: int, end: int):
    """A ``Parsed`` (or ``Skipped`` without ``EventTypeNumber``) for one event ad."""
    number = ad.get("EventTypeNumber")
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if not isinstance(number, int) or isinstance(number, bool):
        return Skipped(text, offset, end)
    if number >= 100:           # execution-point events: slot ids, no job ids
        ad = dict(ad)
        cluster, proc, subproc = _int_or(ad.pop("SlotId", 0), 0), _int_or(ad.pop("DSlotId", 0), 0), 0
    else:
        cluster = _int_or(ad.get("Cluster"))
        proc = _int_or(ad.get("Proc"))
        subproc = _int_or(ad.get("Subproc"))
    when = ad.get("EventTime")
    if isinstance(when, str):
        y, mo, d, h, mi, s, micros, is_utc = iso_fields(when)
        if not (1 <= mo <= 12 and 0 <= d <= 32 and 0 <= h <= 24):
            return Garbled(f"bad EventTime {when!r}", text, offset, end)
        if is_utc:
            epoch = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
        else:
            epoch = state.zone.to_epoch(y, mo, d, h, mi, s)
    else:
        epoch, micros = int(state.now), 0
    cls = EVENT_CLASSES.get(number)
    known = cls._AD_TO_PY if cls is not None else {"EventHead": "event_head"}
    keep_all = number == 28
    has_extra = cls is None or cls._HAS_EXTRA
    body = {}
    for name, value in ad.items():
        if keep_all:
            body[name] = value
        elif name in COMMON:
            continue
        elif name in known:
            body[name] = _coerce(number, name, value)
        elif has_extra:
            body[name] = value
    try:
        event = make_event(number, cluster=cluster, proc=proc, subproc=subproc,
                           timestamp=epoch, attrs=body)
    except (TypeError, ValueError) as exc:
        return Garbled(str(exc), text, offset, end)
    header = Header(number, cluster, proc, subproc, epoch, micros,
                    event_time_text(epoch, micros, state.zone))
    hidden = {}
    if cls is None or number in (17, 18, 19, 20, 31, 32, 39) or number >= 100:
        hidden["payload"] = "\n".join(f"{k} = {unparse(v)}" for k, v in body.items()
                                      if k != "EventHead")
    return Parsed(header, event.attributes(), hidden, text, offset, end)


def event_time_iso(timestamp, fmt: TextFormat, tz: datetime.tzinfo) -> str:
    """``EventTime`` as the JSON/XML writers put it (ISO ``T`` form)."""
    secs = math.floor(timestamp)
    dt = datetime.datetime.fromtimestamp(secs, datetime.timezone.utc)
    dt = dt.astimezone(datetime.timezone.utc if fmt.utc else tz)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    micros = int(round((timestamp - secs) * 1_000_000))
    if micros:
        text += ".%03d" % min(micros // 1000, 999)
    if fmt.utc:
        text += "Z"
    return text


def event_ad(event: Event, fmt: TextFormat = TextFormat(),
             tz: datetime.tzinfo = datetime.timezone.utc) -> dict:
    """The event's ClassAd in HTCondor's order: common attributes, then its own."""
    number = int(event.type)
    ad = {"MyType": my_type(number) if number not in EVENT_CLASSES else event.MY_TYPE,
          "EventTypeNumber": number,
          "EventTime": event_time_iso(event.timestamp, fmt, tz)}
    if number >= 100:
        if event.cluster > 0:
            ad["SlotId"] = event.cluster
        if event.proc > 0:
            ad["DSlotId"] = event.proc
    else:
        ad["Cluster"] = event.cluster
        ad["Proc"] = event.proc
        ad["Subproc"] = event.subproc
    for key, value in event.attributes().items():
        if number == 28 and key in COMMON:
            continue
        ad[key] = value
    return ad

