"""HTCondor job-helper builtins (spec 8.10): environment strings (V1/V2) and
argument strings."""

from __future__ import annotations

from .fnutil import list_values, make_list, registry
from .values import ERROR, UNDEF, ListValue, to_bytes

JOB_FUNCTIONS: dict = {}
_FUNCS = JOB_FUNCTIONS
fn = registry(_FUNCS)


def _v2_quote(value: str) -> str:
    """V2 quoting: whitespace as ' ', a single quote as four of them."""
    out = []
    for ch in value:
        if ch == "'":
            out.append("''''")
        elif ch.isspace():
            out.append("'" + ch + "'")
        else:
            out.append(ch)
    return "".join(out)


_V1_DELIMITERS = "!#$%&*+,-/:;<>?@^`|~"


@fn("envV1ToV2", 1)
def _env_v1_to_v2(args, ad, st):
    s = args[0]
    if s is UNDEF:
        return UNDEF
    if type(s) is not str:
        return ERROR
    delim = ";"
    if s[:1] and s[0] in _V1_DELIMITERS:   # a V1 string may name its delimiter first
        delim, s = s[0], s[1:]
    env: dict = {}
    for entry in (e for line in s.split("\n") for e in line.split(delim)):
        entry = entry.lstrip()
        if not entry:
            continue
        if "=" not in entry:
            return ERROR
        k, v = entry.split("=", 1)
        if not k:
            return ERROR
        env[to_bytes(k)] = (k, v)
    return _v2_env(env)


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
    merged: dict = {}                  # name bytes -> (name, value); later wins
    for a in args:
        if a is UNDEF:
            continue
        if type(a) is not str:
            return ERROR
        items = parse_v2_env(a)
        if items is None:
            return ERROR
        for k, v in items:
            merged[to_bytes(k)] = (k, v)
    return _v2_env(merged)


def _v2_env(env: dict) -> str:
    """A V2 environment string: entries sorted by name (bytes), each quoted whole."""
    return " ".join(_v2_quote(k + "=" + v) for _, (k, v) in sorted(env.items()))


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
    if type(ver) is not int or ver not in (1, 2):
        return ERROR
    if ver == 1:
        return make_list(s.split())
    items = split_v2_args(s)
    if items is None:
        return ERROR
    return make_list(items)


@fn("listToArgs", 1, 2)
def _list_to_args(args, ad, st):
    lst = args[0]
    ver = args[1] if len(args) > 1 else 2
    if type(lst) is not ListValue or type(ver) is not int or ver not in (1, 2):
        return ERROR
    words = []
    for v in list_values(lst, st):
        if type(v) is not str:
            return ERROR
        if ver == 1:
            if not v or any(c.isspace() for c in v):
                return ERROR           # V1 syntax cannot hold it
            words.append(v)
        else:
            words.append(_v2_quote(v) if v else "''")
    return " ".join(words)
