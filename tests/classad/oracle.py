"""Replaying ../shared/oracle/classad/cases.jsonl: the oracle's value encoding."""

from __future__ import annotations

import json
import math
from pathlib import Path

from jobledger.eventcore.classad import ClassAd, ExprTree, Parser, parseOne
from jobledger.eventcore.classad import evaluate as E
from jobledger.eventcore.classad.unparse import unparse_value
from jobledger.eventcore.classad.values import ERROR, UNDEF, AbsTime, EvalFailure, ListValue, RelTime
from jobledger.eventcore.errors import ClassAdParseError

CASES_PATH = Path(__file__).resolve().parents[3] / "shared" / "oracle" / "classad" / "cases.jsonl"
MAX_DEPTH = 6


def load_cases(path: Path = CASES_PATH):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def case_id(lineno: int, case: dict) -> str:
    return f"{lineno}-{case['kind']}-{case['category']}"


def _real(x: float):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "INF" if x > 0 else "-INF"
    return x


def encode(v, st_factory, depth=0):
    """The oracle's encoding of value ``v`` (elements re-evaluated fresh).

    Like the generator, containers are followed MAX_DEPTH levels deep (an ad
    can contain itself: ``self``)."""
    if depth > MAX_DEPTH:
        return {"type": "too_deep"}
    if v is UNDEF:
        return {"type": "undefined"}
    if v is ERROR:
        return {"type": "error"}
    t = type(v)
    if t is bool:
        return {"type": "bool", "value": v}
    if t is int:
        return {"type": "int", "value": v}
    if t is float:
        return {"type": "real", "value": _real(v), "text": unparse_value(v)}
    if t is str:
        return {"type": "string", "value": v}
    if t is AbsTime:
        return {"type": "abstime", "value": v.secs, "text": unparse_value(v)}
    if t is RelTime:
        return {"type": "reltime", "value": _real(v.secs), "text": unparse_value(v)}
    if t is ListValue:
        items = [_guard(lambda item=item: item.fn(v.scope, st_factory()), st_factory, depth) for item in v.items]
        return {"type": "list", "value": items, "text": unparse_value(v)}
    attrs = {}
    for ln, name in v._names.items():
        attrs[name] = _guard(lambda ln=ln: E.resolve(v, ln, st_factory()), st_factory, depth)
    return {"type": "classad", "value": attrs, "text": unparse_value(v)}


def _guard(thunk, st_factory, depth):
    try:
        return encode(thunk(), st_factory, depth + 1)
    except EvalFailure:
        return {"type": "eval_failure"}


def evaluate_encoded(expr: ExprTree, scope, target=None):
    match = E.MatchCtx(scope, target) if target is not None else None

    def st_factory():
        return E.State(match, scope)
    try:
        v = E.eval_top(expr, scope, st_factory())
    except EvalFailure:
        return {"type": "eval_failure"}
    return encode(v, st_factory)


def ad_of(text):
    return ClassAd() if text is None else ClassAd(text)


def run_eval(case):
    """(result, unparsed, unparsed_repr) as we compute them."""
    try:
        expr = ExprTree(case["expr"])
    except ClassAdParseError:
        return {"type": "parse_error"}, None, None
    scope = ad_of(case["ad"])
    target = ad_of(case["target"]) if "target" in case else None
    return evaluate_encoded(expr, scope, target), str(expr), repr(expr)


def _attr(ad, name, other):
    if name.lower() not in ad._exprs:
        return None
    return evaluate_encoded(ExprTree("MY." + name), ad, other)


def run_match(case):
    left, right = ClassAd(case["left"]), ClassAd(case["right"])
    return {
        "left_requirements": _attr(left, "Requirements", right),
        "right_requirements": _attr(right, "Requirements", left),
        "left_rank": _attr(left, "Rank", right),
        "right_rank": _attr(right, "Rank", left),
        "symmetric_match": left.symmetricMatch(right),
        "left_matches_right": left.matches(right),
        "right_matches_left": right.matches(left),
    }


def run_format(case):
    ad = ClassAd(case["ad"])
    return {"repr": repr(ad), "str": str(ad), "old": ad.printOld(), "json": ad.printJson()}


def run_parse_old(case):
    from jobledger.eventcore.classad.unparse import quote_name
    ad = parseOne(case["old"], Parser.Old)
    attrs = {k: evaluate_encoded(ExprTree("self." + quote_name(k)), ad) for k in ad.keys()}
    return {"ad": repr(ad), "attrs": attrs}


def same_value(ours, theirs, texts: bool = True) -> bool:
    """Oracle comparison rules (README 'Comparing'); ``texts=False`` ignores how
    lists and ads print (their unevaluated elements), comparing values only."""
    if ours is None or theirs is None:
        return ours is theirs
    if ours["type"] != theirs["type"]:
        return False
    t = theirs["type"]
    if t in ("undefined", "error", "eval_failure", "parse_error", "too_deep"):
        return True
    if t == "reltime" and theirs["value"] in ("INF", "-INF", "NaN"):
        return ours["value"] == theirs["value"]
    if t in ("list",):
        return ((not texts or ours["text"] == theirs["text"]) and len(ours["value"]) == len(theirs["value"])
                and all(same_value(a, b, texts) for a, b in zip(ours["value"], theirs["value"])))
    if t == "classad":
        mine = {k.lower(): v for k, v in ours["value"].items()}
        other = {k.lower(): v for k, v in theirs["value"].items()}
        return ((not texts or ours["text"] == theirs["text"]) and mine.keys() == other.keys()
                and all(same_value(mine[k], other[k], texts) for k in other))
    if ours["value"] != theirs["value"]:
        return False
    if type(ours["value"]) is not type(theirs["value"]) and not (
            isinstance(ours["value"], (int, float)) and isinstance(theirs["value"], (int, float))):
        return False
    if t == "real" and isinstance(theirs["value"], float) and theirs["value"] == 0.0:
        if math.copysign(1, ours["value"]) != math.copysign(1, theirs["value"]):
            return False
    if "text" in theirs and theirs.get("text") is not None:
        return ours.get("text") == theirs["text"]
    return True
