"""The live job_queue.log fold (eventcore.projections.queuelog_live.QueueLogFold): each
entry's lines are the changes of the ads it touched, against the ads as they were just
before it, and the fold keeps one copy of the queue (no second copy of what it wrote)."""

from __future__ import annotations

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import Entry
from jobledger.eventcore.projections.queue import QueueFold
from jobledger.eventcore.projections.queuelog_live import QueueLogFold


def _entries():
    job, cluster = JobId(3, 0), JobId(3, -1)
    steps = [
        (cluster, "cluster", {"ad": {"Cmd": '"/bin/true"', "Owner": '"alice"'}}),
        (job, "proc", {"ad": {"Args": '"x"'}}),
        (job, "set", {"set": {"Args": '"x"'}, "delete": []}),             # no change: no line
        (job, "set", {"set": {"Foo": "1"}, "delete": ["Args"]}),
        (cluster, "set", {"set": {"Owner": '"bob"'}, "delete": []}),
        (job, "event", {"event": {"type": 1, "timestamp": 100}}),         # EXECUTE
        (job, "event", {"event": {"type": 5, "timestamp": 101}}),         # JOB_TERMINATED
        (job, "leave", {}),
    ]
    return [Entry(n, 0.0, j, kind, payload) for n, (j, kind, payload) in enumerate(steps, 1)]


def test_each_entry_gets_the_lines_of_what_it_changed():
    fold = QueueLogFold()
    per_entry = [fold.apply([entry]) for entry in _entries()]
    assert per_entry[0] == ["103 0.0 NextClusterNum 4", "101 03.-1 Job Machine",
                            '103 03.-1 Cmd "/bin/true"', '103 03.-1 Owner "alice"',
                            "103 03.-1 ClusterId 3"]
    assert per_entry[1] == ["101 3.0 Job Machine", '103 3.0 Args "x"', "103 3.0 JobStatus 1",
                            "103 3.0 ClusterId 3", "103 3.0 ProcId 0"]
    assert per_entry[2] == []
    assert per_entry[3] == ["103 3.0 Foo 1", "104 3.0 Args"]
    assert per_entry[4] == ['103 03.-1 Owner "bob"']
    assert "103 3.0 JobStatus 2" in per_entry[5]
    assert "103 3.0 JobStatus 4" in per_entry[6]
    assert sorted(per_entry[7]) == ["102 03.-1", "102 3.0"]
    # the jobs that left are held as gone until the fold settles: no ad is kept
    assert set(fold.fold.procs.values()) <= {None} and set(fold.fold.clusters.values()) <= {None}
    assert fold.written == {}
    fold.settle()
    assert fold.fold.procs == {} and fold.fold.clusters == {}


def test_the_same_lines_in_any_batches():
    whole = QueueLogFold().apply(_entries())
    split = QueueLogFold()
    assert [line for e in _entries() for line in split.apply([e])] == whole


def test_the_ads_before_a_transaction():
    fold = QueueFold()
    for entry in _entries()[:2]:
        fold.apply(entry.position, entry.time, entry.job, entry.type, entry.payload)
    fold.take_changes()
    fold.begin()
    third = _entries()[3]
    fold.apply(third.position, third.time, third.job, third.type, third.payload)
    assert fold.before_proc((3, 0)).ad["Args"] == '"x"' and "Args" not in fold.procs[(3, 0)].ad
    assert fold.before_cluster(3) is None                # not changed by the transaction
    assert fold.before_proc((3, 1)) is None
    fold.commit()
    assert fold.before_proc((3, 0)) is None              # outside a transaction: nothing
