"""Attribute references of expressions: internal/external refs, flatten,
``unresolved()``."""

from __future__ import annotations

from . import evaluate as E
from . import nodes as N
from .unparse import unparse


def _walk_refs(node):
    """Yield (full reference text, first name) for each attribute reference."""
    stack = [node]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is N.Attr:
            yield n.name, n.name
            continue
        if t is N.Select:
            base = n.expr
            if type(base) is N.Attr:
                yield unparse(n), base.name
                continue
        if t is N.AbsAttr:
            yield unparse(n), n.name
            continue
        stack.extend(reversed(N.children(n)))


def split_refs(node, ad):
    """(internal, external) references of ``node`` seen from ``ad``, as classad2
    reports them: ``MY.x`` -> ``x``; ``n.x`` -> ``n`` when the ad defines ``n``,
    else the whole ``n.x``; sorted and de-duplicated ignoring case."""
    internal, external = {}, {}
    for full, first in _walk_refs(node):
        low = first.lower()
        if full is first:
            name = first
        elif low in ("my", "self"):
            name = full.split(".", 1)[1]
        elif low in ad._exprs:
            name = first
        else:
            name = full
        if name is first and low in E.SPECIALS:
            continue
        key = name.lower()
        target = internal if (key in ad._exprs and "." not in name) else external
        target.setdefault(key, name)
    return ([internal[k] for k in sorted(internal)], [external[k] for k in sorted(external)])


def unresolved_names(node, ad, st):
    names = set()
    for full, first in _walk_refs(node):
        low = first.lower()
        if low in ("target", "other") and "." in full:
            names.add(full.split(".", 1)[1])
            continue
        if low in ("my", "self") and "." in full:
            rest = full.split(".", 1)[1]
            if rest.lower() not in ad._exprs:
                names.add(rest)
            continue
        if low in E.SPECIALS:
            continue
        a = ad
        found = False
        while a is not None:
            if low in a._exprs:
                found = True
                break
            a = a._parent
        if not found:
            names.add(full)
    return sorted(names, key=str.lower)


def flatten(node, ad):
    """Partially evaluate ``node`` in ``ad`` (classad2 ``flatten``): what ``ad``
    defines is evaluated, the rest stays; ``+``/``*`` gather their constants
    first (``a + b + 2 * 3`` with ``a = 1`` is ``7 + b``)."""
    from .ad import ExprTree, value_node
    from .ops import make_binary

    def known(n):
        t = type(n)
        if t is N.Attr:
            return n.name.lower() in ad._exprs or n.name.lower() in E.SPECIALS
        if t is N.AbsAttr or t is N.Call and n.name.lower() in ("random", "time"):
            return False
        return all(known(c) for c in N.children(n))

    def walk(n):
        if known(n):
            return value_node(E.evaluate(ExprTree._from_node(n), ad, None))
        t = type(n)
        if t is N.Binary:
            left, right = walk(n.left), walk(n.right)
            if n.op in ("+", "*"):
                if type(right) is N.Literal and type(left) is not N.Literal:
                    left, right = right, left
                if (type(left) is N.Literal and type(right) is N.Binary and right.op == n.op
                        and type(right.left) is N.Literal):
                    folded = make_binary(n.op)(left.value, right.left.value)
                    return N.Binary(n.op, N.Literal(folded), right.right)
            return N.Binary(n.op, left, right)
        if t is N.Unary:
            return N.Unary(n.op, walk(n.operand))
        if t is N.Paren:
            inner = walk(n.expr)
            return inner if type(inner) is N.Literal else N.Paren(inner)
        if t is N.Cond:
            return N.Cond(walk(n.cond), walk(n.then), walk(n.other))
        if t is N.Call:
            return N.Call(n.name, tuple(walk(a) for a in n.args))
        return n
    return walk(node)
