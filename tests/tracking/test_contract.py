"""The tracker contract, once per tracker."""

from __future__ import annotations

import time

from jobledger.daemons.storage.store import Store
from tests.tracking.contract import TrackerContract
from tests.tracking.schedds import StoreSchedd
from tests.tracking.workload import journal_records, userlog_chunks
from jobledger.tracking.combined import CombinedTracker
from jobledger.tracking.journal import JournalTracker
from jobledger.tracking.poll import PollTracker
from jobledger.tracking.userlogs import UserLogTracker


class Source:
    """What every source shares: ``write(k)`` writes its first k pieces, ``size()`` counts them."""

    def write_slowly(self):
        total = self.size()
        for k in range(self.written, total + 1, max(1, total // 20)):
            self.write(k)
            time.sleep(0.01)
        self.write(None)


class JournalSource(Source):
    """A pool journal (daemons.storage.store.Store) that the workload is appended to."""

    def __init__(self, tmp_path, load):
        self.store = Store(tmp_path / "pool", durability="normal")
        self.groups = journal_records(load)
        self.written = 0

    def size(self):
        return len(self.groups)

    def write(self, k):
        k = self.size() if k is None else k
        for group in self.groups[self.written:k]:
            self.store.append(group)
        self.written = max(self.written, k)

    def close(self):
        self.store.close()


class JournalTrackerSource(JournalSource):
    def tracker(self, checkpoint=None):
        return JournalTracker(self.store.path, checkpoint=checkpoint, interval=0.05)


class PollTrackerSource(JournalSource):
    def tracker(self, checkpoint=None):
        return PollTracker(StoreSchedd(self.store), min_interval=0, checkpoint=checkpoint)


class TestJournalTracker(TrackerContract):
    def make_source(self, tmp_path, load):
        return JournalTrackerSource(tmp_path, load)


class TestPollTracker(TrackerContract):
    incremental_changes = False

    def make_source(self, tmp_path, load):
        return PollTrackerSource(tmp_path, load)


class UserLogSource(Source):
    """One user log per cluster, appended to event by event as a schedd would."""

    def __init__(self, tmp_path, load, notify=True):
        self.dir = tmp_path / "logs"
        self.dir.mkdir()
        self.chunks = userlog_chunks(load, self.dir)
        self.paths = sorted({p for p, _ in self.chunks})
        self.written = 0
        self.notify = notify

    def size(self):
        return len(self.chunks)

    def write(self, k):
        k = self.size() if k is None else k
        for path, data in self.chunks[self.written:k]:
            with open(path, "ab") as f:
                f.write(data)
        self.written = max(self.written, k)

    def tracker(self, checkpoint=None):
        return UserLogTracker(self.paths, checkpoint=checkpoint, interval=0.05, notify=self.notify)

    def close(self):
        pass


class TestUserLogTracker(TrackerContract):
    def make_source(self, tmp_path, load):
        return UserLogSource(tmp_path, load)


class TestUserLogTrackerPolling(TrackerContract):
    """No change notifications: the same contract by polling file sizes."""

    def make_source(self, tmp_path, load):
        return UserLogSource(tmp_path, load, notify=False)


class CombinedSource(UserLogSource):
    """User logs and the pool journal written in step: the schedd sees what the logs say."""

    def __init__(self, tmp_path, load):
        super().__init__(tmp_path, load)
        self.journal = JournalSource(tmp_path, load)

    def write(self, k):
        self.journal.write(k)
        super().write(k)

    def tracker(self, checkpoint=None):
        return CombinedTracker(self.paths, schedd=StoreSchedd(self.journal.store),
                               checkpoint=checkpoint, interval=0.05)

    def close(self):
        self.journal.close()


class TestCombinedTracker(TrackerContract):
    def make_source(self, tmp_path, load):
        return CombinedSource(tmp_path, load)
