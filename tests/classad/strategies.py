"""Hypothesis strategies for ClassAd text.

``expressions()`` draws expression *text* from the grammar (literals of every
type, names, all operators, conditionals, Elvis, calls of real builtins with
any arity, lists, ad literals, selection, subscripts).  It avoids what is
clock- or random-dependent (``time()``, ``random()``, ``CurrentTime``) and
reals with more than 15 significant digits (HTCondor prints reals with 15,
so those could not round-trip through any ClassAd implementation).
"""

from __future__ import annotations

from hypothesis import strategies as st

NAMES = ["A", "B", "S", "T", "F", "U", "E", "L", "N", "R", "x", "y", "Memory", "Owner", "missing",
         "'weird name'", "self", "parent", "toplevel", "MY", "TARGET"]
SELECT_NAMES = ["A", "x", "X", "y", "a", "b", "q", "missing", "Z"]
FUNCTIONS = ["strcat", "size", "member", "int", "real", "string", "floor", "round", "pow", "substr",
             "toUpper", "toLower", "isUndefined", "isError", "ifThenElse", "sum", "max", "split",
             "regexp", "stringListMember", "join", "strcmp", "versioncmp", "bool", "identicalMember",
             "isString", "quantize", "interval", "splitUserName", "nosuchfunction", "absTime", "relTime",
             "splitTime", "formatTime", "getYear", "getDays", "getHours", "stringListSum", "envV1ToV2",
             "argsToList", "listToArgs", "regexps", "unparse", "eval", "evalInEachContext", "anyCompare"]
BINARY = ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "=?=", "=!=", "is", "isnt",
          "&&", "||", "&", "|", "^", "<<", ">>", ">>>"]
UNARY = ["-", "+", "!", "~"]

CONTEXT_AD = ('[ A = 1; B = 2.5; S = "Hello"; T = true; F = false; U = undefined; E = error; '
              'L = { 1, 2, 3 }; N = [ X = 10; y = "why" ]; R = A + B; x = 7; y = x * 2; Memory = 2048; '
              'Owner = "alice"; \'weird name\' = 3 ]')

_ints = st.one_of(st.integers(-20, 20), st.integers(-(2 ** 63), 2 ** 63 - 1), st.just(2 ** 63))
_reals = st.builds(lambda m, e: f"{m}e{e}", st.integers(-10 ** 6, 10 ** 6), st.integers(-30, 30)) | \
    st.sampled_from(["0.0", "0.5", "2.5", "100.0", "1e308", "1e309", ".25"])
_string_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
_strings = st.text(_string_chars, max_size=8).map(
    lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"')


def _literal():
    return st.one_of(
        _ints.map(str),
        _reals,
        _strings,
        st.sampled_from(["true", "false", "undefined", "error", "TRUE", "Undefined"]),
        st.sampled_from(['absTime("2020-01-01T00:00:00Z")', 'relTime("1:30")', "relTime(90)",
                         "absTime(1700000000, 3600)", 'real("nan")', 'real("inf")', "relTime(1e300)",
                         'relTime(real("nan"))', "9223372036854775807", "-9223372036854775808"]),
    )


def _extend(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(BINARY), children).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(st.sampled_from(UNARY), children).map(lambda t: f"{t[0]} {t[1]}"),
        children.map(lambda c: f"({c})"),
        st.tuples(children, children, children).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.tuples(children, children).map(lambda t: f"({t[0]}) ?: ({t[1]})"),
        st.tuples(st.sampled_from(FUNCTIONS), st.lists(children, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.lists(children, max_size=3).map(lambda xs: "{" + ", ".join(xs) + "}"),
        st.lists(st.tuples(st.sampled_from(SELECT_NAMES), children), max_size=3).map(
            lambda kv: "[" + "; ".join(f"{k} = {v}" for k, v in kv) + "]"),
        st.tuples(children, st.sampled_from(SELECT_NAMES)).map(lambda t: f"({t[0]}).{t[1]}"),
        st.tuples(children, children).map(lambda t: f"({t[0]})[{t[1]}]"),
    )


def expressions(max_leaves: int = 12):
    """Text of random (often ill-typed) expressions."""
    leaves = st.one_of(_literal(), st.sampled_from(NAMES))
    return st.recursive(leaves, _extend, max_leaves=max_leaves)


def garbage():
    """Arbitrary text, biased toward ClassAd punctuation and near-misses."""
    pieces = st.sampled_from(["(", ")", "[", "]", "{", "}", "\"", "'", "\\", "/*", "*/", "//", "?", ":",
                              "?:", "=", "==", "=?=", "=!", "!", "-", ".", ";", ",", "1", "0x", "007", "1.",
                              "1e", "a", "is", "isnt", "true", "\n", " ", "@", "#", "\x00", "é", "\ud800",
                              "absTime(\"", "relTime(\"x\")", "f(", "\"\\0\""])
    return st.one_of(st.text(max_size=40), st.lists(pieces, max_size=30).map("".join))
