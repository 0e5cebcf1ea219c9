"""The JSON user-log format: one JSON object per event.

``scan_json(buf, pos, state)`` has ``scan_text``'s contract (items and the
offset of the first incomplete record, which is held back).  An object
without ``EventTypeNumber`` is skipped, as HTCondor does.  ``render_json``
writes an event the way HTCondor's JSON printer does: two-space indent, one
attribute per line, expressions as ``"\\/Expr(<text>)\\/"``.  (HTCondor
orders attributes by its hash table; we write the common ones first, then
the event's, which every reader accepts.)
"""

from __future__ import annotations

import datetime
import json
import math
from json.decoder import scanstring
from json.scanner import py_make_scanner

from jobledger.eventcore.codecs.userlog_ads import ad_to_parsed, event_ad
from jobledger.eventcore.codecs.userlog_text_read import Garbled, Skipped, ByteOffsets
from jobledger.eventcore.codecs.userlog_text_write import TextFormat
from jobledger.eventcore.events import UNDEFINED, Event, Expr, Special

__all__ = ["scan_json", "render_json", "json_value", "decode_json_value"]

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class _Quoted(str):
    """A JSON string that HTCondor's escaped form ``"\\/Expr(...)\\/"`` marks as an expression."""


def _expression_string(s: str, end: int, strict: bool = True):
    """``json``'s string scanner, noting a ``"\\/...\\/"`` string (raw escapes at both ends)."""
    value, after = scanstring(s, end, strict)
    if s.startswith("\\/", end) and s.startswith("\\/", after - 3) and len(value) >= 2:
        return _Quoted(value), after
    return value, after


class _ExprAwareDecoder(json.JSONDecoder):
    """Decodes values as ``json`` does, but keeps which strings were written
    ``"\\/Expr(...)\\/"``: only those are expressions (HTCondor's JSON reader);
    a string that merely reads ``/Expr(...)/`` is a string."""

    def __init__(self):
        super().__init__()
        self.parse_string = _expression_string
        self.scan_once = py_make_scanner(self)


_EXPR_DECODER = _ExprAwareDecoder()


def _decode_object(s: str, i: int):
    """The JSON value at ``s[i]`` and where it ends; the exact (slower) decoder only
    when the text has an escaped slash, without which nothing is an expression."""
    obj, end = _DECODER.raw_decode(s, i)
    if s.find("\\/", i, end) >= 0:
        obj, end = _EXPR_DECODER.raw_decode(s, i)
    return obj, end


def decode_json_value(value):
    """HTCondor JSON -> attribute value: a string written ``"\\/Expr(<text>)\\/"``
    (``_Quoted``) is an expression; every other string stays a string."""
    if isinstance(value, str):
        if type(value) is _Quoted and value[:6].lower() == "/expr(" and value.endswith(")/"):
            return Expr(value[6:-2])
        return str(value)
    if isinstance(value, list):
        return [decode_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: decode_json_value(v) for k, v in value.items()}
    if value is None:
        return UNDEFINED
    return value


def _next_event_object(s: str, start: int) -> int:
    """Where the next complete event object starts after a bad one, or -1.

    A crashed writer leaves half an object; the next writer's object may
    start right after it, even mid-line.  The first ``{`` from which a whole
    object with an ``EventTypeNumber`` decodes is that start.
    """
    k = s.find("{", start)
    while k >= 0:
        try:
            obj, _ = _DECODER.raw_decode(s, k)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(obj, dict) and "EventTypeNumber" in obj:
                return k
        k = s.find("{", k + 1)
    return -1


def scan_json(buf: bytes, pos: int, state, limit: int | None = None):
    chunk = buf[pos:]
    ascii = chunk.isascii()
    s = chunk.decode("utf-8", "surrogateescape")
    off = ByteOffsets(s, pos, ascii)
    items: list = []
    n = len(s)
    i = 0
    while True:
        while i < n and s[i] in _WS:
            i += 1
        if i >= n or (limit is not None and len(items) >= limit):
            break
        if s[i] != "{":
            nxt = s.find("\n{", i)
            if nxt < 0:
                break
            items.append(Skipped(s[i:nxt + 1], off(i), off(nxt + 1)))
            i = nxt + 1
            continue
        try:
            obj, end = _decode_object(s, i)
        except json.JSONDecodeError:
            nxt = _next_event_object(s, i + 1)
            if nxt < 0:
                break                  # incomplete: wait for the rest
            items.append(Garbled("not a JSON object (a crashed writer's fragment?)",
                                 s[i:nxt], off(i), off(nxt)))
            i = nxt
            continue
        if not isinstance(obj, dict):
            items.append(Skipped(s[i:end], off(i), off(end)))
        else:
            ad = {k: decode_json_value(v) for k, v in obj.items()}
            items.append(ad_to_parsed(ad, state, s[i:end], off(i), off(end)))
        i = end
    return items, off(i)


def json_value(value):
    """Attribute value -> the JSON HTCondor writes (an expression as a ``_Quoted``
    ``/Expr(<text>)/``, which ``render_json`` writes with escaped slashes)."""
    if isinstance(value, Expr):
        return _Quoted(f"/Expr({value.text})/")
    if isinstance(value, Special):
        return None if value is UNDEFINED else _Quoted("/Expr(error)/")
    if isinstance(value, float) and not math.isfinite(value):
        return _Quoted(f"/Expr(real(\"{'NaN' if math.isnan(value) else ('INF' if value > 0 else '-INF')}\"))/")
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    return value


def _dumps(value, indent: str = "") -> str:
    """``json.dumps(value, indent=2)``, but a ``_Quoted`` string is written
    ``"\\/Expr(...)\\/"``: the only strings a reader takes for expressions."""
    if type(value) is _Quoted:
        return '"\\/' + json.dumps(value[1:-1], ensure_ascii=False)[1:-1] + '\\/"'
    inner = indent + "  "
    if isinstance(value, dict) and value:
        return "{\n" + ",\n".join(f"{inner}{json.dumps(k, ensure_ascii=False)}: {_dumps(v, inner)}"
                                   for k, v in value.items()) + f"\n{indent}}}"
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(inner + _dumps(v, inner) for v in value) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False)


def render_json(event: Event, fmt: TextFormat = TextFormat(),
                tz: datetime.tzinfo = datetime.timezone.utc) -> str:
    """One event as HTCondor's JSON event log writes it (with the newline)."""
    ad = {k: json_value(v) for k, v in event_ad(event, fmt, tz).items()}
    if any(type(v) is _Quoted or isinstance(v, (list, dict)) for v in ad.values()):
        return _dumps(ad) + "\n"
    return json.dumps(ad, indent=2, ensure_ascii=False) + "\n"
