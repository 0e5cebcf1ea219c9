"""Run-time values of the ClassAd language.

Python types carry the simple values, so evaluation stays cheap:

=============  ==============================================
ClassAd type   Python representation
=============  ==============================================
undefined      ``UNDEF`` (the only ``Undefined`` instance)
error          ``ERROR`` (the only ``Error`` instance)
boolean        ``bool``
integer        ``int`` (kept in signed 64-bit range)
real           ``float``
string         ``str`` (bytes decoded as UTF-8 with surrogateescape)
list           ``ListValue`` (unevaluated elements + their scope)
classad        ``eventcore.classad.ad.ClassAd``
absolute time  ``AbsTime``
relative time  ``RelTime``
=============  ==============================================

``bool`` is a subclass of ``int`` in Python, so code dispatches on
``type(v) is ...`` and never on ``isinstance``.
"""

from __future__ import annotations

from jobledger.eventcore.errors import ClassAdEvalError

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_MASK = (1 << 64) - 1


class Undefined:
    """The ClassAd ``undefined`` value (a singleton)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"

    def __reduce__(self):
        return (_undefined, ())


class Error:
    """The ClassAd ``error`` value (a singleton)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "error"

    def __reduce__(self):
        return (_error, ())


UNDEF = Undefined()
ERROR = Error()


def _undefined():
    return UNDEF


def _error():
    return ERROR


# Evaluation failed outright (not the ERROR value); classad2 raises ClassAdException here.
EvalFailure = ClassAdEvalError


def to_bytes(s: str) -> bytes:
    """The bytes of a ClassAd string (undecodable bytes were kept as surrogates)."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")


def wrap64(n: int) -> int:
    """``n`` reduced to signed 64-bit two's complement."""
    n &= _MASK
    return n - (1 << 64) if n > INT64_MAX else n


def c_int32(x: float) -> int:
    """C ``(int)`` of a double on x86-64: truncation, INT_MIN when out of range or NaN.
    The reference reads relative-time seconds this way wherever it needs an integer."""
    if x != x or not -2147483648.0 <= x < 2147483648.0:
        return -2147483648
    return int(x)


def trunc32(n: int) -> int:
    """``n`` truncated to a signed 32-bit integer (C cast)."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n > 0x7FFFFFFF else n


class AbsTime:
    """An absolute time: epoch seconds plus the zone offset (seconds east of UTC)."""

    __slots__ = ("secs", "offset")

    def __init__(self, secs: int, offset: int):
        self.secs = secs
        self.offset = offset

    def __eq__(self, other):
        return type(other) is AbsTime and other.secs == self.secs and other.offset == self.offset

    def __hash__(self):
        return hash((self.secs, self.offset))

    def __repr__(self) -> str:
        return f"AbsTime({self.secs}, {self.offset})"


class RelTime:
    """A relative time (a duration in seconds, a float)."""

    __slots__ = ("secs",)

    def __init__(self, secs: float):
        self.secs = secs

    def __eq__(self, other):
        return type(other) is RelTime and other.secs == self.secs

    def __hash__(self):
        return hash(self.secs)

    def __repr__(self) -> str:
        return f"RelTime({self.secs})"


class ListValue:
    """A list value: element expressions (``Expr``) and the ad they were written in.

    Elements are evaluated lazily, each in ``scope``.
    """

    __slots__ = ("items", "scope")

    def __init__(self, items: tuple, scope):
        self.items = items
        self.scope = scope

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"ListValue({self.items!r})"
