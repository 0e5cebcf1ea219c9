"""Time builtins (spec 8.9): time, currentTime, timeZoneOffset, dayTime,
get*, splitTime, formatTime, interval.  "Now" comes from ``st.env``."""

from __future__ import annotations

import math
import time

from .convert import _int, int32_of
from .timeutil import c_div, local_offset, time_fields
from .values import ERROR, UNDEF, AbsTime, RelTime, c_int32


def _seconds(v) -> int:
    """Epoch seconds of an int (as is) or a real (a C 32-bit int, as the reference)."""
    return v if type(v) is int else int32_of(v)


def _time(args, ad, st):
    return int(st.env.now())


def _current_time(args, ad, st):
    now = int(st.env.now())
    return AbsTime(now, local_offset(now))


def _tz_offset(args, ad, st):
    return RelTime(float(local_offset(int(st.env.now()))))


def _day_time(args, ad, st):
    now = int(st.env.now())
    tm = time.localtime(now)
    return RelTime(float(tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec))


def _abs_field(getter):
    def fn(args, ad, st):
        v = args[0]
        if type(v) is not AbsTime:
            return ERROR
        tm = time_fields(v.secs, None)
        return ERROR if tm is None else getter(tm)
    return fn


def _c_rem(a: int, b: int) -> int:
    r = abs(a) % b
    return -r if a < 0 else r


def _rel_or_abs(abs_getter, rel_getter):
    def fn(args, ad, st):
        v = args[0]
        if type(v) is AbsTime and abs_getter is not None:
            tm = time_fields(v.secs, None)
            return ERROR if tm is None else abs_getter(tm)
        if type(v) is RelTime:
            return rel_getter(c_int32(v.secs))
        return ERROR
    return fn


def _split_time(args, ad, st):
    from .ad import ClassAd
    v = args[0]
    t = type(v)
    if v is UNDEF:
        return UNDEF
    if t is int or t is float:
        secs = _seconds(v)
        v = AbsTime(secs, local_offset(secs))
        t = AbsTime
    if t is AbsTime:
        tm = time_fields(v.secs, v.offset)
        if tm is None:
            return ERROR
        return ClassAd({"Type": "AbsoluteTime", "Year": tm.tm_year, "Month": tm.tm_mon,
                        "Day": tm.tm_mday, "Hours": tm.tm_hour, "Minutes": tm.tm_min,
                        "Seconds": tm.tm_sec, "Offset": v.offset})
    if t is RelTime:
        secs = v.secs
        neg = secs < 0
        a = -secs if neg else secs
        i = c_int32(a)                 # the reference's int: INT_MIN when out of range
        days = c_div(i, 86400)
        i -= days * 86400
        hours = c_div(i, 3600)
        i -= hours * 3600
        mins = c_div(i, 60)
        frac = a - int(a) if math.isfinite(a) else math.nan
        sec = (i - mins * 60) + frac
        if neg:
            if days:
                days = -days
            elif hours:
                hours = -hours
            elif mins:
                mins = -mins
            else:
                sec = -sec
        return ClassAd({"Type": "RelativeTime", "Days": days, "Hours": hours,
                        "Minutes": mins, "Seconds": float(sec)})
    return ERROR


def _format_time(args, ad, st):
    if not args:
        now = int(st.env.now())
        return time.strftime("%c", time.localtime(now))
    v = args[0]
    t = type(v)
    if t is int or t is float:
        tm = time_fields(_seconds(v), None)
    elif t is AbsTime:
        tm = time_fields(v.secs, v.offset)
    else:
        return ERROR
    if tm is None:
        return ERROR
    fmt = "%c"
    if len(args) == 2:
        if type(args[1]) is not str:
            return ERROR
        fmt = args[1]
    secs = _seconds(v) if t is not AbsTime else v.secs
    fmt = fmt.replace("%s", str(secs)) if "%s" in fmt and "%%s" not in fmt else fmt
    try:
        return time.strftime(fmt, tm)
    except (ValueError, OverflowError):
        return ERROR


def _interval(args, ad, st):
    v = args[0]
    if type(v) is RelTime:
        n = c_int32(v.secs)
    else:
        n = _int([v], ad, st)
        if type(n) is not int:
            return ERROR
    n &= 0xFFFFFFFF                     # the reference formats a 32-bit int
    if n > 0x7FFFFFFF:
        n -= 1 << 32
    neg = n < 0
    n = -n if neg else n
    days, rest = divmod(n, 86400)
    hours, rest = divmod(rest, 3600)
    mins, secs = divmod(rest, 60)
    sign = "-" if neg else ""
    if days:
        return "%s%d+%02d:%02d:%02d" % (sign, days, hours, mins, secs)
    if hours:
        return "%s%d:%02d:%02d" % (sign, hours, mins, secs)
    if mins:
        return "%s%d:%02d" % (sign, mins, secs)
    return "%s%d" % (sign, secs)


TIME_FUNCTIONS = {
    "time": (_time, 0, 0), "currenttime": (_current_time, 0, 0), "timezoneoffset": (_tz_offset, 0, 0),
    "daytime": (_day_time, 0, 0),
    "getyear": (_abs_field(lambda tm: tm.tm_year), 1, 1),
    "getmonth": (_abs_field(lambda tm: tm.tm_mon), 1, 1),
    "getdayofmonth": (_abs_field(lambda tm: tm.tm_mday), 1, 1),
    "getdayofweek": (_abs_field(lambda tm: (tm.tm_wday + 1) % 7), 1, 1),
    "getdayofyear": (_abs_field(lambda tm: tm.tm_yday - 1), 1, 1),
    "getdays": (_rel_or_abs(None, lambda s: int(s / 86400)), 1, 1),
    "gethours": (_rel_or_abs(lambda tm: tm.tm_hour, lambda s: _c_rem(int(s / 3600), 24)), 1, 1),
    "getminutes": (_rel_or_abs(lambda tm: tm.tm_min, lambda s: _c_rem(int(s / 60), 60)), 1, 1),
    "getseconds": (_rel_or_abs(lambda tm: tm.tm_sec, lambda s: _c_rem(s, 60)), 1, 1),
    "splittime": (_split_time, 1, 1), "formattime": (_format_time, 0, 2), "interval": (_interval, 1, 1),
}

__all__ = ["TIME_FUNCTIONS"]
