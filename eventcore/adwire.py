"""Ads as they travel between the pool's processes: ``{attribute: expression text}``.

One shape everywhere -- the journal's job ads, the collector's daemon ads,
the negotiator's slot ads -- so nothing is parsed on the way: a value is the
right-hand side of ``Name = expr`` (``"alice"``, ``4``, ``true``,
``TARGET.RequestCpus <= Cpus``).  Daemons build their own ads from Python
values with ``exprs_of``; readers that need a value evaluate it here with
the ClassAd engine (``evaluate``, ``matches``, ``symmetric_match``) or take
literals the fast way (``literal``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Mapping

__all__ = ["NotLiteral", "ConstraintTest", "quote", "literal_text", "exprs_of", "literal", "to_classad", "evaluate", "evaluate_expr",
           "minimal_classad", "matches", "check_constraint", "symmetric_match", "match_ranked", "string_literal", "lower_names"]

_INT = re.compile(r"^-?\d+$")
_REAL = re.compile(r"^-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$")


def quote(text: str) -> str:
    """A Python string as ClassAd string-literal text."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def literal_text(value) -> str:
    """ClassAd expression text of a Python value (dict ``{"expr": text}`` = raw text)."""
    if isinstance(value, dict) and set(value) == {"expr"}:
        return value["expr"]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "real(\"NaN\")" if math.isnan(value) else ("real(\"INF\")" if value > 0 else "real(\"-INF\")")
        return repr(value)
    if isinstance(value, str):
        return quote(value)
    if value is None:
        return "undefined"
    if isinstance(value, (list, tuple)):
        return "{ " + ", ".join(literal_text(v) for v in value) + " }"
    if isinstance(value, dict):
        return "[ " + "; ".join(f"{k} = {literal_text(v)}" for k, v in value.items()) + " ]"
    raise TypeError(f"cannot write {type(value).__name__} as a ClassAd value")


def classad_exprs(ad) -> dict[str, str]:
    """The wire form of a ClassAd: each attribute's expression text."""
    return {name: str(ad.lookup(name)) for name in ad.keys()}


def exprs_of(ad: dict) -> dict[str, str]:
    """A Python-valued ad as expression text."""
    return {name: literal_text(value) for name, value in ad.items()}


_LITERALS: dict[str, object] = {}    # text -> its value (immutable), or _NOT for an expression
_LITERALS_LIMIT = 8192
_LITERAL_LONGEST = 200               # longer texts are read each time (not kept)
_NOT = object()


def literal(text: str | None):
    """The value of a literal's text without the engine; ``NotLiteral`` otherwise.

    Each text is read once (a job's end and its successor's start ask the same few
    dozen texts again and again): the values are immutable scalars."""
    if text is None:
        return None
    value = _LITERALS.get(text, _LITERALS)
    if value is _LITERALS:
        try:
            value = _read_literal(text)
        except NotLiteral:
            value = _NOT
        if len(text) <= _LITERAL_LONGEST:
            if len(_LITERALS) >= _LITERALS_LIMIT:
                _LITERALS.clear()
            _LITERALS[text] = value
    if value is _NOT:
        raise NotLiteral(text)
    return value


def _read_literal(text: str):
    t = text.strip()
    if _INT.match(t):
        return int(t)
    if len(t) >= 2 and t[0] == '"' and t[-1] == '"' and '"' not in t[1:-1].replace('\\"', ""):
        body = t[1:-1]
        return body if "\\" not in body else _unquote(t, body)
    low = t.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low == "undefined":
        return None
    if _REAL.match(t):
        return float(t)
    raise NotLiteral(text)


def string_literal(ad: Mapping[str, str], name: str) -> str | None:
    """The non-empty string literal ``ad[name]`` holds; None for anything else (missing,
    empty, another type, an expression)."""
    try:
        value = literal(ad.get(name))
    except NotLiteral:
        return None
    return value if isinstance(value, str) and value else None


def _unquote(text: str, body: str) -> str:
    """A quoted string with escapes: JSON's reading where it agrees with ClassAd's, else
    the ClassAd lexer's (octal escapes: ``"caf\\351"`` is the byte 0xE9, kept as the
    surrogate ``surrogateescape`` makes of it, as the ClassAd engine keeps it).  A text
    neither reads (a NUL escape) is no literal: the engine says what is wrong with it."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    from jobledger.eventcore.errors import ClassAdParseError
    from jobledger.eventcore.classad.lexer import unescape
    try:
        return unescape(body, text, 0)
    except ClassAdParseError as exc:
        raise NotLiteral(text) from exc


class NotLiteral(ValueError):
    """The text is an expression, not a literal: evaluate it."""


def _engine():
    from jobledger.eventcore import classad  # the engine; imported on first use
    return classad


def to_classad(exprs: Mapping[str, str]):
    """A ClassAd (the engine's) holding ``exprs``; each distinct text is parsed once
    and its (immutable) ExprTree shared by every ad that holds it."""
    ad = _engine().ClassAd()
    for name, text in exprs.items():
        ad[name] = _expr(text)
    return ad


_ANSWERS: dict[tuple, bool] = {}      # (constraint, needed attributes) -> its answer
_ANSWERS_LIMIT = 65536
_VALUES: dict[tuple, object] = {}    # (name, needed attributes) -> its scalar value


def evaluate(exprs: Mapping[str, str], name: str):
    """``name`` evaluated in the ad ``exprs``: a Python value, None for undefined/error.
    An ad with its own ``lookup`` (a queue row) is asked whatever the case: a job's own
    ``requestmemory`` hides its cluster's ``RequestMemory``, as in the chained ClassAd."""
    lookup = getattr(exprs, "lookup", None)
    if lookup is not None:
        found = lookup(name.lower())
        if found is None:
            return None
        text = found[1]
    else:
        text = exprs.get(name)
    if text is None:
        spelled = lower_names(exprs).get(name.lower())
        if spelled is None:
            return None
        text = exprs[spelled]
    try:
        return literal(text)
    except NotLiteral:
        pass
    classad = _engine()
    needed = _needed(exprs, {name.lower()})
    if not all(_pure(t) for _, t in needed):
        return _plain(_classad_of(needed).eval(name), classad)
    # job ads share their expressions (RequestMemory, RequestDisk, ...): the value is a
    # function of the texts it reads, worked out once for each (a scalar: never shared
    # mutable)
    key = (name.lower(), *needed)
    value = _VALUES.get(key, _VALUES)
    if value is not _VALUES:
        return value
    value = _plain(_classad_of(needed).eval(name), classad)
    if value is None or isinstance(value, (bool, int, float, str)):
        if len(_VALUES) >= _ANSWERS_LIMIT:
            _VALUES.clear()
        _VALUES[key] = value
    return value


def evaluate_expr(exprs: Mapping[str, str], text: str):
    """An expression ``text`` evaluated in the context of the ad ``exprs``."""
    classad = _engine()
    value = classad.ExprTree(text).eval(to_classad(exprs))
    return _plain(value, classad)


def evaluate_against(exprs: Mapping[str, str], name: str, target: Mapping[str, str]):
    """``name`` of the ad ``exprs`` evaluated with TARGET the ad ``target`` (a schedd's
    StartSchedulerUniverse against a job): a Python value, None for undefined/error."""
    from jobledger.eventcore.classad.evaluate import EvalFailure, evaluate as evaluate_tree
    classad = _engine()
    mine = to_classad(exprs)
    if name not in mine:
        return None
    try:
        value = evaluate_tree(mine.lookup(name), mine, to_classad(target))
    except (EvalFailure, RecursionError):
        return None
    return _plain(value, classad)


def _plain(value, classad):
    if isinstance(value, classad.Value):
        return None  # Undefined / Error
    if isinstance(value, (bool, int, float, str, list)):
        return value
    if isinstance(value, classad.ClassAd):
        return dict(value)
    return None  # Undefined / Error


@functools.lru_cache(maxsize=512)
def _compiled(constraint: str):
    return _engine().compile_constraint(constraint)


@functools.lru_cache(maxsize=65536)
def _expr(text: str):
    """One parsed expression per distinct text (job ads repeat theirs a lot)."""
    return _engine().ExprTree(text)


@functools.lru_cache(maxsize=65536)
def _refs(text: str) -> frozenset:
    return frozenset(_engine().references(_expr(text)))


_LOWERED: dict[tuple, dict] = {}
_LOWERED_LIMIT = 4096


def lower_names(ad: Mapping[str, str]) -> dict[str, str]:
    """Lower-case name -> name of ``ad``'s attributes (the last spelling wins), not
    to be changed.  Ads with the same names (a cluster's procs, a stream's jobs at
    the same stage) share one map: lower-casing every name of a job's ad at every
    evaluation of an expression in it was most of what that evaluation cost."""
    names = tuple(ad)
    found = _LOWERED.get(names)
    if found is None:
        if len(_LOWERED) >= _LOWERED_LIMIT:
            _LOWERED.clear()
        found = _LOWERED[names] = {name.lower(): name for name in names}
    return found


def _finder(exprs):
    """``lookup(lower_name) -> (name, text) | None`` over ``exprs``: its own
    ``lookup`` (a queue row's ``daemons.storage.adrow.JobAd``), or a lower-cased map of
    a plain dict."""
    lookup = getattr(exprs, "lookup", None)
    if lookup is not None:
        return lookup
    lower = lower_names(exprs)

    def find(name):
        key = lower.get(name)
        return None if key is None else (key, exprs[key])
    return find


def _needed(exprs, names) -> list[tuple[str, str]]:
    """(name, text) of the attributes ``names`` (lower case) and what they refer to,
    transitively, in the order met."""
    lookup = _finder(exprs)
    out, todo, seen = [], list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = lookup(name)
        if found is not None:
            out.append(found)
            todo.extend(_refs(found[1]))
    return out


def _classad_of(pairs):
    ad = _engine().ClassAd()
    for name, text in pairs:
        ad[name] = _expr(text)
    return ad


def minimal_classad(exprs: Mapping[str, str], names):
    """A ClassAd with only ``names`` (lower case) and what they refer to, transitively.

    Evaluating a constraint needs nothing else, and parsing every attribute
    of every candidate ad is what made constraint queries slow.
    """
    return _classad_of(_needed(exprs, names))


# what an expression's value may depend on beyond the attributes it names
_IMPURE = frozenset({"time", "currenttime", "timezoneoffset", "daytime", "formattime",
                     "abstime", "random"})


@functools.lru_cache(maxsize=65536)
def _pure(text: str) -> bool:
    """The value of ``text`` depends only on the attributes it names (no clock, no
    random numbers): the same texts give the same answer."""
    return not (_engine().calls(_expr(text)) & _IMPURE) and "currenttime" not in _refs(text)




def matches(constraint: str | None, exprs: dict) -> bool:
    """Does the ad satisfy the constraint (None or "" = everything)?"""
    if constraint is None or not str(constraint).strip():
        return True
    text = str(constraint)
    needed = _needed(exprs, _refs(text))
    if not (_pure(text) and all(_pure(t) for _, t in needed)):
        return bool(_compiled(text)(_classad_of(needed)))
    # a scan evaluates one constraint on ads that mostly hold the same few texts:
    # the answer is a function of those texts, so it is worked out once for each
    key = (text, *needed)
    answer = _ANSWERS.get(key)
    if answer is None:
        if len(_ANSWERS) >= _ANSWERS_LIMIT:
            _ANSWERS.clear()
        answer = _ANSWERS[key] = bool(_compiled(text)(_classad_of(needed)))
    return answer


class ConstraintTest:
    """``matches(text, ad)`` as a callable (the schedd's store filter), that can also
    say when one answer holds for every job of a cluster (``shared_answer``)."""

    __slots__ = ("text", "names")

    def __init__(self, text: str):
        self.text = text
        self.names = _refs(text)

    def __call__(self, exprs) -> bool:
        return matches(self.text, exprs)

    def shared_answer(self, cluster_ad: dict | None) -> tuple[tuple[str, ...], bool] | None:
        """``(names, answer)``: ``answer`` is the test's answer for every job of a
        cluster with ad ``cluster_ad`` whose own attributes include none of
        ``names`` (lower case: what the test reads, transitively, through the
        cluster ad); None when no answer can be shared (the clock, random)."""
        ad = cluster_ad or {}
        needed = _needed(ad, self.names)
        if not (_pure(self.text) and all(_pure(t) for _, t in needed)):
            return None
        names = set(self.names)
        for _, text in needed:
            names.update(_refs(text))
        return tuple(sorted(names)), matches(self.text, ad)


def check_constraint(constraint: str) -> None:
    """Raise the engine's parse error if ``constraint`` is not an expression."""
    if constraint and constraint.strip():
        _compiled(constraint)


def symmetric_match(left: dict, right: dict) -> bool:
    """Requirements of each ad true against the other (the negotiator's test)."""
    return bool(_engine().symmetric_match(to_classad(left), to_classad(right)))


def match_ranked(job: dict, machines: list[dict]) -> list[tuple[int, float, float]]:
    """``[(index, job_rank, machine_rank)]`` of the machines that match ``job`` both ways."""
    classad = _engine()
    return classad.match_many(to_classad(job), [to_classad(m) for m in machines])
