"""Header timestamps: HTCondor's lenient ISO-8601 / legacy ``MM/DD`` reader.

``parse_header_time(text, zone, year)`` reads the timestamp at the start of
``text`` (what follows ``) `` on a header line) and returns
``(epoch_seconds, microseconds, event_time, end)`` where ``event_time`` is
HTCondor's ``EventTime`` (the reader's local rendering, ``.mmm`` when there is
a fraction) and ``end`` the index just after the timestamp.  Returns
``None`` when the text is not a timestamp HTCondor accepts.

Pure: the time zone is a ``Zone`` (``UTC_ZONE`` here; tracking supplies the
process's local zone) and legacy dates take ``year`` from the caller.
"""

from __future__ import annotations

import calendar
import time
from typing import Protocol

__all__ = ["Zone", "UtcZone", "UTC_ZONE", "parse_header_time", "iso_fields", "event_time_text"]


class Zone(Protocol):
    """Turns broken-down local times into epoch seconds and back."""

    def to_epoch(self, y: int, mo: int, d: int, h: int, mi: int, s: int) -> int: ...

    def from_epoch(self, epoch: int) -> tuple: ...


class UtcZone:
    """UTC; out-of-range fields are normalised like C's ``mktime``."""

    def to_epoch(self, y, mo, d, h, mi, s):
        return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))

    def from_epoch(self, epoch):
        return time.gmtime(epoch)[:6]

    def __repr__(self) -> str:
        return "UTC_ZONE"


UTC_ZONE = UtcZone()


def _atoi(s: str) -> int:
    """C ``atoi``: optional blanks and sign, leading digits, else 0."""
    s = s.lstrip(" \t\n\r\v\f")
    i = 0
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        i = 1
    j = i
    while j < len(s) and "0" <= s[j] <= "9":
        j += 1
    return sign * int(s[i:j]) if j > i else 0


def iso_fields(text: str):
    """HTCondor's ISO-8601 reader: (y, mo, d, h, mi, s, micros, is_utc).

    Takes 4 characters for the year and 2 for each other field, skipping
    runs of ``-``, ``:`` and ``T`` before each group; then an optional
    fraction (1..6 digits scaled to microseconds, 7+ digits dropped) and an
    optional ``Z``.  Anything after that is ignored.
    """
    n = len(text)
    i = 0
    vals = []
    for width in (4, 2, 2, 2, 2, 2):
        while i < n and text[i] in "-:T":
            i += 1
        vals.append(_atoi(text[i:i + width]))
        i += width
    micros = 0
    if i < n and text[i] == ".":
        j = i + 1
        while j < n and "0" <= text[j] <= "9":
            j += 1
        digits = text[i + 1:j]
        if 1 <= len(digits) <= 6:
            micros = int(digits.ljust(6, "0"))
        i = j
    is_utc = i < n and text[i] in "Zz"
    return vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], micros, is_utc


def event_time_text(epoch: int, micros: int, zone: Zone) -> str:
    """``EventTime`` as the reader exposes it: local ISO, ``.mmm`` if any fraction."""
    y, mo, d, h, mi, s = zone.from_epoch(epoch)
    text = "%04d-%02d-%02dT%02d:%02d:%02d" % (y, mo, d, h, mi, s)
    if micros:
        text += ".%03d" % (micros // 1000)
    return text


def parse_header_time(text: str, zone: Zone = UTC_ZONE, year: int = 1970):
    """Read the timestamp at the start of ``text`` (see the module docstring)."""
    # The timestamp's text ends at a blank (where the event's text starts), but
    # HTCondor's ISO reader reads its fixed-width fields from the raw line, so
    # a blank inside the time ("10: 11:12") is read through, as it does.
    e = text.find(" ")
    if len(text) > 2 and text[2] == "/" and text[:2].isdigit():
        if e != 5:
            return None
        e2 = text.find(" ", 6)
        if e2 < 0:
            return None
        _, _, _, h, mi, s, micros, is_utc = iso_fields("0000-00-00T" + text[6:])
        mo, d = _atoi(text[0:2]), _atoi(text[3:5])
        if mo < 1:
            return None
        y, end = year, e2
    elif e == 10:
        end = text.find(" ", 11)
        if end < 0:
            return None
        y, mo, d, h, mi, s, micros, is_utc = iso_fields(text[:10] + "T" + text[11:])
    else:
        if e < 0:
            return None
        end = e
        y, mo, d, h, mi, s, micros, is_utc = iso_fields(text)
    if not (1 <= mo <= 12 and 0 <= d <= 32 and 0 <= h <= 24):
        return None
    if y < 1900:                 # HTCondor: no such year in a struct tm -> this year
        y = year
    if is_utc:
        epoch = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    else:
        epoch = zone.to_epoch(y, mo, d, h, mi, s)
    return epoch, micros, event_time_text(epoch, micros, zone), end
