"""A plain starter's next job is found by the thread that records the finished one's
end (``Matches.finished`` with ``direct``): its EXECUTE goes into the end's commit,
and its start is over only once that commit decided it -- a next job held meanwhile
is refused and its starter killed, as a start in a worker is."""

from __future__ import annotations

import logging
import threading

import pytest

from jobledger.daemons.schedd.ending import record_end
from jobledger.daemons.schedd.match import Matches
from jobledger.daemons.schedd.runs import Runs
from jobledger.daemons.storage.store import Store
from jobledger.eventcore import adwire, interleave
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, ProcAd
from jobledger.eventcore.status import JobStatus
from tests.journal.helpers import event

LOG = logging.getLogger("test")
FIRST, NEXT = JobId(1, 0), JobId(1, 1)
STARTD = "<127.0.0.1:1?sock=startd>"
EXIT = {"kind": "exit", "code": 0}
ENDED = (None, JobStatus.COMPLETED)       # (a completed job leaves the queue)


class Startd:
    def __init__(self):
        self.calls: list[tuple] = []

    def __call__(self, cmd, address=None, **args):
        self.calls.append((cmd, args.get("claim")))
        if cmd == "activate":
            return {"pid": 4242, "start": 1, "scratch": "/nonexistent/dir_4242", "slot": "slot1@here",
                    "host": address}
        return True


@pytest.fixture
def parts(tmp_path):
    store = Store(tmp_path / "local", durability="normal")
    store.append([ClusterAd(1, {"Owner": '"alice"', "Cmd": '"/bin/true"', "QDate": "1700000000"})]
                 + [r for job in (FIRST, NEXT) for r in (ProcAd(job, {"JobStatus": "1"}), event(job, 0))])
    startd, moved = Startd(), []
    runs = Runs(store, LOG, startd)
    matches = Matches(store, runs, LOG, tmp_path / "spool")
    matches.tell_moved = lambda address, move: moved.append(move)
    claim = runs.reserve(FIRST)
    matches._activate(FIRST, claim, {"startd": STARTD, "request": {}})
    assert store.job_status(FIRST) is JobStatus.RUNNING
    commits: list[str] = []
    store._conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    yield store, runs, matches, startd, claim, moved, commits
    store._conn.set_trace_callback(None)
    matches.stop()
    store.close()


def report(runs, matches, claim):
    """The end of FIRST as ``daemons.schedd.daemon`` records a plain starter's report."""
    result, handover = record_end(runs.store, runs, matches, FIRST, claim, EXIT, more=True, direct=True)
    assert handover is not None and handover.done()       # (found here, no worker)
    return result, handover.result()


def test_the_next_job_is_started_in_the_end_s_commit(parts):
    store, runs, matches, startd, claim, moved, commits = parts
    result, given = report(runs, matches, claim)
    assert result == "recorded" and given["job"]["ProcId"] == 1
    assert commits == ["COMMIT"]                          # one commit: the end and the start
    assert store.job_status(FIRST) in ENDED and store.job_status(NEXT) is JobStatus.RUNNING
    assert adwire.evaluate(store.job_ad(NEXT), "ClaimId") == given["claim"]
    assert not runs.is_starting(given["claim"]) and not runs.busy()
    assert [m["claim"] for m in moved] == [given["claim"]] and startd.calls == [("activate", claim)]


def test_a_next_job_held_before_the_commit_is_refused_and_its_starter_killed(parts):
    store, runs, matches, startd, claim, moved, commits = parts
    me = threading.current_thread()

    def hold_it(name):
        if name == "start.before-execute" and threading.current_thread() is me:
            store.append([event(NEXT, 12)])              # held while it was being started
    interleave.install(hold_it)
    try:
        result, given = report(runs, matches, claim)
    finally:
        interleave.uninstall()
    assert result == "recorded" and store.job_status(FIRST) in ENDED
    assert store.job_status(NEXT) is JobStatus.HELD
    assert ("signal", given["claim"]) in startd.calls     # its starter is told to kill it
    assert not runs.is_starting(given["claim"]) and not runs.busy()
