"""Serialisation formats: old ("long"), new, and JSON (spec section 10).

* ``print_old(ad)`` / ``print_json(ad)`` write one ad.
* ``parse_old_ads(text)`` yields ads of the old format (blank lines separate
  ads; a bad line ends its ad, keeping what was read, and the rest of that
  ad up to the next blank line is skipped).
* ``parse_new_ads(text)`` yields ``[...]`` ads one after another.
* ``parse_json_ads(text)`` yields the objects of a JSON document (one object
  or an array of objects).
"""

from __future__ import annotations

import json
import re

from jobledger.eventcore.errors import ClassAdParseError, ClassAdValueError

from . import nodes as N
from .ad import ClassAd
from .ops import ascii_lower
from .lexer import _careful_tokenize
from .parser import Parser
from .evaluate import NOLIT
from .quickad import keep, literal
from .unparse import Unparser, format_real_old, quote_name, sorted_attrs
from .values import ERROR, UNDEF

_FAST_LINE = re.compile(
    r'[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*'
    r'(?:(-?[1-9][0-9]{0,17}|0)|"([^"\\\n]*)"|(true|false|TRUE|FALSE|True|False)'
    r'|(-?(?:[1-9][0-9]*|0)\.[0-9]+(?:[eE][+-]?[0-9]{1,3})?))[ \t]*\r?\Z')


# -- writing -------------------------------------------------------------------

def print_old(ad: ClassAd) -> str:
    """``Name = expr`` lines in HTCondor's attribute order; an empty ad is ``\\n``."""
    pairs = sorted_attrs([(ad._names[k], e) for k, e in ad._exprs.items()])
    if not pairs:
        return "\n"
    return "".join([quote_name(name) + " = " + e.old_text() + "\n" for name, e in pairs])


_JSON_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


_JSON_SPECIAL = re.compile(r'["\\\x00-\x1f]')


def json_string(s: str) -> str:
    """A JSON string as HTCondor writes it (control bytes as upper-case ``\\u00XX``)."""
    if _JSON_SPECIAL.search(s) is None:
        return '"' + s + '"'
    out = ['"']
    for ch in s:
        e = _JSON_ESC.get(ch)
        if e is not None:
            out.append(e)
        elif ord(ch) < 0x20:
            out.append("\\u%04X" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_value(node, level: int) -> str:
    t = type(node)
    if t is N.Literal:
        v = node.value
        vt = type(v)
        if vt is bool:
            return "true" if v else "false"
        if vt is int:
            return str(v)
        if vt is float and v == v and v not in (float("inf"), float("-inf")):
            return format_real_old(v)
        if vt is str:
            return json_string(v)
        if v is UNDEF:
            return "null"
    elif t is N.RelTimeLit:
        return format_real_old(float(node.secs))
    elif t is N.ListExpr:
        if not node.items:
            return "[\n" + "  " * level + "]"
        pad = "  " * (level + 1)
        inner = ",\n".join(pad + _json_value(i, level + 1) for i in node.items)
        return "[\n" + inner + "\n" + "  " * level + "]"
    elif t is N.AdExpr:
        return _json_object(node.attrs, level)
    from .unparse import unparse
    return '"\\/Expr(' + json_string(unparse(node))[1:-1] + ')\\/"'


def _json_object(pairs, level: int) -> str:
    pairs = sorted_attrs(pairs)
    if not pairs:
        return "{\n" + "  " * level + "}"
    pad = "  " * (level + 1)
    inner = ",\n".join(pad + json_string(k) + ": " + _json_value(v, level + 1) for k, v in pairs)
    return "{\n" + inner + "\n" + "  " * level + "}"


def print_json(ad: ClassAd) -> str:
    pairs = sorted_attrs([(ad._names[k], e) for k, e in ad._exprs.items()])
    if not pairs:
        return "{\n}"
    return "{\n" + ",\n".join("  " + json_string(k) + ": " + _json_attr(e) for k, e in pairs) + "\n}"


def print_json_pairs(pairs) -> str:
    """One ad's JSON text with its (name, ExprTree) pairs in the order given
    (condor_q -json sorts the names; ``print_json`` keeps HTCondor's hash order)."""
    if not pairs:
        return "{\n}"
    return "{\n" + ",\n".join("  " + json_string(k) + ": " + _json_attr(e) for k, e in pairs) + "\n}"


def _json_attr(e) -> str:
    """A top-level attribute's JSON text; expressions reuse the ExprTree's cached repr."""
    node = e.node
    t = type(node)
    if t is N.Literal or t is N.RelTimeLit or t is N.ListExpr or t is N.AdExpr:
        return _json_value(node, 1)
    return '"\\/Expr(' + json_string(repr(e))[1:-1] + ')\\/"'


# -- reading the old format ----------------------------------------------------------

def _old_to_new_strings(value: str) -> str:
    """Rewrite old string syntax (backslash is literal, ``\\"`` a quote unless
    it ends the line) into new syntax."""
    if "\\" not in value:
        return value
    out = []
    i, n = 0, len(value)
    in_str = False
    while i < n:
        c = value[i]
        if not in_str:
            out.append(c)
            if c == '"':
                in_str = True
            i += 1
            continue
        if c == "\\":
            if i + 1 < n and value[i + 1] == '"' and value[i + 2:].strip(" \t\r") != "":
                out.append('\\"')
                i += 2
                continue
            out.append("\\\\")
            i += 1
            continue
        if c == '"':
            in_str = False
        out.append(c)
        i += 1
    return "".join(out)


def parse_old_value(value: str) -> N.Node:
    """One expression at the start of ``value`` (the rest of the line ignored)."""
    text = _old_to_new_strings(value)
    p = Parser(text)
    node = p.expression(0)
    return _reltime_literals_to_reals(node) if 'elTime("' in text or "ELTIME" in text.upper() else node


def _reltime_literals_to_reals(node):
    """The old-format reader stores a ``relTime("...")`` literal that is the
    whole value, or an element of (nested) list literals, as a plain real."""
    if type(node) is N.RelTimeLit:
        return N.Literal(float(node.secs))
    if type(node) is N.ListExpr:
        return N.ListExpr(tuple(_reltime_literals_to_reals(i) for i in node.items))
    return node


def _slow_line(line: str):
    """(name, node) of a ``Name = expr`` line the fast pattern missed, or None."""
    eq = line.find("=")
    if eq < 0:
        return None
    name = line[:eq].lstrip().rstrip(" ")
    if not name:
        return None
    try:
        return name, parse_old_value(line[eq + 1:])
    except (ClassAdParseError, RecursionError):
        return None


def _fast_node(num, s, b, r):
    if num is not None:
        v = int(num)
        return literal(v if -(1 << 63) <= v < (1 << 63) else 0)
    if s is not None:
        return literal(s)
    if b is not None:
        return _TRUE if b[0] in "tT" else _FALSE
    return literal(float(r))


_TRUE = N.Literal(True)
_FALSE = N.Literal(False)
_BLANK, _COMMENT, _BAD = "blank", "comment", "bad"      # what a line that sets nothing is
_lines: dict = {}


def _old_line(line: str):
    """What one line of the old format is: ``(lower name, name, node, literal
    value or NOLIT)`` or one of ``_BLANK``, ``_COMMENT``, ``_BAD`` (a pure
    function of the line, so ``parse_old_ads`` keeps it per line text)."""
    m = _FAST_LINE.match(line)
    if m is not None:
        name, num, s, b, r = m.groups()
        node = _fast_node(num, s, b, r)
        return (name.lower(), name, node, node.value)
    stripped = line.strip(" \t\r\f\v")
    if not stripped:
        return _BLANK
    if stripped[0] == "#":
        return _COMMENT
    parsed = _slow_line(line)
    if parsed is None:
        return _BAD
    name, node = parsed
    ln = name.lower() if name.isascii() else ascii_lower(name)
    return (ln, name, node, node.value if type(node) is N.Literal else NOLIT)


def parse_old_ads(text: str):
    """Yield ``(ClassAd, end_offset)`` for each old-format ad in ``text``.

    As HTCondor's reader: a bad line ends its ad (the attributes read so far
    are kept, the rest up to the next blank line is skipped); an ad that ends
    up with no attribute at all (a bad first line, only comments) ends the
    stream -- quietly at the end of the text, with ``ClassAdValueError`` (a
    ValueError, as classad2) when more text follows."""
    started = False                     # a line other than a blank one was seen
    skipping = False
    items: list = []
    pos = 0
    n = len(text)
    lines = _lines
    get = lines.get
    for line in text.split("\n"):
        pos += len(line) + 1
        item = get(line)
        if item is None:
            item = _old_line(line)
            keep(lines, line, item, len(line))
        if type(item) is tuple:
            if not skipping:
                started = True
                items.append(item)
        elif item is _BLANK:
            if started:
                if not items:
                    _end_of_stream(text, min(pos, n))
                    return
                yield _ad_of(items), min(pos, n)
            started = skipping = False
            items = []
        else:
            started = True
            if item is _BAD:
                skipping = True
    if started and items:
        yield _ad_of(items), n


def _ad_of(items) -> ClassAd:
    ad = ClassAd()
    ad._put_items(items)
    return ad


def _end_of_stream(text: str, pos: int) -> None:
    """An unreadable ad: the end when nothing follows, else an error (as classad2)."""
    if text[pos:].strip():
        raise ClassAdValueError("unable to parse the input into a ClassAd", text, pos)


def parse_old_ad(text: str) -> ClassAd:
    """All old-format ads of ``text`` merged into one (``parseOne`` semantics)."""
    out = ClassAd()
    for ad, _ in parse_old_ads(text):
        out._names.update({k: v for k, v in ad._names.items() if k not in out._names})
        out._exprs.update(ad._exprs)
    return out


# -- reading the new format ------------------------------------------------------------

_GAP = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)


def parse_new_ads(text: str):
    """Yield ``(ClassAd, end_offset)`` for each ``[...]`` ad in ``text``.

    As classad2: an ad that does not parse ends the stream quietly; text that
    is not an ad at all raises ``ClassAdValueError`` (a ValueError)."""
    pos = 0
    n = len(text)
    while pos < n:
        pos = _GAP.match(text, pos).end()
        if pos >= n:
            return
        if text[pos] != "[":
            raise ClassAdValueError("a ClassAd must start with '['", text, pos)
        try:
            node, consumed = _ad_at(text[pos:])
        except ClassAdParseError:
            return
        ad = ClassAd()
        for name, value in node.attrs:
            ad._set_node(name, value)
        pos += consumed
        yield ad, pos


def _ad_at(rest: str):
    """(ad literal, characters it takes) at the start of ``rest``; what follows
    the closing ``]`` may be anything, even text that does not tokenize."""
    try:
        toks = _careful_tokenize(rest)
    except ClassAdParseError as exc:
        if exc.offset <= 0:
            raise
        toks = _careful_tokenize(rest[:exc.offset])
    p = Parser(rest, toks)
    p.pos += 1                      # '['
    node = p.ad_literal()
    return node, p.toks[p.pos - 1][2] + 1


# -- JSON ----------------------------------------------------------------------------------

_EXPR_MARK = "\x00Expr("      # the raw text's "\/Expr(" (a plain "/Expr(" is just a string)


def _json_node(v) -> N.Node:
    if v is None:
        return N.Literal(UNDEF)
    if isinstance(v, bool):
        return N.Literal(v)
    if isinstance(v, int):
        return N.Literal(v if -(1 << 63) <= v < (1 << 63) else 0)
    if isinstance(v, float):
        return N.Literal(v)
    if isinstance(v, str):
        if v.startswith(_EXPR_MARK) and v.endswith(")/"):
            from .parser import parse_expr
            return parse_expr(v[len(_EXPR_MARK):-2])
        return N.Literal(v.replace(_EXPR_MARK, "/Expr("))
    if isinstance(v, list):
        return N.ListExpr(tuple(_json_node(i) for i in v))
    if isinstance(v, dict):
        if "" in v:
            raise ValueError("an attribute needs a name")
        return N.AdExpr(tuple((k, _json_node(x)) for k, x in v.items()))
    return N.Literal(ERROR)


def parse_json_ads(text: str):
    """Yield ``(ClassAd, end_offset)`` for the JSON object(s) in ``text``.

    Like HTCondor's reader, the first object that is not valid (bad JSON, an
    unparsable ``\\/Expr(...)\\/``, an empty name) ends the input quietly;
    ``"\\/Expr(...)\\/"`` is an expression only with the escaped slashes."""
    dec = json.JSONDecoder()
    raw = text.replace("\\/Expr(", "\\u0000Expr(")
    pos = 0
    n = len(raw)
    while True:
        while pos < n and raw[pos] in " \t\r\n,[]":
            pos += 1
        if pos >= n:
            return
        try:
            obj, end = dec.raw_decode(raw, pos)
            if not isinstance(obj, dict):
                return
            node = _json_node(obj)
        except (json.JSONDecodeError, ValueError, ClassAdParseError, RecursionError):
            return
        ad = ClassAd()
        for name, value in node.attrs:
            ad._set_node(name, value)
        pos = end
        yield ad, end - 4 * raw.count("\\u0000Expr(", 0, end)     # offset in the original text


__all__ = ["print_old", "print_json", "parse_old_ads", "parse_old_ad", "parse_new_ads", "parse_json_ads"]
