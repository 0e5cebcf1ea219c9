"""Typed, immutable syntax-tree nodes of ClassAd expressions.

The parser builds them, ``unparse`` prints them, ``compile`` turns them into
Python closures.  Nodes never change after they are built, so one tree can be
shared by many ads and compiled once.
"""

from __future__ import annotations

import attrs

from .values import RelTime, c_int32


@attrs.frozen(slots=True, eq=True)
class Node:
    """Base class of every node."""


@attrs.frozen(slots=True)
class Literal(Node):
    """A constant: int, float, str, bool, UNDEF, ERROR, AbsTime, RelTime, or a
    list/ad value carried through (e.g. elements of a projected list)."""
    value: object


@attrs.frozen(slots=True)
class RelTimeLit(Node):
    """``relTime("<literal>")`` folded at parse time: evaluates to a real (a
    reference quirk) but prints as ``relTime("...")``."""
    secs: float


@attrs.frozen(slots=True)
class Attr(Node):
    """A bare attribute name ``n``."""
    name: str


@attrs.frozen(slots=True)
class AbsAttr(Node):
    """An absolute reference ``.n`` (looked up from the root ad)."""
    name: str


@attrs.frozen(slots=True)
class Select(Node):
    """Selection ``expr.name``."""
    expr: Node
    name: str


@attrs.frozen(slots=True)
class Subscript(Node):
    """Subscript ``expr[index]``."""
    expr: Node
    index: Node


@attrs.frozen(slots=True)
class Unary(Node):
    """Prefix ``- + ! ~``."""
    op: str
    operand: Node


@attrs.frozen(slots=True)
class Binary(Node):
    """Any binary operator; ``is``/``isnt`` are stored as ``=?=``/``=!=``."""
    op: str
    left: Node
    right: Node


@attrs.frozen(slots=True)
class Cond(Node):
    """``cond ? then : other``."""
    cond: Node
    then: Node
    other: Node


@attrs.frozen(slots=True)
class Elvis(Node):
    """``left ?: right``."""
    left: Node
    right: Node


@attrs.frozen(slots=True)
class Paren(Node):
    """Parentheses as written (kept for unparsing)."""
    expr: Node


@attrs.frozen(slots=True)
class Call(Node):
    """A function call; the name keeps its spelling, lookup is case-insensitive."""
    name: str
    args: tuple


@attrs.frozen(slots=True)
class ListExpr(Node):
    """A list literal ``{a, b}``."""
    items: tuple


@attrs.frozen(slots=True)
class AdExpr(Node):
    """An ad literal ``[a = 1; b = 2]``: ``attrs`` is a tuple of (name, node),
    names unique ignoring case (first spelling, last value)."""
    attrs: tuple


@attrs.frozen(slots=True)
class AdRef(Node):
    """An existing ad used as a value (match contexts; never parsed)."""
    ad: object = attrs.field(eq=False)


def value_literal(value) -> Node:
    """The literal node of a computed value.  As in the reference, a relative
    time becomes a ``relTime`` literal of its whole seconds -- which then
    evaluates to a real (the quirk of relTime literals)."""
    if type(value) is RelTime:
        return RelTimeLit(float(c_int32(value.secs)))
    return Literal(value)


def children(node: Node):
    """The direct sub-expressions of ``node``."""
    t = type(node)
    if t is Binary:
        return (node.left, node.right)
    if t in (Unary,):
        return (node.operand,)
    if t in (Paren, Select):
        return (node.expr,)
    if t is Subscript:
        return (node.expr, node.index)
    if t is Cond:
        return (node.cond, node.then, node.other)
    if t is Elvis:
        return (node.left, node.right)
    if t is Call:
        return node.args
    if t is ListExpr:
        return node.items
    if t is AdExpr:
        return tuple(v for _, v in node.attrs)
    return ()


def same_as(a, b) -> bool:
    """Structural equality as classad2's ``SameAs``: attribute references and
    function names compare case-sensitively, ad literals by case-insensitive
    attribute name, literals by type and value."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is Literal:
        va, vb = a.value, b.value
        if type(va) is not type(vb):
            return False
        if hasattr(va, "_exprs") or type(va).__name__ == "ListValue":
            from .unparse import unparse_value
            return unparse_value(va) == unparse_value(vb)
        return va == vb
    if ta is AdExpr:
        da = {name.lower(): value for name, value in a.attrs}
        db = {name.lower(): value for name, value in b.attrs}
        return da.keys() == db.keys() and all(same_as(da[k], db[k]) for k in da)
    if ta is AdRef:
        return a.ad is b.ad
    for field in attrs.fields(ta):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, Node):
            if not same_as(x, y):
                return False
        elif type(x) is tuple:
            if len(x) != len(y) or not all(same_as(p, q) for p, q in zip(x, y)):
                return False
        elif x != y:
            return False
    return True


def height(node: Node) -> int:
    """Nesting height of ``node`` (1 for a leaf); iterative, so deep trees are safe."""
    best = 0
    stack = [(node, 1)]
    while stack:
        n, h = stack.pop()
        if h > best:
            best = h
        for c in children(n):
            stack.append((c, h + 1))
    return best
