"""Operators on values: strictness, promotion, comparisons, time arithmetic.

Each binary operator is a function ``(a, b) -> value`` on already evaluated
operands (the compiler adds short-circuiting and fast paths around them).
"""

from __future__ import annotations

import math

from .values import ERROR, INT64_MAX, INT64_MIN, UNDEF, AbsTime, ListValue, RelTime, c_int32, wrap64
from .lasterror import LAST_ERROR, STRING_COMPARISON

_NUMERIC = (int, float, bool)
_INF = math.inf
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(s: str) -> str:
    """Fold only ASCII letters (the reference's case folding)."""
    return s.lower() if s.isascii() else s.translate(_LOWER)


def ascii_upper(s: str) -> str:
    if s.isascii():
        return s.upper()
    return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in s)


def is_ad(v) -> bool:
    return hasattr(v, "_exprs")


def truth(v):
    """Boolean-equivalent: True/False, or UNDEF/ERROR; other types -> ERROR."""
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float:
        return v != 0
    if v is UNDEF:
        return UNDEF
    return ERROR


# -- arithmetic -----------------------------------------------------------

def _int_div(a: int, b: int):
    if b == 0:
        return ERROR
    if a == INT64_MIN and b == -1:
        return INT64_MAX
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_mod(a: int, b: int):
    if b == 0:
        return ERROR
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _real_div(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or a != a:
            return math.nan
        neg = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
        return -_INF if neg else _INF
    return a / b


def arith(op: str, a, b):
    """``+ - * / %`` with strictness, promotion, wrapping and time rules."""
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEF or b is UNDEF:
        return UNDEF
    ta, tb = type(a), type(b)
    if ta is AbsTime or tb is AbsTime or ta is RelTime or tb is RelTime:
        return time_arith(op, a, b)
    if ta not in _NUMERIC or tb not in _NUMERIC:
        return ERROR
    if ta is bool:
        a = int(a)
        ta = int
    if tb is bool:
        b = int(b)
        tb = int
    if ta is int and tb is int:
        if op == "+":
            return wrap64(a + b)
        if op == "-":
            return wrap64(a - b)
        if op == "*":
            return wrap64(a * b)
        if op == "/":
            return _int_div(a, b)
        return _int_mod(a, b)
    if op == "%":
        return ERROR
    a = float(a)
    b = float(b)
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    else:
        r = _real_div(a, b)
    if r == _INF:
        return ERROR
    return r


def time_arith(op: str, a, b):
    ta, tb = type(a), type(b)
    if op == "+":
        if ta is AbsTime and tb is RelTime:
            return AbsTime(a.secs + c_int32(b.secs), a.offset)
        if ta is RelTime and tb is AbsTime:
            return AbsTime(b.secs + c_int32(a.secs), b.offset)
        if ta is RelTime and tb is RelTime:
            return RelTime(a.secs + b.secs)
        return ERROR
    if op == "-":
        if ta is AbsTime and tb is RelTime:
            return AbsTime(a.secs - c_int32(b.secs), a.offset)
        if ta is AbsTime and tb is AbsTime:
            return RelTime(float(a.secs - b.secs))
        if ta is RelTime and tb is RelTime:
            return RelTime(a.secs - b.secs)
        return ERROR
    if op == "*":
        if ta is RelTime and (tb is int or tb is float):
            return RelTime(a.secs * b)
        if tb is RelTime and (ta is int or ta is float):
            return RelTime(a * b.secs)
        return ERROR
    if op == "/":
        if ta is RelTime and (tb is int or tb is float):
            return RelTime(_real_div(float(a.secs), float(b)))
        return ERROR
    return ERROR


def negate(v):
    t = type(v)
    if t is int:
        return wrap64(-v)
    if t is float:
        return -v
    if t is RelTime:
        return RelTime(-v.secs)
    if v is UNDEF or v is ERROR:
        return v
    return ERROR


def plus(v):
    t = type(v)
    if t is int or t is float or t is RelTime or v is UNDEF or v is ERROR:
        return v
    return ERROR


def logical_not(v):
    t = truth(v)
    if t is True:
        return False
    if t is False:
        return True
    return t


def bit_not(v):
    if type(v) is int:
        return ~v
    if v is UNDEF or v is ERROR:
        return v
    return ERROR


# -- comparison -------------------------------------------------------------

def _ordered(op: str, a, b) -> bool:
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def compare(op: str, a, b):
    """``== != < <= > >=`` (strict; case-insensitive strings)."""
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEF or b is UNDEF:
        return UNDEF
    ta, tb = type(a), type(b)
    if ta is ListValue or tb is ListValue or is_ad(a) or is_ad(b):
        return ERROR
    if ta is str or tb is str:
        if ta is not str or tb is not str:
            LAST_ERROR[0] = STRING_COMPARISON
            return ERROR
        return _ordered(op, ascii_lower(a), ascii_lower(b))
    if ta is AbsTime or tb is AbsTime:
        if ta is not tb:
            return ERROR
        return _ordered(op, a.secs, b.secs)
    if ta is RelTime or tb is RelTime:
        if ta is not tb:
            return ERROR
        return _ordered(op, a.secs, b.secs)
    if ta is float or tb is float:
        return _ordered(op, float(a), float(b))
    return _ordered(op, int(a), int(b))


def identical(a, b):
    """``=?=``: same type and same value; two lists or two ads -> ERROR."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        return False
    if a is UNDEF or a is ERROR:
        return True
    if ta is ListValue or is_ad(a):
        return ERROR
    if ta is str:
        return a == b
    if ta is AbsTime:
        return a.secs == b.secs and a.offset == b.offset
    if ta is RelTime:
        return a.secs == b.secs
    return a == b


def not_identical(a, b):
    r = identical(a, b)
    if r is ERROR:
        return ERROR
    return not r


# -- bitwise ----------------------------------------------------------------

def bitwise(op: str, a, b):
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEF or b is UNDEF:
        return UNDEF
    if type(a) is not int or type(b) is not int:
        return ERROR
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op == "<<":
        return wrap64(a << (b % 64))
    if op == ">>":
        if a >= 0:
            return a >> (b % 64)
        return a >> min(b, 64) if b > 0 else a
    # >>>
    if a >= 0:
        return a >> (b % 64)
    return ((a & 0xFFFFFFFFFFFFFFFF) >> 1) >> ((b - 1) % 64)


def make_binary(op: str):
    """The value function ``(a, b) -> value`` of a strict/identity operator."""
    if op in ("+", "-", "*", "/", "%"):
        return lambda a, b: arith(op, a, b)
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return lambda a, b: compare(op, a, b)
    if op == "=?=":
        return identical
    if op == "=!=":
        return not_identical
    return lambda a, b: bitwise(op, a, b)
