"""The JOB_QUEUE_LOG writer's fold kept in SQLite (daemons.queuelog_state.SqliteProcs):
the same lines as the fold kept in memory, whatever the batches and however often the
fold hands its procs back; fewer than SETTLE_EVERY procs left in the fold's memory
between steps, all of them in the store once settled; the scratch file gone when
closed."""

from __future__ import annotations

import random

import pytest

from jobledger.daemons.queuelog_state import SqliteProcs
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import Entry
from jobledger.eventcore.projections import queuelog_live
from jobledger.eventcore.projections.queuelog_live import QueueLogFold


def _entries() -> list[Entry]:
    steps = []
    for cluster in (1, 2, 3):
        steps.append((JobId(cluster, -1), "cluster", {"ad": {"Cmd": '"/bin/true"', "Owner": '"alice"'}}))
        for proc in range(4):
            steps.append((JobId(cluster, proc), "proc", {"ad": {"Args": f'"{proc}"'}}))
            steps.append((JobId(cluster, proc), "event", {"event": {"type": 0, "timestamp": 10}}))
    steps.append((JobId(2, 1), "set", {"set": {"Note": '"a\x1fb"'}, "delete": ["Args"]}))  # the separator
    steps.append((JobId(2, -1), "set", {"set": {"Owner": '"bob"'}, "delete": []}))
    for cluster in (1, 2):
        for proc in range(4):
            job = JobId(cluster, proc)
            steps.append((job, "event", {"event": {"type": 1, "timestamp": 11}}))
            if cluster == 2 and proc == 1:
                continue
            steps.append((job, "event", {"event": {"type": 5, "timestamp": 12, "ReturnValue": 0}}))
            steps.append((job, "leave", {}))
    steps.append((JobId(2, 1), "set", {"set": {"Other": "7"}, "delete": []}))
    steps.append((JobId(2, 1), "event", {"event": {"type": 5, "timestamp": 13, "ReturnValue": 1}}))
    steps.append((JobId(2, 1), "leave", {}))                # cluster 2 leaves with its last job
    steps.append((JobId(4, -1), "cluster", {"ad": {"Cmd": '"/bin/sh"'}}))
    steps.append((JobId(4, 0), "proc", {"ad": {}}))
    steps.append((JobId(3, 2), "set", {"set": {"Args": '"changed"'}, "delete": []}))
    return [Entry(n, 0.0, job, kind, payload) for n, (job, kind, payload) in enumerate(steps, 1)]


@pytest.mark.parametrize("seed", range(4))
def test_the_same_lines_as_the_fold_in_memory(tmp_path, monkeypatch, seed):
    expected = QueueLogFold().apply(_entries())
    monkeypatch.setattr(queuelog_live, "SETTLE_EVERY", 1 + seed)
    store = SqliteProcs(tmp_path / ".job_queue.log.fold")
    fold = QueueLogFold(store)
    entries, rng, lines = _entries(), random.Random(seed), []
    while entries:
        size = rng.randint(1, 6)
        lines += fold.apply(entries[:size])
        entries = entries[size:]
        assert len(fold.fold.procs) < 1 + seed and len(fold.fold.touched) < 1 + seed
    assert lines == expected
    fold.settle()
    assert fold.fold.procs == {} and fold.fold.clusters == {} and fold.fold.counts == {}
    left = store.db.execute("SELECT id >> 32, id & 4294967295 FROM procs ORDER BY id").fetchall()
    assert left == [(3, 0), (3, 1), (3, 2), (3, 3), (4, 0)]
    assert store.db.execute("SELECT cluster, count FROM clusters ORDER BY 1").fetchall() == [(3, 4), (4, 1)]
    store.close()
    assert not (tmp_path / ".job_queue.log.fold").exists()


def test_a_stale_scratch_file_is_replaced(tmp_path):
    path = tmp_path / ".job_queue.log.fold"
    path.write_bytes(b"left by a killed schedd")
    store = SqliteProcs(path)
    assert QueueLogFold(store).apply(_entries()) == QueueLogFold().apply(_entries())
    store.close()
