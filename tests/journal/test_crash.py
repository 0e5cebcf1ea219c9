"""Crash recovery with real processes: SIGKILL an appender or a projector at random points."""

from __future__ import annotations

import datetime
import os
import random
import shutil
import signal
import time

import pytest

from jobledger.daemons.projector import Projector
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.codecs.journal import verify_rows
from jobledger.eventcore.ids import JobId

from tests.journal.helpers import all_ads, event, life, submit

UTC = datetime.timezone.utc
pytestmark = pytest.mark.slow


def _appender(local_dir, durability, seed, wfd):
    rnd = random.Random(seed)
    store = Store(local_dir, durability=durability, constraint_filter=all_ads)
    cluster = store.next_cluster_id()
    while True:
        records = submit(cluster, rnd.randint(1, 40))
        if rnd.random() < 0.5:
            records += life(JobId(cluster, 0))
        os.write(wfd, f"try {store._head} {len(records)}\n".encode())
        position = store.append(records)
        os.write(wfd, f"ack {position}\n".encode())
        cluster += 1


def _fork(target, *args):
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        try:
            os.close(rfd)
            target(*args, wfd)
        finally:
            os._exit(1)
    os.close(wfd)
    return pid, rfd


def _read_all(rfd) -> str:
    chunks = []
    while True:
        data = os.read(rfd, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(rfd)
    return b"".join(chunks).decode()


def _kill_after(pid, rfd, acks_wanted, delay):
    seen = b""
    while seen.count(b"ack ") < acks_wanted:
        data = os.read(rfd, 4096)
        if not data:
            break
        seen += data
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return seen.decode() + _read_all(rfd)


def queue_state(store):
    return (store.query(), store.history(),
            store._read("SELECT * FROM queue_clusters ORDER BY 1"))


@pytest.mark.parametrize("durability", ["fsync", "group"])
def test_killed_appender_keeps_every_acknowledged_append(tmp_path, durability):
    rnd = random.Random(20261121)
    trials = 120
    for trial in range(trials):
        local = tmp_path / f"pool{trial // 30}"
        pid, rfd = _fork(_appender, local, durability, rnd.randrange(10**9))
        out = _kill_after(pid, rfd, rnd.randint(0, 4), rnd.random() * 0.01)
        lines = out.split("\n")[:-1] if not out.endswith("\n") else out.splitlines()
        acked = [int(l.split()[1]) for l in lines if l.startswith("ack ")]
        tries = [tuple(map(int, l.split()[1:])) for l in lines if l.startswith("try ")]
        store = Store(local, constraint_filter=all_ads)
        head = store.head()
        rows = list(store.rows())
        assert verify_rows(rows) == [], f"trial {trial}"
        assert len(rows) == head
        if acked:
            assert head >= acked[-1]
        if tries:
            start, size = tries[-1]
            last_acked = acked[-1] if acked else None
            if last_acked == start + size:
                assert head == last_acked
            else:  # the append in flight: whole or not at all
                assert head in (start, start + size), (trial, head, start, size)
        incremental = queue_state(store)
        store.rebuild_queue()
        assert queue_state(store) == incremental, f"trial {trial}"
        store.close()


def _projector(local_dir, evlog, wfd):
    store = Store(local_dir, constraint_filter=all_ads)
    p = Projector(store, event_log=evlog, max_event_log=2000, event_log_rotations=2,
                  tz=UTC, fsync=False, chunk=3)
    os.write(wfd, b"ack ready\n")
    p.catch_up()
    os.write(wfd, b"done\n")


def _build_pool(local, logs_dir, jobs):
    """The same journal every time (fixed clock), logs under ``logs_dir``."""
    store = Store(local, durability="normal", constraint_filter=all_ads,
                  clock=lambda: 1_700_000_300.0)
    for cluster in range(1, 4):
        log = str(logs_dir / f"c{cluster}.log")
        store.append(submit(cluster, jobs, log=log, timestamp=1_700_000_000 + cluster))
        for proc in range(jobs):
            store.append([event(JobId(cluster, proc), 1, 1_700_000_100 + proc),
                          event(JobId(cluster, proc), 6, 1_700_000_110 + proc)])
        for proc in range(0, jobs, 2):
            store.append([event(JobId(cluster, proc), 5, 1_700_000_200 + proc),
                          *life(JobId(cluster, proc))[2:]])
    store.close()


def _files(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def _finish_projection(pool, evlog: str) -> None:
    """Project the rest of ``pool``'s journal with a projector never interrupted."""
    store = Store(pool / "local", constraint_filter=all_ads)
    p = Projector(store, event_log=evlog, max_event_log=2000, event_log_rotations=2,
                  tz=UTC, fsync=False, chunk=3)
    p.catch_up()
    p.close()
    store.close()


def _reference_logs(tmp_path):
    """The logs of the test pool's journal, projected by a projector never interrupted."""
    ref = tmp_path / "ref"
    _build_pool(ref / "local", ref / "logs", 6)
    store = Store(ref / "local", constraint_filter=all_ads)
    Projector(store, event_log=str(ref / "logs" / "EventLog"), max_event_log=2000,
              event_log_rotations=2, tz=UTC, fsync=False, chunk=3).catch_up()
    store.close()
    return _files(ref / "logs")


def test_killed_projector_leaves_what_a_full_rebuild_gives(tmp_path):
    want = _reference_logs(tmp_path)
    assert {"EventLog", "EventLog.1", "c1.log", "c3.log"} <= want.keys()
    rnd = random.Random(7)
    interrupted = 0
    for trial in range(60):
        pool = tmp_path / f"t{trial}"
        _build_pool(pool / "local", pool / "logs", 6)
        evlog = str(pool / "logs" / "EventLog")
        for _ in range(rnd.randint(1, 3)):      # killed once or several times
            pid, rfd = _fork(_projector, pool / "local", evlog)
            interrupted += "done" not in _kill_after(pid, rfd, 1, rnd.random() * 0.05)
        _finish_projection(pool, evlog)
        got = _files(pool / "logs")
        assert got.keys() == want.keys(), trial
        for name in want:
            assert got[name] == want[name], (trial, name)
        shutil.rmtree(pool)
    assert interrupted > 30     # most kills land in the middle of the work


FOREIGN = ("000 ({cluster}.000.000) 2024-01-01 00:00:00 Job submitted from host: <10.0.0.1:9618>\n"
           "    DAG Node: FAKE{i}\n...\n")


def test_killed_projector_keeps_what_another_writer_appends(tmp_path):
    """A user log shared with another writer (as DAGMan's nodes log is): projectors killed at
    random points while the other appends: the other's events all stay, in its order, and
    ours are what an uninterrupted projector writes, each once."""
    import threading
    want = _reference_logs(tmp_path)["c1.log"]
    rnd = random.Random(11)
    for trial in range(20):
        pool = tmp_path / f"t{trial}"
        _build_pool(pool / "local", pool / "logs", 6)
        log = pool / "logs" / "c1.log"
        evlog = str(pool / "logs" / "EventLog")
        stop, written = threading.Event(), []

        def other():
            os.makedirs(log.parent, exist_ok=True)
            while not stop.is_set() or len(written) < 3:
                text = FOREIGN.format(cluster=900000 + len(written), i=len(written)).encode()
                fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, text)
                finally:
                    os.close(fd)
                written.append(text)
                time.sleep(0.001)
        thread = threading.Thread(target=other)
        thread.start()
        try:
            for _ in range(rnd.randint(1, 3)):
                pid, rfd = _fork(_projector, pool / "local", evlog)
                _kill_after(pid, rfd, 1, rnd.random() * 0.05)
        finally:
            stop.set()
            thread.join()
        _finish_projection(pool, evlog)
        data = log.read_bytes()
        places = [data.find(text) for text in written]
        assert all(data.count(text) == 1 for text in written), trial
        assert places == sorted(places), trial        # each of theirs, once, in their order
        for text in written:
            data = data.replace(text, b"")
        assert data == want, trial
        shutil.rmtree(pool)


def _group_appenders(local_dir, seed, wfd):
    """Four threads appending whole clusters through group commit."""
    import threading
    store = Store(local_dir, durability="group", constraint_filter=all_ads)
    first = store.next_cluster_id()
    lock = threading.Lock()

    def work(t):
        rnd = random.Random(seed + t)
        cluster = first + t
        while True:
            records = submit(cluster, rnd.randint(1, 30))
            with lock:
                os.write(wfd, f"try {cluster} {len(records)}\n".encode())
            store.append(records)
            with lock:
                os.write(wfd, f"ack {cluster}\n".encode())
            cluster += 4

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(4)]
    for t in threads:
        t.start()
    threads[0].join()


def test_killed_group_commit_keeps_acknowledged_appends_whole(tmp_path):
    rnd = random.Random(99)
    for trial in range(60):
        local = tmp_path / f"pool{trial // 20}"
        pid, rfd = _fork(_group_appenders, local, rnd.randrange(10**9))
        out = _kill_after(pid, rfd, rnd.randint(0, 12), rnd.random() * 0.01)
        lines = out.splitlines() if out.endswith("\n") else out.split("\n")[:-1]
        tried = {int(l.split()[1]): int(l.split()[2]) for l in lines if l.startswith("try ")}
        acked = {int(l.split()[1]) for l in lines if l.startswith("ack ")}
        store = Store(local, constraint_filter=all_ads)
        rows = list(store.rows())
        assert verify_rows(rows) == [], trial
        per_cluster = {}
        for r in rows:
            per_cluster[r.cluster] = per_cluster.get(r.cluster, 0) + 1
        for cluster, size in tried.items():
            got = per_cluster.get(cluster, 0)
            assert got in (0, size), (trial, cluster, got, size)   # whole or not at all
            if cluster in acked:
                assert got == size, (trial, cluster)                # acknowledged: kept
        incremental = queue_state(store)
        store.rebuild_queue()
        assert queue_state(store) == incremental, trial
        store.close()
