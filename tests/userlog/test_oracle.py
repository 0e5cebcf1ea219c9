"""Every oracle log reads into exactly the events htcondor2.JobEventLog reported.

Compared per event: type, cluster, proc, timestamp, every attribute (key,
value and Python type), the end offset and ``str(event)`` (HTCondor's
re-rendering).  The year for legacy dates is the corpus's generation year.
Cases where we deliberately read better than HTCondor are excluded here and
pinned one by one in test_deviations.py.
"""

from __future__ import annotations

import json

import pytest

from jobledger.eventcore.errors import UserLogReadError
from tests.conftest import ORACLE
from tests.userlog.oracle import event_record, oracle_events, oracle_outcomes, read_all, typed
from jobledger.tracking.jobeventlog import JobEventLog

pytestmark = pytest.mark.usefixtures("utc")  # the oracle answers were recorded in UTC

MANIFEST = json.loads((ORACLE / "userlog" / "manifest.json").read_text("utf-8"))
YEAR = MANIFEST["generated_year"]
# Deliberate fixes of HTCondor reader bugs, each pinned with its reason in
# test_deviations.py (which also checks the rest of those logs).
DEVIATIONS = {"crash_then_append", "data_reuse_as_written", "terminated_variants"}
CASES = [c["name"] for c in MANIFEST["cases"] if c["name"] not in DEVIATIONS]


def test_every_case_is_checked_somewhere():
    assert len(CASES) + len(DEVIATIONS) == len(MANIFEST["cases"])


@pytest.mark.parametrize("name", CASES)
def test_events_match_the_oracle(oracle_dir, name):
    want = oracle_events(oracle_dir, name)
    got = read_all(oracle_dir / "userlog" / f"{name}.log", YEAR)
    assert len(got) == len(want)
    for ours, theirs in zip(got, want):
        mine = event_record(ours, with_text="text" in theirs)
        theirs = {k: theirs[k] for k in mine}
        assert typed(json.loads(json.dumps(mine))) == typed(theirs)


@pytest.mark.parametrize("name", ["malformed_events", "data_reuse_as_written"])
def test_unreadable_events_raise_like_htcondor_and_reading_continues(oracle_dir, name):
    """errors="raise": ULOG_RD_ERROR for each bad record, then the next call goes on."""
    expected = [("error", r["end_offset"]) for r in oracle_outcomes(oracle_dir, name)
                if r["outcome"] == "error"]
    if name == "data_reuse_as_written":
        expected = []          # we read HTCondor's own 041 layout (test_deviations.py)
    jel = JobEventLog(str(oracle_dir / "userlog" / f"{name}.log"), year=YEAR, errors="raise")
    seen = []
    jel.events(0)
    while True:
        try:
            next(jel)
        except UserLogReadError as exc:
            assert "ULOG_RD_ERROR" in str(exc) and exc.offset is not None
            seen.append(("error", jel.offset))
        except StopIteration:
            break
    jel.close()
    assert seen == expected


@pytest.mark.parametrize("name", ["garbage_between_events", "leading_blank_lines"])
def test_non_event_lines_are_skipped_not_a_stop(oracle_dir, name):
    """htcondor2 ends the iteration at each such line; we skip it and keep it in problems."""
    with JobEventLog(str(oracle_dir / "userlog" / f"{name}.log"), year=YEAR) as jel:
        events = list(jel.events(0))
        stops = [r for r in oracle_outcomes(oracle_dir, name) if r["outcome"] == "stop"]
        assert len(events) == len(oracle_events(oracle_dir, name))
        assert [p[0] for p in jel.problems] and all(p[0] == "skipped" for p in jel.problems)
        assert max(p[2] for p in jel.problems) == max(r["end_offset"] for r in stops)
