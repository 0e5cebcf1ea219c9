"""A claim's next job goes to its starter only while that starter's startd lives:
the starter offers no next job once its lifeline read EOF, and a restarted startd
refuses to continue a claim whose starter a previous startd forked (the orphans it
adopts), so the next job is started afresh rather than killed as ``startd_gone``.
A report that needed more than one try says the outcome was saved in the scratch
directory (the schedd looks there only then)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jobledger.daemons.starter import OUTCOME, Starter
from jobledger.eventcore.errors import HTCondorException
from tests.pool.startd_unit import slot, startd  # noqa: F401  (startd: a fixture)

JOB = {"ClusterId": 1, "ProcId": 0, "Owner": "alice", "Cmd": "/bin/true", "Iwd": "/tmp"}


@pytest.fixture
def lifeline():
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        try:
            os.close(fd)
        except OSError:
            pass


def test_a_starter_whose_startd_died_offers_no_next_job(tmp_path, lifeline):
    read, write = lifeline
    starter = Starter(dict(JOB), "claim-1", str(tmp_path), "unused", read, 1.0)
    offers = []
    starter._report = lambda outcome, more=False: (offers.append(more), (True, {"result": 1}))[1]
    assert starter.startd_alive()
    starter._finish({"kind": "exit", "code": 0})
    os.close(write)                              # the startd is gone
    assert not starter.startd_alive() and starter.lifeline_fd is None
    starter._finish({"kind": "exit", "code": 0})
    assert offers == [True, False]


def test_a_restarted_startd_does_not_continue_a_previous_startds_claim(startd):
    startd.claims["old"] = slot(os.getpid(), orphan=True)
    nxt = {"Owner": "alice", "ClusterId": 1, "ProcId": 1}
    with pytest.raises(HTCondorException, match="no starter of ours"):
        startd._activate(None, "next", nxt, {"Cpus": 1}, reuse="old", continuing=True)
    assert set(startd.claims) == {"old"}
    startd.claims["mine"] = slot(os.getpid())    # a starter this startd forked continues
    answer = startd._activate(None, "next", nxt, {"Cpus": 1}, reuse="mine", continuing=True)
    assert answer["continued"] and answer["pid"] == os.getpid() and set(startd.claims) == {"old", "next"}


def test_a_report_after_a_failed_try_says_the_outcome_was_saved(tmp_path):
    # (the schedd then removes the scratch directory that holds it; a report that went
    # through at once saved nothing there, and the schedd does not look)
    starter = Starter(dict(JOB), "claim-1", str(tmp_path), f"<127.0.0.1:0?sock={tmp_path}/none.sock>", None, 0.0)
    os.makedirs(starter.scratch)
    outcome = {"kind": "exit", "code": 0}
    assert starter._report(outcome) == (False, None)
    assert outcome["saved"] is True
    saved = json.loads((Path(starter.scratch) / OUTCOME).read_text())
    assert saved == {"kind": "exit", "code": 0}
