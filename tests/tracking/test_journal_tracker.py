"""The journal tracker beyond the contract: starting positions, submitted on hold, bad journals."""

from __future__ import annotations

import sqlite3

import pytest

from jobledger.daemons.storage.store import Store
from jobledger.eventcore.errors import TrackerError
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ProcAd
from tests.tracking.workload import journal_records, workload
from jobledger.tracking.journal import JournalTracker


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "pool", durability="normal")
    yield s
    s.close()


def test_start_after_a_position_sees_only_what_follows(store):
    groups = journal_records(workload(20, seed=1))
    for group in groups[:10]:
        store.append(group)
    head = store.head()
    for group in groups[10:]:
        store.append(group)
    with JournalTracker(store.path, after=head) as tracker:
        tracker.step()
        later = {r.job for g in groups[10:] for r in g if r.job.proc >= 0}
        assert set(tracker.states) <= later
        assert tracker.position == store.head()


def test_submitted_on_hold_shows_from_the_proc_record(store):
    from jobledger.eventcore.events import event_to_dict, make_event
    from jobledger.eventcore.records import ClusterAd, EventRecord
    job = JobId(1, 0)
    store.append([ClusterAd(1, {"Owner": '"alice"'}),
                  ProcAd(job, {"JobStatus": "5", "HoldReasonCode": "15",
                               "HoldReason": '"submitted on hold at user\'s request"'}),
                  EventRecord(job, event_to_dict(make_event(0, cluster=1, proc=0, timestamp=5)))])
    with JournalTracker(store.path) as tracker:
        tracker.step()
        state = tracker.states[job]
        assert (int(state.status), state.hold_code, state.hold_reason) == (
            5, 15, "submitted on hold at user's request")
        assert tracker.anomalies == {}


def test_a_file_that_is_not_a_journal_is_an_error_naming_it(tmp_path):
    path = tmp_path / "journal.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE other (x)")
    db.commit()
    db.close()
    bad = tmp_path / "garbage.sqlite"
    bad.write_bytes(b"not sqlite at all" * 100)
    with JournalTracker(path) as tracker:
        assert tracker.step() == []            # a pool still creating its tables: nothing yet
    tracker = JournalTracker(bad)
    with pytest.raises(TrackerError, match="garbage.sqlite: cannot read the journal"):
        tracker.step()
    tracker.stop()
