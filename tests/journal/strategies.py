"""Hypothesis strategies for journal records."""

from __future__ import annotations

from hypothesis import strategies as st

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import (
    ACTIONS, ActionRecord, ClusterAd, LeaveQueue, ProcAd, ProcBlock, SetAttributes, quote_string,
)

from tests.journal.helpers import EVENT_ATTRS, event

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"),
                max_size=20)
exprs = st.one_of(st.integers(-10**12, 10**12).map(str), texts.map(quote_string),
                  st.sampled_from(["true", "false", "undefined", "MY.X + 1", "{ 1, 2 }"]))
ads = st.dictionaries(names, exprs, max_size=6)
jobs = st.builds(JobId, st.integers(1, 50), st.integers(0, 20))
keys = st.one_of(st.none(), st.text(min_size=1, max_size=12))


@st.composite
def event_records(draw):
    job = draw(jobs)
    number = draw(st.sampled_from(sorted(EVENT_ATTRS)))
    record = event(job, number, draw(st.integers(0, 2**31)))
    return record.__class__(record.job, record.event, imported=draw(st.booleans()),
                            key=draw(keys))


@st.composite
def proc_blocks(draw):
    """A block of procs: attributes some share, some their own, one SUBMIT event."""
    cluster = draw(st.integers(1, 50))
    procs = draw(st.lists(st.integers(0, 20), min_size=1, max_size=5, unique=True))
    shared = draw(ads)
    block_ads = [dict(shared, **draw(ads), ProcId=str(proc)) for proc in procs]
    submit = event(JobId(cluster, procs[0]), 0, draw(st.integers(0, 2**31))).event
    return ProcBlock.factored(cluster, procs, block_ads, submit, key=draw(keys))


def records():
    return st.one_of(
        st.builds(ClusterAd, st.integers(1, 50), ads, key=keys),
        st.builds(ProcAd, jobs, ads, key=keys),
        st.builds(SetAttributes, jobs, ads, st.lists(names, max_size=3).map(tuple),
                  by=st.one_of(st.none(), texts), key=keys),
        event_records(),
        st.builds(ActionRecord, jobs, st.sampled_from(ACTIONS), st.one_of(st.none(), texts),
                  st.one_of(st.none(), texts), key=keys),
        st.builds(LeaveQueue, jobs, key=keys),
        proc_blocks(),
    )
