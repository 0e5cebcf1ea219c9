"""Regular-expression builtins (spec 8.6): regexp, regexpMember, regexps,
replace, replaceAll."""

from __future__ import annotations

import functools

from .fnutil import list_values, registry
from .regex import RegexLimit, compile_regex
from .values import ERROR, UNDEF, ListValue

REGEX_FUNCTIONS: dict = {}
_register = registry(REGEX_FUNCTIONS)


def bounded(f):
    """A regex builtin that gives ERROR when a match passes the limit (as PCRE2's does)."""
    @functools.wraps(f)
    def run(args, ad, st):
        try:
            return f(args, ad, st)
        except RegexLimit:
            return ERROR
    return run


def fn(name: str, low: int, high: int):
    def register(f):
        return _register(name, low, high)(bounded(f))
    return register


def _regex_args(args):
    """None when all arguments are strings, else the error/undefined result
    (error wins over undefined, which wins over a wrong type)."""
    for a in args:
        if a is ERROR:
            return ERROR
    for a in args:
        if a is UNDEF:
            return UNDEF
    for a in args:
        if type(a) is not str:
            return ERROR
    return None


@fn("regexp", 2, 3)
def _regexp(args, ad, st):
    bad = _regex_args(args)
    if bad is not None:
        return bad
    rx = compile_regex(args[0], args[2] if len(args) == 3 else "")
    if rx is None:
        return ERROR
    return rx.search(args[1]) is not None


@fn("regexpMember", 2, 3)
def _regexp_member(args, ad, st):
    p, lst = args[0], args[1]
    opts = args[2] if len(args) == 3 else ""
    if p is ERROR or lst is ERROR or opts is ERROR:
        return ERROR
    if p is UNDEF or lst is UNDEF or opts is UNDEF:
        return UNDEF
    if type(p) is not str or type(lst) is not ListValue or type(opts) is not str:
        return ERROR
    rx = compile_regex(p, opts)
    if rx is None:
        return False
    saw_undef = False
    for v in list_values(lst, st):
        if type(v) is str:
            if rx.search(v):
                return True
        elif v is UNDEF:
            saw_undef = True
        else:
            return ERROR
    return UNDEF if saw_undef else False


def _expand(m, sub: str):
    out = []
    i = 0
    while i < len(sub):
        c = sub[i]
        if c == "\\" and i + 1 < len(sub) and sub[i + 1].isdigit():
            g = int(sub[i + 1])
            if g > (m.re.groups or 0):
                return None            # no such group in the pattern: error
            out.append(m.group(g) or "")   # a group that did not take part: empty
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def regexps(p, target, sub, opts):
    rx = compile_regex(p, opts)
    if rx is None:
        return ERROR
    full = "f" in opts
    glob = "g" in opts
    if not glob:
        m = rx.search(target)
        if m is None:
            return target if full else ""
        e = _expand(m, sub)
        if e is None:
            return ERROR
        return target[:m.start()] + e + target[m.end():] if full else e
    pieces = []
    pos = 0
    out = []
    for m in rx.finditer(target):
        if m.start() == m.end():
            return ERROR
        e = _expand(m, sub)
        if e is None:
            return ERROR
        pieces.append(target[pos:m.start()])
        pieces.append(e)
        out.append(e)
        pos = m.end()
    if rx.search(target, pos) is not None and rx.search(target, pos).start() == rx.search(target, pos).end():
        return ERROR
    if full:
        return "".join(pieces) + target[pos:]
    return "".join(out)


@fn("regexps", 3, 4)
def _regexps(args, ad, st):
    bad = _regex_args(args)
    if bad is not None:
        return bad
    return regexps(args[0], args[1], args[2], args[3] if len(args) == 4 else "")


@fn("replace", 3, 4)
def _replace(args, ad, st):
    bad = _regex_args(args)
    if bad is not None:
        return bad
    return regexps(args[0], args[1], args[2], (args[3] if len(args) == 4 else "") + "f")


@fn("replaceAll", 3, 4)
def _replace_all(args, ad, st):
    bad = _regex_args(args)
    if bad is not None:
        return bad
    return regexps(args[0], args[1], args[2], (args[3] if len(args) == 4 else "") + "fg")
