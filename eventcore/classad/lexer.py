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

Tokens are plain tuples ``(kind, value, offset)`` (``KIND``, ``VALUE``,
``OFFSET`` index them).  A fast path (one ``findall``) handles the usual
text; anything unusual (comments, quoted names, escapes, bad characters)
goes through the careful scanner.

A ``-`` directly followed by a number is part of that number unless the
previous token ends an operand (a literal, a name, ``)``, ``]``, ``}``).
Bad text raises ``ClassAdParseError`` with the offset of the bad spot.
"""

from __future__ import annotations

import re
from jobledger.eventcore.errors import ClassAdParseError

from .values import INT64_MAX, INT64_MIN, to_bytes

MAX_TEXT = 10_000_000          # refuse absurdly large inputs outright


Token = tuple        # (kind, value, offset): plain tuples are the fastest to build and index
KIND, VALUE, OFFSET = 0, 1, 2


KEYWORDS = {"true": True, "false": False, "undefined": "undefined", "error": "error"}
_WS = " \t\r\n\v\f"

_SCAN = re.compile(r"""
    [ \t\r\n\v\f]*
    (?:
      (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<num>(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    | (?P<op>>>>|=\?=|=!=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*%~!&|^<>.:\[\](){},;=]|/(?![/*])|\?(?![ \t\r\n\v\f]*:))
    | (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<elvis>\?[ \t\r\n\v\f]*:)
    | (?P<comment>//[^\n]*|/\*.*?\*/)
    | (?P<qname>'(?:[^'\\]|\\.)*')
    | (?P<end>\Z)
    | (?P<bad>.)
    )""", re.VERBOSE | re.DOTALL)
_NUM = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

_ESC = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, '"': 34, "'": 39, "?": 63}
_OPERAND_END = frozenset(("int", "real", "str", "name", "kw"))
_CLOSERS = frozenset((")", "]", "}"))


def _fail(text: str, offset: int, message: str):
    raise ClassAdParseError(message, text, offset)


def unescape(body: str, text: str = "", offset: int = 0) -> str:
    """The value of a quoted literal's body (C escapes, octal, no NUL)."""
    if "\\" not in body:
        return body
    raw = to_bytes(body)
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
    try:
        return out.decode("utf-8", "surrogateescape")
    except UnicodeDecodeError:
        _fail(text, offset, "quoted text holds bytes that are not UTF-8")


def _number(text: str, lexeme: str, start: int, negative: bool) -> Token:
    if "." in lexeme or "e" in lexeme or "E" in lexeme:
        value = float(lexeme)
        return ("real", -value if negative else value, start)
    if len(lexeme) > 1 and lexeme[0] == "0":
        _fail(text, start, f"integer literal {lexeme!r} may not start with 0")
    value = int(lexeme)
    if negative:
        value = -value
    if value > INT64_MAX or value < INT64_MIN:
        value = 0
    return ("int", value, start)


def tokenize(text: str) -> list:
    """All tokens of ``text`` followed by an ``eof`` token."""
    if len(text) > MAX_TEXT:
        _fail(text, MAX_TEXT, f"text longer than {MAX_TEXT} characters")
    toks = _fast_tokenize(text)
    if toks is not None:
        return toks
    return _careful_tokenize(text)


_FAST = re.compile(
    r'([ \t\r\n\v\f]*)(?:([A-Za-z_][A-Za-z0-9_]*)'
    r'|((?>(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?))(?![.xX])'
    r'|(>>>|=\?=|=!=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*%~!&|^<>.:\[\](){},;=]|/(?![/*])|\?(?![ \t\r\n\v\f]*:))'
    r'|("[^"\\]*")|(.))', re.DOTALL)
UNKNOWN = -1        # offset of a fast-path token (the parser recomputes it for messages)


def _fast_tokenize(text: str):
    """Tokens of ordinary text in one ``findall``, or None to use the careful scanner.

    Offsets are left UNKNOWN (working them out costs a third of the time);
    ``Parser.fail`` recomputes them with the careful scanner when needed."""
    toks = []
    append = toks.append
    kw = KEYWORDS
    for ws, name, num, op, string, other in _FAST.findall(text):
        if name:
            low = name.lower()
            if low in kw:
                append(("kw", low, UNKNOWN))
            elif low == "is":
                append(("op", "=?=", UNKNOWN))
            elif low == "isnt":
                append(("op", "=!=", UNKNOWN))
            else:
                append(("name", name, UNKNOWN))
        elif op:
            append(("op", op, UNKNOWN))
        elif num:
            if num.isdigit():
                if num[0] == "0" and len(num) > 1:
                    return None
                kind, v = "int", int(num)
            else:
                kind, v = "real", float(num)
            if not ws and toks:
                prev = toks[-1]
                if prev[1] == "-" and prev[0] == "op" and (len(toks) < 2 or not _ends_operand(toks[-2])):
                    toks.pop()
                    v = -v
            if kind == "int" and not INT64_MIN <= v <= INT64_MAX:
                v = 0
            append((kind, v, UNKNOWN))
        elif string:
            if toks and toks[-1][0] == "str":
                toks[-1] = ("str", toks[-1][1] + string[1:-1], UNKNOWN)
            else:
                append(("str", string[1:-1], UNKNOWN))
        else:
            return None
    append(("eof", None, len(text)))
    return toks


def _careful_tokenize(text: str) -> list:
    toks: list = []
    append = toks.append
    n = len(text)
    last_end = -1            # end offset of the last quoted literal (for joining)
    has_qname = False
    for m in _SCAN.finditer(text):
        kind = m.lastgroup
        if kind == "name":
            lexeme = m.group(kind)
            low = lexeme.lower()
            if low in KEYWORDS:
                append(("kw", low, m.start(kind)))
            elif low == "is":
                append(("op", "=?=", m.start(kind)))
            elif low == "isnt":
                append(("op", "=!=", m.start(kind)))
            else:
                append(("name", lexeme, m.start(kind)))
        elif kind == "op":
            append(("op", m.group(kind), m.start(kind)))
        elif kind == "num":
            _num_token(text, m, toks)
        elif kind == "str" or kind == "qname":
            start = m.start(kind)
            value = unescape(m.group(kind)[1:-1], text, start)
            prev = toks[-1] if toks else None
            if prev is not None and prev[0] == kind and last_end >= 0 and text[last_end:start].strip(_WS) == "":
                toks[-1] = (kind, prev[1] + value, prev[2])
            else:
                append((kind, value, start))
            last_end = m.end()
            has_qname = has_qname or kind == "qname"
            continue
        elif kind == "elvis":
            append(("op", "?:", m.start(kind)))
        elif kind == "comment":
            pass
        elif kind == "end":
            break
        else:
            pos = m.start(kind)
            if text.startswith("/*", pos):
                _fail(text, pos, "unterminated comment")
            ch = text[pos]
            if ch in "\"'":
                _fail(text, pos, "unterminated quoted text")
            _fail(text, pos, f"unexpected character {ch!r}")
        last_end = -1
    append(("eof", None, n))
    if has_qname:
        return [("name", t[1], t[2]) if t[0] == "qname" else t for t in toks]
    return toks


def _ends_operand(tok) -> bool:
    kind = tok[0]
    return kind in _OPERAND_END or kind == "qname" or (kind == "op" and tok[1] in _CLOSERS)


def _num_token(text: str, m, toks: list) -> None:
    """A number token; a '-' just before it joins it unless it follows an operand."""
    start = m.start("num")
    lexeme = m.group("num")
    end = m.end()
    if end < len(text) and lexeme.isdigit():
        nxt = text[end]
        if nxt == ".":
            _fail(text, end, "a '.' after digits must be followed by a digit")
        if lexeme == "0" and nxt in "xX":
            _fail(text, start, "hexadecimal literals are not allowed")
    negative = False
    if toks:
        prev = toks[-1]
        if prev[0] == "op" and prev[1] == "-" and prev[2] == start - 1:
            before = toks[-2] if len(toks) > 1 else None
            if before is None or not _ends_operand(before):
                toks.pop()
                start -= 1
                negative = True
    tok = _number(text, lexeme, start, negative)
    toks.append(tok)
