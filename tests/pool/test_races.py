"""Races between the schedd's parts, each forced to happen (``tests/sequencer.py``), not
waited for in a loop: a job held or removed (by a user or the periodic policy) while it
is being started must never be left running, whichever commit comes first.

The parts run on a real store; the startd is the part's ``startd_call`` seam, here a
recorder (the pool tests run the real one: tests/pool/test_cli.py)."""

from __future__ import annotations

import logging
import threading

import pytest

from jobledger.daemons.schedd.act import Actions
from jobledger.daemons.schedd.match import Matches
from jobledger.daemons.schedd.policy import Policy
from jobledger.daemons.schedd.runs import Runs
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.enums import JobAction
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, ProcAd
from jobledger.eventcore.status import JobStatus
from tests.journal.helpers import event
from tests.sequencer import Sequencer

LOG = logging.getLogger("test")
JOB = JobId(1, 0)
STARTD = "<127.0.0.1:1?sock=startd>"


class Startd:
    """What the parts ask a startd: ``activate`` answers as a started starter would;
    ``signal`` is recorded (claim, what)."""

    def __init__(self):
        self.signals: list[tuple[str, str]] = []
        self.activated = threading.Event()

    def __call__(self, cmd: str, address: str | None = None, **args):
        if cmd == "activate":
            self.activated.set()
            return {"pid": 4242, "start": 1, "scratch": "/nonexistent/dir_4242", "slot": "slot1@here",
                    "host": address}
        if cmd == "signal":
            self.signals.append((args["claim"], args["what"]))
            return True
        raise AssertionError(f"unexpected startd call {cmd}")


class Parts:
    def __init__(self, store, tmp_path):
        self.store = store
        self.startd = Startd()
        self.runs = Runs(store, LOG, self.startd)
        self.matches = Matches(store, self.runs, LOG, tmp_path / "spool")
        self.actions = Actions(store, self.runs, tmp_path / "spool", lambda: None)
        self.policy = Policy(store, self.runs, LOG, lambda: None)

    def start(self) -> str:
        """Match JOB to the startd: its start runs in a worker thread; its claim."""
        self.matches.matched([{"job": str(JOB), "startd": STARTD, "request": {}}])
        (claim,) = [c for c in self.runs._starting]
        return claim

    def stop(self):
        self.matches.stop()


@pytest.fixture
def parts(tmp_path):
    store = Store(tmp_path / "local", durability="normal")
    store.append([ClusterAd(1, {"Owner": '"alice"', "Cmd": '"/bin/true"', "QDate": "1700000000",
                                "PeriodicRemove": "true"}),
                  ProcAd(JOB, {"JobStatus": "1"}), event(JOB, 0)])
    made = Parts(store, tmp_path)
    yield made
    made.stop()
    store.close()


def _stop(parts: Parts, how: str) -> None:
    if how == "remove":
        assert parts.actions.act("alice", JobAction.Remove, ids=[str(JOB)])["TotalSuccess"] == 1
    elif how == "hold":
        assert parts.actions.act("alice", JobAction.Hold, ids=[str(JOB)])["TotalSuccess"] == 1
    else:   # the periodic policy's remove
        parts.policy.apply(JOB, ("remove", "The job attribute PeriodicRemove expression evaluated to TRUE"))


def _settled(parts: Parts, how: str, claim: str) -> None:
    status = parts.store.job_status(JOB)
    assert status == (JobStatus.HELD if how == "hold" else None)
    assert parts.startd.signals == [(claim, "kill")]      # its starter killed, once


@pytest.mark.parametrize("how", ["remove", "hold", "policy"])
def test_execute_committed_between_the_decision_and_its_commit(parts, how):
    """The action reads the job idle; the run's EXECUTE commits; then the action
    commits.  Its records assumed an idle job: the store refuses them, the action
    decides again on the running job and kills its starter."""
    chosen = "policy.chosen" if how == "policy" else "act.chosen"
    append = "policy.append" if how == "policy" else "act.append"
    with Sequencer(chosen, "start.before-execute", "start.after-execute", append) as seq:
        claim = parts.start()
        _stop(parts, how)
        parts.matches.stop()
    assert seq.passed.count(append) == 2       # decided twice: idle, then running
    _settled(parts, how, claim)


@pytest.mark.parametrize("how", ["remove", "hold", "policy"])
def test_action_committed_between_the_start_and_its_execute(parts, how):
    """The start reads the job idle and starts a starter; the action commits; then the
    EXECUTE: it assumed an idle job, is refused, and the start kills what it started."""
    with Sequencer("act.committed" if how != "policy" else "policy.append",
                   "start.before-execute", "start.after-execute"):
        claim = parts.start()
        assert parts.startd.activated.wait(10)
        _stop(parts, how)
        parts.matches.stop()
    _settled(parts, how, claim)


def test_the_sequencer_refuses_names_no_code_marks():
    with pytest.raises(ValueError):
        Sequencer("act.chosen", "no.such.point")
