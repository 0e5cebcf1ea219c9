"""String builtins (spec 8.5-8.7, 8.10): concatenation, case, substrings,
comparisons, natural version order, splitting, regular expressions, HTCondor
string lists, environment and argument strings."""

from __future__ import annotations

import re

from .convert import strtod, to_str
from .ops import ascii_lower, ascii_upper
from .regex import compile_regex
from .values import ERROR, UNDEF, ListValue, to_bytes

_FUNCS: dict = {}


def fn(name, lo, hi=None):
    def deco(f):
        _FUNCS[name.lower()] = (f, lo, lo if hi is None else hi)
        return f
    return deco


def make_list(values):
    from . import nodes as N
    from .evaluate import ExprType
    return ListValue(tuple(ExprType._from_node(N.Literal(v)) for v in values), None)


def list_values(lst, st):
    return [item.fn(lst.scope, st) for item in lst.items]


@fn("strcat", 0, 999)
def _strcat(args, ad, st):
    out = []
    for v in args:
        if v is UNDEF:
            return UNDEF
        if v is ERROR:
            return ERROR
        out.append(to_str(v))
    return "".join(out)


@fn("join", 0, 999)
def _join(args, ad, st):
    if not args:
        return ""
    if len(args) == 1 and args[0] is UNDEF:
        return UNDEF
    if len(args) <= 2 and type(args[-1]) is ListValue:
        sep = args[0] if len(args) == 2 else ""
        items = list_values(args[-1], st)
    else:
        sep, items = args[0], args[1:]
    if sep is ERROR:
        return ERROR
    sep_s = "" if sep is UNDEF else to_str(sep)
    out = ""
    any_defined = False
    any_undef = False
    for v in items:
        if v is UNDEF:
            any_undef = True
            continue
        if v is ERROR:
            return ERROR
        s = to_str(v)
        if out:
            out += sep_s
        out += s
        any_defined = True
    if not any_defined and any_undef:
        return UNDEF
    return out


def _case(conv):
    def f(args, ad, st):
        v = args[0]
        if v is UNDEF or v is ERROR:
            return v
        return conv(to_str(v))
    return f


_FUNCS["toupper"] = (_case(ascii_upper), 1, 1)
_FUNCS["tolower"] = (_case(ascii_lower), 1, 1)


def _t32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n > 0x7FFFFFFF else n


@fn("substr", 2, 3)
def _substr(args, ad, st):
    if any(a is UNDEF for a in args):
        return UNDEF
    s = args[0]
    if type(s) is not str or any(type(a) is not int for a in args[1:]):
        return ERROR
    raw = to_bytes(s)
    n = len(raw)
    off = _t32(args[1])
    if off < 0:
        off = max(n + off, 0)
    if off > n:
        return ""
    if len(args) == 2:
        end = n
    else:
        ln = _t32(args[2])
        if ln > 0:
            end = min(off + ln, n)
        elif ln < 0:
            end = n + ln
        else:
            return ""
    if end <= off:
        return ""
    return raw[off:end].decode("utf-8", "surrogateescape")


def _two_strings(args):
    a, b = args
    if a is UNDEF or b is UNDEF:
        return UNDEF
    sa, sb = to_str(a), to_str(b)
    if sa is None or sb is None:
        return ERROR
    return sa, sb


def _cmp(x, y) -> int:
    return (x > y) - (x < y)


@fn("strcmp", 2)
def _strcmp(args, ad, st):
    r = _two_strings(args)
    if type(r) is not tuple:
        return r
    return _cmp(*(to_bytes(s) for s in r))


@fn("stricmp", 2)
def _stricmp(args, ad, st):
    r = _two_strings(args)
    if type(r) is not tuple:
        return r
    return _cmp(*(to_bytes(ascii_lower(s)) for s in r))


def _isdigit(c: int) -> bool:
    return 48 <= c <= 57


def _leading_zeros(run: bytes) -> int:
    z = len(run) - len(run.lstrip(b"0"))
    return z - 1 if z == len(run) else z


def versioncmp(a: str, b: str) -> int:
    """HTCondor's natural order, returning a raw difference like ``strcmp``.

    Digit runs: more leading zeros sort first (the difference of the counts);
    with leading zeros the digits compare one by one (a fraction), without
    them the longer run is larger (by the difference of the lengths), else
    the first differing digit decides."""
    x, y = to_bytes(a), to_bytes(b)
    i = j = 0
    nx, ny = len(x), len(y)
    while i < nx and j < ny:
        cx, cy = x[i], y[j]
        if _isdigit(cx) and _isdigit(cy):
            si, sj = i, j
            while i < nx and _isdigit(x[i]):
                i += 1
            while j < ny and _isdigit(y[j]):
                j += 1
            rx, ry = x[si:i], y[sj:j]
            zx, zy = _leading_zeros(rx), _leading_zeros(ry)
            if zx != zy:
                return zy - zx
            if zx > 0:
                for p, q in zip(rx, ry):
                    if p != q:
                        return p - q
                if len(rx) != len(ry):
                    k = min(len(rx), len(ry))
                    px = x[si + k] if si + k < nx else 0
                    py = y[sj + k] if sj + k < ny else 0
                    return px - py
                continue
            if len(rx) != len(ry):
                return len(rx) - len(ry)
            for p, q in zip(rx, ry):
                if p != q:
                    return p - q
            continue
        if cx != cy:
            return cx - cy
        i += 1
        j += 1
    if i < nx:
        return x[i]
    if j < ny:
        return -y[j]
    return 0


@fn("versioncmp", 2)
def _versioncmp(args, ad, st):
    r = _two_strings(args)
    if type(r) is not tuple:
        return r
    return versioncmp(*r)


def _version_pred(test):
    def f(args, ad, st):
        r = _two_strings(args)
        if type(r) is not tuple:
            return r
        return test(versioncmp(*r))
    return f


for _n, _t in (("versionLT", lambda c: c < 0), ("versionLE", lambda c: c <= 0), ("versionGT", lambda c: c > 0),
               ("versionGE", lambda c: c >= 0), ("versionEQ", lambda c: c == 0)):
    _FUNCS[_n.lower()] = (_version_pred(_t), 2, 2)


@fn("version_in_range", 3)
def _version_in_range(args, ad, st):
    v, lo, hi = args
    if lo is UNDEF or hi is UNDEF:
        return UNDEF
    sv, sl, sh = to_str(v), to_str(lo), to_str(hi)
    if sv is None or sl is None or sh is None:
        return ERROR
    return versioncmp(sl, sv) <= 0 and versioncmp(sv, sh) <= 0


@fn("split", 1, 2)
def _split(args, ad, st):
    s = args[0]
    seps = args[1] if len(args) == 2 else ", \t"
    if type(s) is not str or type(seps) is not str:
        return ERROR
    if seps == "":
        return make_list([s])
    out = []
    cur = ""
    prev = None
    for ch in s:
        if ch in seps:
            if cur:
                out.append(cur)
                cur = ""
            elif prev == ch and not ch.isspace():
                out.append("")
            if not ch.isspace():
                prev = ch
            continue
        cur += ch
    if cur:
        out.append(cur)
    return make_list(out)


def _split_at(default_first: bool):
    def f(args, ad, st):
        s = args[0]
        if type(s) is not str:
            return ERROR
        i = s.find("@")
        if i < 0:
            return make_list([s, ""] if default_first else ["", s])
        return make_list([s[:i], s[i + 1:]])
    return f


_FUNCS["splitusername"] = (_split_at(True), 1, 1)
_FUNCS["splitslotname"] = (_split_at(False), 1, 1)


# -- regular expressions ----------------------------------------------------------

def _regex_args(args, n):
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
    bad = _regex_args(args, 2)
    if bad is not None:
        return bad
    rx = compile_regex(args[0], args[2] if len(args) == 3 else "")
    if rx is None:
        return ERROR
    return rx.search(args[1]) is not None


@fn("regexpMember", 2, 3)
def _regexp_member(args, ad, st):
    p, lst = args[0], args[1]
    if p is ERROR or lst is ERROR:
        return ERROR
    if p is UNDEF or lst is UNDEF:
        return UNDEF
    if type(p) is not str or type(lst) is not ListValue:
        return ERROR
    opts = args[2] if len(args) == 3 else ""
    if type(opts) is not str:
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
            if g > (m.re.groups or 0) or m.group(g) is None:
                return None
            out.append(m.group(g))
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
    bad = _regex_args(args, 3)
    if bad is not None:
        return bad
    return regexps(args[0], args[1], args[2], args[3] if len(args) == 4 else "")


@fn("replace", 3, 4)
def _replace(args, ad, st):
    bad = _regex_args(args, 3)
    if bad is not None:
        return bad
    return regexps(args[0], args[1], args[2], (args[3] if len(args) == 4 else "") + "f")


@fn("replaceAll", 3, 4)
def _replace_all(args, ad, st):
    bad = _regex_args(args, 3)
    if bad is not None:
        return bad
    return regexps(args[0], args[1], args[2], (args[3] if len(args) == 4 else "") + "fg")


# -- HTCondor string lists ----------------------------------------------------------

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
    return any(rx.search(i) for i in items)


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
    if x is UNDEF and s is UNDEF:
        return UNDEF
    for a in (x, s):
        if a is not UNDEF and type(a) is not str:
            return ERROR
    if type(delims) is not str:
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


# -- environment and arguments ------------------------------------------------------

def _v2_quote(value: str) -> str:
    out = []
    for ch in value:
        if ch == "'":
            out.append("''")
        elif ch.isspace():
            out.append("'" + ch + "'")
        else:
            out.append(ch)
    return "".join(out)


@fn("envV1ToV2", 1)
def _env_v1_to_v2(args, ad, st):
    s = args[0]
    if s is UNDEF:
        return UNDEF
    if type(s) is not str:
        return ERROR
    parts = []
    for entry in s.split(";"):
        if not entry:
            continue
        if "=" not in entry:
            return ERROR
        k, v = entry.split("=", 1)
        if not k:
            return ERROR
        parts.append(k + "=" + _v2_quote(v))
    return " ".join(parts)


def parse_v2_env(s: str):
    items = []
    for word in split_v2_args(s) or []:
        if "=" not in word:
            return None
        k, v = word.split("=", 1)
        items.append((k, v))
    return items


@fn("mergeEnvironment", 0, 999)
def _merge_env(args, ad, st):
    merged: dict = {}
    for a in args:
        if a is UNDEF:
            continue
        if type(a) is not str:
            return ERROR
        items = parse_v2_env(a)
        if items is None:
            return ERROR
        for k, v in items:
            merged.pop(k, None)
            merged[k] = v
    return " ".join(k + "=" + _v2_quote(v) for k, v in merged.items())


def split_v2_args(s: str):
    """Split a V2 argument string (single quotes group, '' is a quote)."""
    out = []
    cur = []
    have = False
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "'":
            have = True
            i += 1
            while True:
                if i >= n:
                    return None
                if s[i] == "'":
                    if i + 1 < n and s[i + 1] == "'":
                        cur.append("'")
                        i += 2
                        continue
                    i += 1
                    break
                cur.append(s[i])
                i += 1
            continue
        if c.isspace():
            if have or cur:
                out.append("".join(cur))
            cur, have = [], False
            i += 1
            continue
        cur.append(c)
        i += 1
    if have or cur:
        out.append("".join(cur))
    return out


@fn("argsToList", 1, 2)
def _args_to_list(args, ad, st):
    s = args[0]
    if type(s) is not str:
        return ERROR
    ver = args[1] if len(args) > 1 else 2
    if ver == 1:
        return make_list(s.split())
    if ver != 2:
        return ERROR
    items = split_v2_args(s)
    if items is None:
        return ERROR
    return make_list(items)


@fn("listToArgs", 1, 2)
def _list_to_args(args, ad, st):
    lst = args[0]
    if type(lst) is not ListValue:
        return ERROR
    words = []
    for v in list_values(lst, st):
        if type(v) is not str:
            return ERROR
        words.append(_v2_quote(v) if v else "''")
    return " ".join(words)


STRING_FUNCTIONS = _FUNCS
