"""``ClassAd`` and ``ExprTree``: the classad2-compatible objects.

A ClassAd maps names (case-insensitive, first spelling kept) to ExprTrees;
an ExprTree is an immutable parsed expression that compiles itself into a
closure the first time it is evaluated.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from jobledger.eventcore.errors import ClassAdParseError

from . import evaluate as E
from . import nodes as N
from .ops import ascii_lower
from .parser import Parser, parse_expr
from .quickad import quick_new_items
from .unparse import Unparser, quote_name, sorted_attrs, unparse, unparse_old, unparse_pretty
from .values import UNDEF, ListValue
from .lasterror import LAST_ERROR


class ExprTree:
    """A ClassAd expression: ``ExprTree("a + 1")``.

    ``eval(scope=None, target=None)`` evaluates it (with ``target``: in a
    match context, MY = scope, TARGET = target); ``repr`` is the canonical
    one-line text, ``str`` the pretty form.
    """

    __slots__ = ("node", "_fn", "_h", "_lit", "_text", "_old")

    def __init__(self, expr=None):
        if expr is None:
            node = N.Literal(UNDEF)
        elif isinstance(expr, ExprTree):
            node = expr.node
        elif isinstance(expr, str):
            node = _remember(parse_expr, expr)
        else:
            node = value_to_node(expr)
        self.node = node
        self._fn = None
        self._h = 0
        self._lit = node.value if type(node) is N.Literal else E.NOLIT
        self._text = self._old = None

    @classmethod
    def _from_node(cls, node) -> "ExprTree":
        self = object.__new__(cls)
        self.node = node
        self._fn = None
        self._h = 0
        self._lit = node.value if type(node) is N.Literal else E.NOLIT
        self._text = self._old = None
        return self

    def _share(self) -> "ExprTree":
        """A new ExprTree over the same (immutable) tree and compiled closure.

        Each ad attribute gets its own ExprTree object: the circular-reference
        guard tells expressions apart by identity, so one object must never sit
        in two places at once (classad2 copies on insertion for the same reason).
        """
        twin = object.__new__(ExprTree)
        twin.node = self.node
        twin._fn = self._fn
        twin._h = self._h
        twin._lit = self._lit
        twin._text = self._text
        twin._old = self._old
        return twin

    @property
    def fn(self):
        """The compiled closure (compiling sets ``_h``, the tree height)."""
        fn = self._fn
        if fn is None:
            h = self._h = N.height(self.node)
            fn = self._fn = E.compile_node(self.node) if h <= E.MAX_EVAL_DEPTH else E.too_deep
        return fn

    def eval(self, scope=None, target=None):
        if scope is not None and not isinstance(scope, ClassAd):
            raise TypeError("scope must be a ClassAd")
        if target is not None and not isinstance(target, ClassAd):
            raise TypeError("target must be a ClassAd")
        return to_python(E.evaluate(self, scope, target))

    def simplify(self, scope=None, target=None) -> "ExprTree":
        """The value as an expression (a literal, list or ad)."""
        v = E.evaluate(self, scope, target)
        return ExprTree._from_node(value_node(v))

    def sameAs(self, other) -> bool:
        return isinstance(other, ExprTree) and N.same_as(self.node, other.node)

    def __eq__(self, other):
        if type(self) is type(other):
            return self.sameAs(other)
        return False

    __hash__ = None

    def __repr__(self) -> str:
        text = self._text
        if text is None:
            text = self._text = unparse(self.node)
        return text

    def old_text(self) -> str:
        """The expression as the old format writes it (cached like ``repr``)."""
        text = self._old
        if text is None:
            text = self._old = unparse_old(self.node)
        return text

    def __str__(self) -> str:
        return unparse_pretty(self.node)

    def __reduce__(self):
        return (ExprTree, (repr(self),))


def _shared_exprs(exprs: dict) -> dict:
    """``{k: e._share()}`` with the sharing inlined (copying an ad is a hot
    path: each event's nested ads are copies of one converted ad)."""
    out = {}
    new = object.__new__
    for k, e in exprs.items():
        t = new(ExprTree)
        t.node = e.node
        t._fn = e._fn
        t._h = e._h
        t._lit = e._lit
        t._text = e._text
        t._old = e._old
        out[k] = t
    return out


def value_node(v) -> N.Node:
    """A node whose value is the run-time value ``v``."""
    if type(v) is ListValue:
        return N.ListExpr(tuple(item.node for item in v.items))
    if type(v) is ClassAd:
        return N.AdExpr(tuple((v._names[k], e.node) for k, e in v._exprs.items()))
    return N.value_literal(v)


def value_to_node(value) -> N.Node:
    """A Python value (as accepted by ``ClassAd.__setitem__``) as a node."""
    from . import pyvalue
    return pyvalue.to_node(value, ExprTree, ClassAd)


def to_python(v):
    from . import pyvalue
    return pyvalue.to_python(v, ExprTree, ClassAd)


class ClassAd(MutableMapping):
    """A ClassAd: ``ClassAd()``, ``ClassAd("[a = 1]")``, ``ClassAd({"a": 1})``."""

    __slots__ = ("_names", "_exprs", "_parent", "_cache", "__weakref__")

    def __init__(self, input=None):
        self._names = {}
        self._exprs = {}
        self._parent = None
        self._cache = None
        if input is None:
            return
        if isinstance(input, str):
            names, exprs = self._names, self._exprs
            items = quick_new_items(input)
            if items is not None:
                self._put_items(items)
                return
            node = _remember(parse_new_ad_fully, input)
            new_expr = ExprTree._from_node
            for name, value in node.attrs:          # names are already unique (ignoring case)
                ln = name.lower() if name.isascii() else ascii_lower(name)
                names[ln] = name
                exprs[ln] = new_expr(value)
        elif isinstance(input, dict):
            for k, v in input.items():
                self[k] = v
        elif isinstance(input, ClassAd):
            self._names.update(input._names)
            self._exprs = _shared_exprs(input._exprs)
        else:
            raise TypeError("input must be None, str, or dict")

    def _put_items(self, items) -> None:
        """Add ``(lower name, name, node, literal value or NOLIT)`` items in
        order (first spelling, last value)."""
        names, exprs, new = self._names, self._exprs, object.__new__
        for ln, name, node, lit in items:
            if ln not in names:
                names[ln] = name
            e = new(ExprTree)                       # ExprTree._from_node, inlined (the hot loop)
            e.node = node
            e._fn = None
            e._h = 0
            e._lit = lit
            e._text = e._old = None
            exprs[ln] = e

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        E.AD_TYPES.add(cls)             # subclasses are ads to the evaluator too

    @classmethod
    def _view(cls, names, exprs, parent):
        """A nested ad value: shares its attribute maps, ``parent`` is its scope."""
        self = object.__new__(cls)
        self._names = names
        self._exprs = exprs
        self._parent = parent
        self._cache = None
        return self

    def _set_node(self, name: str, node) -> None:
        ln = ascii_lower(name)
        if ln not in self._names:
            self._names[ln] = name
        self._exprs[ln] = ExprTree._from_node(node)

    def _set_expr(self, name: str, expr: ExprTree) -> None:
        ln = ascii_lower(name)
        if ln not in self._names:
            self._names[ln] = name
        self._exprs[ln] = expr._share()

    # -- mapping --------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._exprs)

    def __iter__(self):
        return iter(self.keys())

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and ascii_lower(key) in self._exprs

    def __getitem__(self, key):
        if not isinstance(key, str):
            raise TypeError("ClassAd keys are strings")
        e = self._exprs.get(ascii_lower(key))
        if e is None:
            raise KeyError(key)
        v = e._lit
        if v is not E.NOLIT:
            t = type(v)
            if t is int or t is str or t is float or t is bool:
                return v
            return to_python(v)
        t = type(e.node)
        if t is N.RelTimeLit or t is N.ListExpr or t is N.AdExpr:
            return to_python(E.evaluate(e, None, None))
        return e

    def __setitem__(self, key, value) -> None:
        if not isinstance(key, str):
            raise TypeError("ClassAd keys are strings")
        if isinstance(value, ExprTree):
            self._set_expr(key, value)
        else:
            self._set_node(key, value_to_node(value))

    def __delitem__(self, key) -> None:
        if not isinstance(key, str):
            raise TypeError("ClassAd keys are strings")
        ln = ascii_lower(key)
        if ln not in self._exprs:
            raise KeyError(key)
        del self._exprs[ln]
        del self._names[ln]

    def keys(self):
        """Names in HTCondor's order (length, then case-insensitive name)."""
        return sorted(self._names.values(), key=_attr_order)

    def values(self):
        return [self[k] for k in self.keys()]

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def clear(self) -> None:
        self._names.clear()
        self._exprs.clear()

    # -- classad2 API ---------------------------------------------------------
    def lookup(self, attr: str) -> ExprTree:
        if not isinstance(attr, str):
            raise TypeError("ClassAd keys are strings")
        e = self._exprs.get(ascii_lower(attr))
        if e is None:
            raise KeyError(attr)
        return e

    def eval(self, attr: str):
        e = self.lookup(attr)
        return to_python(E.evaluate(e, self, None))

    def matches(self, ad: "ClassAd") -> bool:
        """``ad``'s Requirements accept this ad (classad2 naming)."""
        if not isinstance(ad, ClassAd):
            raise TypeError("ad must be a ClassAd")
        e = ad._exprs.get("requirements")
        if e is None:
            return False
        v = E.eval_top(e, ad, E.State(E.MatchCtx(ad, self), ad))
        t = type(v)
        if t is bool:
            return v
        return (t is int or t is float) and v != 0

    def symmetricMatch(self, ad: "ClassAd") -> bool:
        return self.matches(ad) and ad.matches(self)

    def flatten(self, expr: ExprTree) -> ExprTree:
        if not isinstance(expr, ExprTree):
            raise TypeError("expr must be an ExprTree")
        from .refs import flatten
        return ExprTree._from_node(flatten(expr.node, self))

    def externalRefs(self, expr: ExprTree) -> list:
        if not isinstance(expr, ExprTree):
            raise TypeError("expr must be an ExprTree")
        from .refs import split_refs
        return split_refs(expr.node, self)[1]

    def internalRefs(self, expr: ExprTree) -> list:
        if not isinstance(expr, ExprTree):
            raise TypeError("expr must be an ExprTree")
        from .refs import split_refs
        return split_refs(expr.node, self)[0]

    def printOld(self) -> str:
        from .formats import print_old
        return print_old(self)

    formatOld = printOld

    def printJson(self) -> str:
        from .formats import print_json
        return print_json(self)

    formatJson = printJson

    def copy(self) -> "ClassAd":
        twin = object.__new__(ClassAd)
        twin._names = self._names.copy()
        twin._exprs = _shared_exprs(self._exprs)
        twin._parent = twin._cache = None
        return twin

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __eq__(self, other):
        """Same attribute names (ignoring case) bound to structurally equal expressions."""
        if type(self) is not type(other):
            return NotImplemented
        mine, theirs = self._exprs, other._exprs
        return mine.keys() == theirs.keys() and all(N.same_as(e.node, theirs[k].node) for k, e in mine.items())

    __hash__ = None

    def __repr__(self) -> str:
        pairs = sorted_attrs([(self._names[k], e) for k, e in self._exprs.items()])
        if not pairs:
            return "[  ]"
        return "[ " + "; ".join([quote_name(name) + " = " + repr(e) for name, e in pairs]) + " ]"

    def __str__(self) -> str:
        return Unparser("pretty").ad_items(self._pairs())

    def __reduce__(self):
        return (ClassAd, (repr(self),))

    def _pairs(self):
        names = self._names
        return [(names[k], e.node) for k, e in self._exprs.items()]


def _remember(parse, text):
    """Run ``parse(text)``; a parse error is also kept for ``lastError()``."""
    try:
        return parse(text)
    except ClassAdParseError as exc:
        LAST_ERROR[0] = exc.message
        raise


def _attr_order(name: str):
    return (len(name), name.lower())


def parse_new_ad(text: str) -> N.AdExpr:
    """The ad literal at the start of ``text`` (text after its ``]`` is ignored,
    even text that would not tokenize)."""
    items = quick_new_items(text)
    if items is None:
        return parse_new_ad_fully(text)
    attrs: dict = {}
    for low, name, node, _ in items:
        entry = attrs.get(low)
        attrs[low] = (name if entry is None else entry[0], node)
    return N.AdExpr(tuple(attrs.values()))


def parse_new_ad_fully(text: str) -> N.AdExpr:
    """``parse_new_ad`` by the full parser only (no quick path)."""
    try:
        return _parse_ad_prefix(text)
    except ClassAdParseError as exc:
        if 0 < exc.offset < len(text):
            try:
                return _parse_ad_prefix(text[:exc.offset])   # did the ad end before the bad spot?
            except ClassAdParseError:
                pass
        raise


def _parse_ad_prefix(text: str) -> N.AdExpr:
    p = Parser(text)
    tok = p.peek()
    if tok[0] != "op" or tok[1] != "[":
        p.fail("a ClassAd must start with '['")
    p.pos += 1
    try:
        return p.ad_literal()
    except RecursionError:
        raise ClassAdParseError("ad nested too deeply", text, 0) from None


E.install(ExprTree, ClassAd)

__all__ = ["ClassAd", "ExprTree", "parse_new_ad", "value_node", "to_python"]
