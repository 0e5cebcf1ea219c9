"""A quick reader for plain ad text, beside the full parser.

Most ad text that reaches ``ClassAd(text)`` is plain: ``[ Name = value; ... ]``
as ``repr`` writes it, where most values are literals.  ``quick_new_items``
reads such text with ``str.split``/``partition`` and builds literal nodes
directly; any other value goes through the full parser, and its tree is kept
per value text (``cached_expr``: job and machine ads repeat the same
Requirements and Rank texts, and trees are immutable, so they can be shared).

Anything unusual -- comments, quoted names, nested ads or lists that hold a
``;``, a value that does not parse -- makes ``quick_new_items`` return None,
and the caller runs the full parser, which gives the same tree or the error
pointing at the text.  Why the split is safe: a ``;`` that belongs inside a
value (a string, a nested ad, a call's argument list) leaves that value's
piece unbalanced (an unterminated string, a missing ``]`` or ``)``), so the
piece fails to parse and the whole text goes to the full parser; comments and
quoted names, which could hide a ``;`` or a ``"``, are refused up front.
"""

from __future__ import annotations

import re

from jobledger.eventcore.errors import ClassAdParseError

from . import nodes as N
from .lexer import MAX_TEXT
from .evaluate import NOLIT
from .parser import Parser
from .values import ERROR, INT64_MAX, INT64_MIN, UNDEF

CACHE_SIZE = 4096          # distinct texts kept per cache; a cache starts afresh when full
CACHE_TEXT = 1024          # longer texts are parsed each time (bounds a cache's memory)

_WS = " \t\r\n\v\f"
_KW = {"true": True, "false": False, "undefined": UNDEF, "error": ERROR}
_NOT_NAMES = frozenset(("true", "false", "undefined", "error", "is", "isnt"))
_REAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")

_new = object.__new__
_set = object.__setattr__
_Literal = N.Literal


def literal(value) -> N.Literal:
    """``N.Literal(value)`` without the attrs ``__init__`` round trip."""
    node = _new(_Literal)
    _set(node, "value", value)
    return node


_cache: dict = {}


def cached_expr(text: str, parse):
    """``parse(text)`` (a pure function of the text), kept per text; errors
    are raised each time, never kept."""
    node = _cache.get(text)
    if node is None:
        node = parse(text)
        keep(_cache, text, node, len(text))
    return node


def keep(cache: dict, key, value, size: int) -> None:
    """Keep ``value`` under ``key`` unless its text is long (``size``); a full cache starts afresh."""
    if size <= CACHE_TEXT:
        if len(cache) >= CACHE_SIZE:
            cache.clear()
        cache[key] = value


def _ad_value(text: str) -> N.Node:
    """An attribute's value inside an ad literal (one nesting level down)."""
    p = Parser(text)
    p.depth = 1
    return p.parse_complete()


def value_node(value: str):
    """The node of one attribute value written in new syntax (stripped), or
    None when it is not a literal the quick path knows."""
    c = value[0]
    if c == '"':
        inner = value[1:-1]
        if value[-1] == '"' and len(value) > 1 and '"' not in inner and "\\" not in inner:
            return literal(inner)
        return None
    if value.isdigit():
        if value.isascii() and (c != "0" or len(value) == 1):
            v = int(value)
            return literal(v if v <= INT64_MAX else 0)
        return None
    if c == "-" or c == "." or "0" <= c <= "9":
        if c == "-" and value[1:].isdigit():
            digits = value[1:]
            if not digits.isascii() or (digits[0] == "0" and len(digits) > 1):
                return None
            v = -int(digits)
            return literal(v if v >= INT64_MIN else 0)
        if _REAL.match(value):
            return literal(float(value))
        return None
    low = value.lower()
    kw = _KW.get(low)
    if kw is not None and value.isascii():
        return literal(kw)
    return None


_pieces: dict = {}


def plain_body(text: str):
    """The text between the brackets of a ``[ ... ]`` ad that the quick path
    may read, or None (comments, quoted names, text around the ad, too long)."""
    if len(text) > MAX_TEXT or "'" in text or ("/" in text and ("//" in text or "/*" in text)):
        return None
    body = text.strip(_WS)
    if not body or body[0] != "[" or body[-1] != "]":
        return None
    return body[1:-1]


def piece_item(part: str):
    """What one ``;``-separated piece of a plain body holds: ``(lower name,
    name, node, literal value or NOLIT)``, ``()`` when it is empty, None when
    the full parser must read the ad.  Kept per piece text."""
    item = _pieces.get(part)
    if item is None:
        item = _piece(part)
        if item is not None:
            keep(_pieces, part, item, len(part))
    return item


def quick_new_items(text: str):
    """``[(lower name, name, node, literal value or NOLIT), ...]`` of a plain
    ``[ ... ]`` ad text in order (a repeated name included: first spelling,
    last value is the caller's rule), or None when the full parser must read it."""
    body = plain_body(text)
    if body is None:
        return None
    get = _pieces.get
    items = [get(part) or piece_item(part) for part in body.split(";")]   # () is an empty piece
    if None in items:
        return None
    if () in items:
        return [item for item in items if item]
    return items


def _piece(part: str):
    """The item of one ``Name = value`` piece of an ad's body, ``()`` for an
    empty piece, None when the piece is not plain."""
    name, eq, value = part.partition("=")
    if not eq:
        return None if part.strip(_WS) else ()
    name = name.strip(_WS)
    value = value.strip(_WS)
    if not (value and name.isidentifier() and name.isascii()):
        return None
    low = name.lower()
    if low in _NOT_NAMES:
        return None
    node = value_node(value)
    if node is None:
        try:
            node = cached_expr(value, _ad_value)
        except (ClassAdParseError, RecursionError, UnicodeError):
            return None
    return (low, name, node, node.value if type(node) is _Literal else NOLIT)
