"""``Store.append_stream``: many chunks, one transaction, nothing of a broken stream committed."""

from __future__ import annotations

import threading

import pytest

from jobledger.daemons.storage import store as store_module
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.codecs.journal import verify_rows
from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, ProcAd

from tests.journal.helpers import all_ads, event, submit


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path, durability="group", constraint_filter=all_ads)
    yield s
    s.close()


def chunked(records: list, size: int):
    for i in range(0, len(records), size):
        yield records[i:i + size]


def snapshot(store: Store):
    return (store.query(), store._read("SELECT * FROM queue_clusters ORDER BY 1"),
            store._read("SELECT cluster, proc, status, owner FROM queue_jobs ORDER BY 1, 2"))


def test_a_stream_equals_one_append(tmp_path, store, monkeypatch):
    monkeypatch.setattr(store_module, "STREAM_CACHE", 50)   # the fold starts afresh many times
    records = submit(1, 400) + submit(2, 3, owner="bob")
    position = store.append_stream(chunked(records, 70))
    assert position == store.head() == len(records)
    store.append([event(JobId(1, 399), 1), event(JobId(1, 0), 12)])   # later appends see every proc
    with Store(tmp_path / "other", constraint_filter=all_ads) as one:
        one.append(records)
        one.append([event(JobId(1, 399), 1), event(JobId(1, 0), 12)])
        assert snapshot(one) == snapshot(store)
    assert verify_rows(store.rows()) == []
    before = snapshot(store)
    store.rebuild_queue()
    assert snapshot(store) == before


def test_a_stream_broken_midway_commits_nothing(store):
    store.append(submit(1, 2))
    before = (store.head(), snapshot(store))

    def dies():
        yield from chunked(submit(2, 500), 100)
        raise ConnectionError("client gone")
    with pytest.raises(ConnectionError):
        store.append_stream(dies())
    assert (store.head(), snapshot(store)) == before
    assert store.job_ad(JobId(2, 0)) is None
    # the same cluster goes in afterwards, and the journal's chain still verifies
    assert store.append_stream(chunked(submit(2, 500), 100)) == before[0] + 1001
    assert verify_rows(store.rows()) == [] and len(store.query("ClusterId == 2")) == 500


def test_a_refused_record_in_a_late_chunk_rolls_back_the_earlier_ones(store):
    records = submit(3, 300) + [ProcAd(JobId(3, 5), {"JobStatus": "1"})]   # proc 5 twice
    with pytest.raises(InvalidTransition):
        store.append_stream(chunked(records, 100))
    assert store.head() == 0 and store.query() == []


def test_keyed_records_are_appended_once(store):
    records = [ClusterAd(4, {"Owner": '"alice"'}, key="submit:t:4")] + submit(4, 3)[1:]
    first = store.append_stream([records])
    assert store.append_stream([records[:1]]) == first
    assert store.keyed("submit:t:4").position == 1


def test_appends_during_a_stream_wait_for_it(store):
    store.append(submit(1, 1))
    gate = threading.Event()
    results = []

    def slow():
        yield submit(2, 100)
        gate.set()      # the other append starts while this stream holds the journal
        yield [event(JobId(2, 0), 12)]

    def other():
        gate.wait(10)
        results.append(store.append([event(JobId(1, 0), 1)]))
    thread = threading.Thread(target=other)
    thread.start()
    streamed = store.append_stream(slow())
    thread.join(10)
    assert (streamed, results) == (3 + 201 + 1, [streamed + 1])
    assert store.job_status(JobId(1, 0)) == 2 and store.job_status(JobId(2, 0)) == 5


def test_a_big_stream_leaves_the_writer_holding_none_of_its_jobs(store, monkeypatch):
    """Past STREAM_CACHE jobs a stream gives back what it cached (the fold's jobs, the
    connection's pages): the schedd does not keep its submit's peak; what follows reads
    the jobs from the tables.  A small one keeps its cache."""
    monkeypatch.setattr(store_module, "STREAM_CACHE", 50)
    store.append_stream(chunked(submit(1, 400), 70))
    assert store._fold.procs == {}
    store.append([event(JobId(1, 399), 1)])
    assert store.job_status(JobId(1, 399)) is not None and len(store._fold.procs) == 1
    store.append_stream(chunked(submit(2, 10), 7))
    assert len(store._fold.procs) >= 10


def test_point_reads_keep_a_small_page_cache(store):
    from jobledger.daemons.storage.connections import POINT_CACHE_KIB
    assert store.reads.reader.execute("PRAGMA cache_size").fetchone()[0] == -POINT_CACHE_KIB
    assert store._conn.execute("PRAGMA cache_size").fetchone()[0] == -65536
