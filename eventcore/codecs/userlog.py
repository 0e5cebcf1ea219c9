"""User-log codecs: one entry point for the text, JSON and XML formats.

Reading (pure, over bytes the caller read):
    ``detect_format(buf)`` -> ``"text"``, ``"json"``, ``"xml"`` or ``None``
    (HTCondor's rule: first non-blank byte ``0``/``1``, ``{``, ``<``; empty or
    all blank -> ``None``, try again later; anything else -> ``"unknown"``).
    ``scan(fmt, buf, pos, state)`` -> ``(items, next_pos)``; items are
    ``Parsed`` / ``Skipped`` / ``Garbled`` (eventcore.codecs.userlog_text_read),
    ``next_pos`` the start of the first incomplete record (held back).
    ``parsed_event(item)`` -> the event record for a ``Parsed`` item.

Writing:
    ``render(event, fmt="text", options=TextFormat(), tz=UTC)`` -> str, one
    complete record in that format (text ends with the ``...`` line).
"""

from __future__ import annotations

import datetime

from jobledger.eventcore.codecs.userlog_json import render_json, scan_json
from jobledger.eventcore.codecs.userlog_text_read import (Garbled, Header, Parsed, Skipped,
                                                TextReaderState, scan_text)
from jobledger.eventcore.codecs.userlog_text_write import TextFormat, render_text
from jobledger.eventcore.codecs.userlog_time import UTC_ZONE, Zone
from jobledger.eventcore.codecs.userlog_xml import render_xml, scan_xml
from jobledger.eventcore.events import Event, make_event

__all__ = ["detect_format", "scan", "render", "parsed_event", "TextFormat", "TextReaderState",
           "Parsed", "Skipped", "Garbled", "Header", "UTC_ZONE", "Zone", "FORMATS",
           "read_events", "scan_whole"]

FORMATS = ("text", "json", "xml")
_SCANNERS = {"text": scan_text, "json": scan_json, "xml": scan_xml}
_RENDERERS = {"text": render_text, "json": render_json, "xml": render_xml}


def detect_format(buf: bytes):
    """The log's format from its first non-blank byte (see the module docstring)."""
    stripped = buf.lstrip(b" \t\r\n\v\f")
    if not stripped:
        return None
    first = stripped[:1]
    if first in (b"0", b"1"):
        return "text"
    if first == b"{":
        return "json"
    if first == b"<":
        return "xml"
    return "unknown"


def scan(fmt: str, buf: bytes, pos: int, state: TextReaderState, limit: int | None = None):
    """Frame and parse the records of ``buf[pos:]`` in format ``fmt``."""
    return _SCANNERS[fmt](buf, pos, state, limit)


def scan_whole(fmt: str, buf: bytes, state: TextReaderState):
    """``scan`` of a whole, finished log: a text log's last ``...`` without a newline
    still ends its event (HTCondor's reader takes such a final event)."""
    tail = buf.rstrip(b" \t\r")
    if fmt != "text" or not tail.endswith(b"\n...") or len(tail) != len(buf.rstrip(b" \t\r\n")):
        return scan(fmt, buf, 0, state)
    items, _ = scan(fmt, buf + b"\n", 0, state)
    if items and items[-1].end > len(buf):
        last = items[-1]
        items[-1] = last._replace(text=last.text[:len(buf) - last.offset], end=len(buf))
    return items, len(buf)


def render(event: Event, fmt: str = "text", options: TextFormat = TextFormat(),
           tz: datetime.tzinfo = datetime.timezone.utc) -> str:
    """One complete record for ``event`` in ``fmt``."""
    return _RENDERERS[fmt](event, options, tz)


def parsed_event(item: Parsed) -> Event:
    """The event record for a parsed item (ids, time and HTCondor attributes)."""
    h = item.header
    timestamp = h.epoch + h.micros / 1_000_000 if h.micros else h.epoch
    attrs = dict(item.attrs)
    if h.number == 28:
        for key in ("Cluster", "Proc", "Subproc", "EventTime", "EventTypeNumber", "MyType"):
            attrs.pop(key, None)
    return make_event(h.number, cluster=h.cluster, proc=h.proc, subproc=h.subproc,
                      timestamp=timestamp, attrs=attrs, hidden=item.hidden)


def read_events(data: bytes, state: TextReaderState | None = None) -> list[Event]:
    """Every complete event of a whole log held in memory (any format)."""
    fmt = detect_format(data)
    if fmt in (None, "unknown"):
        return []
    items, _ = scan_whole(fmt, data, state or TextReaderState())
    return [parsed_event(i) for i in items if isinstance(i, Parsed)]
