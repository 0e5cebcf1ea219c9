"""Converting between ClassAd values and the Python values classad2 uses.

ClassAd -> Python: undefined/error -> ``Value.Undefined``/``Value.Error``,
absolute time -> aware ``datetime``, relative time -> ``float`` seconds,
list -> ``list`` (literal elements converted, other elements left as
``ExprTree``), ad -> ``ClassAd`` (a detached copy).

Python -> ClassAd: ``None`` -> undefined, ``dict`` -> nested ad, ``list``/
``tuple`` -> list, ``datetime`` -> absolute time, ``ExprTree`` -> its tree.
"""

from __future__ import annotations

import datetime
import enum

from . import nodes as N
from .values import ERROR, UNDEF, AbsTime, Error, ListValue, RelTime, Undefined


class Value(enum.IntEnum):
    """classad2.Value: ``Value.Undefined == 2``, ``Value.Error == 1``."""

    Error = 1 << 0
    Undefined = 1 << 1


def _abstime_to_datetime(t: AbsTime):
    try:
        return datetime.datetime.fromtimestamp(t.secs, datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return t


def to_python(v, expr_type, ad_type):
    t = type(v)
    if t is bool or t is int or t is float or t is str:
        return v
    if v is UNDEF:
        return Value.Undefined
    if v is ERROR:
        return Value.Error
    if isinstance(v, ad_type):
        return ad_type._view(dict(v._names), {k: e._share() for k, e in v._exprs.items()}, None)
    if t is ListValue:
        return [_element(item, v.scope, expr_type, ad_type) for item in v.items]
    if t is AbsTime:
        return _abstime_to_datetime(v)
    if t is RelTime:
        return float(v.secs)
    return v


def _element(item, scope, expr_type, ad_type):
    node = item.node
    nt = type(node)
    if nt is N.Literal or nt is N.RelTimeLit or nt is N.ListExpr or nt is N.AdExpr:
        from .evaluate import State
        return to_python(item.fn(scope, State(None, scope)), expr_type, ad_type)
    return item


def to_node(value, expr_type, ad_type) -> N.Node:
    if isinstance(value, expr_type):
        return value.node
    if value is None or value is UNDEF or isinstance(value, Undefined):
        return N.Literal(UNDEF)
    if value is ERROR or isinstance(value, Error):
        return N.Literal(ERROR)
    if isinstance(value, Value):
        return N.Literal(UNDEF if value == Value.Undefined else ERROR)
    if isinstance(value, bool):
        return N.Literal(bool(value))
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise OverflowError("ClassAd integers are 64-bit")
        return N.Literal(int(value))
    if isinstance(value, float):
        return N.Literal(float(value))
    if isinstance(value, str):
        return N.Literal(str(value))
    if isinstance(value, (bytes, bytearray)):
        return N.Literal(bytes(value).decode("utf-8", "surrogateescape"))
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            value = value.astimezone()
        offset = int(value.utcoffset().total_seconds())
        return N.Literal(AbsTime(int(value.timestamp() // 1), offset))
    if isinstance(value, ad_type):
        return N.AdExpr(tuple((value._names[k], e.node) for k, e in value._exprs.items()))
    if isinstance(value, dict):
        items = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError("ClassAd keys are strings")
            items[k.lower()] = (k if k.lower() not in items else items[k.lower()][0],
                                to_node(v, expr_type, ad_type))
        return N.AdExpr(tuple(items.values()))
    if isinstance(value, (list, tuple)):
        return N.ListExpr(tuple(to_node(v, expr_type, ad_type) for v in value))
    if isinstance(value, (AbsTime, RelTime)):
        return N.Literal(value)
    raise TypeError(f"cannot convert {type(value).__name__} to a ClassAd value")
