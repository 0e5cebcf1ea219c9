"""JOB_QUEUE_LOG: HTCondor's job_queue.log written live as a projection of the journal,
exactly once across kill -9 of the schedd, in the format HTCondor's readers parse."""

from __future__ import annotations

import os
import random
import re
import signal
import threading
import time

import pytest

from jobledger.daemons import ipc
from jobledger.daemons.queuelog_writer import recover
from jobledger.daemons.storage.reader import Reader
from jobledger.daemons.storage.schema import DB_NAME
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.journal import row_entries
from jobledger.eventcore.projections.queuelog_live import QueueLogFold
from tests.pool.conftest import wait_until

RECORD = re.compile(r"^(?:101 \S+ \S+ \S+|102 \S+|103 \S+ \S+ .*|104 \S+ \S+|105 |106 #journal \d+)$")
KEY = re.compile(r"^(?:0\.0|0\d+\.-1|\d+\.\d+)$")


def queue_log(pool):
    return pool.local_dir / "spool" / "job_queue.log"


def parse(path) -> tuple[list[list[str]], list[int]]:
    """The transactions of a job_queue.log (their change lines) and their end positions;
    fails on any line out of HTCondor's format or outside a transaction."""
    lines = path.read_text().split("\n")
    assert lines[-1] == "", "the log ends with a whole line"
    assert re.match(r"^107 1 CreationTimestamp \d+$", lines[0]) and lines[1] == "101 0.0 Job Machine"
    transactions, ends, current = [], [], None
    for line in lines[2:-1]:
        assert RECORD.match(line), line
        if line == "105 ":
            assert current is None, "a transaction begun inside another"
            current = []
        elif line.startswith("106 "):
            assert current is not None
            transactions.append(current)
            ends.append(int(line.split()[-1]))
            current = None
        else:
            assert current is not None, f"{line!r} outside a transaction"
            assert KEY.match(line.split()[1]), line
            current.append(line)
    assert current is None, "a torn transaction"
    assert ends == sorted(ends) and len(set(ends)) == len(ends)
    return transactions, ends


def fresh_lines(pool) -> list[str]:
    """Every change line a writer folding the whole journal from the start writes."""
    fold = QueueLogFold()
    with Reader(pool.local_dir / DB_NAME) as reader:
        entries = [e for row in reader.rows() for e in row_entries(row)]
    return fold.apply(entries)


def schedd_pid(pool) -> int:
    return ipc.call(ipc.sinful(str(pool.local_dir / "run" / "master.sock")), "status")["schedd"]["pid"]


def answers(pool) -> bool:
    try:
        pool.schedd.query("false")
        return True
    except Exception:  # noqa: BLE001 - a schedd starting again
        return False


def test_a_job_s_life_in_the_log(pool, tmp_path):
    job = ClassAd({"Cmd": "/bin/sh", "Arguments": "-c 'exit 3'", "Iwd": str(tmp_path)})
    cluster = pool.schedd.submit(job, 2)
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster}", ["ProcId"]), 120,
               what="the jobs to leave the queue")
    key = f"{cluster}.1"
    # both jobs leave, in either order; the cluster ad leaves with whichever is last
    wait_until(lambda: f"102 0{cluster}.-1\n" in queue_log(pool).read_text(), 30, what="the log to catch up")
    transactions, _ = parse(queue_log(pool))
    mine = [line for t in transactions for line in t if line.split()[1] in (key, f"0{cluster}.-1")]
    assert mine[0] == f"101 0{cluster}.-1 Job Machine"
    status = [line.split()[3] for line in mine if line.startswith(f"103 {key} JobStatus ")]
    assert status == ["1", "2", "4"]
    assert f"103 {key} ExitCode 3" in mine
    assert mine.index(f"103 {key} ExitCode 3") < mine.index(f"103 {key} JobStatus 4") < mine.index(f"102 {key}")
    assert f"102 0{cluster}.-1" in mine                       # the cluster ad leaves with its last job
    assert any(line == f"103 0.0 NextClusterNum {cluster + 1}" for t in transactions for line in t)


@pytest.mark.slow
def test_written_exactly_once_across_schedd_kills(fresh_pool, tmp_path):
    """Submits keep coming while the schedd is killed three times at random moments: the
    log is whole (no torn record), and its changes are exactly those of one pass over the
    journal, in order, none twice, none missing."""
    rng = random.Random(os.getpid())
    stop, acknowledged = threading.Event(), []
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path)})
    schedd = fresh_pool.schedd

    def submitter():
        while not stop.is_set():
            try:
                acknowledged.append(schedd.submit(job, 3))
            except Exception:  # noqa: BLE001 - not acknowledged: the schedd is down
                time.sleep(0.01)
    thread = threading.Thread(target=submitter, name="submitter")
    thread.start()
    try:
        for _ in range(3):
            count = len(acknowledged)
            wait_until(lambda: len(acknowledged) >= count + 5, 120, what="submits")
            time.sleep(rng.uniform(0.0, 0.3))
            before = schedd_pid(fresh_pool)
            os.kill(before, signal.SIGKILL)
            wait_until(lambda: schedd_pid(fresh_pool) != before, 30, what="a new schedd")
            wait_until(lambda: answers(fresh_pool), 60, what="the new schedd to answer")
    finally:
        stop.set()
        thread.join()
    wait_until(lambda: answers(fresh_pool) and not schedd.query("true", ["ProcId"]), 180,
               what="every job to leave the queue")
    expected = fresh_lines(fresh_pool)
    wait_until(lambda: sum(len(t) for t in parse(queue_log(fresh_pool))[0]) >= len(expected), 30,
               what="the log to catch up")
    transactions, _ = parse(queue_log(fresh_pool))
    written = [line for t in transactions for line in t]
    assert written == expected
    for cluster in acknowledged:
        assert f"102 {cluster}.2" in written


def test_recovery_cuts_a_torn_tail_and_refuses_what_it_cannot_continue(tmp_path):
    path = tmp_path / "job_queue.log"
    whole = ("107 1 CreationTimestamp 1\n101 0.0 Job Machine\n105 \n103 0.0 NextClusterNum 2\n"
             "106 #journal 7\n")
    path.write_text(whole + "105 \n101 1.0 Job Machine\n103 1.0 Own")
    assert recover(path) == 7 and path.read_text() == whole
    path.write_text("107 1 CreationTimestamp 1\n101 0.0 Job Machine\n")
    assert recover(path) == 0
    path.write_text("not a queue log\n")
    assert recover(path) is None
    path.write_bytes(b"107 1 CreationTimestamp 1\n101 0.0 Job Machine\n105 \n106 \n")   # no position
    assert recover(path) is None
    assert recover(tmp_path / "missing") is None


def test_user_and_project_records_in_the_log(pool, tmp_path):
    """User and Project records are ``0.<n>`` ads, as HTCondor's MakeUserRec and
    MakeProjectRec write them: ``101 0.<n> Owner (empty)`` (or ``Project``), their
    attributes, their changes, ``102`` when removed; a record made again has a new number."""
    schedd = pool.schedd
    schedd.addProjectRec([ClassAd({"Name": "optics", "Budget": 7})])
    schedd.disableProjectRec("optics", "paused")
    schedd.removeProjectRec("optics")
    schedd.addProjectRec("optics")
    schedd.addUserRec("carol")
    user = next(ad["User"] for ad in schedd.queryUserAds() if ad["Owner"] == "carol")
    wait_until(lambda: sum("Name \"optics\"" in line for line in queue_log(pool).read_text().splitlines()) == 2
               and f'User "{user}"' in queue_log(pool).read_text(), 30, what="the log to catch up")
    transactions, _ = parse(queue_log(pool))
    lines = [line for t in transactions for line in t if line.split()[1].startswith("0.") and line.split()[1] != "0.0"]
    keys = [line.split()[1] for line in lines if line.startswith("101 ")]
    assert all(int(key.split(".")[1]) >= 2 for key in keys) and len(set(keys)) == len(keys)
    first, again = [line.split()[1] for line in lines if line.endswith(" Project (empty)")]
    mine = [line for line in lines if line.split()[1] == first]
    assert mine[0] == f"101 {first} Project (empty)"
    assert set(mine[1:4]) == {f'103 {first} Name "optics"', f"103 {first} Enabled 1", f"103 {first} Budget 7"}
    assert mine[4:] == [f"103 {first} Enabled 0", f'103 {first} DisableReason "paused"', f"102 {first}"]
    assert int(again.split(".")[1]) > int(first.split(".")[1])
    (carol,) = [line.split()[1] for line in lines if line == f'103 {line.split()[1]} User "{user}"']
    assert f"101 {carol} Owner (empty)" in lines and f"103 {carol} Enabled 1" in lines
    assert not any(" MyType " in line for line in lines)
    # what the schedd wrote is what one pass over the journal writes
    assert lines == [line for line in fresh_lines(pool)
                     if line.split()[1].startswith("0.") and line.split()[1] != "0.0"]
