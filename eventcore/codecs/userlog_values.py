"""ClassAd literals as the user log writes and reads them (old ClassAd syntax).

``unparse(value)`` prints an attribute value the way HTCondor's writer does
(``"a\\"b"``, ``{ 1,"two",3.0 }``, ``[ a = 1; b = "x" ]``, ``true``,
``undefined``; an ``Expr`` verbatim).  ``parse_value(text)`` reads one back:
literals become Python values, lists and nested ads recurse, any other
valid expression is kept as an ``Expr`` of its trimmed text, and text that
is no expression gives ``NOT_A_VALUE``.  In old-ClassAd strings only
``\\"`` is an escape (``"a\\\\b"`` keeps both backslashes), as HTCondor's
reader does.
"""

from __future__ import annotations

import math
import re

from jobledger.eventcore.errors import ClassAdError
from jobledger.eventcore.events import ERROR, UNDEFINED, Expr, Special

__all__ = ["unparse", "parse_value", "sorted_ci", "NOT_A_VALUE", "decode_escapes",
           "encode_escapes"]


class _NotAValue:
    def __repr__(self) -> str:
        return "NOT_A_VALUE"


#: Returned by ``parse_value`` for blank text (no attribute at all).
NOT_A_VALUE = _NotAValue()


def sorted_ci(keys):
    """Attribute names sorted the way HTCondor prints them (case-insensitive)."""
    return sorted(keys, key=str.lower)


def _unparse_str(s: str) -> str:
    """Old ClassAd syntax (attribute lines): only ``"`` is escaped, bytes pass raw."""
    return '"' + s.replace('"', '\\"') + '"'


_NEW_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _unparse_new_str(s: str) -> str:
    """New ClassAd syntax (``[ ... ]`` notes): escapes, non-ASCII as octal bytes."""
    out = []
    for ch in s:
        if ch in _NEW_ESCAPES:
            out.append(_NEW_ESCAPES[ch])
        elif ch < " " or ch > "~":
            out.append("".join("\\%03o" % b for b in ch.encode("utf-8", "surrogateescape")))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _unparse_real(x: float) -> str:
    if math.isnan(x):
        return 'real("NaN")'
    if math.isinf(x):
        return 'real("INF")' if x > 0 else 'real("-INF")'
    text = repr(x)
    if "e" in text or "E" in text:
        mant, exp = text.lower().split("e")
        sign = "-" if exp.startswith("-") else "+"
        exp = exp.lstrip("+-").rjust(2, "0")
        if "." not in mant:
            mant += ".0"
        return f"{mant}E{sign}{exp}"
    return text


def unparse(value, new_syntax: bool = False) -> str:
    """One attribute value as HTCondor prints it.

    Old ClassAd syntax (attribute lines) by default; ``new_syntax`` for the
    ``[ ... ]`` notes line (escaped strings, attributes sorted).
    """
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _unparse_real(value)
    if isinstance(value, str):
        return _unparse_new_str(value) if new_syntax else _unparse_str(value)
    if isinstance(value, Expr):
        return value.text
    if isinstance(value, Special):
        return value.value
    if isinstance(value, (list, tuple)):
        return "{ " + ",".join(unparse(v, new_syntax) for v in value) + " }"
    if isinstance(value, dict):
        if not value:
            return "[  ]"
        keys = sorted_ci(value) if new_syntax else list(value)
        return "[ " + "; ".join(f"{k} = {unparse(value[k], new_syntax)}" for k in keys) + " ]"
    # ClassAd-engine values (ClassAd / ExprTree) print themselves.
    return str(value)


_INT = re.compile(r"[+-]?\d+\Z")
_STARTS_OPERAND = re.compile(r"[A-Za-z_0-9\"']")
_REAL = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?\Z")
_WORDS = {"true": True, "false": False, "undefined": UNDEFINED, "error": ERROR}


def parse_value(text: str, new_syntax: bool = False, whole: bool = False):
    """A literal value, a list/nested ad of literals, or an ``Expr``.

    ``whole``: no trailing words allowed after the expression.
    """
    s = text.strip()
    if not s:
        return NOT_A_VALUE
    if s.isdigit() and s.isascii():
        return int(s) if len(s) < 19 else _literal(s, 0)[0]
    value, end = _literal(s, 0, new_syntax)
    if value is not NOT_A_VALUE and end == len(s):
        return value
    # HTCondor's parser stops at a token that cannot continue the expression
    # and ignores the rest ('"v" trailing' is "v", '1 + 2 x' is 1 + 2), but an
    # unfinished expression ('1 +') is no value at all.
    words = [s] if whole else s.split(" ")
    for n in range(len(words), 0, -1):
        if n < len(words) and not _STARTS_OPERAND.match(words[n]):
            continue
        text = " ".join(words[:n]).rstrip()
        if n < len(words):
            value, end = _literal(text, 0, new_syntax)
            if value is not NOT_A_VALUE and end == len(text):
                return value
        try:
            _parse_expr(text)
        except ClassAdError:
            continue
        return Expr(text)
    return NOT_A_VALUE               # not an expression: the line is no attribute


def _parse_expr(text: str):
    from jobledger.eventcore.classad import parse_expr   # deferred: the engine is large
    return parse_expr(text)


def _skip_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in " \t\r\n":
        i += 1
    return i


_TOKEN = re.compile(r"[+-]?[0-9.][0-9.eE+-]*|[A-Za-z_][A-Za-z0-9_]*")


def _literal(s: str, i: int, new: bool = False):
    """Parse one literal at ``s[i:]``; (value, end) or (NOT_A_VALUE, i)."""
    i = _skip_ws(s, i)
    if i >= len(s):
        return NOT_A_VALUE, i
    c = s[i]
    if c == '"':
        return _new_string(s, i) if new else _string(s, i)
    if c == "{":
        return _list(s, i, new)
    if c == "[":
        return _ad(s, i, new)
    m = _TOKEN.match(s, i)
    if not m:
        return NOT_A_VALUE, i
    tok = m.group()
    if _INT.match(tok):
        v = int(tok)
        if -(2 ** 63) <= v < 2 ** 63:
            return v, m.end()
        return NOT_A_VALUE, i
    if _REAL.match(tok):
        return float(tok), m.end()
    word = _WORDS.get(tok.lower())
    if word is not None:
        return word, m.end()
    return NOT_A_VALUE, i


def _string(s: str, i: int):
    out = []
    j = i + 1
    n = len(s)
    while j < n:
        c = s[j]
        if c == "\\" and j + 1 < n and s[j + 1] == '"':
            out.append('"')
            j += 2
            continue
        if c == '"':
            return "".join(out), j + 1
        out.append(c)
        j += 1
    return NOT_A_VALUE, i


_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f",
                   "\\": "\\", '"': '"', "'": "'"}


def _new_string(s: str, i: int, closed: bool = True):
    """A new-syntax string literal: backslash escapes, octal bytes are UTF-8.

    ``closed=False``: ``s[i + 1:]`` is a string's content, up to the end.
    """
    out = bytearray()
    j, n = i + 1, len(s)
    while j < n:
        c = s[j]
        if c == '"' and closed:
            return out.decode("utf-8", "surrogateescape"), j + 1
        if c == "\\" and j + 1 < n:
            nxt = s[j + 1]
            if nxt in "01234567":
                k = j + 1
                while k < n and k < j + 4 and s[k] in "01234567":
                    k += 1
                out.append(int(s[j + 1:k], 8) & 0xFF)
                j = k
                continue
            out += _SIMPLE_ESCAPES.get(nxt, nxt).encode("utf-8", "surrogateescape")
            j += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        j += 1
    if not closed:
        return out.decode("utf-8", "surrogateescape"), n
    return NOT_A_VALUE, i


def decode_escapes(text: str) -> str:
    """A new-syntax string's content with its backslash escapes decoded."""
    if "\\" not in text:
        return text
    value, _ = _new_string(text, -1, closed=False)
    return value


def encode_escapes(text: str) -> str:
    """The inverse of ``decode_escapes`` (backslashes and control characters)."""
    out = text.replace("\\", "\\\\")
    for ch, esc in (("\n", "\\n"), ("\t", "\\t"), ("\r", "\\r")):
        out = out.replace(ch, esc)
    return out


def _list(s: str, i: int, new: bool = False):
    items = []
    j = _skip_ws(s, i + 1)
    if j < len(s) and s[j] == "}":
        return items, j + 1
    while True:
        v, j = _literal(s, j, new)
        if v is NOT_A_VALUE:
            return NOT_A_VALUE, i
        items.append(v)
        j = _skip_ws(s, j)
        if j < len(s) and s[j] == ",":
            j += 1
            continue
        if j < len(s) and s[j] == "}":
            return items, j + 1
        return NOT_A_VALUE, i


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def _ad(s: str, i: int, new: bool = False):
    ad = {}
    j = _skip_ws(s, i + 1)
    if j < len(s) and s[j] == "]":
        return ad, j + 1
    while True:
        j = _skip_ws(s, j)
        m = _NAME.match(s, j)
        if not m:
            return NOT_A_VALUE, i
        name = m.group()
        j = _skip_ws(s, m.end())
        if j >= len(s) or s[j] != "=":
            return NOT_A_VALUE, i
        v, j = _literal(s, j + 1, new)
        if v is NOT_A_VALUE:
            return NOT_A_VALUE, i
        ad[name] = v
        j = _skip_ws(s, j)
        if j < len(s) and s[j] == ";":
            j = _skip_ws(s, j + 1)
            if j < len(s) and s[j] == "]":
                return ad, j + 1
            continue
        if j < len(s) and s[j] == "]":
            return ad, j + 1
        return NOT_A_VALUE, i
