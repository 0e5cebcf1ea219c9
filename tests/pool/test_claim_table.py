"""The schedd's parts against the claim state table (``eventcore.claims``), in any order.

Real Actions, Policy, Matches and Runs on a real store; the startd is the
``startd_call`` seam (a recorder).  A start can be left half-way -- its starter
up, its EXECUTE not yet appended (``start.before-execute``) -- while the other
rules run: holds, removals, releases, vacates, the policy's verdicts, the
outcome of a run, a stale report.  After every step each claim's state as the
parts show it (being started in ``Runs``, running in the journal, its starter
told to kill, or over) must have moved as ``TABLE`` allows, and no starter may
be left running for a job that does not run under its claim.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from jobledger.eventcore import adwire
from jobledger.daemons.schedd.act import Actions
from jobledger.daemons.schedd.match import Matches
from jobledger.daemons.schedd.policy import Policy
from jobledger.daemons.schedd.runs import Runs
from jobledger.daemons.storage.store import Store
from jobledger.eventcore import interleave
from jobledger.eventcore.claims import TABLE, ClaimState
from jobledger.eventcore.enums import JobAction
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, ProcAd
from jobledger.eventcore.status import JobStatus
from tests.journal.helpers import event

LOG = logging.getLogger("test")
JOBS = [JobId(1, p) for p in range(3)]
STARTD = "<127.0.0.1:1?sock=startd>"
RUNNING = {JobStatus.RUNNING, JobStatus.SUSPENDED, JobStatus.TRANSFERRING_OUTPUT}
# one step of the table (or none): what a claim may do between two looks
MOVES = {(before, after) for (before, _), after in TABLE.items()} | {(s, s) for s in ClaimState}
ACTIONS = [JobAction.Hold, JobAction.Release, JobAction.Remove, JobAction.Vacate]


class Gate:
    """The interleaving hook: a start stops before its EXECUTE until the rule that
    finishes it opens its gate."""

    def __init__(self):
        self.arrived: dict[str, threading.Event] = {}
        self.gates: dict[str, threading.Event] = {}
        self.executed: dict[str, threading.Event] = {}

    def __call__(self, name: str) -> None:
        me = threading.current_thread().name
        if name == "start.after-execute" and me in self.executed:
            self.executed[me].set()
        if (name == "start.before-execute" and me.startswith("start-")) or \
                (name in ("act.append", "policy.append") and me in self.gates):
            self.arrived[me].set()
            assert self.gates[me].wait(10), f"{me} was never let through"
            del self.gates[me]     # (a decision taken again goes on)


class Startd:
    def __init__(self):
        self.started: set[str] = set()    # claims a starter runs for
        self.killed: set[str] = set()

    def __call__(self, cmd, address=None, **args):
        if cmd == "activate":
            self.started.add(args["claim"])
            return {"pid": 4242, "start": 1, "scratch": "/nonexistent/dir_4242", "slot": "slot1@here",
                    "host": address}
        if cmd == "signal":
            if args["what"] == "kill":
                self.killed.add(args["claim"])
            return True
        raise AssertionError(cmd)


class ClaimMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="jl-claims-"))
        self.store = Store(self.dir / "local", durability="normal")
        self.store.append([ClusterAd(1, {"Owner": '"alice"', "Cmd": '"/bin/true"', "QDate": "1700000000",
                                         "PeriodicRemove": "false"})]
                          + [r for job in JOBS for r in (ProcAd(job, {"JobStatus": "1"}), event(job, 0))])
        self.startd = Startd()
        self.runs = Runs(self.store, LOG, self.startd)
        self.matches = Matches(self.store, self.runs, LOG, self.dir / "spool")
        self.actions = Actions(self.store, self.runs, self.dir / "spool", lambda: None)
        self.policy = Policy(self.store, self.runs, LOG, lambda: None)
        self.gate = Gate()
        interleave.install(self.gate)
        self.pending: dict[str, threading.Thread] = {}     # claim -> its start, stopped at the gate
        self.state: dict[str, ClaimState] = {}
        self.ended: set[str] = set()                        # claims whose outcome was recorded
        self.jobs_of: dict[str, JobId] = {}

    def teardown(self):
        for claim in list(self.pending):
            self._finish(claim)
        interleave.uninstall()
        self.matches.stop()
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- what the parts show ---------------------------------------------------------
    def _status(self, job):
        return self.store.job_status(job)

    def _running_claim(self, job):
        ad = self.store.job_ad(job)
        if ad is None or self._status(job) not in RUNNING:
            return None
        return adwire.evaluate(ad, "ClaimId")

    def _observed(self, claim: str, job: JobId) -> ClaimState:
        if self.runs.is_starting(claim):
            return ClaimState.STARTING
        if self._running_claim(job) == claim:
            return ClaimState.ACTIVE
        if claim in self.startd.killed:
            return ClaimState.KILLED
        return ClaimState.CLOSED

    # -- rules -----------------------------------------------------------------------
    @rule(job=st.sampled_from(JOBS))
    def begin_start(self, job):
        """The negotiator matched the job: its start runs up to its EXECUTE and waits."""
        claim = self.runs.reserve(job)
        if claim is None:
            return
        self.state[claim] = ClaimState.STARTING
        self.jobs_of[claim] = job
        thread = threading.Thread(target=self.matches._activate, name=f"start-{claim}",
                                  args=(job, claim, {"startd": STARTD, "request": {}}))
        self.gate.arrived[thread.name] = threading.Event()
        self.gate.gates[thread.name] = threading.Event()
        self.pending[claim] = thread
        thread.start()
        # it stops at the gate, or is over at once (the job was not idle)
        while not self.gate.arrived[thread.name].wait(0.05):
            if not thread.is_alive():
                break

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def finish_start(self, data):
        claim = data.draw(st.sampled_from(list(self.pending)))
        self._finish(claim)

    def _finish(self, claim):
        thread = self.pending.pop(claim)
        self.gate.gates.get(thread.name, threading.Event()).set()
        thread.join(20)
        assert not thread.is_alive()

    @precondition(lambda self: self.pending)
    @rule(action=st.sampled_from(ACTIONS + ["policy-remove", "policy-hold"]), data=st.data())
    def decide_across_an_execute(self, action, data):
        """An action (or the policy) decides on a job being started, stops before its
        commit; the start's EXECUTE commits; then the decision is committed."""
        claim = data.draw(st.sampled_from(list(self.pending)))
        job = self.jobs_of[claim]
        if isinstance(action, JobAction):
            work = lambda: self.actions.act("alice", action, ids=[str(job)], reason="rule")  # noqa: E731
        else:
            kind = action.split("-")[1]
            verdict = (kind, "policy", 0) if kind == "hold" else (kind, "policy")
            work = lambda: self.policy.apply(job, verdict)  # noqa: E731
        thread = threading.Thread(target=work, name=f"decide-{claim}")
        self.gate.arrived[thread.name] = threading.Event()
        self.gate.gates[thread.name] = threading.Event()
        thread.start()
        while not self.gate.arrived[thread.name].wait(0.05):
            if not thread.is_alive():     # nothing to commit (the action did not apply)
                break
        start = self.pending.pop(claim)
        self.gate.executed[start.name] = threading.Event()
        self.gate.gates.get(start.name, threading.Event()).set()
        # its EXECUTE is appended (or refused) before the decision commits; then it
        # waits for the lock the decision holds, to say its start is over
        for _ in range(400):    # (bounded: 20 s)
            if not start.is_alive() or self.gate.executed[start.name].wait(0.05):
                break
        self.gate.gates.get(thread.name, threading.Event()).set()
        thread.join(20)
        start.join(20)
        assert not thread.is_alive() and not start.is_alive()

    @rule(action=st.sampled_from(ACTIONS), job=st.sampled_from(JOBS))
    def act(self, action, job):
        self.actions.act("alice", action, ids=[str(job)], reason="rule")

    @rule(kind=st.sampled_from(["hold", "remove", "release"]), job=st.sampled_from(JOBS))
    def policy_verdict(self, kind, job):
        reason = f"The job attribute Periodic{kind.title()} expression evaluated to TRUE"
        self.policy.apply(job, (kind, reason, 0) if kind == "hold" else (kind, reason))

    @rule(job=st.sampled_from(JOBS), kind=st.sampled_from(["exit", "evicted"]))
    def outcome(self, job, kind):
        """The running job's starter reports how its run ended."""
        claim = self._running_claim(job)
        if claim is None:
            return
        done = self.runs.record_outcome(job, claim, {"kind": kind, "code": 0, "claim": claim,
                                                     "reason": "vacate"}, wait=0)
        assert done == "recorded"
        self.ended.add(claim)

    @precondition(lambda self: any(s is ClaimState.KILLED for s in self.state.values()))
    @rule(data=st.data())
    def stale_report(self, data):
        """A killed run's starter reports its end after all: dropped."""
        claim = data.draw(st.sampled_from(list(c for c, s in self.state.items()
                                                 if s is ClaimState.KILLED)))
        job = self.jobs_of[claim]
        assert self.runs.record_outcome(job, claim, {"kind": "evicted", "claim": claim}, wait=0) == "stale"

    # -- the table -------------------------------------------------------------------
    @invariant()
    def the_parts_keep_to_the_table(self):
        self._claims_move_as_the_table_says()
        self._no_starter_outlives_its_run()
        self._a_job_runs_under_one_claim()

    def _claims_move_as_the_table_says(self):
        for claim, before in list(self.state.items()):
            now = self._observed(claim, self.jobs_of[claim])
            assert (before, now) in MOVES, f"claim {claim[:6]}: {before.value} -> {now.value}"
            self.state[claim] = now

    def _no_starter_outlives_its_run(self):
        for claim in self.startd.started:
            state = self.state[claim]
            assert state is not ClaimState.CLOSED or claim in self.ended, \
                f"claim {claim[:6]}: its starter runs, but the job does not run under it"

    def _a_job_runs_under_one_claim(self):
        for job in JOBS:
            active = [c for c, s in self.state.items() if s is ClaimState.ACTIVE and self.jobs_of[c] == job]
            assert len(active) == (1 if self._status(job) in RUNNING else 0)


TestClaimMachine = ClaimMachine.TestCase
TestClaimMachine.settings = settings(max_examples=60, stateful_step_count=20, deadline=None)


def test_the_table_reaches_every_state_and_ends_only_in_killed_or_closed():
    from jobledger.eventcore.claims import TERMINAL, ClaimError, ClaimEvent, next_state
    reached, frontier = {ClaimState.STARTING}, [ClaimState.STARTING]
    while frontier:
        state = frontier.pop()
        for (before, _), after in TABLE.items():
            if before is state and after not in reached:
                reached.add(after)
                frontier.append(after)
    assert reached == set(ClaimState)
    assert all(after is before for (before, _), after in TABLE.items() if before in TERMINAL)
    with pytest.raises(ClaimError):
        next_state("c", ClaimState.CLOSED, ClaimEvent.EXECUTED)   # a run never starts twice


def test_runs_keep_a_start_to_the_table():
    from jobledger.eventcore.claims import ClaimError, ClaimEvent
    runs = Runs(None, LOG, None)
    claim = runs.reserve(JOBS[0])
    assert runs.started(JOBS[0], claim, ClaimEvent.REFUSED) is ClaimState.KILLED
    assert runs.started(JOBS[0], claim, ClaimEvent.EXECUTED) is None     # over already
    claim = runs.reserve(JOBS[0])
    with pytest.raises(ClaimError):
        runs.started(JOBS[0], claim, ClaimEvent.ENDED)     # a start does not end a run
