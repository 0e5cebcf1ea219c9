"""String builtins (spec 8.5): concatenation, case, substrings, comparisons,
HTCondor's natural version order, splitting."""

from __future__ import annotations

from .convert import to_str
from .fnutil import list_values, make_list, registry
from .ops import ascii_lower, ascii_upper
from .values import ERROR, UNDEF, ListValue, to_bytes

STRING_FUNCTIONS: dict = {}
_FUNCS = STRING_FUNCTIONS
fn = registry(_FUNCS)


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
