"""The JOB_QUEUE_LOG writer keeps its fold file across a clean stop and goes on from it
(folding only what is new) when its mark holds for the journal and the log; anything
else -- another log, another journal, a damaged or unmarked file, a writer killed after
its start -- means a fold of the whole journal again.  Either way the log's bytes are
those a writer folding everything again writes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobledger.daemons import queuelog_writer
from jobledger.daemons.queuelog_writer import JobQueueLogWriter
from jobledger.daemons.storage.reader import Reader
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import row_entries
from jobledger.eventcore.projections.queuelog_live import QueueLogFold
from jobledger.eventcore.records import ClusterAd, LeaveQueue, UserRecord, quote_string

from tests.journal.helpers import all_ads, as_blocks, event, life, submit


def fold_file(log: Path) -> Path:
    return log.with_name(f".{log.name}.fold")


def write(store: Store, log: Path) -> JobQueueLogWriter:
    """One writer's run: open, catch up, stop cleanly."""
    writer = JobQueueLogWriter(store.path, log, fsync=False)
    writer.catch_up()
    writer.close()
    return writer


def first_part(store: Store) -> None:
    store.append(submit(1, 4) + submit(2, 3, owner="bob", held=True))
    store.append([UserRecord("user", "alice@example.org", "add", {"MaxJobs": "10"})])
    store.append([event(JobId(1, 0), 1)] + life(JobId(1, 1)))


def second_part(store: Store) -> None:
    store.append([event(JobId(1, 0), 5), LeaveQueue(JobId(1, 0)), event(JobId(2, 0), 13)])
    store.append([UserRecord("user", "alice@example.org", "edit", {"MaxJobs": "20"})])
    store.append([ClusterAd(2, {"Note": quote_string("later")})] + submit(3, 2))


def reference(tmp_path: Path, store: Store, log: Path, kept_log: bytes) -> bytes:
    """The log a writer folding everything again writes from ``kept_log`` on."""
    other = tmp_path / "reference" / log.name
    other.parent.mkdir()
    other.write_bytes(kept_log)
    assert not write(store, other).resumed
    return other.read_bytes()


def test_a_clean_stop_keeps_the_fold_and_the_next_start_folds_only_what_is_new(tmp_path, monkeypatch):
    store = Store(tmp_path / "pool", constraint_filter=all_ads)
    log = tmp_path / "spool" / "job_queue.log"
    first_part(store)
    assert not write(store, log).resumed
    assert fold_file(log).exists()
    kept_log = log.read_bytes()
    second_part(store)
    expected = reference(tmp_path, store, log, kept_log)
    folds = []
    monkeypatch.setattr(JobQueueLogWriter, "_fold_to", lambda self, reached: folds.append(reached))
    assert write(store, log).resumed and folds == []
    assert log.read_bytes() == expected
    assert write(store, log).resumed          # and again, with nothing new
    assert log.read_bytes() == expected
    store.close()


def _other_log(log: Path) -> None:
    text = log.read_text()
    first, rest = text.split("\n", 1)
    log.write_text(first[:-1] + str((int(first[-1]) + 1) % 10) + "\n" + rest)   # another creation time


def _damaged(log: Path) -> None:
    with open(fold_file(log), "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 64)


def _unmarked(log: Path) -> None:
    import sqlite3
    db = sqlite3.connect(fold_file(log))
    db.execute("DELETE FROM mark")
    db.commit()
    db.close()


def _bad_mark(log: Path) -> None:
    import sqlite3
    db = sqlite3.connect(fold_file(log))
    db.execute("UPDATE mark SET value = '{\"position\": \"x\"}'")
    db.commit()
    db.close()


@pytest.mark.parametrize("change", [_other_log, _damaged, _unmarked, _bad_mark, "journal"])
def test_any_mismatch_means_a_fold_of_the_whole_journal(tmp_path, change):
    store = Store(tmp_path / "pool", constraint_filter=all_ads)
    log = tmp_path / "spool" / "job_queue.log"
    first_part(store)
    write(store, log)
    if change == "journal":          # another journal at the same place, as long
        store.close()
        shutil.rmtree(tmp_path / "pool")
        store = Store(tmp_path / "pool", constraint_filter=all_ads)
        store.append(submit(1, 4, owner="carol") + submit(2, 3, owner="bob", held=True))
        store.append([UserRecord("user", "alice@example.org", "add", {"MaxJobs": "10"})])
        store.append([event(JobId(1, 0), 1)] + life(JobId(1, 1)))
    else:
        change(log)
    kept_log = log.read_bytes()
    second_part(store)
    expected = reference(tmp_path, store, log, kept_log)
    assert not write(store, log).resumed
    assert log.read_bytes() == expected
    store.close()


_CHILD = r"""
import sys
from jobledger.daemons import queuelog_writer
from jobledger.daemons.queuelog_writer import JobQueueLogWriter
queuelog_writer.CHUNK, queuelog_writer.BATCH, queuelog_writer.WRITE_BYTES = 4000, 64, 4096
writer = JobQueueLogWriter(sys.argv[1], sys.argv[2], fsync=False)
writer.open()
print("resumed" if writer.resumed else "folded", flush=True)
writer.catch_up()
writer.close()
print("done", flush=True)
"""


def fresh_lines(store: Store) -> list[str]:
    with Reader(store.path) as reader:
        return QueueLogFold().apply([e for row in reader.rows() for e in row_entries(row)])


def change_lines(log: Path) -> list[str]:
    return [line for line in log.read_text().split("\n")[2:]
            if line and not line.startswith(("105 ", "106 "))]


def test_a_writer_killed_mid_way_after_going_on_from_a_kept_fold(tmp_path):
    """kill -9 while a writer that went on from a kept fold writes a big catch-up: the
    next start finds no mark (removed when the killed writer went on), folds everything
    again, and the log holds every change exactly once."""
    store = Store(tmp_path / "pool", constraint_filter=all_ads)
    log = tmp_path / "spool" / "job_queue.log"
    first_part(store)
    write(store, log)
    store.append_stream([as_blocks(submit(cluster, 500)) for cluster in range(10, 30)])
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(store.path), str(log)],
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "resumed"
        size = log.stat().st_size
        deadline = time.monotonic() + 120
        while log.stat().st_size <= size + 20_000:      # mid-way through the catch-up
            assert child.poll() is None and time.monotonic() < deadline, "the writer ended first"
            time.sleep(0.001)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    writer = JobQueueLogWriter(store.path, log, fsync=False)
    writer.open()
    assert not writer.resumed
    writer.catch_up()
    writer.close()
    assert change_lines(log) == fresh_lines(store)
    assert write(store, log).resumed            # a clean stop after it: kept again
    assert change_lines(log) == fresh_lines(store)
    store.close()


def test_a_writer_stopped_by_an_error_keeps_no_fold(tmp_path, monkeypatch):
    store = Store(tmp_path / "pool", constraint_filter=all_ads)
    log = tmp_path / "spool" / "job_queue.log"
    first_part(store)
    writer = JobQueueLogWriter(store.path, log, fsync=False)
    writer.open()

    def broken(self, entries):
        raise OSError("disk full")
    monkeypatch.setattr(QueueLogFold, "apply", broken)
    with pytest.raises(OSError):
        writer.catch_up()
    writer.close()
    assert not fold_file(log).exists()
    monkeypatch.undo()
    assert not write(store, log).resumed
    assert change_lines(log) == fresh_lines(store)
    store.close()


@pytest.mark.parametrize("block", [3, 7, 64, 1 << 20])
def test_recover_reads_the_log_from_its_end(tmp_path, monkeypatch, block):
    """recover() finds the last end line reading back a block at a time: whatever the
    blocks, it cuts what follows (a torn transaction, a torn end line) and names the
    position, as reading the file whole did."""
    from jobledger.daemons.queuelog_writer import recover
    monkeypatch.setattr(queuelog_writer, "BLOCK", block)
    path = tmp_path / "job_queue.log"
    header = "107 1 CreationTimestamp 1\n101 0.0 Job Machine\n"
    whole = header + "105 \n103 0.0 NextClusterNum 2\n106 #journal 7\n105 \n103 1.0 A 106 x\n106 #journal 12\n"
    for torn in ("", "105 \n101 1.1 Job Machine\n103 1.1 Own", "105 \n106 #jour", "105 \n106 #journal 13"):
        path.write_text(whole + torn)
        assert recover(path) == 12 and path.read_text() == whole
    path.write_text(header + "105 \n103 0.0 NextClusterNum 2")
    assert recover(path) == 0 and path.read_text() == header
    path.write_text(header)
    assert recover(path) == 0 and path.read_text() == header
    path.write_text(whole + "105 \n106 \n")          # an end line naming no position
    assert recover(path) is None
    path.write_text(whole + "106 " + "x" * 50 + "\n")
    assert recover(path) is None
    path.write_text("107 1 CreationTimestamp 1\n102 0.0\n")
    assert recover(path) is None
