"""The quick readers (plain ad text, old-format lines kept per text) agree with the full parser."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.eventcore.classad import nodes as N
from jobledger.eventcore.classad import quickad
from jobledger.eventcore.classad.ad import parse_new_ad, parse_new_ad_fully
from jobledger.eventcore.classad.formats import parse_old_ads
from jobledger.eventcore.errors import ClassAdError

from .strategies import expressions, garbage

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = ["a", "A", "Cmd", "_x1", "true", "Is", "isnt", "'q'", "a b", "", "é", "x.y", "1a", "a==", "Rank"]
TRICKY = ["007", "0", "-0", "- 1", "-1", "--1", "1.", ".5", "-.5", "1e5", "1E+03", "-2.5e-3", "0x10",
          "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
          '"a;b"', '"a\\"b"', '"x" "y"', '"a]b"', '""', '"', "TRUE", "Undefined", "ERROR", "is", "x",
          "f(1; 2)", "[a = 1; b = 2]", "{1; 2}", "{1, 2}", "x // c", "1 /* ; */ + 2", "\u0661", "\u00b2",
          "1 2", "a = b", "x[1]", "(((1)))", "1\x1c", "\x0b2\x0c", "absTime(\"2020-01-01T00:00:00Z\")",
          "relTime(\"1:30\")", "1]", "1 ] junk ["]
PLAIN_NAMES = ["a", "A", "Cmd", "_x1", "Rank", "requirements"]
SEPARATORS = [";", "; ", ";;", " ;\n", ";\t;", "\n"]


def _ad_texts():
    item = st.tuples(st.sampled_from(NAMES), st.one_of(st.sampled_from(TRICKY), expressions(max_leaves=4)))
    body = st.lists(st.tuples(item, st.sampled_from(SEPARATORS)), max_size=5).map(
        lambda parts: "".join(f"{k} = {v}{sep}" for (k, v), sep in parts))
    plain_item = st.tuples(st.sampled_from(PLAIN_NAMES), st.one_of(
        st.sampled_from(TRICKY), expressions(max_leaves=3).filter(lambda e: "'" not in e)))
    plain_body = st.lists(st.tuples(plain_item, st.sampled_from(SEPARATORS[:3])), max_size=6).map(
        lambda parts: "".join(f"{k} = {v}{sep}" for (k, v), sep in parts))
    return st.one_of(
        st.tuples(st.sampled_from(["[", " [ ", "[;"]), plain_body, st.sampled_from(["]", " ] ", "]\n"])).map("".join),
        st.tuples(st.sampled_from(["[", " [ ", "\n[", "x[", "[;"]), body,
                  st.sampled_from(["]", " ] ", "]\n", "] junk", "]]", ""])).map("".join),
        garbage().map(lambda g: "[" + g + "]"),
        garbage())


def _outcome(parse, text):
    try:
        return [(name, node) for name, node in parse(text).attrs]
    except ClassAdError as exc:
        return type(exc)


def _same(a, b) -> bool:
    if type(a) is not list or type(b) is not list:
        return a == b
    return len(a) == len(b) and all(na == nb and N.same_as(x, y) for (na, x), (nb, y) in zip(a, b))


@SETTINGS
@given(_ad_texts())
def test_quick_ad_reading_agrees_with_the_full_parser(text):
    full = _outcome(parse_new_ad_fully, text)
    assert _same(_outcome(parse_new_ad, text), full)
    assert _same(_outcome(parse_new_ad, text), full)        # again, from the kept pieces
    if quickad.quick_new_items(text) is not None:
        assert type(full) is list


def test_plain_ads_take_the_quick_path_and_odd_ones_do_not():
    assert quickad.quick_new_items('[ Cmd = "/bin/x"; N = -3; R = 1.5E+03; T = TRUE; Req = N > 2 ]') is not None
    for odd in ('[ a = 1 // c; b = 2 ]', "[ 'a' = 1 ]", "[ a = [ b = 1; c = 2 ] ]", '[ a = "x;y" ]',
                "[ a = 007 ]", "[ true = 1 ]", "[ a = 1 ] tail"):
        assert quickad.quick_new_items(odd) is None, odd


def test_old_format_lines_kept_per_text_read_the_same():
    text = 'A = 1\nB = "x"\nC = A + 1\n# note\nbad line\nD = 2\n\nE = relTime("1:00")\n'
    first = [(repr(ad), end) for ad, end in parse_old_ads(text)]
    again = [(repr(ad), end) for ad, end in parse_old_ads(text)]
    assert first == again
    assert first[0][0] == '[ A = 1; B = "x"; C = A + 1 ]' and first[1][0] == "[ E = 6.000000000000000E+01 ]"


def test_the_kept_texts_stay_bounded():
    for i in range(quickad.CACHE_SIZE + 10):
        parse_new_ad(f"[ Id = {i}; Req = Id > {i} ]")
    assert len(quickad._pieces) <= quickad.CACHE_SIZE
    assert len(quickad._cache) <= quickad.CACHE_SIZE
    long_value = " + ".join(["Id"] * quickad.CACHE_TEXT)
    assert parse_new_ad(f"[ Big = {long_value} ]").attrs[0][0] == "Big"
    assert long_value not in quickad._cache and not any(len(k) > quickad.CACHE_TEXT for k in quickad._pieces)
