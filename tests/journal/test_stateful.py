"""Stateful property: incremental projections equal a full rebuild, whatever happens.

Appends (legal or not), projector runs, torn user-log tails (a writer killed
mid-write), bad queue snapshots and restarts, in any order: the queue always
equals a fold of the journal from scratch, and after the projector catches up
every user log is exactly the rendering of its events.
"""

from __future__ import annotations

import datetime
import os
import shutil
import tempfile

from hypothesis import event as event_note, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from jobledger.daemons.projector import Projector
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import MemoryJournal
from jobledger.eventcore.projections.queue import fold_entries, merged_ad
from jobledger.eventcore.projections.userlog import LogTargets, render
from jobledger.eventcore.records import LeaveQueue

from tests.journal.helpers import all_ads, as_blocks, event, submit

UTC = datetime.timezone.utc
EVENTS = [1, 4, 5, 6, 9, 10, 11, 12, 13]


class JournalMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="jl-stateful-")
        self.local = os.path.join(self.dir, "local")
        self.model = MemoryJournal()
        self.cluster = 0
        self.time = 1_700_000_000
        self._open()

    def _open(self):
        self.store = Store(self.local, durability="normal", constraint_filter=all_ads,
                           clock=lambda: 1_700_000_000.0)
        self.projector = Projector(self.store, tz=UTC, fsync=False, chunk=4)

    def _close(self):
        self.projector.close()
        self.store.close()

    def teardown(self):
        self._close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _append(self, records):
        head = self.store.head()
        try:
            self.store.append(records)
        except InvalidTransition:
            assert self.store.head() == head
            return
        self.model.append(records, time=1_700_000_000.0)

    @rule(procs=st.integers(1, 4), held=st.booleans(), with_log=st.booleans(),
          blocks=st.booleans())
    def submit(self, procs, held, with_log, blocks):
        self.cluster += 1
        log = os.path.join(self.dir, f"c{self.cluster % 3}.log") if with_log else None
        records = submit(self.cluster, procs, log=log, held=held, timestamp=self.time)
        self._append(as_blocks(records, size=2) if blocks else records)   # as the schedd writes

    @rule(data=st.data(), number=st.sampled_from(EVENTS), n=st.integers(1, 3))
    def events(self, data, number, n):
        if not self.cluster:
            return
        records = []
        for _ in range(n):
            self.time += 7
            job = JobId(data.draw(st.integers(1, self.cluster)), data.draw(st.integers(0, 3)))
            records.append(event(job, number, self.time))
        self._append(records)

    @rule(data=st.data())
    def leave(self, data):
        if self.cluster:
            self._append([LeaveQueue(JobId(data.draw(st.integers(1, self.cluster)),
                                           data.draw(st.integers(0, 3))))])

    @rule()
    def project(self):
        self.projector.catch_up()
        self.check_user_logs()

    @rule(data=st.data())
    def torn_tail(self, data):
        """A projector killed in the middle of writing the next event of some log (the
        first event past its cursor that has a log: the projector writes in journal order)."""
        pending = [e for e in self.store.entries(after=self.projector.cursors.position())
                   if e.type == "event"]
        for e in pending:
            path = os.path.join(self.dir, f"c{e.job.cluster % 3}.log")
            ad = self.store.job_ad(e.job) or {}
            if "UserLog" not in ad:
                continue
            text = render(e.payload["event"], tz=UTC).encode()
            if os.path.exists(path) and not open(path, "rb").read().endswith(b"...\n") \
                    and os.path.getsize(path):
                return      # torn already: a projector cuts that before it writes again
            cut = data.draw(st.integers(1, len(text)))
            with open(path, "ab") as f:
                f.write(text[:cut])
            event_note("torn tail written")
            return

    @rule()
    def restart(self):
        self._close()
        self._open()

    @rule()
    def bad_snapshot(self):
        self.store._conn.execute("UPDATE projection SET checksum = checksum + 1 WHERE name='queue'")
        self._close()
        self._open()
        assert self.store.recovered in ("rebuilt", "empty")

    @invariant()
    def queue_equals_rebuild(self):
        assert list(self.store.rows()) == self.model.rows()
        fold = fold_entries(self.model.entries())
        want = [merged_ad(fold.cluster(cluster), proc.ad) for (cluster, _), proc in fold.jobs()]
        assert self.store.query() == want

    def check_user_logs(self):
        """After a catch-up, each user log is exactly the rendering of its events."""
        expected = {name: b"" for name in os.listdir(self.dir) if name.endswith(".log")}
        targets = LogTargets()
        for e in self.model.entries():
            for target in targets.apply(e.position, e.job, e.type, e.payload):
                name = os.path.basename(target.path)
                expected[name] = expected.get(name, b"") + render(e.payload["event"], tz=UTC).encode()
        for name, content in expected.items():
            path = os.path.join(self.dir, name)
            got = open(path, "rb").read() if os.path.exists(path) else b""
            assert got == content, name


TestJournalMachine = JournalMachine.TestCase
TestJournalMachine.settings = settings(max_examples=100, stateful_step_count=25, deadline=None)
