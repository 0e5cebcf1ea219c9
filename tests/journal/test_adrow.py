"""The compact ad form of queue and history rows round-trips every ad."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from daemons.adrow import decode_ad, encode_ad

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=12)


@settings(max_examples=300)
@given(st.dictionaries(names, texts, max_size=8))
def test_round_trip(ad):
    assert decode_ad(encode_ad(ad)) == ad


def test_forms():
    assert encode_ad({}) == "" and decode_ad("") == {}
    assert encode_ad({"A": "1", "B": '"x"'}) == 'A\x1f1\x1fB\x1f"x"'
    tricky = {"A": '"a\x1fb"'}
    assert encode_ad(tricky).startswith("{") and decode_ad(encode_ad(tricky)) == tricky
    assert decode_ad('{"Old":"1"}') == {"Old": "1"}     # rows written as JSON before
