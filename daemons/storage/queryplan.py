"""Turn a job constraint into SQL over the queue's indexes plus a residual filter.

``plan(constraint)`` splits the constraint at its top-level ``&&``.  Each
conjunct of the form ``Attr == literal`` (or ``literal == Attr``) where
``Attr`` is ``ClusterId``, ``ProcId``, ``JobStatus`` or ``Owner`` (any case)
and the literal an integer or a string becomes a SQL condition on the
indexed columns; so do ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``=?=`` and
``=!=`` between ClusterId, ProcId or JobStatus and an integer (the queue
always holds them as integers, so the SQL comparison is the ClassAd one).
If anything else remains, the whole constraint is also evaluated on each
candidate ad (``Plan.residual``), so the answer is always exactly what the
ClassAd evaluation says.
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

__all__ = ["Plan", "plan", "split_conjuncts"]

_COLUMNS = {"clusterid": "cluster", "procid": "proc", "jobstatus": "status", "owner": "owner"}
# MY.Attr is the ad's own attribute (any case); TARGET.Attr is undefined in a query
_NAME = r"(?:[Mm][Yy]\s*\.\s*)?([A-Za-z_][A-Za-z0-9_]*)"
_LIT = r"(-?\d+|\"(?:[^\"\\]|\\.)*\")"
_OP = r"(==|!=|<=|>=|<|>|=\?=|=!=)"
_EQ_LEFT = re.compile(rf"^\(*\s*{_NAME}\s*{_OP}\s*{_LIT}\s*\)*$", re.S)
_EQ_RIGHT = re.compile(rf"^\(*\s*{_LIT}\s*{_OP}\s*{_NAME}\s*\)*$", re.S)
# ClassAd operator -> SQL operator, for integer columns (=?= is == on an integer
# that is always there); the mirror image when the literal comes first
_SQL_OPS = {"==": "=", "=?=": "=", "!=": "!=", "=!=": "!=", "<": "<", "<=": "<=",
            ">": ">", ">=": ">="}
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


class Plan(NamedTuple):
    where: str                 # SQL condition on queue_jobs (alias j), "1" for all
    params: tuple
    residual: str | None       # constraint text still to evaluate per ad, or None


def split_conjuncts(text: str) -> list[str]:
    """Top-level ``&&`` parts of ``text`` (strings and parentheses respected)."""
    parts, depth, start, i, n = [], 0, 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "&" and depth == 0 and text.startswith("&&", i):
            parts.append(text[start:i])
            start = i + 2
            i += 1
        elif ch == "|" and depth == 0 and text.startswith("||", i):
            return [text]  # a top-level || : not a conjunction
        elif ch == "?" and depth == 0 and not text.startswith("=?=", i - 1):
            return [text]  # a top-level conditional binds looser than &&
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _indexed(conjunct: str):
    for pattern, name_first in ((_EQ_LEFT, True), (_EQ_RIGHT, False)):
        m = pattern.match(conjunct)
        if m:
            op = m.group(2)
            name, lit = (m.group(1), m.group(3)) if name_first else (m.group(3), m.group(1))
            if not name_first:
                op = _MIRROR.get(op, op)
            column = _COLUMNS.get(name.lower())
            if column is None:
                return None
            if lit.startswith('"'):
                if column != "owner" or op != "==":
                    return None  # ClusterId == "1" is not an integer comparison
                value = lit[1:-1].replace('\\"', '"').replace("\\\\", "\\")
            else:
                value = int(lit)
                if column == "owner" or not -2**63 <= value < 2**63:
                    return None   # beyond SQLite's integers: the ClassAd engine decides
            return f"j.{column} {_SQL_OPS[op]} ?", value
    return None


_PLANS: dict[str, Plan] = {}
_PLANS_LIMIT, _PLANNED_TEXT = 1024, 1000    # plans kept; longest constraint text kept


def plan(constraint: str | None) -> Plan:
    """The SQL part and the residual of ``constraint`` (None/"" = all jobs).  A short
    text's plan is kept: the schedd asks the same few at every job's end (the next
    idle job of a cluster)."""
    key = constraint or ""
    if type(key) is not str:
        return _plan(key)
    found = _PLANS.get(key)
    if found is None:
        found = _plan(key)
        if len(key) <= _PLANNED_TEXT:
            if len(_PLANS) >= _PLANS_LIMIT:
                _PLANS.clear()
            _PLANS[key] = found
    return found


def _plan(constraint: str) -> Plan:
    text = constraint.strip()
    if not text or text.lower() == "true":
        return Plan("1", (), None)
    conditions, params, rest = [], [], []
    for conjunct in split_conjuncts(text):
        hit = _indexed(conjunct)
        if hit is None:
            rest.append(conjunct)
        else:
            conditions.append(hit[0])
            params.append(hit[1])
    where = " AND ".join(conditions) or "1"
    return Plan(where, tuple(params), text if rest else None)


Predicate = Callable[[dict], bool]
