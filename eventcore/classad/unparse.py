"""Turning expressions and values back into text, exactly as HTCondor does.

Three styles share one walker:

* ``"repr"`` -- the canonical one-line form (``ClassAdUnParser``),
* ``"pretty"`` -- lists and ads laid out over lines (``PrettyPrint``),
* ``"old"`` -- values of the old ``Name = expr`` format: ``=?=``/``=!=``
  spelled out, reals as ``%.16G``, strings escaping only ``"``.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from . import nodes as N
from .timeutil import format_abstime, format_reltime
from .values import ERROR, UNDEF, AbsTime, ListValue, RelTime, to_bytes

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = frozenset(("true", "false", "undefined", "error", "is", "isnt", "parent"))
_CTRL = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v"}
_BINOP_NAMES = {"=?=": "is", "=!=": "isnt"}


def _escape_table(quote: int) -> list[str]:
    table = []
    for b in range(256):
        if b == quote:
            table.append("\\" + chr(b))
        elif b == 92:
            table.append("\\\\")
        elif b in _CTRL:
            table.append(_CTRL[b])
        elif 32 <= b < 127:
            table.append(chr(b))
        else:
            table.append("\\%03o" % b)
    return table


_STR_ESC = _escape_table(34)
_NAME_ESC = _escape_table(39)
_PLAIN = re.compile(r'[ !#-\[\]-~]*\Z')


def quote_string(s: str) -> str:
    """``"..."`` with ClassAd escapes (non-ASCII bytes as octal)."""
    if _PLAIN.match(s):
        return '"' + s + '"'
    raw = to_bytes(s)
    return '"' + "".join([_STR_ESC[b] for b in raw]) + '"'


def quote_string_old(s: str) -> str:
    """Old-format strings: only ``"`` is escaped."""
    return '"' + s.replace('"', '\\"') + '"'


@lru_cache(maxsize=4096)
def quote_name(name: str) -> str:
    """An attribute name, single-quoted when it is not a plain identifier."""
    if _IDENT.match(name) and name.lower() not in _RESERVED:
        return name
    raw = to_bytes(name)
    return "'" + "".join([_NAME_ESC[b] for b in raw]) + "'"


def format_real(x: float) -> str:
    """``%1.15E``; zeros as ``0.0``/``-0.0``; ``real("NaN")``, ``real("INF")``."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    return _non_finite(x) or "%.15E" % x


def _non_finite(x: float) -> str | None:
    """How a NaN or an infinity prints (both formats); None for a finite number."""
    if x != x:
        return 'real("NaN")'
    if x == math.inf:
        return 'real("INF")'
    if x == -math.inf:
        return 'real("-INF")'
    return None


def format_real_old(x: float) -> str:
    """``%.16G`` plus ``.0`` when it looks like an integer (old format, JSON)."""
    special = _non_finite(x)
    if special is not None:
        return special
    s = "%.16G" % x
    if "." not in s and "E" not in s and "e" not in s:
        s += ".0"
    return s


def sorted_attrs(pairs):
    """Ad attributes in HTCondor's order: name length, then name ignoring case."""
    return sorted(pairs, key=lambda p: (len(p[0]), p[0].lower()))


class Unparser:
    """Walks nodes (and values) producing text in one style."""

    def __init__(self, style: str = "repr"):
        self.style = style
        self.indent = 0

    # -- values -----------------------------------------------------------
    def value(self, v) -> str:
        t = type(v)
        if t is bool:
            return "true" if v else "false"
        if t is int:
            return str(v)
        if t is float:
            return format_real_old(v) if self.style == "old" else format_real(v)
        if t is str:
            return quote_string_old(v) if self.style == "old" else quote_string(v)
        if v is UNDEF:
            return "undefined"
        if v is ERROR:
            return "error"
        if t is AbsTime:
            return 'absTime("%s")' % format_abstime(v)
        if t is RelTime:
            return 'relTime("%s")' % format_reltime(v.secs)
        if t is ListValue:
            return self.list_items([item.node for item in v.items])
        if hasattr(v, "_exprs"):
            return self.ad_items([(v._names[k], e.node) for k, e in v._exprs.items()])
        return str(v)

    # -- nodes ------------------------------------------------------------
    def node(self, n) -> str:
        t = type(n)
        if t is N.Literal:
            return self.value(n.value)
        if t is N.Attr:
            return quote_name(n.name)
        if t is N.Binary:
            return self.binary(n)
        if t is N.Select:
            return self.node(n.expr) + "." + n.name
        if t is N.Paren:
            return "(" + self.node(n.expr) + ")"
        if t is N.Unary:
            return " " + n.op + self.node(n.operand)
        if t is N.Call:
            return n.name + "(" + ",".join([self.node(a) for a in n.args]) + ")"
        if t is N.Subscript:
            return self.node(n.expr) + "[" + self.node(n.index) + "]"
        if t is N.Cond:
            return self.node(n.cond) + " ? " + self.node(n.then) + " : " + self.node(n.other)
        if t is N.Elvis:
            return self.node(n.left) + " ?: " + self.node(n.right)
        if t is N.AbsAttr:
            return "." + quote_name(n.name)
        if t is N.ListExpr:
            return self.list_items(n.items)
        if t is N.AdExpr:
            return self.ad_items(n.attrs)
        if t is N.RelTimeLit:
            return 'relTime("%s")' % format_reltime(n.secs, exact=True)
        if t is N.AdRef:
            return self.value(n.ad)
        raise TypeError(f"cannot unparse {n!r}")

    def binary(self, n) -> str:
        """Left-nested chains (``1 + 1 + ... + 1``) iteratively, so any
        parseable expression prints without deep recursion."""
        spine = []
        while type(n) is N.Binary:
            spine.append(n)
            n = n.left
        out = [self.node(n)]
        old = self.style == "old"
        for b in reversed(spine):
            op = b.op if old else _BINOP_NAMES.get(b.op, b.op)
            out.append(" " + op + " " + self.node(b.right))
        return "".join(out)

    def list_items(self, items) -> str:
        if self.style != "pretty":
            if not items:
                return "{  }"
            return "{ " + ",".join([self.node(i) for i in items]) + " }"
        self.indent += 3
        out = "\n" + " " * self.indent + "{"
        self.indent += 3
        pad = "\n" + " " * self.indent
        out += ",".join([pad + self.node(i) for i in items])
        self.indent -= 3
        out += "\n" + " " * self.indent + "}"
        self.indent -= 3
        return out

    def ad_items(self, pairs) -> str:
        pairs = sorted_attrs(pairs)
        if self.style != "pretty":
            if not pairs:
                return "[  ]"
            return "[ " + "; ".join([quote_name(k) + " = " + self.node(v) for k, v in pairs]) + " ]"
        self.indent += 4
        out = "\n" + " " * self.indent + "["
        self.indent += 4
        pad = "\n" + " " * self.indent
        out += "; ".join([pad + quote_name(k) + " = " + self.node(v) for k, v in pairs])
        self.indent -= 4
        out += "\n" + " " * self.indent + "]"
        self.indent -= 4
        return out


_REPR = Unparser("repr")


def unparse(node) -> str:
    """Canonical one-line text of a node (``repr``)."""
    return _REPR.node(node)


def unparse_pretty(node) -> str:
    """Pretty text of a node (``str``)."""
    return Unparser("pretty").node(node)


def unparse_old(node) -> str:
    """Text of a node as written in the old format."""
    return Unparser("old").node(node)


def unparse_value(v) -> str:
    """Canonical text of a run-time value."""
    return _REPR.value(v)
