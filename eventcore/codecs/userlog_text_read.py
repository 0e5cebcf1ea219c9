"""Read the text user log: frame records in a byte buffer, parse each one.

``scan_text(buf, pos)`` walks a bytes buffer from ``pos`` and returns
``(items, next_pos)``.  Each item is a ``Parsed`` event, a ``Skipped`` run of
non-event lines, or a ``Garbled`` record; ``next_pos`` is where the first
incomplete record starts (a writer still writing it, or one that crashed):
it is held back until its terminator arrives.  Offsets are byte offsets in
``buf``.  Pure: the caller reads the file and supplies the time zone and
the year for legacy ``MM/DD`` dates.

Differences from HTCondor's reader (each named in tests/userlog/test_deviations.py):

* a crashed writer's fragment never swallows the next event: a record in
  which a new event header starts (at a line start, or glued to the
  fragment's last partial line) is reported ``Garbled`` and reading
  resumes at that header;
* ``... `` with trailing blanks ends an event like ``...``;
* a non-event line is skipped (reported) instead of ending the iteration,
  and a header line is not cut at 1023 bytes;
* ids are not wrapped to 32 bits, byte counts are not rounded to 32-bit floats;
* 041..045 are read in HTCondor's writer layout too.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from jobledger.eventcore.codecs.userlog_text_bodies import BadBody, Deferred, parse_body_fast, parse_body_lazily
from jobledger.eventcore.codecs.userlog_time import UTC_ZONE, Zone, parse_header_time
from jobledger.eventcore.events import EventType

_KNOWN_NUMBERS = frozenset(m.value for m in EventType)

__all__ = ["Parsed", "Skipped", "Garbled", "Header", "ByteOffsets", "scan_text", "parse_record",
           "TextReaderState"]


class Header(NamedTuple):
    number: int
    cluster: int
    proc: int
    subproc: int
    epoch: int
    micros: int
    event_time: str


class Parsed(NamedTuple):
    """One event: its header, (attrs, hidden) from the body, raw text and offsets.

    The reader checks every body when it frames the event (an unreadable one
    is ``Garbled`` right there), but the bulky, rarely repeated ones (005,
    006) are only fully read when ``attrs`` is first used."""

    header: Header
    attrs: dict
    hidden: dict
    text: str
    offset: int
    end: int


def _attrs(self) -> dict:
    attrs = tuple.__getitem__(self, 1)
    return attrs if type(attrs) is not Deferred else attrs.value()


# A body may be checked but not yet fully read (see ``parse_body_lazily``):
# the tuple then holds a ``Deferred``, and ``attrs`` reads it on first use.
Parsed.attrs = property(_attrs, doc="The event's attributes from its body.")
_new_tuple = tuple.__new__


class Skipped(NamedTuple):
    """Bytes that are no event (blank lines, foreign text)."""

    text: str
    offset: int
    end: int


class Garbled(NamedTuple):
    """A record that is no readable event (bad header/body, crash fragment)."""

    reason: str
    text: str
    offset: int
    end: int


_HEADER_START = re.compile(r"[0-9]{3} ")
MAX_JOB_ID = 2**63 - 1    # what the journal (an SQLite INTEGER) can hold; HTCondor would wrap at 2**31
_UNDECODED = re.compile("[\udc80-\udcff]")   # bytes that were not UTF-8 (surrogateescape)
# A header that begins inside a record: what a crashed writer's fragment
# followed by a new writer's event looks like.  (Starts with a literal so
# the search is fast; the three digits before it are checked separately.)
_INNER_HEADER = re.compile(
    r" \([ \t]*[+-]?[0-9]+\.[ \t]*[+-]?[0-9]+\.[ \t]*[+-]?[0-9]+\) [0-9]")
_HEADER = re.compile(
    r"([0-9]{3}) \(\s*([+-]?[0-9]+)\.\s*([+-]?[0-9]+)\.\s*([+-]?[0-9]+)\) ")
_FAST_HEADER = re.compile(
    r"([0-9]{3}) \(([0-9]+)\.([0-9]+)\.([0-9]+)\) "
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}):([0-5][0-9]):([0-5][0-9]) ")
_FAST_TIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}):([0-5][0-9]):([0-5][0-9]) ")


def _inner_header(s: str, start: int, stop: int) -> int:
    """Index of a header starting inside ``s[start:stop]``, or -1.

    After a digit (a fragment cut inside its own event number, ``00`` +
    ``012 (...``) only a known event number counts, so that a line like
    ``1234 (...)`` stays foreign text as HTCondor has it.
    """
    while True:
        m = _INNER_HEADER.search(s, start, stop)
        if m is None:
            return -1
        i = m.start() - 3
        if i >= start and s[i:i + 3].isdigit():
            if i == 0 or not s[i - 1].isdigit() or int(s[i:i + 3]) in _KNOWN_NUMBERS:
                return i
        start = m.start() + 1


def _find_terminator(s: str, nl: int):
    """(start, end) of the first terminator line after index ``nl``, or None.

    ``start`` is the newline before ``...``; ``end`` is just past the
    terminator's own newline.  ``...`` may carry trailing blanks or a CR.
    """
    while True:
        k = s.find("\n...", nl)
        if k < 0:
            return None
        j = k + 4
        n = len(s)
        while j < n and s[j] in " \t\r":
            j += 1
        if j < n and s[j] == "\n":
            return k, j + 1
        if j >= n:
            return None
        nl = k + 1


class TextReaderState:
    """Per-reader settings and caches (time zone, year for MM/DD dates)."""

    __slots__ = ("zone", "year", "now", "_hours", "_bodies")

    def __init__(self, zone: Zone = UTC_ZONE, year: int = 1970, now: float = 0):
        self.zone = zone
        self.year = year
        self.now = now      # JSON/XML events without EventTime get this time
        self._hours: dict = {}
        self._bodies: dict = {}

    def hour_base(self, date: str, hour: str):
        """(epoch of date hour:00:00, "dateThh") for a plain ISO date, cached."""
        key = date + hour
        got = self._hours.get(key)
        if got is None:
            y, mo, d, h = int(date[:4]), int(date[5:7]), int(date[8:10]), int(hour)
            base = self.zone.to_epoch(y, mo, d, h, 0, 0)
            # Only a plain hour (no DST jump inside, fields unchanged) is cacheable; a day
            # past its month's end (02-30) comes back as another date and is not.
            ok = (1 <= mo <= 12 and 1 <= d <= 31 and h <= 23
                  and self.zone.to_epoch(y, mo, d, h, 59, 59) == base + 3599
                  and tuple(self.zone.from_epoch(base)[:4]) == (y, mo, d, h))
            got = (base, f"{date}T{hour}") if ok else False
            if len(self._hours) > 4096:
                self._hours.clear()
            self._hours[key] = got
        return got

    def body(self, number: int, first: str, body: str, lazy: bool = False):
        """Body attributes, cached by text (logs repeat hosts, slots and phrases).

        ``lazy``: ``attrs`` may be a ``Deferred`` (see ``parse_body_lazily``)."""
        key = (number, first, body)
        got = self._bodies.get(key)
        if got is None and "\r" not in body:
            got = parse_body_fast(number, first, body)
        if got is None:
            lines = body.split("\n") if body else []
            if lines and lines[-1] == "":
                lines.pop()
            if "\r" in body:
                lines = [line[:-1] if line.endswith("\r") else line for line in lines]
            got = parse_body_lazily(number, first, lines)
            if len(self._bodies) > 2048:
                self._bodies.clear()
            self._bodies[key] = got
        if not lazy and type(got[0]) is Deferred:
            return got[0].value(), got[1]
        return got


def _parse_time(rest: str, state: TextReaderState):
    m = _FAST_TIME.match(rest)
    if m:
        base = state.hour_base(m.group(1), m.group(2))
        if base:
            mi, s = int(m.group(3)), int(m.group(4))
            return (base[0] + mi * 60 + s, 0, f"{base[1]}:{m.group(3)}:{m.group(4)}",
                    m.end() - 1)
    return parse_header_time(rest, state.zone, state.year)


def _parse_header(s: str, pos: int, nl: int, state: TextReaderState):
    """(Header, first-line text) for the header line ``s[pos:nl]``."""
    m = _FAST_HEADER.match(s, pos, nl)
    if m is not None:
        num, cl, pr, sp, date, hour, mi, se = m.groups()
        base = state.hour_base(date, hour)
        if base and len(cl) < 10 and len(pr) < 10 and len(sp) < 10:
            first = s[m.end():nl]
            if first and first[-1] == "\r":
                first = first[:-1]
            return Header(int(num), int(cl), int(pr), int(sp),
                          base[0] + int(mi) * 60 + int(se), 0,
                          base[1] + ":" + mi + ":" + se), first
    line = s[pos:nl]
    if line.endswith("\r"):
        line = line[:-1]
    m = _HEADER.match(line)
    if not m:
        raise BadBody("bad event header (ids)")
    if any(abs(int(m.group(k))) > MAX_JOB_ID for k in (2, 3, 4)):
        raise BadBody(f"bad event header (a job id beyond {MAX_JOB_ID})")
    rest = line[m.end():]
    when = _parse_time(rest, state)
    if when is None:
        raise BadBody("bad event header (time)")
    epoch, micros, event_time, end = when
    if end >= len(rest) or rest[end] != " ":
        raise BadBody("bad event header (no text after the time)")
    return Header(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                  epoch, micros, event_time), rest[end + 1:]


def parse_record(text: str, state: TextReaderState):
    """(Header, attrs, hidden) for one record's text (header + body lines).

    Raises ``BadBody`` when HTCondor could not read it either.
    """
    nl = text.find("\n")
    if nl < 0:
        nl = len(text)
    header, first = _parse_header(text, 0, nl, state)
    attrs, hidden = state.body(header.number, first, text[nl + 1:])
    return header, attrs, hidden


class ByteOffsets:
    """Byte offsets for indices of a decoded buffer (identity when ASCII)."""

    __slots__ = ("s", "base", "ascii", "_i", "_b")

    def __init__(self, s: str, base: int, ascii: bool):
        self.s, self.base, self.ascii = s, base, ascii
        self._i, self._b = 0, base

    def __call__(self, i: int) -> int:
        if self.ascii:
            return self.base + i
        if i < self._i:
            self._i, self._b = 0, self.base
        self._b += len(self.s[self._i:i].encode("utf-8", "surrogateescape"))
        self._i = i
        return self._b


def _fast_event(s: str, i: int, state: TextReaderState, base: int):
    """A plain record at ``s[i]`` (ISO header, ``...`` terminator, no inner
    header, readable body) as a ``Parsed``; ``None`` sends it the long way."""
    m = _FAST_HEADER.match(s, i)
    if m is None:
        return None
    start = m.end()
    k = s.find("\n...", start)
    if k < 0 or s[k + 4:k + 5] != "\n" or (_INNER_HEADER.search(s, i + 4, k) is not None
                                           and _inner_header(s, i + 4, k) >= 0):
        return None
    num, cl, pr, sp, date, hour, mi, se = m.groups()
    hb = state._hours.get(date + hour) or state.hour_base(date, hour)     # its cache, inlined
    if not hb or len(cl) > 9 or len(pr) > 9 or len(sp) > 9:
        return None                    # long ids are checked the long way
    nl = s.find("\n", start)
    first = s[start:nl]
    if first and first[-1] == "\r":
        return None
    number = int(num)
    body = s[nl + 1:k + 1]
    got = state._bodies.get((number, first, body))                       # its cache, inlined
    if got is None:
        try:
            got = state.body(number, first, body, True)
        except BadBody:
            return None
    attrs, hidden = got
    # tuple.__new__ directly: the named tuples' own __new__ is a Python function
    header = _new_tuple(Header, (number, int(cl), int(pr), int(sp), hb[0] + int(mi) * 60 + int(se), 0,
                                 hb[1] + ":" + mi + ":" + se))
    return _new_tuple(Parsed, (header, attrs, hidden, s[i:k + 5], base + i, base + k + 5))


def scan_text(buf: bytes, pos: int, state: TextReaderState, limit: int | None = None):
    """Frame and parse records in ``buf[pos:]`` (see the module docstring).

    Stops after ``limit`` events if given.  Returns (items, next byte offset).
    """
    chunk = buf[pos:] if pos else buf
    ascii = chunk.isascii()
    s = chunk.decode("ascii") if ascii else chunk.decode("utf-8", "surrogateescape")
    off = ByteOffsets(s, pos, ascii)
    items: list = []
    append = items.append
    n = len(s)
    i = 0
    events = 0
    body_of = state.body
    fast = ascii and limit is None
    while i < n:
        if fast:                       # the common case, in one pass: see _fast_event
            got = _fast_event(s, i, state, pos)
            if got is not None:
                append(got)
                i = got.end - pos
                continue
        if limit is not None and events >= limit:
            break
        nl = s.find("\n", i)
        if nl < 0:
            inner = _inner_header(s, i + 1, n)
            if inner >= 0:      # a fragment, then a new writer's (incomplete) event
                append(Garbled("incomplete event followed by a new one", s[i:inner],
                               off(i), off(inner)))
                i = inner
                continue
            break
        if not _HEADER_START.match(s, i):
            inner = _inner_header(s, i + 1, nl)
            stop = inner if inner >= 0 else nl + 1
            if items and isinstance(items[-1], Skipped) and items[-1].end == off(i):
                prev = items.pop()
                append(Skipped(prev.text + s[i:stop], prev.offset, off(stop)))
            else:
                append(Skipped(s[i:stop], off(i), off(stop)))
            i = stop
            continue
        term = _find_terminator(s, nl)
        inner = _inner_header(s, i + 4, term[0] if term else n)
        if inner >= 0:
            append(Garbled("incomplete event followed by a new one", s[i:inner],
                           off(i), off(inner)))
            i = inner
            continue
        if term is None:
            break                      # incomplete: wait for the rest
        t0, end = term
        try:
            if not ascii and _UNDECODED.search(s, i, end):
                raise BadBody("not UTF-8 text (a byte that is not)")
            header, first = _parse_header(s, i, nl, state)
            attrs, hidden = body_of(header.number, first, s[nl + 1:t0 + 1], True)
        except BadBody as exc:
            append(Garbled(str(exc), s[i:end], off(i), off(end)))
        else:
            append(Parsed(header, attrs, hidden, s[i:end], off(i), off(end)))
            events += 1
        i = end
    return items, off(i)
