"""One contract, two journals: MemoryJournal and the SQLite Store."""

from __future__ import annotations

import pytest

from jobledger.daemons.storage.store import Store
from jobledger.eventcore.errors import PositionConflict
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import Entry, MemoryJournal
from jobledger.eventcore.records import ActionRecord

from tests.journal.helpers import all_ads, event, submit


class JournalContract:
    """Subclasses provide ``journal`` (a fixture yielding an empty journal)."""

    def test_empty(self, journal):
        assert journal.head() == 0
        assert list(journal.entries()) == []

    def test_positions_are_consecutive_from_one(self, journal):
        assert journal.append(submit(1, 2), time=5.0) == 5
        assert journal.append([event(JobId(1, 0), 1)], time=6.0) == 6
        entries = list(journal.entries())
        assert [e.position for e in entries] == [1, 2, 3, 4, 5, 6]
        assert all(isinstance(e, Entry) for e in entries)
        assert entries[0].type == "cluster" and entries[1].job == JobId(1, 0)
        assert entries[5].time == 6.0

    def test_entries_after_and_limit(self, journal):
        journal.append(submit(1, 3), time=1.0)
        assert [e.position for e in journal.entries(after=2, limit=3)] == [3, 4, 5]
        assert [e.position for e in journal.entries(after=7)] == []

    def test_expected_head_conflict_appends_nothing(self, journal):
        journal.append(submit(1, 1), time=1.0)
        with pytest.raises(PositionConflict) as info:
            journal.append([event(JobId(1, 0), 1)], expected_head=2, time=2.0)
        assert (info.value.expected, info.value.actual) == (2, 3)
        assert journal.head() == 3
        assert journal.append([event(JobId(1, 0), 1)], expected_head=3, time=2.0) == 4

    def test_keys_make_appends_idempotent(self, journal):
        journal.append(submit(1, 1), time=1.0)
        rec = ActionRecord(JobId(1, 0), "hold", "x", "bob", key="k1")
        assert journal.append([rec, rec], time=2.0) == 4
        assert journal.append([rec], time=3.0) == 4
        assert journal.head() == 4

    def test_records_come_back_equal(self, journal):
        records = submit(7, 2, owner="bob")
        journal.append(records, time=1.0)
        assert [e.record for e in journal.entries()] == records


class TestMemoryJournal(JournalContract):
    @pytest.fixture
    def journal(self):
        return MemoryJournal()


class TestSQLiteJournal(JournalContract):
    @pytest.fixture(params=["fsync", "group", "normal"])
    def journal(self, request, tmp_path):
        store = Store(tmp_path, durability=request.param, constraint_filter=all_ads)
        yield store
        store.close()


def test_both_journals_write_identical_rows(tmp_path):
    memory = MemoryJournal()
    store = Store(tmp_path, constraint_filter=all_ads)
    for batch, t in ((submit(1, 3), 1.5), ([event(JobId(1, 1), 1)], 2.5)):
        memory.append(batch, time=t)
        store.append(batch, time=t)
    assert list(store.rows()) == memory.rows()
    store.close()
