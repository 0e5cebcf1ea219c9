"""The compact ad form of queue and history rows round-trips every ad; JobAd reads as the merged ad."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from jobledger.daemons.storage.adrow import JobAd, decode_ad, encode_ad
from jobledger.eventcore.projections.queue import merged_ad

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


def _unique_names(ad: dict) -> dict:
    """One spelling per name, as in a ClassAd (names ignore case)."""
    out, seen = {}, set()
    for name, text in ad.items():
        if name.lower() not in seen:
            seen.add(name.lower())
            out[name] = text
    return out


ads = st.dictionaries(st.sampled_from(["A", "a", "Bb", "BB", "c", "ClusterId", "clusterid",
                                       "Owner", "x_1"]) | names, texts, max_size=6)


@settings(max_examples=300)
@given(ads, ads, st.lists(st.sampled_from(["a", "BB", "CLUSTERID", "owner", "X_1", "zz"])))
def test_job_ad_reads_as_the_merged_ad(proc, cluster, wanted):
    """A JobAd answers as the merged dict it stands for: items, case-insensitive
    lookups (the proc's attribute first) and projections."""
    proc, cluster = _unique_names(proc), _unique_names(cluster)
    merged = merged_ad(cluster, proc)
    ad = JobAd(proc, cluster)
    assert ad.merged() == merged and dict(ad) == merged and len(ad) == len(merged)
    assert all(ad[name] == merged[name] and ad.get(name) == merged[name] for name in merged)
    lower = {name.lower(): name for name in merged}          # the last spelling wins
    for name in wanted:
        found = ad.lookup(name.lower())
        key = lower.get(name.lower())
        assert found == (None if key is None else (key, merged[key]))
    if wanted:
        assert ad.project(wanted) == {lower[w.lower()]: merged[lower[w.lower()]]
                                      for w in wanted if w.lower() in lower}
    assert ad.project([]) == merged and JobAd(dict(proc)).project([]) == proc
