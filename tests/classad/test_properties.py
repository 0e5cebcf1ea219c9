"""Properties: unparsing round-trips, and the parser only ever raises our errors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.eventcore.classad import ClassAd, ExprTree
from jobledger.eventcore.classad.lexer import _careful_tokenize, _fast_tokenize
from jobledger.eventcore.classad.parser import MAX_NESTING, parse_expr
from jobledger.eventcore.errors import ClassAdError, ClassAdParseError

from . import oracle
from .strategies import CONTEXT_AD, expressions, garbage

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCOPE = ClassAd(CONTEXT_AD)


def _parse_or_none(text):
    try:
        return ExprTree(text)
    except ClassAdParseError:
        return None


def _value(expr):
    return oracle.evaluate_encoded(expr, SCOPE)


@SETTINGS
@given(expressions())
def test_unparse_then_parse_evaluates_the_same(text):
    expr = _parse_or_none(text)
    if expr is None:
        return
    expected = _value(expr)
    again = ExprTree(repr(expr))
    assert oracle.same_value(_value(again), expected, texts=False), (text, repr(expr))
    pretty = ExprTree(str(expr))
    assert oracle.same_value(_value(pretty), expected, texts=False), (text, str(expr))


@SETTINGS
@given(expressions())
def test_ads_round_trip_through_every_format(text):
    expr = _parse_or_none(text)
    if expr is None:
        return
    ad = ClassAd(CONTEXT_AD)
    ad["Z"] = expr
    expected = oracle.evaluate_encoded(ExprTree("Z"), ad)
    for text_form in (repr(ad), str(ad)):
        again = ClassAd(text_form)
        assert again.keys() == ad.keys()
        assert oracle.same_value(oracle.evaluate_encoded(ExprTree("Z"), again), expected, texts=False), text_form


@SETTINGS
@given(st.one_of(garbage(), expressions()))
def test_any_text_parses_or_raises_our_error(text):
    try:
        expr = ExprTree(text)
    except ClassAdParseError as exc:
        assert 1 <= exc.line and 1 <= exc.column
        assert str(exc).count("^") >= 1
        return
    try:
        expr.eval(SCOPE)
    except ClassAdError:
        pass


@SETTINGS
@given(st.one_of(garbage(), expressions()))
def test_both_tokenizers_agree(text):
    fast = _fast_tokenize(text)
    if fast is None:
        return
    assert [t[:2] for t in fast] == [t[:2] for t in _careful_tokenize(text)]


@pytest.mark.parametrize("opener,closer", [("(", ")"), ("{", "}"), ("[a = ", "]"), ("f(", ")"), ("-", ""),
                                           ("!", ""), ("x ?: (", ")"), ("1 ? 2 : ", ""), ("a[", "]")])
def test_nesting_limit_holds(opener, closer):
    shallow = opener * 40 + "1" + closer * 40
    parse_expr(shallow)
    for depth in (MAX_NESTING + 1, 5 * MAX_NESTING, 50_000):
        with pytest.raises(ClassAdParseError):
            parse_expr(opener * depth + "1" + closer * depth)


def test_long_flat_chains_parse_print_and_fail_evaluation_cleanly():
    chain = ExprTree(" + ".join(["1"] * 300))
    assert chain.eval() == 300
    deep = ExprTree(" + ".join(["1"] * 20_000))
    assert repr(deep).count("+") == 19_999
    with pytest.raises(ClassAdError):
        deep.eval()


@SETTINGS
@given(st.one_of(expressions(), garbage(),
                 st.lists(st.tuples(st.sampled_from(["a", "B", "c_1", "true", "is"]), expressions(max_leaves=4)),
                          max_size=4).map(lambda kv: "[" + "; ".join(f"{k} = {v}" for k, v in kv) + "]")))
def test_fast_parsing_agrees_with_careful_parsing(text):
    """Tokens from the fast path (no offsets) must build the same trees as the
    careful scanner's, and parse errors must point at the same place."""
    from jobledger.eventcore.classad.parser import Parser

    def outcome(tokens, parse):
        try:
            return ("ok", parse(Parser(text, tokens)))
        except ClassAdParseError as exc:
            return ("error", exc.offset)

    def whole_ad(p):
        tok = p.peek()
        if tok[0] != "op" or tok[1] != "[":
            p.fail("not an ad")
        p.pos += 1
        return p.ad_literal()
    try:
        careful = _careful_tokenize(text)
    except ClassAdParseError:
        return
    fast = _fast_tokenize(text)
    if fast is None:
        return
    for parse in (Parser.parse_complete, whole_ad):
        assert outcome(fast, parse) == outcome(careful, parse)
