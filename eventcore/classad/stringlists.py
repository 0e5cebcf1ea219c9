"""HTCondor string-list builtins (spec 8.7): ``stringList*`` functions over
delimiter-separated strings."""

from __future__ import annotations

import re

from .convert import strtod
from .fnutil import registry
from .ops import ascii_lower
from .regex import RegexLimit, compile_regex
from .values import ERROR, UNDEF

STRINGLIST_FUNCTIONS: dict = {}
_FUNCS = STRINGLIST_FUNCTIONS
fn = registry(_FUNCS)


def string_list(s: str, delims: str):
    items = []
    cur = []
    for ch in s:
        if ch in delims:
            item = "".join(cur).strip(" \t\r\n")
            if item:
                items.append(item)
            cur = []
        else:
            cur.append(ch)
    item = "".join(cur).strip(" \t\r\n")
    if item:
        items.append(item)
    return items


@fn("stringList_regexpMember", 2, 4)
def _sl_regexp_member(args, ad, st):
    if any(type(a) is not str for a in args):
        return ERROR
    delims = args[2] if len(args) > 2 else ", "
    rx = compile_regex(args[0], args[3] if len(args) > 3 else "", True)
    if rx is None:
        return ERROR
    items = string_list(args[1], delims)
    if not items:
        return UNDEF
    try:
        return any(rx.search(i) for i in items)
    except RegexLimit:
        return ERROR


@fn("stringListSize", 1, 2)
def _sl_size(args, ad, st):
    if any(type(a) is not str for a in args):
        return ERROR
    return len(string_list(args[0], args[1] if len(args) > 1 else ", "))


_FLT_MIN = 1.1754943508222875e-38
_FLT_MAX = 3.4028234663852886e38
_SCANF = re.compile(r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|\s*[+-]?(?:inf|nan)", re.I)


def _sl_numeric(kind):
    def f(args, ad, st):
        if any(type(a) is not str for a in args):
            return ERROR
        items = string_list(args[0], args[1] if len(args) > 1 else ", ")
        is_real = False
        vals = []
        for it in items:
            v = strtod(it) if _SCANF.match(it) else None
            if v is None:
                return ERROR
            if any(c not in "+-0123456789" for c in it):
                is_real = True
            vals.append(v)
        if kind == "sum" or kind == "avg":
            if not vals:
                return 0.0
            r = sum(vals)
            if kind == "avg":
                r /= len(vals)
        elif not vals:
            return UNDEF
        elif kind == "min":
            r = _FLT_MAX
            for v in vals:
                r = min(r, v)
        else:
            r = _FLT_MIN
            for v in vals:
                r = max(r, v)
        return r if is_real else int(r)
    return f


for _k in ("sum", "avg", "min", "max"):
    _FUNCS["stringlist" + _k] = (_sl_numeric(_k), 1, 2)


def _sl_member_args(args, default):
    x, s = args[0], args[1]
    delims = args[2] if len(args) > 2 and args[2] is not UNDEF else default
    if type(delims) is not str:
        return ERROR
    for a in (x, s):
        if a is not UNDEF and type(a) is not str:
            return ERROR
    if x is UNDEF and s is UNDEF:
        return UNDEF
    return ("" if x is UNDEF else x), ("" if s is UNDEF else s), delims


_MEMBER_DELIMS = ", \t\r\n"


def _sl_member(fold):
    def f(args, ad, st):
        r = _sl_member_args(args, _MEMBER_DELIMS)
        if type(r) is not tuple:
            return r
        x, s, d = r
        items = string_list(s, d)
        if fold:
            x = ascii_lower(x)
            return any(ascii_lower(i) == x for i in items)
        return x in items
    return f


def _sl_subset(fold):
    def f(args, ad, st):
        r = _sl_member_args(args, _MEMBER_DELIMS)
        if type(r) is not tuple:
            return r
        a, b, d = r
        la, lb = string_list(a, d), string_list(b, d)
        if not la:
            return a == ""             # the reference: "" is a subset, "," or " " is not
        if fold:
            la = [ascii_lower(i) for i in la]
            lb = [ascii_lower(i) for i in lb]
        sb = set(lb)
        return all(i in sb for i in la)
    return f


_FUNCS["stringlistmember"] = (_sl_member(False), 2, 3)
_FUNCS["stringlistimember"] = (_sl_member(True), 2, 3)
_FUNCS["stringlistsubsetmatch"] = (_sl_subset(False), 2, 3)
_FUNCS["stringlistisubsetmatch"] = (_sl_subset(True), 2, 3)


@fn("stringListsIntersect", 2, 3)
def _sl_intersect(args, ad, st):
    if any(a is ERROR for a in args):
        return ERROR
    if any(a is UNDEF for a in args):
        return UNDEF
    if any(type(a) is not str for a in args):
        return ERROR
    d = args[2] if len(args) > 2 else ", "
    return bool(set(string_list(args[0], d)) & set(string_list(args[1], d)))
