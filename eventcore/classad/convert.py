"""Conversions: ``int real string bool absTime relTime`` and the helpers the
other builtins share (``to_str`` = "str-conv", ``to_real`` = "as by real()")."""

from __future__ import annotations

import math
import re

from .timeutil import format_abstime, format_reltime, local_offset
from .values import ERROR, INT64_MIN, UNDEF, AbsTime, RelTime, c_int32, trunc32

_STRTOD = re.compile(
    r"[ \t\n\v\f\r]*([+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN]))")
_EXP_TAIL = re.compile(r"[eE][+-]?$")


def strtod(s: str):
    """The number C ``strtod`` reads at the start of ``s``, or None."""
    m = _STRTOD.match(s)
    if m is None:
        return None
    text = m.group(1)
    body = text.lstrip("+-")
    if body[:2].lower() == "0x":
        try:
            v = float.fromhex(body if "p" in body.lower() else body + "p0")
        except (ValueError, OverflowError):
            try:
                v = float(int(body, 16))
            except ValueError:
                v = 0.0
        return -v if text.startswith("-") else v
    try:
        return float(text)
    except ValueError:
        return None


def to_str(v):
    """str-conv: the text ``string()`` gives, or None for undefined/error."""
    t = type(v)
    if t is str:
        return v
    if t is int:
        return str(v)
    if t is bool:
        return "true" if v else "false"
    if t is float:
        from .unparse import format_real
        return format_real(v)
    if v is UNDEF or v is ERROR:
        return None
    if t is AbsTime:
        return format_abstime(v)
    if t is RelTime:
        return format_reltime(v.secs)
    from .unparse import unparse_value
    return unparse_value(v)


def to_real(v):
    """The float ``real(v)`` gives, or None when that is not a real."""
    t = type(v)
    if t is float:
        return v
    if t is int or t is bool:
        return float(v)
    if t is str:
        return strtod(v)
    if t is AbsTime:
        return float(v.secs)
    if t is RelTime:
        return float(c_int32(v.secs))
    return None


def _trunc_int(x: float) -> int:
    if x != x or math.isinf(x) or not -9.223372036854775808e18 <= x < 9.223372036854775808e18:
        return INT64_MIN
    return int(x)


def _int(args, ad, st):
    v = args[0]
    t = type(v)
    if t is int:
        return v
    if t is bool:
        return int(v)
    if t is float:
        return _trunc_int(v)
    if t is str:
        r = strtod(v)
        return ERROR if r is None else _trunc_int(r)
    if t is AbsTime:
        return v.secs
    if t is RelTime:
        return c_int32(v.secs)
    if v is UNDEF:
        return UNDEF
    return ERROR


def _real(args, ad, st):
    v = args[0]
    if v is UNDEF:
        return UNDEF
    r = to_real(v)
    return ERROR if r is None else r


def _string(args, ad, st):
    v = args[0]
    if v is UNDEF or v is ERROR:
        return v
    return to_str(v)


def _bool(args, ad, st):
    v = args[0]
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float:
        return v != 0
    if t is str:
        low = v.lower()
        if low == "true":
            return True
        if low == "false":
            return False
        return UNDEF
    if t is RelTime:
        return v.secs != 0
    if v is UNDEF:
        return UNDEF
    return ERROR


def int32_of(v):
    """absTime()'s 32-bit seconds of an int, real or reltime (None otherwise)."""
    t = type(v)
    if t is int:
        return trunc32(v)
    if t is float:
        return c_int32(v)
    if t is RelTime:
        return c_int32(v.secs)
    return None


def _abs_time(args, ad, st):
    """absTime(): the reference reads seconds and offset as 32-bit ints."""
    if not args:
        now = int(st.env.now())
        return AbsTime(now, local_offset(now))
    v = args[0]
    t = type(v)
    if t is str:
        return v
    if v is UNDEF:
        return UNDEF
    if t is AbsTime:
        if len(args) == 1:
            return v
        secs = v.secs
    else:
        secs = int32_of(v)
        if secs is None:
            return ERROR
    if len(args) == 1:
        return AbsTime(secs, local_offset(secs))
    off = int32_of(args[1])
    if off is None:
        return ERROR
    return AbsTime(secs, off)


def _rel_time(args, ad, st):
    v = args[0]
    t = type(v)
    if t is int:
        return RelTime(float(trunc32(v)))      # the reference reads an int here
    if t is float:
        return RelTime(v)
    if t is AbsTime:
        return RelTime(float(v.secs))
    if t is RelTime:
        return v
    if t is str:
        return RelTime(0.0)
    if v is UNDEF:
        return UNDEF
    return ERROR


CONVERT_FUNCTIONS = {
    "int": (_int, 1, 1), "real": (_real, 1, 1), "string": (_string, 1, 1), "bool": (_bool, 1, 1),
    "abstime": (_abs_time, 0, 2), "reltime": (_rel_time, 1, 1),
}

__all__ = ["CONVERT_FUNCTIONS", "to_str", "to_real", "strtod"]
