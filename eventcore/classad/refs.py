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
    """(internal, external) reference names of ``node`` seen from ``ad``."""
    internal, external = [], []
    seen = set()
    for full, first in _walk_refs(node):
        low = first.lower()
        if type(node) is N.Select or "." in full:
            scope = low
            if scope in ("target", "other"):
                name = full.split(".", 1)[1]
                if name.lower() not in seen:
                    seen.add(name.lower())
                    external.append(name)
                continue
            if scope in ("my", "self"):
                name = full.split(".", 1)[1]
                if name.lower() not in seen:
                    seen.add(name.lower())
                    (internal if name.lower() in ad._exprs else external).append(name)
                continue
        if low in seen or low in E.SPECIALS:
            continue
        seen.add(low)
        (internal if low in ad._exprs else external).append(first)
    return internal, external


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
    """Partially evaluate ``node`` in ``ad``: references ``ad`` cannot resolve
    stay; sub-expressions whose value is known become literals."""
    from .ad import ExprTree, value_node
    from .values import UNDEF

    def known(n):
        t = type(n)
        if t is N.Attr:
            return n.name.lower() in ad._exprs or n.name.lower() in E.SPECIALS
        return all(known(c) for c in N.children(n)) and t is not N.AbsAttr

    def walk(n):
        if known(n):
            v = E.evaluate(ExprTree._from_node(n), ad, None)
            if v is not UNDEF or type(n) is N.Literal:
                return value_node(v)
            return n
        t = type(n)
        if t is N.Binary:
            return N.Binary(n.op, walk(n.left), walk(n.right))
        if t is N.Unary:
            return N.Unary(n.op, walk(n.operand))
        if t is N.Paren:
            return N.Paren(walk(n.expr))
        if t is N.Cond:
            return N.Cond(walk(n.cond), walk(n.then), walk(n.other))
        if t is N.Call:
            return N.Call(n.name, tuple(walk(a) for a in n.args))
        return n
    return walk(node)
