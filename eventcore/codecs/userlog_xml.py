"""The XML user-log format: one ``<c>`` element per event.

``scan_xml(buf, pos, state)`` has ``scan_text``'s contract.  The optional
prologue (``<?xml ...?>``, ``<!DOCTYPE ...>``, ``<classads>``) is skipped.
An element is read only once its closing ``</c>`` line is there (HTCondor
builds a bogus event from an unfinished last element; we wait).  Only
``&amp;``, ``&lt;`` and ``&gt;`` are entities, as in HTCondor.
``render_xml`` writes an event as HTCondor's XML writer does.
"""

from __future__ import annotations

import datetime
import math
import re

from jobledger.eventcore.codecs.userlog_ads import ad_to_parsed, event_ad
from jobledger.eventcore.codecs.userlog_text_read import Garbled, Skipped, ByteOffsets
from jobledger.eventcore.codecs.userlog_text_write import TextFormat
from jobledger.eventcore.codecs.userlog_values import decode_escapes, encode_escapes
from jobledger.eventcore.events import ERROR, UNDEFINED, Event, Expr

__all__ = ["scan_xml", "render_xml", "parse_xml_ad"]

_CLOSE = re.compile(r"^</c>[ \t]*\r?(?:\n|\Z)", re.M)
# An event element opens with "<c>" and a line break (nested ads are inline).
_OPEN = re.compile(r"<c>\r?\n")
_ATTR = re.compile(r'\s*<a n="([^"]*)">')
_PROLOGUE = re.compile(r"\s*(<\?.*?\?>|<!.*?>|<classads>|</classads>)", re.S)


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _BadXml(ValueError):
    pass


def _value(s: str, i: int):
    """Parse one value element at s[i:]; (value, end)."""
    if s.startswith("<i>", i):
        j = s.index("</i>", i)
        return int(s[i + 3:j]), j + 4
    if s.startswith("<r>", i):
        j = s.index("</r>", i)
        return float(s[i + 3:j]), j + 4
    if s.startswith("<s>", i):            # HTCondor decodes ClassAd escapes here
        j = s.index("</s>", i)
        return decode_escapes(_unescape(s[i + 3:j])), j + 4
    if s.startswith("<s/>", i):
        return "", i + 4
    if s.startswith('<b v="t"/>', i):
        return True, i + 10
    if s.startswith('<b v="f"/>', i):
        return False, i + 10
    if s.startswith("<un/>", i):
        return UNDEFINED, i + 5
    if s.startswith("<er/>", i):
        return ERROR, i + 5
    if s.startswith("<e>", i):
        j = s.index("</e>", i)
        return Expr(_unescape(s[i + 3:j])), j + 4
    if s.startswith("<l>", i):
        items = []
        i += 3
        while True:
            while i < len(s) and s[i] in " \t\r\n":
                i += 1
            if s.startswith("</l>", i):
                return items, i + 4
            v, i = _value(s, i)
            items.append(v)
    if s.startswith("<c>", i):
        return _ad_body(s, i + 3, "</c>")
    raise _BadXml(f"unknown value at {s[i:i + 20]!r}")


def _ad_body(s: str, i: int, close: str):
    ad = {}
    while True:
        while i < len(s) and s[i] in " \t\r\n":
            i += 1
        if s.startswith(close, i):
            return ad, i + len(close)
        m = _ATTR.match(s, i)
        if not m:
            raise _BadXml(f"expected an attribute at {s[i:i + 20]!r}")
        value, i = _value(s, m.end())
        if not s.startswith("</a>", i):
            raise _BadXml("missing </a>")
        ad[_unescape(m.group(1))] = value
        i += 4


def parse_xml_ad(text: str) -> dict:
    """One ``<c>...</c>`` element -> dict of attribute values."""
    start = text.index("<c>")
    ad, _ = _ad_body(text, start + 3, "</c>")
    return ad


def scan_xml(buf: bytes, pos: int, state, limit: int | None = None):
    chunk = buf[pos:]
    s = chunk.decode("utf-8", "surrogateescape")
    off = ByteOffsets(s, pos, chunk.isascii())
    items: list = []
    i, n = 0, len(s)
    while i < n:
        if limit is not None and len(items) >= limit:
            break
        m = _PROLOGUE.match(s, i)
        if m:
            i = m.end()
            continue
        j = i
        while j < n and s[j] in " \t\r\n":
            j += 1
        if j >= n:
            break
        if not s.startswith("<c>", j):
            nl = s.find("\n", j)
            if nl < 0:
                break
            opening = _OPEN.search(s, j + 1, nl + 1)   # a new event glued to a fragment
            stop = opening.start() if opening else nl + 1
            items.append(Skipped(s[j:stop], off(j), off(stop)))
            i = stop
            continue
        close = _CLOSE.search(s, j)
        inner = _OPEN.search(s, j + 3, close.start() if close else n)
        if inner is not None:          # a crashed writer's fragment, then a new event
            items.append(Garbled("unfinished XML event followed by a new one", s[j:inner.start()],
                                 off(j), off(inner.start())))
            i = inner.start()
            continue
        if close is None or (close.end() == n and not s.endswith("\n")):
            break                      # wait for the closing line
        end = close.start() + 4       # HTCondor leaves the newline after </c> unread
        text = s[j:end]
        try:
            ad = parse_xml_ad(text)
        except (_BadXml, ValueError) as exc:
            items.append(Garbled(f"bad XML event: {exc}", text, off(j), off(end)))
        else:
            items.append(ad_to_parsed(ad, state, text, off(j), off(end)))
        i = end
    return items, off(i)


def _xml_value(value) -> str:
    if value is True:
        return '<b v="t"/>'
    if value is False:
        return '<b v="f"/>'
    if isinstance(value, int):
        return f"<i>{value}</i>"
    if isinstance(value, float):
        if math.isfinite(value):
            return "<r>%1.15E</r>" % value
        return f"<e>real(\"{'NaN' if math.isnan(value) else ('INF' if value > 0 else '-INF')}\")</e>"
    if isinstance(value, str):
        return f"<s>{_escape(encode_escapes(value))}</s>"
    if value is UNDEFINED:
        return "<un/>"
    if value is ERROR:
        return "<er/>"
    if isinstance(value, Expr):
        return f"<e>{_escape(value.text)}</e>"
    if isinstance(value, (list, tuple)):
        return "<l>" + "".join(_xml_value(v) for v in value) + "</l>"
    if isinstance(value, dict):
        return "<c>" + "".join(f'<a n="{k}">{_xml_value(v)}</a>' for k, v in value.items()) + "</c>"
    raise TypeError(f"not an attribute value: {value!r}")


def render_xml(event: Event, fmt: TextFormat = TextFormat(),
               tz: datetime.tzinfo = datetime.timezone.utc) -> str:
    """One event as HTCondor's XML user-log writer lays it out."""
    lines = ["<c>"]
    for key, value in event_ad(event, fmt, tz).items():
        lines.append(f'    <a n="{key}">{_xml_value(value)}</a>')
    lines.append("</c>")
    return "\n".join(lines) + "\n"
