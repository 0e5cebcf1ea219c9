"""Matchmaking and constraints: the fast entry points other parts build on.

* ``requirements_ok(owner, other)`` -- ``owner``'s Requirements, evaluated
  with MY = owner and TARGET = other, is true or a non-zero number.
* ``symmetric_match(a, b)`` -- both directions.
* ``rank(ad, other)`` -- the negotiator's float rank (EvalFloat rules, with
  the "use the other ad's Rank when this one has none" quirk).
* ``match_many(job, machines)`` -> ``[(index, job_rank, machine_rank)]`` for
  every machine that matches the job both ways, in input order.
* ``compile_constraint(text)`` -> ``callable(ad) -> bool`` (condor_q rules:
  only true or a non-zero number selects).
* ``references(expr)`` -> attribute names an expression mentions;
  ``equality_conjuncts(expr)`` -> ``{name: literal}`` when the expression
  is ``Attr == literal && ...`` (the queue turns those into index lookups).
"""

from __future__ import annotations

from . import evaluate as E
from . import nodes as N
from .ad import ClassAd, ExprTree
from .parser import parse_expr


def _is_true(v) -> bool:
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float:
        return v != 0
    return False


def _eval_in_match(owner, other, e, ctx):
    st = E.State(ctx, owner)
    return E.eval_top(e, owner, st)


def requirements_ok(owner: ClassAd, other: ClassAd) -> bool:
    e = owner._exprs.get("requirements")
    if e is None:
        return False
    ctx = E.MatchCtx(owner, other)
    return _is_true(_eval_in_match(owner, other, e, ctx))


def symmetric_match(a: ClassAd, b: ClassAd) -> bool:
    return requirements_ok(a, b) and requirements_ok(b, a)


def _as_float(v) -> float:
    t = type(v)
    if t is bool or t is int or t is float:
        return float(v)
    return 0.0


def rank(ad: ClassAd, other: ClassAd) -> float:
    """``ad``'s Rank against ``other`` as the negotiator reads it."""
    e = ad._exprs.get("rank")
    owner, target = ad, other
    if e is None:
        e = other._exprs.get("rank")
        if e is None:
            return 0.0
        owner, target = other, ad
    ctx = E.MatchCtx(owner, target)
    return _as_float(_eval_in_match(owner, target, e, ctx))


def match_many(job: ClassAd, machines) -> list:
    """``[(index, job_rank, machine_rank)]`` of the machines matching ``job``
    both ways (Requirements of each accept the other)."""
    out = []
    job_req = job._exprs.get("requirements")
    if job_req is None:
        return out
    job_rank = job._exprs.get("rank")
    job_fn = job_req.fn
    job_h = job_req._h
    for i, m in enumerate(machines):
        mreq = m._exprs.get("requirements")
        if mreq is None:
            continue
        ctx = E.MatchCtx(job, m)
        st = E.State(ctx, job)
        st.depth = job_h
        if not _is_true(job_fn(job, st)):
            continue
        ctx2 = E.MatchCtx(m, job)
        st2 = E.State(ctx2, m)
        mfn = mreq.fn
        st2.depth = mreq._h
        if not _is_true(mfn(m, st2)):
            continue
        jr = _as_float(E.eval_top(job_rank, job, E.State(ctx, job))) if job_rank is not None \
            else rank(job, m)
        mr = rank(m, job)
        out.append((i, jr, mr))
    return out


def compile_constraint(text):
    """``callable(ad) -> bool``: True only when ``text`` evaluates to true or a
    non-zero number in the ad (undefined, error and other types select nothing).
    ``text`` may be a string, an ExprTree, or None/True (select everything)."""
    if text is None or text is True:
        return lambda ad: True
    expr = text if isinstance(text, ExprTree) else ExprTree._from_node(parse_expr(str(text)))
    fn = expr.fn
    h = expr._h

    def constraint(ad) -> bool:
        st = E.State(None, ad)
        st.depth = h
        v = fn(ad, st)
        t = type(v)
        if t is bool:
            return v
        if t is int or t is float:
            return v != 0
        return False
    constraint.expr = expr
    return constraint


def _node_of(expr):
    if isinstance(expr, ExprTree):
        return expr.node
    if isinstance(expr, N.Node):
        return expr
    return parse_expr(str(expr))


def references(expr) -> set:
    """Names (lower case) of attributes ``expr`` reads, with ``MY.``/``TARGET.``
    prefixes removed (``TARGET.x`` -> ``x``)."""
    out = set()
    stack = [_node_of(expr)]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is N.Attr or t is N.AbsAttr:
            out.add(n.name.lower())
        elif t is N.Select and type(n.expr) is N.Attr and n.expr.name.lower() in ("my", "target", "self", "other"):
            out.add(n.name.lower())
            continue
        stack.extend(N.children(n))
    return out


def calls(expr) -> set:
    """Names (lower case) of the functions ``expr`` calls."""
    out = set()
    stack = [_node_of(expr)]
    while stack:
        n = stack.pop()
        if type(n) is N.Call:
            out.add(n.name.lower())
        stack.extend(N.children(n))
    return out


def equality_conjuncts(expr):
    """``{name: value}`` when ``expr`` is a conjunction of ``Attr == literal``
    (either order, parentheses allowed, ``MY.`` allowed; literal int, str or
    bool), else None.  Strings compare case-insensitively in ClassAds: callers
    must match them that way."""
    node = _node_of(expr)
    out = {}
    stack = [node]
    while stack:
        n = stack.pop()
        while type(n) is N.Paren:
            n = n.expr
        if type(n) is N.Binary and n.op == "&&":
            stack.append(n.left)
            stack.append(n.right)
            continue
        if type(n) is not N.Binary or n.op != "==":
            return None
        name = _attr_name(n.left)
        lit = n.right
        if name is None:
            name, lit = _attr_name(n.right), n.left
        while type(lit) is N.Paren:
            lit = lit.expr
        if name is None or type(lit) is not N.Literal or type(lit.value) not in (int, str, bool):
            return None
        if name in out and out[name] != lit.value:
            return None
        out[name] = lit.value
    return out


def _attr_name(n):
    while type(n) is N.Paren:
        n = n.expr
    if type(n) is N.Attr and n.name.lower() not in E.SPECIALS:
        return n.name
    if type(n) is N.Select and type(n.expr) is N.Attr and n.expr.name.lower() in ("my", "self"):
        return n.name
    return None


__all__ = ["requirements_ok", "symmetric_match", "rank", "match_many", "compile_constraint",
           "references", "equality_conjuncts"]
