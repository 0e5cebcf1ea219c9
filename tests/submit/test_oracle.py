"""Every case of ../shared/oracle/submit against our Submit.

Fields: construction, keys, dict, len, str, getQArgs, expand, getitem,
itemdata, itemdata_alt, and (where recorded) the per-job attribute values
of the jobs the description makes.
"""

from __future__ import annotations

import pytest

from jobledger.eventcore.errors import SubmitError
from jobledger import Submit

from .conftest import corpus_cases, load_case, outcome, same_error

CASES = corpus_cases()
# Cases whose constructor error message we deliberately word differently
# (see test_deliberate_message_difference).
REWORDED = {"s20_bad_line"}


def _construct(name):
    text, expected = load_case(name)
    if expected["construct"]["ok"]:
        return Submit(text), expected
    with pytest.raises(ValueError) as info:
        Submit(text)
    assert isinstance(info.value, SubmitError)
    if name not in REWORDED:
        assert same_error(info.value, expected["construct"]["error"])
    return None, expected


def test_corpus_is_there():
    assert len(CASES) >= 22


@pytest.mark.parametrize("name", CASES)
def test_mapping_view(name, in_corpus):
    sub, expected = _construct(name)
    if sub is None:
        return
    assert list(sub.keys()) == expected["keys"]
    assert dict(sub) == expected["dict"]
    assert len(sub) == expected["len"]
    assert str(sub) == expected["str"]
    assert sub.getQArgs() == expected["qargs"]


@pytest.mark.parametrize("name", CASES)
def test_expand_and_getitem(name, in_corpus):
    sub, expected = _construct(name)
    if sub is None:
        return
    for key, want in expected["expand"].items():
        got = outcome(lambda: sub.expand(key))
        if "error" in want:
            assert "error" in got, (key, got)
            assert got["error"]["type"] == want["error"]["type"]
            assert got["error"]["message"] == want["error"]["message"]
        else:
            assert got == want, key
    for key, want in expected.get("getitem", {}).items():
        assert outcome(lambda: sub[key]) == want, key


def _rows(sub, qargs=None):
    it = sub.itemdata(qargs) if qargs is not None else sub.itemdata()
    return None if it is None else list(it)


def _check_rows(sub, want, qargs=None):
    if isinstance(want, dict) and "error" in want:
        with pytest.raises(ValueError) as info:
            _rows(sub, qargs)
        assert same_error(info.value, want["error"]), str(info.value)
    else:
        assert _rows(sub, qargs) == want


@pytest.mark.parametrize("name", CASES)
def test_itemdata(name, in_corpus):
    sub, expected = _construct(name)
    if sub is None:
        return
    _check_rows(sub, expected["itemdata"])
    for qargs, want in expected.get("itemdata_alt", {}).items():
        _check_rows(sub, want, qargs)


@pytest.mark.parametrize("name", CASES)
def test_jobs(name, in_corpus):
    sub, expected = _construct(name)
    jobs = expected.get("jobs")
    if sub is None or jobs is None:
        return
    if "skipped" in jobs:
        # htcondor2's Schedd.submit would refuse this statement: so do we.
        with pytest.raises(SubmitError):
            list(sub.jobs(clusterid=1, qdate=1700000000, owner="oracle"))
        return
    if "error" in jobs:
        with pytest.raises(SubmitError) as info:
            list(sub.jobs(clusterid=1, qdate=1700000000, owner="oracle"))
        assert jobs["error"]["message"].split("\n")[0] in str(info.value)
        return
    ads = list(sub.jobs(clusterid=1, qdate=1700000000, owner="oracle"))
    assert len(ads) == len(jobs)
    for ad, want in zip(ads, jobs):
        got = {attr: repr(ad.lookup(attr)) for attr in want}
        assert got == want
        for attr in ("Args", "Arguments"):
            assert (attr in ad) == (attr in want), attr


def test_deliberate_message_difference(in_corpus):
    """s20_bad_line: htcondor2 says only "parse_up_to_q_line() failed"; we
    keep the exception type (a ValueError) but name the line and its text,
    as condor_submit does, because that is what a user needs to fix it."""
    text, expected = load_case("s20_bad_line")
    assert expected["construct"]["error"] == {"type": "ValueError", "message": "parse_up_to_q_line() failed"}
    with pytest.raises(ValueError) as info:
        Submit(text)
    err = info.value
    assert isinstance(err, SubmitError)
    assert err.line == 3 and err.text == "this line has no equals sign"
    assert "<submit>:3:" in str(err)
