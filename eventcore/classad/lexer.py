"""Tokens of the ClassAd language (HTCondor mode).

``tokenize(text)`` returns a list of ``Token`` tuples ``(kind, value, offset)``:

========  =====================================================
kind      value
========  =====================================================
``int``   the integer (already 0 when it overflows 64 bits)
``real``  the float
``str``   the string (adjacent literals joined)
``name``  the identifier (quoted names unquoted, adjacent ones joined)
``kw``    ``true`` / ``false`` / ``undefined`` / ``error`` (lower case)
``op``    the operator or punctuation; ``is``/``isnt`` become ``=?=``/``=!=``
``eof``   ``None``
========  =====================================================

A ``-`` directly followed by a number is part of that number unless the
previous token ends an operand (a literal, a name, ``)``, ``]``, ``}``).
Bad text raises ``ClassAdParseError`` with the offset of the bad spot.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from eventcore.errors import ClassAdParseError

from .values import INT64_MAX, INT64_MIN

MAX_TEXT = 10_000_000          # refuse absurdly large inputs outright


class Token(NamedTuple):
    kind: str
    value: object
    offset: int


KEYWORDS = {"true": True, "false": False, "undefined": "undefined", "error": "error"}
_WS = " \t\r\n\v\f"

_SCAN = re.compile(r"""
    (?P<ws>[ \t\r\n\v\f]+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<num>(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<qname>'(?:[^'\\]|\\.)*')
  | (?P<elvis>\?[ \t\r\n\v\f]*:)
  | (?P<op>>>>|=\?=|=!=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%~!&|^<>?:.\[\](){},;=])
""", re.VERBOSE | re.DOTALL)

_ESC = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, '"': 34, "'": 39, "?": 63}
_OPERAND_END = frozenset(("int", "real", "str", "name", "kw"))
_CLOSERS = frozenset((")", "]", "}"))


def _fail(text: str, offset: int, message: str):
    raise ClassAdParseError(message, text, offset)


def unescape(body: str, text: str = "", offset: int = 0) -> str:
    """The value of a quoted literal's body (C escapes, octal, no NUL)."""
    if "\\" not in body:
        return body
    raw = body.encode("utf-8", "surrogateescape")
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c != 92:
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= n:
            out.append(92)
            break
        c = raw[i]
        if 48 <= c <= 55:
            j = i + 1
            limit = i + (3 if c <= 51 else 2)
            while j < limit and j < n and 48 <= raw[j] <= 55:
                j += 1
            value = int(raw[i:j], 8)
            if value == 0:
                _fail(text, offset, "a string may not contain a NUL byte (\\0)")
            out.append(value)
            i = j
            continue
        ch = chr(c)
        out.append(_ESC.get(ch, c))
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _number(text: str, lexeme: str, start: int, negative: bool) -> Token:
    if "." in lexeme or "e" in lexeme or "E" in lexeme:
        value = float(lexeme)
        return Token("real", -value if negative else value, start)
    if len(lexeme) > 1 and lexeme[0] == "0":
        _fail(text, start, f"integer literal {lexeme!r} may not start with 0")
    value = int(lexeme)
    if negative:
        value = -value
    if value > INT64_MAX or value < INT64_MIN:
        value = 0
    return Token("int", value, start)


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text`` followed by an ``eof`` token."""
    if len(text) > MAX_TEXT:
        _fail(text, MAX_TEXT, f"text longer than {MAX_TEXT} characters")
    toks: list[Token] = []
    append = toks.append
    pos, n = 0, len(text)
    match = _SCAN.match
    gap = False                       # whitespace only since the last token
    while pos < n:
        m = match(text, pos)
        if m is None:
            if text.startswith("/*", pos):
                _fail(text, pos, "unterminated comment")
            ch = text[pos]
            if ch in "\"'":
                _fail(text, pos, "unterminated quoted text")
            _fail(text, pos, f"unexpected character {ch!r}")
        kind = m.lastgroup
        end = m.end()
        if kind == "ws":
            pos = end
            continue
        if kind == "comment":
            gap = False
            pos = end
            continue
        lexeme = m.group()
        if kind == "num":
            if end < n and text[end] == "." and lexeme.isdigit():
                _fail(text, end, "a '.' after digits must be followed by a digit")
            if lexeme == "0" and end < n and text[end] in "xX":
                _fail(text, pos, "hexadecimal literals are not allowed")
            append(_number(text, lexeme, pos, False))
        elif kind == "name":
            low = lexeme.lower()
            if low in KEYWORDS:
                append(Token("kw", low, pos))
            elif low == "is":
                append(Token("op", "=?=", pos))
            elif low == "isnt":
                append(Token("op", "=!=", pos))
            else:
                append(Token("name", lexeme, pos))
        elif kind == "str" or kind == "qname":
            value = unescape(lexeme[1:-1], text, pos)
            tk = "str" if kind == "str" else "qname"
            prev = toks[-1] if toks else None
            if prev is not None and prev.kind == tk and gap:
                toks[-1] = Token(tk, prev.value + value, prev.offset)
            else:
                append(Token(tk, value, pos))
            pos = end
            gap = True
            continue
        elif kind == "elvis":
            append(Token("op", "?:", pos))
        else:
            if lexeme == "-" and end < n:
                m2 = _SCAN.match(text, end)
                if m2 is not None and m2.lastgroup == "num":
                    prev = toks[-1] if toks else None
                    if prev is None or not (prev.kind in _OPERAND_END or prev.kind == "qname"
                                            or (prev.kind == "op" and prev.value in _CLOSERS)):
                        e2 = m2.end()
                        if e2 < n and text[e2] == "." and m2.group().isdigit():
                            _fail(text, e2, "a '.' after digits must be followed by a digit")
                        append(_number(text, m2.group(), pos, True))
                        pos = e2
                        gap = False
                        continue
            append(Token("op", lexeme, pos))
        gap = False
        pos = end
    append(Token("eof", None, n))
    return [Token("name", t.value, t.offset) if t.kind == "qname" else t for t in toks] \
        if any(t.kind == "qname" for t in toks) else toks
