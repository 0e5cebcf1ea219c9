"""Stored job ads (attribute -> ClassAd expression text) as ClassAds, and constraints over them.

The journal and the queue keep ads as expression text so that they do not
depend on a parsed tree.  ``to_classad(ad)`` builds a ``ClassAd`` from such a
dict, parsing each distinct text once (a bounded cache: a queue of 100,000
jobs repeats the same few hundred texts).  ``compile_filter(constraint)`` is
the store's default ``constraint_filter``: a predicate over stored ads with
condor_q's rules (true or a non-zero number selects).
"""

from __future__ import annotations

import random
import time
from typing import Callable, Mapping

from jobledger.eventcore.classad import ClassAd, ExprTree, compile_constraint
from jobledger.eventcore.classad.env import ENV, configure

__all__ = ["to_classad", "compile_filter", "expr", "ensure_environment", "real_environment"]

_CACHE: dict[str, ExprTree] = {}
_CACHE_LIMIT = 100_000


def real_environment() -> None:
    """The process's ClassAd evaluation gets the real clock and a random generator: the one
    place that does (daemons at start-up, ``jobledger.classad`` on import; eventcore never
    reads either by itself)."""
    configure(clock=time.time, rng=random.Random())


def ensure_environment() -> None:
    """Give ClassAd evaluation a clock and a random generator if nobody has."""
    if ENV.clock is None:
        real_environment()


def expr(text: str) -> ExprTree:
    """The parsed expression for ``text`` (cached)."""
    tree = _CACHE.get(text)
    if tree is None:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        tree = _CACHE[text] = ExprTree(text)
    return tree


def to_classad(ad: Mapping[str, str]) -> ClassAd:
    """A ClassAd holding the stored ad's expressions."""
    out = ClassAd()
    for name, text in ad.items():
        out[name] = expr(text)
    return out


def compile_filter(constraint: str) -> Callable[[Mapping[str, str]], bool]:
    """A predicate over stored ads for the ClassAd ``constraint`` text."""
    ensure_environment()
    test = compile_constraint(constraint)
    return lambda ad: test(to_classad(ad))
