"""Stateful property: writing, stepping and restarting a checkpointed tracker in any order.

Whatever the interleaving of appends (to several user logs, sometimes half
an event at a time), steps and restarts from the checkpoint, the tracker's
states equal the fold of everything it could read, and its memo holds every
status change exactly once.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import fold
from tests.tracking.contract import note
from tests.tracking.events import Ev
from tests.tracking.workload import T0, Step, event_text
from jobledger.tracking.userlogs import UserLogTracker

EVENTS = st.sampled_from([0, 1, 4, 5, 9, 12, 13, 6])


class TrackerWithRestarts(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="resume-"))
        self.logs = [self.dir / f"{i}.log" for i in range(3)]
        self.ckpt = self.dir / "ckpt"
        self.written: list[list] = [[] for _ in self.logs]       # complete events per log
        self.partial: list[bytes] = [b"" for _ in self.logs]     # torn tail per log
        self.torn: list = [None for _ in self.logs]              # the event it belongs to
        self.t = T0
        self.tracker = self._open()

    def _open(self):
        tracker = UserLogTracker(self.logs, checkpoint=self.ckpt)
        tracker.add_callback(lambda c: tracker.memo.append(note(c)))
        return tracker

    @rule(log=st.integers(0, 2), number=EVENTS, proc=st.integers(0, 2), torn=st.booleans())
    def append(self, log, number, proc, torn):
        self.finish_torn(log)
        self.t += 1
        attrs = {"TerminatedNormally": True, "ReturnValue": 1} if number == 5 else {}
        if number == 12:
            attrs = {"HoldReason": "x", "HoldReasonCode": 3, "HoldReasonSubCode": 0}
        event = Ev(number, log + 1, proc, self.t, attrs)
        data = event_text(Step(self.t, JobId(log + 1, proc), number, attrs)).encode()
        cut = len(data) // 2 if torn else len(data)
        with open(self.logs[log], "ab") as f:
            f.write(data[:cut])
        if torn:
            self.partial[log], self.torn[log] = data[cut:], event
        else:
            self.written[log].append(event)

    @rule(log=st.integers(0, 2))
    def finish_torn(self, log):
        """The writer completes the event it was in the middle of."""
        if self.partial[log]:
            with open(self.logs[log], "ab") as f:
                f.write(self.partial[log])
            self.written[log].append(self.torn[log])
            self.partial[log], self.torn[log] = b"", None

    @rule()
    def step(self):
        self.tracker.step()

    @rule()
    def restart(self):
        self.tracker.stop()
        self.tracker = self._open()

    @invariant()
    @precondition(lambda self: not any(self.partial))
    def reads_everything_complete_exactly_once(self):
        self.tracker.step()
        self.tracker.step()
        expected = {}
        for events in self.written:          # logs are independent: fold them one by one
            expected.update(fold(events).states)
        assert {j: int(s.status) for j, s in self.tracker.states.items()} == {
            j: int(s.status) for j, s in expected.items()}
        memo = [tuple(m) for m in self.tracker.memo]
        assert len(memo) == len(set(memo))
        changes = [tuple(note(c)) for events in self.written for c in fold(events).changes]
        assert sorted(memo, key=str) == sorted(changes, key=str)

    def teardown(self):
        self.tracker.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


TrackerWithRestarts.TestCase.settings = settings(max_examples=40, stateful_step_count=25,
                                                 deadline=None)
TestTrackerWithRestarts = TrackerWithRestarts.TestCase
