"""Absolute and relative time values: literal parsing and string forms.

The local time zone comes from the process environment (``TZ``), as in the
reference; reading it is not a clock read.  "Now" never comes from here:
the evaluation environment (``env.py``) supplies it.
"""

from __future__ import annotations

import calendar
import math
import re
import time

from .values import AbsTime, c_int32

_TZ_SUFFIX = re.compile(r"([+-])(\d\d):?(\d\d)$")
_REL_ITEM = re.compile(r"\s*(\d+(?:\.\d+)?)?\s*([dDhHmMsS+:])?")


def local_offset(secs: int) -> int:
    """Seconds east of UTC of the local zone at ``secs``."""
    try:
        return time.localtime(secs).tm_gmtoff
    except (OverflowError, OSError, ValueError):
        return 0


def parse_abstime_literal(text: str) -> AbsTime | None:
    """``absTime("...")`` literal text -> AbsTime, or None when invalid."""
    s = text.strip()
    offset = None
    if s[-1:] in ("Z", "z"):
        offset, s = 0, s[:-1]
    else:
        m = _TZ_SUFFIX.search(s)
        if m is not None and (m.start() == 0 or not s[m.start() - 1].isdigit() or True):
            sign = -1 if m.group(1) == "-" else 1
            cand = sign * (int(m.group(2)) * 3600 + int(m.group(3)) * 60)
            head = s[:m.start()]
            if len(re.sub(r"\D", "", head)) >= 4:
                offset, s = cand, head
    digits = re.sub(r"\D", "", s)
    if len(digits) < 4 or len(digits) > 14 or len(digits) % 2:
        return None
    fields = [int(digits[0:4])] + [int(digits[i:i + 2]) for i in range(4, len(digits), 2)]
    fields += [None] * (6 - len(fields))
    year, month, day, hour, minute, sec = fields
    mon0 = (month - 1) if month is not None else 0
    year += mon0 // 12
    mon0 %= 12
    day = day if day is not None else 0
    tup = (year, mon0 + 1, 1, hour or 0, minute or 0, sec or 0)
    try:
        base = calendar.timegm(tup) + (day - 1) * 86400
    except (OverflowError, ValueError):
        return None
    if offset is None:
        offset = local_offset(base)
    return AbsTime(base - offset, offset)


def parse_reltime_literal(text: str) -> float | None:
    """``relTime("...")`` literal text -> seconds, or None when invalid.

    Forms: ``[-][D+|Dd][H:|Hh][M:|Mm]S[s]``; colon fields are read from the
    right (``"1:00"`` is one minute, ``"1:"`` too); a missing number is 0
    (``""``, ``"s"``)."""
    s = text.strip()
    neg = False
    if s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    items = []
    pos = 0
    while pos < len(s):
        m = _REL_ITEM.match(s, pos)
        if m is None or m.end() == pos:
            return None
        items.append((m.group(1), m.group(2)))
        pos = m.end()
    total = 0.0
    units = {"d": 86400, "+": 86400, "h": 3600, "m": 60, "s": 1}
    colon: list = []
    open_field = False          # a ':' was seen: another (maybe empty) field follows
    for num, sep in items:
        if sep is None or sep == ":":
            colon.append(num)
            open_field = sep == ":"
            continue
        if colon:
            return None
        total += float(num or 0) * units[sep.lower()]
    if open_field:
        colon.append(None)
    if len(colon) > 3:
        return None
    for num, mult in zip(reversed(colon), (1, 60, 3600)):
        if num is not None:
            total += float(num) * mult
    return -total if neg else total


def format_abstime(t: AbsTime) -> str:
    """``YYYY-MM-DDTHH:MM:SS±HH:MM`` in the value's own offset."""
    try:
        tm = time.gmtime(t.secs + t.offset)
    except (OverflowError, OSError, ValueError):
        return "invalid"
    off = t.offset
    sign = "+" if off > 0 else "-"
    off = abs(off)
    return "%04d-%02d-%02dT%02d:%02d:%02d%s%02d:%02d" % (
        tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
        sign, off // 3600, (off // 60) % 60)


def format_reltime(secs: float, exact: bool = False) -> str:
    """``[-][D+]HH:MM:SS`` shortest form.

    A value (``exact=False``) prints as the reference prints it: from its
    seconds as a C 32-bit int (INT_MIN when out of range, which then shows as
    ``--24855+-3:-14:-8``); a parsed literal keeps its fraction (``%02g``)."""
    if exact:
        neg = secs < 0
        a = -secs if neg else secs
        whole = int(a)
        days, rest = divmod(whole, 86400)
        hours, rest = divmod(rest, 3600)
        mins, s = divmod(rest, 60)
        return _rel_fields("-" if neg else "", days, hours, mins, "%02g" % (s + (a - whole)))
    i = c_int32(secs)
    sign = ""
    if i < 0:
        sign = "-"
        i = -i
        if i > 2147483647:              # -INT_MIN overflows back to INT_MIN
            i = -2147483648
    days = c_div(i, 86400)
    i -= days * 86400
    hours = c_div(i, 3600)
    i -= hours * 3600
    mins = c_div(i, 60)
    return _rel_fields(sign, days, hours, mins, "%02d" % (i - mins * 60))


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // b
    return -q if a < 0 else q


def _rel_fields(sign: str, days: int, hours: int, mins: int, secs_text: str) -> str:
    out = sign
    if days:
        out += "%d+" % days
    if days or hours:
        out += "%02d:" % hours
    if days or hours or mins:
        out += "%02d:" % mins
    return out + secs_text


def time_fields(secs: int, offset: int | None):
    """``time.struct_time`` of epoch ``secs`` at ``offset`` (None: local zone)."""
    try:
        if offset is None:
            return time.localtime(secs)
        return time.gmtime(secs + offset)
    except (OverflowError, OSError, ValueError):
        return None
