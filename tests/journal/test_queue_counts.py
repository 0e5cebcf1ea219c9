"""The jobs per (cluster, status) the store keeps beside the queue (queue_counts): after
every kind of change they say what counting the rows says, and the reads built on them
(status_counts, cluster_status_counts, the schedd's Submitter counts) answer as a
GROUP BY over the rows does."""

from __future__ import annotations

import pytest

from jobledger.daemons.schedd.submitters import submitter_counts
from jobledger.daemons.storage import queue_tables
from jobledger.daemons.storage.adrow import decode_ad
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, LeaveQueue, quote_string

from tests.journal.helpers import all_ads, as_blocks, event, life, submit


def kept(store: Store) -> dict:
    return {(c, s): n for c, s, n in store._read("SELECT cluster, status, n FROM queue_counts")}


def counted(store: Store) -> dict:
    return {(c, s): n for c, s, n in store._read(
        "SELECT cluster, status, count(*) FROM queue_jobs GROUP BY cluster, status")}


def grouped(store: Store) -> list:
    """cluster_status_counts as it read before the counts were kept: a GROUP BY."""
    rows = store._read("SELECT j.cluster, j.owner, j.status, count(*), c.ad FROM queue_jobs j "
                       "LEFT JOIN queue_clusters c ON c.cluster = j.cluster "
                       "GROUP BY j.cluster, j.status ORDER BY j.cluster")
    return [(c, o or "", s, n, decode_ad(ad) if ad else {}) for c, o, s, n, ad in rows]


def agree(store: Store) -> None:
    assert kept(store) == counted(store)
    assert store.cluster_status_counts() == grouped(store)
    assert store.status_counts() == dict(store._read(
        "SELECT status, count(*) FROM queue_jobs GROUP BY status"))


def busy_queue(store: Store) -> None:
    store.append(submit(1, 5) + submit(2, 3, owner="bob", held=True))
    agree(store)
    store.append([event(JobId(1, 0), 1), event(JobId(1, 1), 1), event(JobId(1, 1), 10)])
    agree(store)
    store.append(life(JobId(1, 2)) + [event(JobId(2, 0), 13), event(JobId(2, 1), 9)])
    agree(store)
    store.append([event(JobId(1, 0), 12), event(JobId(1, 0), 13), event(JobId(1, 3), 9)])
    store.append([LeaveQueue(JobId(1, 3)), event(JobId(7, 0), 1, imported=True)])   # a job seen by its events only
    agree(store)


def test_counts_follow_every_change(tmp_path):
    store = Store(tmp_path, constraint_filter=all_ads)
    busy_queue(store)
    assert kept(store)[(1, 1)] == 2 and (1, 3) not in kept(store)   # no row for a status gone
    for proc in range(3):        # cluster 2 empties: its rows go
        removed = [] if proc == 1 else [event(JobId(2, proc), 9)]   # 2.1 already is
        store.append(removed + [LeaveQueue(JobId(2, proc))])
    assert not any(c == 2 for c, _ in kept(store))
    agree(store)
    store.close()


def test_a_refused_request_and_a_rolled_back_stream_count_nothing(tmp_path):
    store = Store(tmp_path, durability="group", constraint_filter=all_ads)
    store.append(submit(1, 3))
    done = store.append_each([[event(JobId(1, 0), 1)],
                              [event(JobId(1, 1), 1), event(JobId(1, 1), 13)],   # refused whole
                              [event(JobId(1, 2), 12)]])
    assert isinstance(done[1], InvalidTransition)
    agree(store)

    def chunks():
        yield as_blocks(submit(2, 50))
        raise RuntimeError("client gone")
    with pytest.raises(RuntimeError):
        store.append_stream(chunks())
    agree(store)
    assert not any(c == 2 for c, _ in kept(store))
    store.close()


def test_a_streamed_submit_past_the_cache_is_counted(tmp_path, monkeypatch):
    import jobledger.daemons.storage.store as store_module
    monkeypatch.setattr(store_module, "STREAM_CACHE", 7)
    store = Store(tmp_path, constraint_filter=all_ads)
    store.append_stream([as_blocks(submit(1, 10)[:11]), as_blocks(submit(1, 30)[21:]),
                         as_blocks(submit(2, 12, held=True))])
    assert kept(store) == {(1, 1): 25, (2, 5): 12}
    agree(store)
    store.close()


def test_rebuild_catch_up_and_a_chunked_fold_count_the_same(tmp_path, monkeypatch):
    store = Store(tmp_path, constraint_filter=all_ads)
    busy_queue(store)
    incremental = kept(store)
    monkeypatch.setattr(queue_tables, "FOLD_CHUNK", 3)
    monkeypatch.setattr(queue_tables, "FOLD_CACHE", 2)
    store.rebuild_queue()
    assert kept(store) == incremental
    middle = store.head() // 2       # a catch-up from an older snapshot
    store._conn.execute("UPDATE projection SET position=?, checksum="
                        "(SELECT checksum FROM journal WHERE position=?) WHERE name='queue'",
                        (middle, middle))
    store.rebuild_queue()
    assert kept(store) == incremental
    store.close()


@pytest.mark.parametrize("damage", [
    "UPDATE queue_counts SET n = n + 5",
    "DELETE FROM queue_counts",
    "INSERT INTO queue_counts VALUES (99, 1, 3)",
    "DROP TABLE queue_counts",       # a journal from before the counts were kept
])
def test_an_open_rewrites_counts_that_disagree_with_the_rows(tmp_path, damage):
    store = Store(tmp_path, constraint_filter=all_ads)
    busy_queue(store)
    expected = kept(store)
    store._conn.execute(damage)
    store.close()
    store = Store(tmp_path, constraint_filter=all_ads)
    assert store.recovered == "current" and kept(store) == expected
    agree(store)
    store.close()


def test_a_read_only_store_on_a_journal_without_counts_counts_the_rows(tmp_path):
    store = Store(tmp_path, constraint_filter=all_ads)
    busy_queue(store)
    expected = (store.status_counts(), store.cluster_status_counts())
    store._conn.execute("DROP TABLE queue_counts")
    store.close()
    reader = Store(tmp_path, readonly=True, constraint_filter=all_ads)
    assert (reader.status_counts(), reader.cluster_status_counts()) == expected
    reader.close()


def test_two_writers_keep_one_count(tmp_path):
    a = Store(tmp_path, constraint_filter=all_ads)
    b = Store(tmp_path, constraint_filter=all_ads)
    a.append(submit(1, 2))
    b.append([event(JobId(1, 0), 1)])
    a.append([event(JobId(1, 0), 5), event(JobId(1, 1), 12)])
    agree(a)
    assert kept(a) == {(1, 4): 1, (1, 5): 1}
    a.close()
    b.close()


def test_submitter_counts_read_as_before(tmp_path):
    """The Submitter ads' counts: a cluster's AccountingGroup names its submitter, else
    its Owner; the same numbers as counting the rows."""
    store = Store(tmp_path, constraint_filter=all_ads)
    busy_queue(store)
    store.append(submit(3, 4, owner="carol"))
    store.append([ClusterAd(3, {"AccountingGroup": quote_string("physics.carol")})])
    store.append([event(JobId(3, 0), 1), event(JobId(3, 1), 12)])
    assert submitter_counts(store, "example.org") == {
        "alice@example.org": {"Owner": "alice", "Idle": 2, "Running": 0, "Held": 0},
        "bob@example.org": {"Owner": "bob", "Idle": 1, "Running": 0, "Held": 1},
        "physics.carol@example.org": {"Owner": "carol", "Idle": 2, "Running": 1, "Held": 1},
    }
    store.close()


def test_ocu_wanted_counts_read_the_queue_again_only_when_the_journal_moved(tmp_path):
    """The Submitter ads' OCUWantedJobs and OCURunningJobs (every OCUWanted job, as
    HTCondor's count_jobs): a settled queue is not read again each round."""
    from types import SimpleNamespace

    from jobledger.daemons.schedd.ocus import Ocus

    store = Store(tmp_path)
    store.append(submit(1, 3) + submit(2, 2, owner="bob"))
    store.append([ClusterAd(1, {"OCUWanted": "true"}), event(JobId(1, 0), 1)])
    reads = []
    query = store.query
    store.query = lambda *a, **k: reads.append(a) or query(*a, **k)   # type: ignore[method-assign]
    userrecs = SimpleNamespace(lock=__import__("threading").Lock(),
                               fold=SimpleNamespace(records={"user": {}}))
    ocus = Ocus(store, userrecs, None, None, None, None, list, "schedd", lambda: 1, print,
                lambda: None, lambda: None)
    expected = {"alice@example.org": {"OCUClaimsClaimed": 0, "OCUClaimsBorrowed": 0, "Unclaimed": 0,
                                      "OCUWantedJobs": 3, "OCURunningJobs": 1}}
    assert ocus.submitter_counts("example.org") == expected
    assert ocus.submitter_counts("example.org") == expected and len(reads) == 1
    store.append([event(JobId(1, 1), 1)])
    expected["alice@example.org"]["OCURunningJobs"] = 2
    assert ocus.submitter_counts("example.org") == expected and len(reads) == 2
    store.close()
