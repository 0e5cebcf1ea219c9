"""Compiling expression trees into Python closures, and name resolution.

``compile_node(node)`` returns ``fn(ad, st) -> value``: ``ad`` is the current
ad (or None when there is no scope), ``st`` the per-evaluation ``State``
(match context, circularity guard, depth, environment).  Parse once, compile
once, evaluate many times.

Scoping follows HTCondor (spec section 4.3): the current ad's own
attributes, then the special names (``self my parent toplevel root
CurrentTime``) relative to it, then enclosing ads, then -- only in a match
context and only for names evaluated directly in one of the two matched ads
-- the other ad.  The synthetic match root of section 11 is virtual: its
``other/target/my/ad`` names are answered directly and the real ads are only
built when something (``parent``, ``toplevel``, ``.x``, ``symmetricMatch``)
needs them.

Limits: ``MAX_EVAL_DEPTH`` nested levels per evaluation (expression heights
summed along attribute chains); deeper evaluations *fail*
(``EvalFailure``), like the reference.
"""

from __future__ import annotations

from . import nodes as N
from . import ops
from .env import ENV
from .values import ERROR, UNDEF, EvalFailure, ListValue

MAX_EVAL_DEPTH = 400
ROOT_NAMES = frozenset(("symmetricmatch", "leftmatchesright", "rightmatchesleft", "leftrankvalue",
                        "rightrankvalue", "lctx", "rctx", "left", "right"))

# Filled in by ad.py (avoids an import cycle): the ExprTree and ClassAd classes.
ExprType = None
AdType = None
AD_TYPES: set = set()          # ClassAd and its subclasses (type(v) in AD_TYPES is fast)


def install(expr_type, ad_type):
    global ExprType, AdType
    ExprType = expr_type
    AdType = ad_type
    AD_TYPES.add(ad_type)


class MatchCtx:
    """The two ads of a match; the synthetic root and contexts are lazy."""

    __slots__ = ("left", "right", "_root")

    def __init__(self, left, right):
        self.left = left
        self.right = right
        self._root = None

    def root_ad(self):
        if self._root is None:
            self._root = _build_match_root(self.left, self.right)
        return self._root

    def ctx_ad(self, side_ad):
        """``lCtx`` for the left ad, ``rCtx`` for the right one (real ads)."""
        root = self.root_ad()
        name = "lctx" if side_ad is self.left else "rctx"
        cached = root._cache.get(name)
        if cached is None:
            cached = root._exprs[name].fn(root, State(self))
            root._cache[name] = cached
        return cached


_MATCH_ROOT_TEXT = (
    "[ symmetricMatch = RIGHT.requirements && LEFT.requirements; "
    "leftMatchesRight = RIGHT.requirements; rightMatchesLeft = LEFT.requirements; "
    "leftRankValue = LEFT.rank; rightRankValue = RIGHT.rank; "
    "lCtx = [ other = .RIGHT; target = .RIGHT; my = .LEFT; ad = .LEFT ]; "
    "rCtx = [ other = .LEFT; target = .LEFT; my = .RIGHT; ad = .RIGHT ] ]")


def _build_match_root(left, right):
    root = AdType(_MATCH_ROOT_TEXT)
    root._set_node("LEFT", N.AdRef(left))
    root._set_node("RIGHT", N.AdRef(right))
    root._cache = {}
    return root


class State:
    """Per-evaluation state."""

    __slots__ = ("match", "inprog", "depth", "env", "scope")

    def __init__(self, match=None, scope=None, env=ENV):
        self.match = match
        self.inprog = set()
        self.depth = 0
        self.env = env
        self.scope = scope

    def root(self):
        if self.match is not None:
            return self.match.root_ad()
        a = self.scope
        if a is None:
            return None
        while a._parent is not None:
            a = a._parent
        return a


def too_deep(ad, st):
    """Stands in for the closure of a tree taller than MAX_EVAL_DEPTH."""
    raise EvalFailure(f"evaluation nested deeper than {MAX_EVAL_DEPTH} levels")


NOLIT = object()    # ExprTree._lit of anything but a literal


def eval_attr(ad, e, st):
    """Evaluate attribute expression ``e`` of ``ad`` (circularity -> UNDEF)."""
    v = e._lit
    if v is not NOLIT:
        return v
    k = id(e)
    inprog = st.inprog
    if k in inprog:
        return UNDEF
    fn = e._fn
    if fn is None:
        fn = e.fn
    h = e._h
    d = st.depth + h
    if d > MAX_EVAL_DEPTH:
        raise EvalFailure(f"evaluation nested deeper than {MAX_EVAL_DEPTH} levels")
    inprog.add(k)
    st.depth = d
    v = fn(ad, st)
    st.depth = d - h
    inprog.discard(k)
    return v


def effective_parent(a, st):
    """``a``'s parent scope; during a match the two ads' parents are their
    contexts (lCtx/rCtx), whatever parents they have outside the match."""
    m = st.match
    if m is not None and (a is m.left or a is m.right):
        return m.ctx_ad(a)
    return a._parent


def _special_self(a, st):
    return a


def _special_parent(a, st):
    p = effective_parent(a, st)
    return UNDEF if p is None else p


def _special_root(a, st):
    if st.match is not None:
        return st.match.root_ad()
    while a._parent is not None:
        a = a._parent
    return a


def _special_time(a, st):
    return int(st.env.now())


SPECIALS = {"self": _special_self, "my": _special_self, "parent": _special_parent,
            "toplevel": _special_root, "root": _special_root, "currenttime": _special_time}


def tail(start, last, ln, st, fallback):
    """Lookup past the outermost ad ``last`` of ``start``'s chain."""
    m = st.match
    if m is None:
        return UNDEF
    if last is m.left:
        other = m.right
    elif last is m.right:
        other = m.left
    else:
        return UNDEF
    if ln == "target" or ln == "other":
        return other
    if ln == "ad" or ln == "my":
        return last
    if ln in ROOT_NAMES:
        root = m.root_ad()
        return eval_attr(root, root._exprs[ln], st)
    if fallback and start is last:
        b = other
        while b is not None:
            e = b._exprs.get(ln)
            if e is not None:
                return eval_attr(b, e, st)
            b = b._parent
    return UNDEF


def resolve(ad, ln, st, fallback=False):
    """Value of the name ``ln`` (lower case) seen from ``ad`` (spec 4.3)."""
    if ad is None:
        return UNDEF
    e = ad._exprs.get(ln)
    if e is not None:
        v = e._lit
        return v if v is not NOLIT else eval_attr(ad, e, st)
    special = SPECIALS.get(ln)
    if special is not None:
        return special(ad, st)
    a = ad
    m = st.match
    while True:
        p = a._parent
        if p is None or (m is not None and (a is m.left or a is m.right)):
            return tail(ad, a, ln, st, fallback)
        a = p
        e = a._exprs.get(ln)
        if e is not None:
            return eval_attr(a, e, st)


# -- compilation ------------------------------------------------------------

def compile_node(node):
    """``fn(ad, st) -> value`` for ``node``."""
    return _COMPILERS[type(node)](node)


def _c_literal(node):
    v = node.value

    def literal(ad, st):
        return v
    literal.const = v
    return literal


def _c_reltime_lit(node):
    v = float(node.secs)

    def reltime_literal(ad, st):
        return v
    reltime_literal.const = v
    return reltime_literal


def _c_attr(node):
    ln = node.name.lower()
    special = SPECIALS.get(ln)

    def attr(ad, st):
        if ad is None:
            return UNDEF
        e = ad._exprs.get(ln)
        if e is not None:
            v = e._lit
            return v if v is not NOLIT else eval_attr(ad, e, st)
        if special is not None:
            return special(ad, st)
        a = ad
        m = st.match
        while True:
            p = a._parent
            if p is None or (m is not None and (a is m.left or a is m.right)):
                return tail(ad, a, ln, st, True)
            a = p
            e = a._exprs.get(ln)
            if e is not None:
                return eval_attr(a, e, st)
    return attr


def _c_absattr(node):
    ln = node.name.lower()

    def absolute(ad, st):
        root = st.root()
        if root is None:
            raise EvalFailure(f"absolute reference .{node.name} without a root scope")
        return resolve(root, ln, st)
    return absolute


def select_value(base, ln, st):
    if type(base) in AD_TYPES:
        return resolve(base, ln, st)
    if base is UNDEF or base is ERROR:
        return base
    if type(base) is ListValue:
        out = []
        for item in base.items:
            v = item.fn(base.scope, st)
            out.append(ExprType._from_node(N.value_literal(select_value(v, ln, st) if (
                type(v) in AD_TYPES or type(v) is ListValue or v is UNDEF) else ERROR)))
        return ListValue(tuple(out), None)
    return ERROR


def _c_select(node):
    base_fn = compile_node(node.expr)
    ln = node.name.lower()
    inner = node.expr
    if type(inner) is N.Attr and inner.name.lower() in ("target", "other"):
        # TARGET.x: the other ad of a match unless the scope defines TARGET
        tname = inner.name.lower()

        def target_select(ad, st):
            m = st.match
            if m is not None and ad is not None and tname not in ad._exprs:
                if ad is m.left:
                    return resolve(m.right, ln, st)
                if ad is m.right:
                    return resolve(m.left, ln, st)
            return select_value(base_fn(ad, st), ln, st)
        return target_select

    if type(inner) is N.Attr and inner.name.lower() in ("my", "self"):
        # MY.x: the current ad itself unless it defines an attribute MY
        mname = inner.name.lower()

        def my_select(ad, st):
            if ad is not None and mname not in ad._exprs:
                e = ad._exprs.get(ln)
                if e is not None:
                    v = e._lit
                    return v if v is not NOLIT else eval_attr(ad, e, st)
                return resolve(ad, ln, st)
            return select_value(base_fn(ad, st), ln, st)
        return my_select

    def select(ad, st):
        base = base_fn(ad, st)
        if type(base) in AD_TYPES:
            return resolve(base, ln, st)
        return select_value(base, ln, st)
    return select


def subscript_value(base, index, st):
    if base is ERROR or index is ERROR:
        return ERROR
    if base is UNDEF or index is UNDEF:
        return UNDEF
    tb = type(base)
    if tb is ListValue:
        if type(index) is not int:
            return ERROR
        i = index & 0xFFFFFFFF
        if i > 0x7FFFFFFF:
            return ERROR
        if i >= len(base.items):
            return ERROR
        return base.items[i].fn(base.scope, st)
    if tb in AD_TYPES:
        if type(index) is not str:
            return ERROR
        e = base._exprs.get(ops.ascii_lower(index))
        if e is None:
            return UNDEF
        return eval_attr(base, e, st)
    return ERROR


def _c_subscript(node):
    base_fn = compile_node(node.expr)
    index_fn = compile_node(node.index)

    def subscript(ad, st):
        return subscript_value(base_fn(ad, st), index_fn(ad, st), st)
    return subscript


def _c_unary(node):
    f = compile_node(node.operand)
    op = {"-": ops.negate, "+": ops.plus, "!": ops.logical_not, "~": ops.bit_not}[node.op]
    const = getattr(f, "const", None)
    if const is not None and _simple(const):
        return _c_literal(N.Literal(op(const)))

    def unary(ad, st):
        return op(f(ad, st))
    return unary


def _simple(v) -> bool:
    t = type(v)
    return t is int or t is float or t is str or t is bool or v is UNDEF or v is ERROR


def _c_binary(node):
    op = node.op
    lf = compile_node(node.left)
    rf = compile_node(node.right)
    if op == "&&":
        return _c_and(lf, rf)
    if op == "||":
        return _c_or(lf, rf)
    fn = ops.make_binary(op)
    lc, rc = getattr(lf, "const", None), getattr(rf, "const", None)
    if lc is not None and rc is not None and _simple(lc) and _simple(rc):
        return _c_literal(N.Literal(fn(lc, rc)))
    fast = _FAST.get(op)
    if fast is not None:
        return fast(lf, rf, fn)

    def binary(ad, st):
        return fn(lf(ad, st), rf(ad, st))
    return binary


def _fast_cmp(pyop):
    def make(lf, rf, slow):
        def compare(ad, st):
            a = lf(ad, st)
            b = rf(ad, st)
            ta = type(a)
            if ta is type(b) and (ta is int or ta is float):
                return pyop(a, b)
            return slow(a, b)
        return compare
    return make


def _fast_eq_str(lf, rf, slow):
    def equal(ad, st):
        a = lf(ad, st)
        b = rf(ad, st)
        ta = type(a)
        if ta is type(b):
            if ta is int or ta is float:
                return a == b
            if ta is str:
                return a == b or ops.ascii_lower(a) == ops.ascii_lower(b)
        return slow(a, b)
    return equal


def _fast_add(lf, rf, slow):
    def add(ad, st):
        a = lf(ad, st)
        b = rf(ad, st)
        if type(a) is int and type(b) is int:
            r = a + b
            if -9223372036854775808 <= r <= 9223372036854775807:
                return r
        return slow(a, b)
    return add


def _make_fast():
    import operator as o
    return {"<": _fast_cmp(o.lt), "<=": _fast_cmp(o.le), ">": _fast_cmp(o.gt), ">=": _fast_cmp(o.ge),
            "==": _fast_eq_str, "+": _fast_add}


_FAST = _make_fast()


def _c_and(lf, rf):
    def and_(ad, st):
        a = lf(ad, st)
        if a is True:
            b = rf(ad, st)
            if b is True or b is False or b is UNDEF or b is ERROR:
                return b
            tb = type(b)
            if tb is int or tb is float:
                return b != 0
            return ERROR
        if a is False:
            return False
        ta = type(a)
        if ta is int or ta is float:
            if a == 0:
                return False
            b = rf(ad, st)
            if b is True or b is False or b is UNDEF or b is ERROR:
                return b
            tb = type(b)
            if tb is int or tb is float:
                return b != 0
            return ERROR
        if a is not UNDEF:
            return ERROR
        b = ops.truth(rf(ad, st))
        if b is False:
            return False
        if b is True or b is UNDEF:
            return UNDEF
        return ERROR
    return and_


def _c_or(lf, rf):
    def or_(ad, st):
        a = ops.truth(lf(ad, st))
        if a is True:
            return True
        if a is False:
            return ops.truth(rf(ad, st))
        if a is ERROR:
            return ERROR
        b = ops.truth(rf(ad, st))
        if b is True:
            return True
        if b is False or b is UNDEF:
            return UNDEF
        return ERROR
    return or_


def _c_cond(node):
    cf = compile_node(node.cond)
    tf = compile_node(node.then)
    of = compile_node(node.other)

    def conditional(ad, st):
        c = cf(ad, st)
        if c is True:
            return tf(ad, st)
        if c is False:
            return of(ad, st)
        t = type(c)
        if t is int or t is float:
            return tf(ad, st) if c != 0 else of(ad, st)
        if c is UNDEF:
            return UNDEF
        return ERROR
    return conditional


def _c_elvis(node):
    lf = compile_node(node.left)
    rf = compile_node(node.right)

    def elvis(ad, st):
        v = lf(ad, st)
        if v is UNDEF:
            return rf(ad, st)
        return v
    return elvis


def _c_paren(node):
    return compile_node(node.expr)


def _c_call(node):
    from .functions import compile_call
    return compile_call(node)


def _c_list(node):
    items = tuple(ExprType._from_node(n) for n in node.items)

    def list_literal(ad, st):
        return ListValue(items, ad)
    return list_literal


def _c_ad(node):
    names = {}
    exprs = {}
    for name, value in node.attrs:
        ln = ops.ascii_lower(name)
        names[ln] = name
        exprs[ln] = ExprType._from_node(value)

    def ad_literal(ad, st):
        return AdType._view(names, exprs, ad)
    return ad_literal


def _c_adref(node):
    target = node.ad

    def adref(ad, st):
        return target
    return adref


_COMPILERS = {
    N.Literal: _c_literal, N.RelTimeLit: _c_reltime_lit, N.Attr: _c_attr, N.AbsAttr: _c_absattr,
    N.Select: _c_select, N.Subscript: _c_subscript, N.Unary: _c_unary, N.Binary: _c_binary,
    N.Cond: _c_cond, N.Elvis: _c_elvis, N.Paren: _c_paren, N.Call: _c_call, N.ListExpr: _c_list,
    N.AdExpr: _c_ad, N.AdRef: _c_adref,
}


def evaluate(expr, scope=None, target=None, env=ENV):
    """Value of ExprTree ``expr`` with MY = ``scope`` (and TARGET = ``target``)."""
    match = MatchCtx(scope, target) if target is not None else None
    st = State(match, scope, env)
    return eval_top(expr, scope, st)


def eval_top(expr, scope, st):
    fn = expr.fn
    if expr._h > MAX_EVAL_DEPTH:
        raise EvalFailure(f"evaluation nested deeper than {MAX_EVAL_DEPTH} levels")
    st.depth = expr._h
    try:
        return fn(scope, st)
    except RecursionError:
        raise EvalFailure("evaluation nested too deeply") from None


__all__ = ["compile_node", "evaluate", "eval_top", "resolve", "State", "MatchCtx"]
