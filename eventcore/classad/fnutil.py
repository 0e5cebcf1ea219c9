"""Helpers shared by the builtin-function modules: a registration table per
module, and building/reading list values."""

from __future__ import annotations

from .values import ListValue


def registry(table: dict):
    """A decorator ``@fn(name, lo[, hi])`` adding ``(impl, lo, hi)`` to ``table``."""
    def fn(name, lo, hi=None):
        def deco(f):
            table[name.lower()] = (f, lo, lo if hi is None else hi)
            return f
        return deco
    return fn


def make_list(values) -> ListValue:
    """A list value of already computed values."""
    from . import nodes as N
    from .evaluate import ExprType
    return ListValue(tuple(ExprType._from_node(N.value_literal(v)) for v in values), None)


def list_values(lst: ListValue, st) -> list:
    """The values of a list's elements, each evaluated in the list's scope."""
    return [item.fn(lst.scope, st) for item in lst.items]
