"""The SQLite store: queue projection in the append's transaction, restarts, group commit."""

from __future__ import annotations

import threading

import pytest

from jobledger.daemons.storage.queryplan import plan, split_conjuncts
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.codecs.journal import verify_rows
from jobledger.eventcore.errors import InvalidTransition, JournalError, PositionConflict, StaleDecision
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.queue import fold_entries
from jobledger.eventcore.records import Assumed, LeaveQueue, ProcAd, SetAttributes
from jobledger.eventcore.status import JobStatus

from tests.journal.helpers import all_ads, event, life, submit


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path, constraint_filter=all_ads)
    yield s
    s.close()


def snapshot(store: Store):
    """Everything the queue projection holds, for comparisons."""
    return (store.query(), store.history(), store._read("SELECT * FROM queue_clusters ORDER BY 1"))


def test_queue_follows_events(store):
    store.append(submit(1, 3))
    j = JobId(1, 0)
    store.append([event(j, 1, 100), event(j, 12, 110)])
    assert store.job_status(j) is JobStatus.HELD
    ad = store.job_ad(j)
    assert ad["Owner"] == '"alice"' and ad["HoldReason"] == '"because"'
    assert ad["LastJobStatus"] == "2" and ad["EnteredCurrentStatus"] == "110"
    store.append([event(j, 13, 120)])
    ad = store.job_ad(j)
    assert ad["JobStatus"] == "1" and ad["LastHoldReason"] == '"because"' and "HoldReason" not in ad
    assert ad["ReleaseReason"] == '"ok"'


def test_removed_then_held_releases_back_to_removed(store):
    j = JobId(1, 0)
    store.append(submit(1, 1) + [event(j, 1), event(j, 9)])
    assert store.job_status(j) is JobStatus.REMOVED
    store.append([event(j, 12)])
    assert store.job_ad(j)["JobStatusOnRelease"] == "3"
    store.append([event(j, 13)])
    assert store.job_status(j) is JobStatus.REMOVED


def test_illegal_event_changes_nothing(store):
    store.append(submit(1, 2))
    before = (store.head(), snapshot(store))
    with pytest.raises(InvalidTransition):
        store.append([event(JobId(1, 0), 1), event(JobId(1, 1), 5)])
    assert (store.head(), snapshot(store)) == before
    assert store.append([event(JobId(1, 1), 1)]) == before[0] + 1


def test_a_decision_commits_only_on_the_job_state_it_assumed(store):
    """Optimistic concurrency per job: ``Assumed`` is the append's precondition (status
    and claim as read), checked at commit against the queue of that very commit;
    a mismatch refuses the whole append (a ``StaleDecision``, an ``InvalidTransition``
    to callers that catch those) and is never journaled."""
    store.append(submit(1, 2))
    j, other = JobId(1, 0), JobId(1, 1)
    idle = Assumed.of(j, store.job_ad(j))
    assert (idle.status, idle.claim) == (JobStatus.IDLE, None)
    store.append([SetAttributes(j, set={"ClaimId": '"c1"'}), event(j, 1)])    # its run started
    before = (store.head(), snapshot(store))
    with pytest.raises(StaleDecision) as refused:
        store.append([Assumed(other, JobStatus.IDLE), event(other, 12),   # holds, alone
                      idle, event(j, 9), LeaveQueue(j)])                     # decided on idle
    assert refused.value.job == j and refused.value.actual == (JobStatus.RUNNING, '"c1"')
    assert isinstance(refused.value, InvalidTransition)
    assert (store.head(), snapshot(store)) == before
    running = Assumed.of(j, store.job_ad(j))
    assert store.append([running, event(j, 9), LeaveQueue(j)]) == before[0] + 2
    assert [r.type for r in store.rows(before[0])] == ["event", "leave"]     # no precondition rows
    with pytest.raises(StaleDecision):      # the job left: an assumption of it present fails
        store.append([running, event(other, 1)])
    assert store.append([Assumed(j, None), Assumed(other, JobStatus.IDLE), event(other, 1)])


def test_an_assumption_sees_the_records_before_it_in_one_commit(tmp_path):
    """In a group commit the queue an assumption is checked against includes the
    requests committed before it in the same transaction."""
    from jobledger.daemons.storage.store import _Request
    s = Store(tmp_path, durability="group", constraint_filter=all_ads)
    s.append(submit(1, 1))
    j = JobId(1, 0)
    start = _Request([Assumed(j, JobStatus.IDLE), SetAttributes(j, set={"ClaimId": '"c"'}),
                      event(j, 1)], None)
    late = _Request([Assumed(j, JobStatus.IDLE), event(j, 12)], None)
    held = _Request([Assumed(j, JobStatus.RUNNING, '"c"'), event(j, 12)], None)
    with s._write_lock:
        s._commit([start, late, held])
    assert isinstance(late.error, StaleDecision) and held.error is None
    assert s.job_status(j) is JobStatus.HELD
    s.close()


def test_status_cannot_be_set_as_an_attribute(store):
    store.append(submit(1, 1))
    with pytest.raises(InvalidTransition):
        store.append([SetAttributes(JobId(1, 0), {"JobStatus": "2"})])
    store.append([SetAttributes(JobId(1, 0), {"Foo": '"bar"'}, ("Args",))])
    ad = store.job_ad(JobId(1, 0))
    assert ad["Foo"] == '"bar"' and "Args" not in ad


def test_a_big_submit_is_all_or_nothing(store):
    records = submit(1, 10_000)
    records.append(ProcAd(JobId(1, 0), {"JobStatus": "1"}))   # duplicate proc: refused
    with pytest.raises(InvalidTransition):
        store.append(records)
    assert store.head() == 0 and store.query() == []
    assert store.append(records[:-1]) == 20_001
    assert len(store.query("JobStatus == 1", ["ProcId"])) == 10_000


def test_leave_writes_history_newest_first(store):
    store.append(submit(1, 2) + submit(2, 1, owner="bob"))
    for job in (JobId(1, 0), JobId(2, 0), JobId(1, 1)):
        store.append(life(job))
    assert store.query() == []
    hist = store.history(projection=["ClusterId", "ProcId"])
    assert hist == [{"ClusterId": "1", "ProcId": "1"}, {"ClusterId": "2", "ProcId": "0"},
                    {"ClusterId": "1", "ProcId": "0"}]
    assert len(store.history(match=1)) == 1
    assert [h["ProcId"] for h in store.history(since=2)] == ["1"]
    assert [h["ProcId"] for h in store.history(since="1.0")] == ["1", "0"]
    assert store.cluster_ad(1) is None      # last proc gone: cluster ad destroyed


def test_the_writer_keeps_the_queue_in_memory_not_the_history(store):
    """Jobs and clusters that left are forgotten by the writer's fold once their rows
    are gone; what is still queued stays, and a job that left is still seen as gone."""
    store.append(submit(1, 2) + submit(2, 1))
    store.append(life(JobId(1, 0)) + life(JobId(2, 0)))
    fold = store._fold
    assert set(fold.procs) == {(1, 1)} and set(fold.clusters) == {1} and 2 not in fold.counts
    assert store.job_ad(JobId(1, 0)) is None and store.cluster_ad(2) is None
    with pytest.raises(InvalidTransition):
        store.append([event(JobId(1, 0), 1)])          # not in the queue any more
    store.append(life(JobId(1, 1)))
    fold = store._fold                                  # (a refused append starts it afresh)
    assert not fold.procs and not fold.clusters and not fold.counts and not fold._loader_empty
    assert store.query() == [] and len(store.history()) == 3


def test_leave_only_from_completed_or_removed(store):
    store.append(submit(1, 1))
    with pytest.raises(InvalidTransition):
        store.append(life(JobId(1, 0))[2:])


def test_query_uses_indexes_and_projection(store):
    store.append(submit(1, 3) + submit(2, 2, owner="Bob"))
    store.append([event(JobId(2, 1), 1)])
    assert [a["ProcId"] for a in store.query('Owner == "bob"')] == ["0", "1"]
    assert store.query("JobStatus == 2", ["ClusterId", "ProcId", "Nope"]) == [
        {"ClusterId": "2", "ProcId": "1"}]
    assert len(store.query("ClusterId == 1 && ProcId == 2")) == 1
    assert len(store.query(limit=2)) == 2


def test_each_walks_what_query_lists_a_chunk_at_a_time(store, monkeypatch):
    import jobledger.daemons.storage.views as views
    monkeypatch.setattr(views, "CHUNK", 2)            # several chunks and clusters per walk
    store.append(submit(1, 3) + submit(2, 2, owner="Bob") + submit(3, 1))
    walk = store.each()
    first = next(walk)
    assert (first["ClusterId"], first["ProcId"]) == ("1", "0")
    assert [first, *walk] == store.query()
    assert list(store.each('Owner == "bob"')) == store.query('Owner == "bob"')


def test_residual_constraints_are_filtered(tmp_path):
    seen = []

    def only_proc_zero(text):
        seen.append(text)
        return lambda ad: ad["ProcId"] == "0"

    s = Store(tmp_path, constraint_filter=only_proc_zero)
    s.append(submit(1, 3) + submit(2, 2))
    assert [(a["ClusterId"], a["ProcId"]) for a in s.query("ClusterId == 1 && Foo =!= 3")] == [
        ("1", "0")]
    assert seen == ["ClusterId == 1 && Foo =!= 3"]
    s.close()


def test_query_plan():
    assert plan(None).where == "1" and plan("true").residual is None
    p = plan('ClusterId == 3 && owner == "al\\"x" && 2 == ProcId')
    assert p.where == "j.cluster = ? AND j.owner = ? AND j.proc = ?"
    assert p.params == (3, 'al"x', 2) and p.residual is None
    assert plan("ClusterId == 3 || ProcId == 1").where == "1"
    assert plan("JobStatus == 1 && Foo").residual == "JobStatus == 1 && Foo"
    assert plan('ClusterId == "3"').where == "1"
    p = plan("ClusterId > 3 && 5 >= ProcId && JobStatus =!= 2 && MY.JobStatus =?= 1")
    assert p.where == "j.cluster > ? AND j.proc <= ? AND j.status != ? AND j.status = ?"
    assert p.params == (3, 5, 2, 1) and p.residual is None
    assert plan('Owner != "bob"').where == "1" and plan('Owner =?= "bob"').where == "1"
    assert plan("ClusterId < 99999999999999999999").where == "1"
    assert plan("TARGET.ClusterId == 3").where == "1"    # undefined in a query, not 3
    assert split_conjuncts('a && (b && c) && "x && y"') == ["a", "(b && c)", '"x && y"']


def test_pushed_down_and_shared_answers_are_the_classad_engines(tmp_path):
    """Whatever part of a constraint goes to SQL, and whichever jobs take their
    cluster's answer (the daemons' filter: adwire.ConstraintTest), the answer is
    the ClassAd engine's on every job's merged ad."""
    from jobledger.eventcore import adwire
    from jobledger.daemons.storage.adtext import ensure_environment, to_classad
    from jobledger.eventcore.classad import compile_constraint
    ensure_environment()
    with Store(tmp_path, constraint_filter=adwire.ConstraintTest) as s:
        s.append(submit(1, 4) + submit(2, 3, owner="Bob", held=True) + submit(3, 2))
        s.append([event(JobId(1, 1), 1), event(JobId(3, 0), 1), event(JobId(1, 2), 9)])
        s.append([SetAttributes(JobId(1, -1), {"Disk": "Mem * 4", "Mem": "100",
                                               "Note": '"JobPrio"'}),
                  SetAttributes(JobId(1, 2), {"mem": "1000"}),        # over the cluster's
                  SetAttributes(JobId(1, 3), {"Tag": '"mem disk"'}),  # the names in a value
                  SetAttributes(JobId(3, 1), {"Disk": "7"})])
        every = s.query()
        for constraint in ("ClusterId > 1", "1 < ClusterId && ProcId <= 1", "JobStatus != 1",
                           "JobStatus =!= 2 && ClusterId >= 2", "ProcId =?= 0",
                           "(JobStatus > 1) && Args =!= undefined", 'owner == "BOB"',
                           "ClusterId < 3 && JobStatus == 1 && ProcId != 3",
                           "JobStatus >= 5 || ProcId == 1", 'Owner =?= "bob"',
                           "TARGET.ClusterId == 1", "my.ClusterId == 1 && MY.ProcId > 1",
                           "Disk > 1000", "Disk < 1000", "Disk =?= undefined", "Note == Cmd",
                           'Cmd == "/bin/sleep"', "random(1) == 0 && Mem == 100",
                           "time() > 0 && Disk > 0", "isUndefined(Tag)", "OCUWanted =?= true",
                           "OCUWanted =!= true && ProcId == 0", "Tag =?= undefined", "true"):
            expected = [ad for ad in every if compile_constraint(constraint)(to_classad(ad))]
            assert s.query(constraint) == expected, constraint
            wanted = [{"ProcId": ad["ProcId"], "Owner": ad["Owner"]} for ad in expected]
            assert s.query(constraint, ["procid", "OWNER"]) == wanted, constraint
            assert s.query(constraint, ["procid", "Disk"]) == [
                {k: v for k, v in ad.items() if k in ("ProcId", "Disk")} for ad in expected]


def test_restart_uses_the_snapshot_or_rebuilds(tmp_path):
    s = Store(tmp_path, constraint_filter=all_ads)
    s.append(submit(1, 3) + [event(JobId(1, 0), 1)])
    s.append(life(JobId(1, 1)))
    expected = snapshot(s)
    s.close()
    s = Store(tmp_path, constraint_filter=all_ads)
    assert s.recovered == "current" and snapshot(s) == expected
    s._conn.execute("UPDATE projection SET position = 3, checksum = "
                    "(SELECT checksum FROM journal WHERE position = 3) WHERE name='queue'")
    s._conn.execute("DELETE FROM queue_jobs")   # a snapshot at 3 would not have these anyway
    s._conn.execute("DELETE FROM history")
    s.close()
    s = Store(tmp_path, constraint_filter=all_ads)
    assert s.recovered == "rebuilt" and snapshot(s) == expected
    for bad in ("UPDATE projection SET checksum = checksum + 1",
                "UPDATE projection SET position = 999",
                "DELETE FROM projection"):
        s._conn.execute(bad)
        s._conn.execute("DELETE FROM queue_jobs")
        s.close()
        s = Store(tmp_path, constraint_filter=all_ads)
        assert s.recovered == "rebuilt", bad
        assert snapshot(s) == expected
    s.close()


def test_restart_folds_records_after_the_snapshot(tmp_path):
    s = Store(tmp_path, constraint_filter=all_ads)
    s.append(submit(1, 2))
    s.close()
    # the queue tables hold an older, valid snapshot (position 5): restart folds the rest
    s = Store(tmp_path, constraint_filter=all_ads)
    pos, checksum = s._read("SELECT position, checksum FROM projection WHERE name='queue'")[0]
    s.append([event(JobId(1, 0), 1)])
    s._conn.execute("UPDATE projection SET position=?, checksum=? WHERE name='queue'", (pos, checksum))
    s._conn.execute("UPDATE queue_jobs SET status=1, ad=(SELECT ad FROM queue_jobs WHERE proc=1) "
                    "WHERE proc=0")
    s.close()
    s = Store(tmp_path, constraint_filter=all_ads)
    assert s.recovered == "caught-up"
    assert s.job_status(JobId(1, 0)) is JobStatus.RUNNING
    s.close()


def test_incremental_equals_rebuild(store):
    store.append(submit(1, 5) + submit(2, 3, owner="bob", held=True))
    store.append([event(JobId(1, 0), 1), event(JobId(1, 1), 1), event(JobId(1, 1), 10)])
    store.append(life(JobId(1, 2)) + [event(JobId(2, 0), 13), event(JobId(2, 1), 9)])
    incremental = snapshot(store)
    store.rebuild_queue()
    assert snapshot(store) == incremental
    fold = fold_entries(store.entries())
    assert sorted((k, p.status) for k, p in fold.jobs()) == sorted(
        ((int(a["ClusterId"]), int(a["ProcId"])), int(a["JobStatus"])) for a in incremental[0])


def test_streaming_rebuild_and_catch_up_equal_incremental(store, monkeypatch):
    """A fold in chunks that forgets left jobs and starts afresh on the tables
    (queue_tables.FOLD_CHUNK, FOLD_CACHE made tiny) writes what one big fold writes,
    with events for jobs of clusters folded long before."""
    from jobledger.daemons.storage import queue_tables
    for cluster in range(1, 7):
        store.append(submit(cluster, 4, owner=f"u{cluster % 2}", held=cluster == 3))
        if cluster == 3:
            store.append([event(JobId(3, 0), 13), event(JobId(3, 1), 13)])
        store.append([event(JobId(cluster, 0), 1)] + life(JobId(cluster, 1)))
    store.append([event(JobId(1, 0), 12), event(JobId(1, 0), 13), event(JobId(3, 2), 13),
                  event(JobId(1, 2), 1), event(JobId(1, 2), 6), event(JobId(2, 3), 9)])
    store.append(life(JobId(1, 0)) + [LeaveQueue(JobId(2, 3))])
    for proc in (2, 3):        # cluster 5 empties: its cluster ad goes
        store.append(life(JobId(5, proc)))
    store.append([event(JobId(5, 0), 5), LeaveQueue(JobId(5, 0))])
    incremental = snapshot(store)
    monkeypatch.setattr(queue_tables, "FOLD_CHUNK", 7)
    monkeypatch.setattr(queue_tables, "FOLD_CACHE", 5)
    store.rebuild_queue()
    assert snapshot(store) == incremental
    # a catch-up from an older snapshot goes through the same streaming fold
    middle = store.head() // 3
    store._conn.execute("UPDATE projection SET position=?, checksum="
                        "(SELECT checksum FROM journal WHERE position=?)", (middle, middle))
    store._conn.execute("DELETE FROM queue_jobs")
    store._conn.execute("DELETE FROM queue_clusters")
    store._conn.execute("DELETE FROM history")
    store.rebuild_queue()
    assert snapshot(store) == incremental
    store.append([event(JobId(4, 2), 1)])     # the store goes on with the fold it ended with
    assert store.job_status(JobId(4, 2)) is JobStatus.RUNNING


@pytest.mark.parametrize("durability", ["fsync", "group"])
def test_concurrent_appenders(tmp_path, durability):
    s = Store(tmp_path, durability=durability, constraint_filter=all_ads)
    s.append(submit(1, 8))
    errors = []

    def work(proc):
        try:
            job = JobId(1, proc)
            for _ in range(20):
                s.append([event(job, 6)])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(p,)) for p in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = list(s.rows())
    assert len(rows) == 17 + 160 and verify_rows(rows) == []
    s.close()


def test_group_commit_checks_expected_head_per_request(tmp_path):
    s = Store(tmp_path, durability="group", constraint_filter=all_ads)
    s.append(submit(1, 1))
    with pytest.raises(PositionConflict):
        s.append([event(JobId(1, 0), 6)], expected_head=1)
    assert s.append([event(JobId(1, 0), 6)], expected_head=3) == 4
    s.close()


def test_two_writers_on_one_journal_stay_consistent(tmp_path):
    a = Store(tmp_path, constraint_filter=all_ads)
    b = Store(tmp_path, constraint_filter=all_ads)
    a.append(submit(1, 1))
    b.append([event(JobId(1, 0), 1)])
    a.append([event(JobId(1, 0), 5)])      # a's cached fold must see b's execute
    assert a.job_status(JobId(1, 0)) is JobStatus.COMPLETED
    assert verify_rows(list(a.rows())) == []
    a.close()
    b.close()


def test_wait_for_position(store):
    assert store.wait_for_position(0, 0)
    assert not store.wait_for_position(1, 0.05)
    t = threading.Timer(0.05, lambda: store.append(submit(1, 1)))
    t.start()
    assert store.wait_for_position(3, 5)
    t.join()


def test_bad_durability_and_missing_readonly(tmp_path):
    with pytest.raises(ValueError):
        Store(tmp_path, durability="sometimes")
    with pytest.raises(JournalError):
        Store(tmp_path / "nope", readonly=True)


def test_next_cluster_id(store):
    assert store.next_cluster_id() == 1
    store.append(submit(4, 1))
    assert store.next_cluster_id() == 5


def test_default_filter_evaluates_classad_constraints(tmp_path):
    s = Store(tmp_path)
    s.append(submit(1, 3) + submit(2, 2, owner="bob"))
    s.append([event(JobId(1, 2), 1)])
    assert [(a["ClusterId"], a["ProcId"]) for a in s.query('ProcId > 0 && Owner == "ALICE"')] == [
        ("1", "1"), ("1", "2")]
    assert [a["ProcId"] for a in s.query("RemoteHost =!= undefined")] == ["2"]
    assert len(s.query("time() > QDate")) == 5
    s.append(life(JobId(1, 0)))
    s.append([event(JobId(1, 1), 1), event(JobId(1, 1), 5, ReturnValue=3), LeaveQueue(JobId(1, 1))])
    assert [h["ProcId"] for h in s.history("ExitCode == 3")] == ["1"]
    assert [h["ProcId"] for h in s.history(since="ExitCode == 3")] == []
    s.close()


def test_column_projection_equals_decoded_ads(store):
    store.append(submit(1, 3) + submit(2, 2, owner='Bo"b'))
    store.append([event(JobId(2, 1), 1)])
    for constraint in (None, "JobStatus == 2", 'Owner == "alice"', "ClusterId == 2"):
        for projection in (["ClusterId", "ProcId"], ["jobstatus", "OWNER"]):
            fast = store.query(constraint, projection, limit=3)
            store_slow = [{k: v for k, v in ad.items()} for ad in
                          store.query(constraint, projection + ["Cmd"], limit=3)]
            for ad in store_slow:
                ad.pop("Cmd")
            assert fast == store_slow, (constraint, projection)


def test_paged_column_projection_equals_decoded_ads(store):
    """A streamed query of indexed columns only reads no ad: pages of the same answer."""
    store.append(submit(1, 3) + submit(2, 2, owner='Bo"b') + submit(3, 4))
    store.append([event(JobId(2, 1), 1), event(JobId(3, 2), 1)])
    for constraint in (None, "JobStatus == 2", 'Owner == "alice"', "ClusterId == 3"):
        for projection in (["ClusterId", "ProcId"], ["jobstatus", "OWNER", "procid"]):
            for limit in (-1, 1, 3, 5):
                for rows in (1, 2, 3, 100):
                    pages = list(store.query_pages(constraint, projection, limit, rows=rows))
                    slow = list(store.query_pages(constraint, projection + ["Cmd"], limit, rows=rows))
                    assert [len(page) for page in pages] == [len(page) for page in slow]
                    for ad in (ad for page in slow for ad in page):
                        ad.pop("Cmd")
                    assert pages == slow, (constraint, projection, limit, rows)
                    assert [list(ad) for page in pages for ad in page] == [
                        list(ad) for page in slow for ad in page]         # the same order
                    assert [ad for page in pages for ad in page] == store.query(constraint, projection, limit)
                    assert all(0 < len(page) <= rows for page in pages)


def test_one_refused_request_in_a_group_leaves_the_others(tmp_path):
    from jobledger.daemons.storage.store import _Request
    s = Store(tmp_path, durability="group", constraint_filter=all_ads)
    s.append(submit(1, 3))
    good1 = _Request([event(JobId(1, 0), 1)], None)
    bad = _Request([event(JobId(1, 1), 1), event(JobId(1, 1), 13)], None)   # release while running
    good2 = _Request([event(JobId(1, 0), 12), event(JobId(1, 2), 1)], None)
    conflict = _Request([event(JobId(1, 2), 6)], 1)
    with s._write_lock:
        s._commit([good1, bad, good2, conflict])
    assert (good1.result, good2.result) == (8, 10)
    assert isinstance(bad.error, InvalidTransition) and isinstance(conflict.error, PositionConflict)
    assert [s.job_status(JobId(1, p)) for p in range(3)] == [
        JobStatus.HELD, JobStatus.IDLE, JobStatus.RUNNING]
    incremental = snapshot(s)
    s.rebuild_queue()
    assert snapshot(s) == incremental and verify_rows(list(s.rows())) == []
    s.close()


@pytest.mark.parametrize("durability", ["group", "fsync"])
def test_append_each_commits_batches_together_each_on_its_own(tmp_path, durability):
    s = Store(tmp_path, durability=durability, constraint_filter=all_ads)
    s.append(submit(1, 3))
    commits = []
    s._conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    done = s.append_each([[event(JobId(1, 0), 1)],
                          [event(JobId(1, 1), 1), event(JobId(1, 1), 13)],   # release while running
                          [event(JobId(1, 2), 1)]])
    s._conn.set_trace_callback(None)
    assert done[0] == 8 and isinstance(done[1], InvalidTransition) and done[2] == 9
    assert commits == ["COMMIT"] and s.head() == 9
    assert [s.job_status(JobId(1, p)) for p in range(3)] == [
        JobStatus.RUNNING, JobStatus.IDLE, JobStatus.RUNNING]
    assert verify_rows(list(s.rows())) == []
    s.close()


def test_counts(store):
    store.append(submit(1, 3) + submit(2, 1, held=True))
    store.append([event(JobId(1, 0), 1)])
    assert store.status_counts() == {1: 2, 2: 1, 5: 1}
    assert store.job_count() == 4


@pytest.mark.parametrize("damage", [
    "UPDATE queue_jobs SET ad = '{not json' WHERE proc = 0",
    "DROP TABLE queue_jobs",
    "UPDATE projection SET checksum = checksum + 1",
])
def test_a_damaged_snapshot_means_a_rebuild_not_a_stall(tmp_path, damage):
    s = Store(tmp_path, constraint_filter=all_ads)
    s.append(submit(1, 2) + submit(2, 1))
    s.append([event(JobId(1, 0), 1)])
    expected = snapshot(s)
    pos, checksum = s._read("SELECT position, checksum FROM projection")[0]
    s.append([event(JobId(1, 1), 6), event(JobId(1, 0), 6)])
    s._conn.execute("UPDATE projection SET position=?, checksum=?", (pos, checksum))
    s._conn.execute(damage)
    s.close()
    s = Store(tmp_path, constraint_filter=all_ads)
    assert s.recovered in ("rebuilt", "caught-up")
    assert snapshot(s) == expected
    s.close()


def test_constraints_may_be_expression_trees(tmp_path):
    from jobledger.eventcore.classad import ExprTree
    s = Store(tmp_path)
    s.append(submit(1, 3))
    assert [a["ProcId"] for a in s.query(ExprTree("ProcId >= 1 && ClusterId == 1"))] == ["1", "2"]
    s.append(life(JobId(1, 2)))
    assert [a["ProcId"] for a in s.history(ExprTree("ExitCode == 0"))] == ["2"]
    s.close()


def test_point_reads_see_commits_made_while_a_chunked_query_is_open(tmp_path):
    # A query keeps its statement open between chunks (the residual constraint is
    # evaluated outside the lock); a job_ad read meanwhile must still see every commit
    # (the schedd decides a starter's outcome on it: a stale ad dropped outcomes).
    inside, resume = threading.Event(), threading.Event()

    def pausing(text):
        def keep(ad):
            inside.set()
            resume.wait(10)
            return True
        return keep

    s = Store(tmp_path, constraint_filter=pausing)
    s.append(submit(1, 600))
    job = JobId(1, 599)
    scan = threading.Thread(target=s.query, args=("JobStatus == 1 && Foo =!= 3",))
    scan.start()
    try:
        assert inside.wait(10)
        s.append([event(job, 1)])
        assert s.job_status(job) is JobStatus.RUNNING
        assert s.job_ad(job)["JobStatus"] == "2"
    finally:
        resume.set()
        scan.join(10)
    s.close()


@pytest.mark.parametrize("durability", ["group", "fsync"])
def test_a_batch_function_decides_on_the_state_the_commit_reached(tmp_path, durability):
    """A batch may be a function of the job ads as the batches before it left them in the
    same commit (a run's end decided right after its start, one commit for both); one
    that raises is refused alone."""
    s = Store(tmp_path, durability=durability, constraint_filter=all_ads)
    s.append(submit(1, 2))
    seen = []

    def end_of(job):
        def decide(job_ad):
            seen.append(job_ad(job)["JobStatus"])
            return [event(job, 5)]
        return decide

    def refuse(job_ad):
        raise StaleDecision(JobId(1, 1), "idle", "not this one")
    commits = []
    s._conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    done = s.append_each([[event(JobId(1, 0), 1)], end_of(JobId(1, 0)), refuse, [event(JobId(1, 1), 1)]])
    s._conn.set_trace_callback(None)
    assert seen == ["2"]                       # running: the EXECUTE before it, not committed yet
    assert commits == ["COMMIT"] and isinstance(done[2], StaleDecision)
    assert done[0] < done[1] < done[3] == s.head()
    assert [s.job_status(JobId(1, p)) for p in range(2)] == [JobStatus.COMPLETED, JobStatus.RUNNING]
    assert verify_rows(list(s.rows())) == []
    s.close()
