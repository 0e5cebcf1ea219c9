"""Builtin functions (spec section 8), looked up case-insensitively.

Most builtins take evaluated arguments: ``impl(args, ad, st)``.  A few need
the argument *expressions* (``ifThenElse``, ``unparse``, ``unresolved``,
``evalInEachContext``, ``countMatches``): ``impl(nodes, fns, ad, st)``.  An
unknown name or a wrong number of arguments gives ``error``.
"""

from __future__ import annotations

import math

from . import nodes as N
from . import evaluate as E
from . import ops
from .jobfuncs import JOB_FUNCTIONS
from .regexfuncs import REGEX_FUNCTIONS
from .strfuncs import STRING_FUNCTIONS
from .stringlists import STRINGLIST_FUNCTIONS
from .timefuncs import TIME_FUNCTIONS
from .convert import CONVERT_FUNCTIONS, to_real, to_str
from .fnutil import list_values
from .values import ERROR, UNDEF, EvalFailure, ListValue, to_bytes, wrap64

VALUE_FUNCS: dict = {}
RAW_FUNCS: dict = {}


def builtin(*names, arity=None):
    """Register an evaluated-argument builtin; ``arity`` is an int or (min, max)."""
    def deco(fn):
        lo, hi = (arity, arity) if isinstance(arity, int) else (arity or (0, 99))
        for name in names:
            VALUE_FUNCS[name.lower()] = (fn, lo, hi)
        return fn
    return deco


def raw(*names):
    def deco(fn):
        for name in names:
            RAW_FUNCS[name.lower()] = fn
        return fn
    return deco


def compile_call(node):
    name = node.name.lower()
    args = node.args
    fns = tuple(E.compile_node(a) for a in args)
    rawfn = RAW_FUNCS.get(name)
    if rawfn is not None:
        def raw_call(ad, st):
            return rawfn(args, fns, ad, st)
        return raw_call
    entry = VALUE_FUNCS.get(name)
    if entry is None:
        return _const_error
    impl, lo, hi = entry
    if not lo <= len(fns) <= hi:
        return _const_error
    n = len(fns)
    if n == 1:
        f0 = fns[0]

        def call1(ad, st):
            return impl([f0(ad, st)], ad, st)
        return call1

    def call(ad, st):
        return impl([f(ad, st) for f in fns], ad, st)
    return call


def _const_error(ad, st):
    return ERROR


def _register_tables():
    for table in (STRING_FUNCTIONS, REGEX_FUNCTIONS, STRINGLIST_FUNCTIONS, JOB_FUNCTIONS, TIME_FUNCTIONS,
                  CONVERT_FUNCTIONS):
        for name, (fn, lo, hi) in table.items():
            VALUE_FUNCS[name] = (fn, lo, hi)


_register_tables()


# -- type predicates -------------------------------------------------------

def _predicate(test):
    def pred(args, ad, st):
        return test(args[0])
    return pred


_PREDICATES = {
    "isundefined": lambda v: v is UNDEF,
    "iserror": lambda v: v is ERROR,
    "isstring": lambda v: type(v) is str,
    "isinteger": lambda v: type(v) is int,
    "isreal": lambda v: type(v) is float,
    "isboolean": lambda v: type(v) is bool,
    "islist": lambda v: type(v) is ListValue,
    "isclassad": lambda v: type(v) in E.AD_TYPES,
    "isabstime": lambda v: type(v).__name__ == "AbsTime",
    "isreltime": lambda v: type(v).__name__ == "RelTime",
}
for _name, _test in _PREDICATES.items():
    VALUE_FUNCS[_name] = (_predicate(_test), 1, 1)


# -- control ------------------------------------------------------------------

@raw("ifThenElse")
def _if_then_else(nodes, fns, ad, st):
    if len(fns) != 3:
        return ERROR
    c = fns[0](ad, st)
    if c is UNDEF:
        return UNDEF
    t = type(c)
    if t is bool or t is int or t is float:
        return fns[1](ad, st) if c else fns[2](ad, st)
    return ERROR


@builtin("debug", arity=1)
def _debug(args, ad, st):
    return args[0]


@builtin("eval", arity=1)
def _eval(args, ad, st):
    from jobledger.eventcore.errors import ClassAdParseError
    from .parser import parse_expr
    s = to_str(args[0])
    if s is None:
        return ERROR
    try:
        node = parse_expr(s)
    except ClassAdParseError:
        return ERROR
    expr = E.ExprType._from_node(node)
    expr.fn
    if st.depth + expr._h > E.MAX_EVAL_DEPTH:
        raise EvalFailure("eval() nested too deeply")
    return E.eval_attr(ad, expr, st) if ad is not None else expr.fn(ad, st)


def _ref_name(node):
    """The unparsed text of an attribute-reference argument, or None."""
    from .unparse import unparse
    if type(node) is N.Attr:
        return node.name
    if type(node) is N.Select or type(node) is N.AbsAttr:
        return unparse(node)
    return None


@raw("unparse")
def _unparse(nodes, fns, ad, st):
    from .unparse import unparse_pretty
    if len(nodes) != 1:
        return ERROR
    name = _ref_name(nodes[0])
    if name is None:
        return ERROR
    if ad is None:
        return ""
    e = ad._exprs.get(ops.ascii_lower(name))
    return "" if e is None else unparse_pretty(e.node)


@raw("unresolved")
def _unresolved(nodes, fns, ad, st):
    from .refs import unresolved_names
    if len(nodes) not in (1, 2):
        return ERROR
    name = _ref_name(nodes[0])
    if name is None:
        return ERROR
    if type(nodes[0]) is not N.Attr:
        return UNDEF
    found = _find_owner(ad, name.lower(), st)
    if found is None:
        return UNDEF
    owner, e = found
    names = unresolved_names(e.node, owner, st)
    if len(nodes) == 1:
        return ",".join(names)
    pat = fns[1](ad, st)
    if type(pat) is not str:
        raise EvalFailure("unresolved(): the pattern must be a string")
    from .regex import RegexLimit, compile_regex
    rx = compile_regex(pat, "i")
    if rx is None:
        return ERROR
    try:
        return any(rx.search(n) for n in names)
    except RegexLimit:
        return ERROR


def _find_owner(ad, ln, st):
    a = ad
    while a is not None:
        e = a._exprs.get(ln)
        if e is not None:
            return a, e
        a = a._parent
    return None


def _each_context(nodes, fns, ad, st):
    lst = fns[1](ad, st)
    if lst is UNDEF:
        return UNDEF, None
    if type(lst) is not ListValue:
        return ERROR, None
    expr_node = nodes[0]
    ref = None
    if type(expr_node) is N.Attr:
        ref = expr_node.name
    elif type(expr_node) is N.Select and type(expr_node.expr) is N.Attr \
            and expr_node.expr.name.lower() in ("my", "self"):
        ref = expr_node.name
    if ref is not None:
        found = _find_owner(ad, ref.lower(), st)
        if found is not None:
            expr_node = found[1].node
    expr = E.ExprType._from_node(expr_node)
    out = []
    for item in lst.items:
        v = item.fn(lst.scope, st)
        if type(v) in E.AD_TYPES:
            out.append(E.eval_attr(v, expr, st))
        elif v is UNDEF:
            out.append(UNDEF)
        else:
            out.append(ERROR)
    return None, out


@raw("evalInEachContext")
def _eval_in_each(nodes, fns, ad, st):
    if len(nodes) != 2:
        return ERROR
    bad, values = _each_context(nodes, fns, ad, st)
    if values is None:
        return bad
    return ListValue(tuple(E.ExprType._from_node(N.value_literal(v)) for v in values), None)


@raw("countMatches")
def _count_matches(nodes, fns, ad, st):
    if len(nodes) != 2:
        return ERROR
    bad, values = _each_context(nodes, fns, ad, st)
    if values is None:
        return 0 if bad is UNDEF else bad
    return sum(1 for v in values if ops.truth(v) is True)


# -- lists ----------------------------------------------------------------------

@builtin("size", arity=1)
def _size(args, ad, st):
    v = args[0]
    t = type(v)
    if t is ListValue:
        return len(v.items)
    if t in E.AD_TYPES:
        return len(v._exprs)
    if t is str:
        return len(to_bytes(v))
    if v is UNDEF:
        return UNDEF
    return ERROR


@builtin("member", arity=2)
def _member(args, ad, st):
    x, lst = args
    if lst is UNDEF or x is UNDEF:
        return UNDEF
    if type(lst) is not ListValue:
        return ERROR
    if x is ERROR or type(x) is ListValue or type(x) in E.AD_TYPES:
        return ERROR
    for v in list_values(lst, st):
        if ops.compare("==", v, x) is True:
            return True
    return False


@builtin("identicalMember", arity=2)
def _identical_member(args, ad, st):
    x, lst = args
    if lst is UNDEF:
        return UNDEF
    if type(lst) is not ListValue:
        return ERROR
    if type(x) is ListValue or type(x) in E.AD_TYPES:
        return ERROR
    for v in list_values(lst, st):
        if ops.identical(v, x) is True:
            return True
    return False


_CMP_OPS = {"<": "<", "<=": "<=", "==": "==", "!=": "!=", ">": ">", ">=": ">=", "is": "=?=", "isnt": "=!="}


def _any_all(args):
    """(operator, list, value) of anyCompare/allCompare, or the undefined/error result."""
    op, lst, x = args
    if op is UNDEF:
        return UNDEF
    if type(op) is not str or op not in _CMP_OPS:
        return ERROR
    if lst is UNDEF:
        return UNDEF
    if type(lst) is not ListValue:
        return ERROR
    return _CMP_OPS[op], lst, x


def _scan_compare(args, st, want_all):
    r = _any_all(args)
    if type(r) is not tuple:
        return r
    op, lst, x = r
    fn = ops.make_binary(op)
    for v in list_values(lst, st):
        c = fn(v, x)
        if c is UNDEF:
            return False
        if c is ERROR or type(c) is not bool:
            return ERROR
        if want_all and not c:
            return False
        if not want_all and c:
            return True
    return want_all


@builtin("anyCompare", arity=3)
def _any_compare(args, ad, st):
    return _scan_compare(args, st, False)


@builtin("allCompare", arity=3)
def _all_compare(args, ad, st):
    return _scan_compare(args, st, True)


def _numeric_list(args, st):
    lst = args[0]
    if lst is UNDEF:
        return UNDEF
    if type(lst) is not ListValue:
        return ERROR
    out = []
    for v in list_values(lst, st):
        if v is UNDEF:
            continue
        t = type(v)
        if t is not int and t is not float and t is not bool:
            return ERROR
        out.append(v)
    return out


def _total(vals: list):
    """The list's sum as ClassAd ``+`` adds (0 for an empty list)."""
    if not vals:
        return 0
    acc = vals[0]
    for v in vals[1:]:
        acc = ops.arith("+", acc, v)
    return acc


@builtin("sum", arity=1)
def _sum(args, ad, st):
    vals = _numeric_list(args, st)
    if type(vals) is not list:
        return vals
    return _total(vals)


@builtin("avg", arity=1)
def _avg(args, ad, st):
    vals = _numeric_list(args, st)
    if type(vals) is not list:
        return vals
    if not vals:
        return 0
    acc = _total(vals)
    if acc is ERROR:
        return ERROR
    return ops.arith("/", float(acc), float(len(vals)))


def _extreme(args, st, op):
    vals = _numeric_list(args, st)
    if type(vals) is not list:
        return vals
    if not vals:
        return UNDEF
    acc = vals[0]
    for v in vals[1:]:
        a, b = acc, v
        if type(a) is bool:
            a = int(a)
        if type(b) is bool:
            b = int(b)
        if type(a) is float or type(b) is float:
            a, b = float(a), float(b)
        better = (b < a) if op == "min" else (b > a)
        acc = b if better else a
    return acc


@builtin("min", arity=1)
def _min(args, ad, st):
    return _extreme(args, st, "min")


@builtin("max", arity=1)
def _max(args, ad, st):
    return _extreme(args, st, "max")


# -- numeric -------------------------------------------------------------------

def _rounder(how):
    def fn(args, ad, st):
        v = args[0]
        if type(v) is int:
            return v
        r = to_real(v)
        if r is None:
            return ERROR
        if r != r or math.isinf(r):
            return -9223372036854775808
        if how == "floor":
            x = math.floor(r)
        elif how == "ceil":
            x = math.ceil(r)
        else:
            x = round(r)
        if not -(1 << 63) <= x < (1 << 63):
            return -9223372036854775808
        return int(x)
    return fn


VALUE_FUNCS["floor"] = (_rounder("floor"), 1, 1)
VALUE_FUNCS["ceiling"] = (_rounder("ceil"), 1, 1)
VALUE_FUNCS["ceil"] = (_rounder("ceil"), 1, 1)
VALUE_FUNCS["round"] = (_rounder("round"), 1, 1)


@builtin("pow", arity=2)
def _pow(args, ad, st):
    b, e = args
    if type(b) is int and type(e) is int and e >= 0:
        try:
            r = math.pow(b, e)
        except OverflowError:
            return -9223372036854775808
        x = math.trunc(r + 0.5) if not math.isinf(r) else None
        if x is None or not -(1 << 63) <= x < (1 << 63):
            return -9223372036854775808
        return int(x)
    rb, re_ = to_real(b), to_real(e)
    if rb is None or re_ is None:
        return ERROR
    try:
        return math.pow(rb, re_)
    except (ValueError, ZeroDivisionError):
        if rb == 0.0 and re_ < 0:
            return math.inf
        return math.nan
    except OverflowError:
        return math.inf


def c_ceil(x: float) -> float:
    """C ``ceil``: a float, keeping the sign of zero (``ceil(-0.5)`` is ``-0.0``)."""
    if x != x or x in (math.inf, -math.inf):
        return x
    r = float(math.ceil(x))
    return math.copysign(r, x) if r == 0.0 else r


@builtin("quantize", arity=2)
def _quantize(args, ad, st):
    a, b = args
    ra = to_real(a)
    if ra is None:
        return ERROR
    if type(b) is ListValue:
        vals = list_values(b, st)
        if not vals:
            return a
        for v in vals:
            rv = to_real(v)
            if rv is None:
                return ERROR
            if rv >= ra:
                return v
        b = vals[-1]
    if type(b) is not int and type(b) is not float:
        b = to_real(b)                 # strings, booleans, times: as by real()
        if b is None:
            return ERROR
    if type(b) is int:
        if b == 0:
            return a
        if type(a) is int:
            return wrap64(ops._int_div(wrap64(a + b - 1), b) * b)
        return c_ceil(ra / b) * float(b)
    if type(b) is float:
        if abs(b) <= 1e-8:
            return a
        return c_ceil(ra / b) * b
    return ERROR


@builtin("random", arity=(0, 1))
def _random(args, ad, st):
    if not args:
        return st.env.random()
    x = args[0]
    if type(x) is int:
        if x <= 0:
            raise EvalFailure("random() of a non-positive number")
        return st.env.randrange(x)
    if type(x) is float:
        if x <= 0:
            raise EvalFailure("random() of a non-positive number")
        return st.env.random() * x
    return ERROR


@builtin("userHome", arity=(0, 2))
def _user_home(args, ad, st):
    """Home directories are not looked up (CLASSAD_ENABLE_USER_HOME is off):
    the default when it is a string, else undefined."""
    if not args:
        raise EvalFailure("userHome() needs a user name")
    if len(args) > 1 and type(args[1]) is str:
        return args[1]
    user = args[0]
    if user is UNDEF or type(user) is str:
        return UNDEF
    return ERROR


@builtin("userMap", arity=(2, 4))
def _user_map(args, ad, st):
    """No user-map files are configured: the default (4th argument) or undefined."""
    if args[0] is ERROR or args[1] is ERROR:
        return ERROR
    return args[3] if len(args) > 3 else UNDEF
