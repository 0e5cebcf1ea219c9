"""Any bytes: the readers never raise, and account for every byte they consume."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.eventcore.codecs.userlog import TextReaderState, render, scan
from tests.userlog.strategies import events

FRAGMENTS = st.one_of(
    events().map(lambda e: render(e).encode()),
    events().map(lambda e: render(e, "json").encode()),
    events().map(lambda e: render(e, "xml").encode()),
    st.binary(max_size=40),
    st.sampled_from([b"...\n", b"\n", b"... \n", b"000 (", b"001 (1.2.3) ", b"<c>", b"</c>\n",
                     b"{", b"}\n", b"\r\n", b"\xc3", b"Code 1 Subcode 2\n"]),
)


def mutated(chunks, cuts):
    data = b"".join(chunks)
    for at, length in cuts:
        if data:
            at %= len(data)
            data = data[:at] + data[at + length:]
    return data


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(FRAGMENTS, max_size=8),
       cuts=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 30)), max_size=3),
       fmt=st.sampled_from(["text", "json", "xml"]))
def test_scanning_never_raises_and_items_tile_the_consumed_bytes(chunks, cuts, fmt):
    data = mutated(chunks, cuts)
    items, end = scan(fmt, data, 0, TextReaderState())
    assert 0 <= end <= len(data)
    position = 0
    for item in items:
        assert item.offset >= position and item.end > item.offset
        if fmt == "text":
            assert item.offset == position           # text: nothing skipped silently
        position = item.end
    assert position <= end or not items
    again, end2 = scan(fmt, data, end, TextReaderState())
    assert all(i.offset >= end for i in again) and end2 >= end
