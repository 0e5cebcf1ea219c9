"""`journal accept-loss` on a journal whose record chain is damaged: cut at the first
damaged record, the rest kept, the projections rebuilt, what was lost said.

A real pool runs two clusters with a user log and stops cleanly (everything in
journal.sqlite); then one record of the second cluster is damaged in the file
itself: a byte of its payload changed (a checksum mismatch), or the row taken
out (a gap in the positions).  The pool refuses to start; accept-loss cuts
there and says so; the pool starts, serves the first cluster from its history,
runs the second cluster's given-up jobs again, and audit is clean.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from jobledger.classad import ClassAd
from jobledger.daemons.audit import audit
from jobledger.daemons.client.personal import PersonalPool
from jobledger.daemons.storage.store import DB_NAME
from jobledger.eventcore.errors import HTCondorException
from tests.pool.conftest import pool_processes, stop_and_check, wait_until


def _terminated(log) -> int:
    try:
        return log.read_text().count("\n005 (")
    except FileNotFoundError:
        return 0


def _rows(local, sql: str, args: tuple = ()) -> list:
    conn = sqlite3.connect(f"file:{local / DB_NAME}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _damage(local, how: str, position: int) -> None:
    if how == "page":            # the B-tree page holding the record: its type byte wiped
        (payload,) = _rows(local, "SELECT payload FROM journal WHERE position = ?", (position,))[0]
        size = _rows(local, "PRAGMA page_size")[0][0]
        path = local / DB_NAME
        data = bytearray(path.read_bytes())
        page = data.rfind(payload.encode()) // size
        assert page > 0
        data[page * size] = 0
        path.write_bytes(bytes(data))
        with pytest.raises(sqlite3.DatabaseError):
            _rows(local, "SELECT payload FROM journal WHERE position = ?", (position,))
        return
    if how == "gap":
        conn = sqlite3.connect(local / DB_NAME)
        try:
            conn.execute("DELETE FROM journal WHERE position = ?", (position,))
            conn.commit()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        return
    (payload,) = _rows(local, "SELECT payload FROM journal WHERE position = ?", (position,))[0]
    path = local / DB_NAME
    data = bytearray(path.read_bytes())
    digit = next(i for i, c in enumerate(payload) if c.isdigit())
    at = data.find(payload.encode())
    assert at > 0, "the payload is in the file"
    while at >= 0:       # every copy (a free page may hold an older one)
        data[at + digit] = ord("7") if payload[digit] != "7" else ord("3")
        at = data.find(payload.encode(), at + 1)
    path.write_bytes(bytes(data))
    assert _rows(local, "SELECT payload FROM journal WHERE position = ?", (position,))[0][0] != payload


# Events HTCondor's DAGMan writes to a nodes log it shares with the schedd: a NOOP node's
# submit (cluster 0) and a PRE_SKIP.
NOOP = (b"000 (000.-01.001) 2024-01-01 00:00:00 Job submitted from host: "
        b"<dummy-submit-for-noop-job>\n    DAG Node: NOOP1\n...\n")
SKIP = (b"030 (000.-01.002) 2024-01-01 00:00:01 PRE script return value is PRE_SKIP value\n"
        b"    DAG Node: SKIPPED\n...\n")


def _append(log, data: bytes) -> None:
    with open(log, "ab") as f:
        f.write(data)


@pytest.mark.parametrize("how", ["checksum", "gap", "page", "shared"])
def test_accept_loss_cuts_a_damaged_chain_and_the_pool_serves_what_was_kept(tmp_path, how):
    """``shared``: a checksum mismatch in a log another writer shares: its events, before
    and after the cut, stay; only ours of the given-up records are cut."""
    local, log = tmp_path / "pool", tmp_path / "jobs.log"
    pool = PersonalPool(local_dir=local).start()
    try:
        job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
        first = pool.schedd.submit(job, 3)
        wait_until(lambda: _terminated(log) == 3, 60, what="the first cluster to finish")
        if how == "shared":
            _append(log, NOOP)
        second = pool.schedd.submit(job, 2)
        wait_until(lambda: _terminated(log) == 5, 60, what="the second cluster to finish")
        wait_until(lambda: not pool.schedd.query("true", ["ProcId"]), 30, what="an empty queue")
    finally:
        stop_and_check(pool)
    if how == "shared":
        _append(log, SKIP)
    head = _rows(local, "SELECT max(position) FROM journal")[0][0]
    # The second cluster's first event after its submit: its jobs are kept as submitted.
    at = _rows(local, "SELECT min(position) FROM journal WHERE cluster = ? AND type = 'event' "
                      "AND event != 0", (second,))[0][0]
    assert at < head
    _damage(local, "checksum" if how == "shared" else how, at)
    logged = log.read_bytes()

    again = PersonalPool(local_dir=local)
    with pytest.raises(HTCondorException) as info:
        again.start()
    again._config_setter.unset()
    assert "accept-loss" in str(info.value)
    assert not pool_processes(local)

    done = subprocess.run([sys.executable, "-m", "jobledger", "journal", "accept-loss",
                           "--local-dir", str(local)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "accept-loss-" in done.stdout            # the damaged file is kept, not deleted
    after = log.read_bytes()
    assert len(after) < len(logged)                  # the given-up events cut back ...
    if how == "shared":                              # ... and other writers' events kept
        assert after.count(NOOP) == after.count(SKIP) == 1 and after.endswith(SKIP)
        after = after[:-len(SKIP)]
    assert logged.startswith(after)                  # ... and nothing before them
    kept = _rows(local, "SELECT max(position) FROM journal")[0][0]
    if how == "page":       # the page's first record is the first that cannot be read
        assert kept < at and f"records 1..{kept} kept" in done.stdout, done.stdout
        assert f"the journal was cut at position {kept + 1} (page:" in done.stdout, done.stdout
    else:
        cut_at = at + 1 if how == "gap" else at      # a gap is found at the row after it
        kind = {"gap": "continuity", "shared": "checksum"}.get(how, how)
        assert f"the journal was cut at position {cut_at} ({kind}" in done.stdout, done.stdout
        assert f"records 1..{at - 1} kept" in done.stdout and kept == at - 1, done.stdout
        assert f"{second}.0" in done.stdout and f"{log}:" in done.stdout, done.stdout

    third = PersonalPool(local_dir=local).start()
    try:
        if how != "page":     # (a page may hold the first cluster's last records, or the second's submit)
            history = third.schedd.history(f"ClusterId == {first}", ["ProcId", "ExitCode"])
            assert sorted(ad["ProcId"] for ad in history) == [0, 1, 2]
            # The second cluster's jobs were kept as submitted: they run again.
            wait_until(lambda: len(third.schedd.history(f"ClusterId == {second}", ["ProcId"])) == 2, 60,
                       what="the second cluster's jobs to run again")
        assert third.schedd.submit(ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path)}), 1) > second
        wait_until(lambda: not third.schedd.query("true", ["ProcId"]), 30, what="an empty queue")
    finally:
        stop_and_check(third)
    report = audit(local)
    assert report.ok, [str(f) for f in report.findings]
