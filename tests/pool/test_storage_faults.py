"""Storage faults under a real pool: a journal that lost its tail is refused, audit
of a live pool gives one verdict, a clean stop checkpoints the WAL."""

from __future__ import annotations

import os
import signal
import subprocess
import sqlite3
import sys
import threading

import pytest
from click.testing import CliRunner

from jobledger.daemons.audit import audit
from jobledger.daemons.client.personal import PersonalPool
from jobledger.daemons.storage.store import DB_NAME
from jobledger.eventcore.errors import HTCondorException
from jobledger.classad import ClassAd
from jobledger.cli import main
from tests.pool.conftest import pool_processes, stop_and_check, wait_until

WAL_FRAME = 24 + 4096


def _head(local_dir) -> int:
    conn = sqlite3.connect(f"file:{local_dir / DB_NAME}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT max(position) FROM journal").fetchone()[0] or 0
    finally:
        conn.close()


def _live_frames(wal: bytes) -> int:
    """Frames of the WAL's current generation: those whose salts are the header's.  After
    a checkpoint SQLite writes the WAL again from its start and leaves older frames
    beyond (SQLite's wal format), which a corruption there would not touch."""
    salts = wal[16:24]
    count = 0
    while 32 + (count + 1) * WAL_FRAME <= len(wal) and \
            wal[32 + count * WAL_FRAME + 8:32 + count * WAL_FRAME + 16] == salts:
        count += 1
    return count


def _terminated(log) -> int:
    try:
        return log.read_text().count("\n005 (")
    except FileNotFoundError:
        return 0


def test_a_pool_whose_wal_lost_its_tail_refuses_to_start_and_reruns_nothing(tmp_path):
    local, log = tmp_path / "pool", tmp_path / "jobs.log"
    pool = PersonalPool(local_dir=local).start()
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
    cluster = pool.schedd.submit(job, 8)
    wait_until(lambda: _terminated(log) == 8, 60, what="8 jobs to finish")
    wait_until(lambda: not pool.schedd.query("true", ["ProcId"]), 30, what="an empty queue")
    os.killpg(pool._master_pid, signal.SIGKILL)          # no clean stop: the WAL stays
    wait_until(lambda: not pool_processes(local), 15, what="the pool's processes to die")
    pool._master.wait()
    pool._config_setter.unset()
    head = _head(local)
    wal = local / f"{DB_NAME}-wal"
    data = bytearray(wal.read_bytes())
    frames = _live_frames(data)
    assert frames >= 2, f"the WAL holds {frames} frames of its current generation"
    data[32 + (frames // 2) * WAL_FRAME + 24 + 100] ^= 0xFF   # SQLite drops frames from here
    wal.write_bytes(bytes(data))
    # as after a reboot: no shared-memory index survives, so the next open reads the WAL
    # again and checks it (a process still holding the old index would trust it)
    (local / f"{DB_NAME}-shm").unlink(missing_ok=True)
    kept = _head(local)
    assert kept < head
    logged = log.read_bytes()

    again = PersonalPool(local_dir=local)
    with pytest.raises(HTCondorException) as info:
        again.start()
    assert f"records {kept + 1}..{head} are missing" in str(info.value)
    assert "accept-loss" in str(info.value)
    again._config_setter.unset()
    assert not pool_processes(local)
    assert log.read_bytes() == logged                   # no job ran again, nothing cut
    report = audit(local)
    assert "evidence" in {f.kind for f in report.findings}
    result = CliRunner().invoke(main, ["audit", "--local-dir", str(local)])
    assert result.exit_code == 1 and "accept-loss" in result.output

    result = CliRunner().invoke(main, ["journal", "accept-loss", "--local-dir", str(local)])
    assert result.exit_code == 0, result.output
    third = PersonalPool(local_dir=local).start()
    try:
        assert third.schedd.submit(ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path)}), 1) > cluster
    finally:
        stop_and_check(third)
    wal = local / f"{DB_NAME}-wal"                # a clean stop checkpoints the WAL
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_young_pool_that_lost_its_whole_wal_is_recovered_by_accept_loss(tmp_path):
    """A young pool's journal.sqlite holds not even the tables (SQLite checkpoints the WAL
    into it later): without journal.sqlite-wal the start is refused, audit says what is
    missing and the way out (not "no such table"), and accept-loss lets it start again
    with cluster ids after those its logs show."""
    local, log = tmp_path / "pool", tmp_path / "jobs.log"
    pool = PersonalPool(local_dir=local).start()
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
    cluster = pool.schedd.submit(job, 3)
    wait_until(lambda: _terminated(log) == 3, 60, what="3 jobs to finish")
    os.killpg(pool._master_pid, signal.SIGKILL)          # no clean stop: nothing checkpointed
    wait_until(lambda: not pool_processes(local), 15, what="the pool's processes to die")
    pool._master.wait()
    pool._config_setter.unset()
    for suffix in ("-wal", "-shm"):
        (local / f"{DB_NAME}{suffix}").unlink()
    conn = sqlite3.connect(f"file:{local / DB_NAME}?mode=ro", uri=True)
    try:       # the case under test: the main file never got the tables
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    finally:
        conn.close()

    again = PersonalPool(local_dir=local)
    with pytest.raises(HTCondorException) as info:
        again.start()
    again._config_setter.unset()
    assert "holds no journal at all" in str(info.value) and "accept-loss" in str(info.value)
    assert "no such table" not in str(info.value)
    done = subprocess.run([sys.executable, "-m", "jobledger", "audit", "--local-dir", str(local)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "no such table" not in done.stdout + done.stderr
    assert "records 1.." in done.stdout and "journal.sqlite-wal" in done.stdout, done.stdout
    assert f"journal accept-loss --local-dir {local}" in done.stdout

    done = subprocess.run([sys.executable, "-m", "jobledger", "journal", "accept-loss",
                           "--local-dir", str(local)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"new clusters start after {cluster}" in done.stdout, done.stdout
    third = PersonalPool(local_dir=local).start()
    try:
        assert third.schedd.submit(ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path)}), 1) > cluster
    finally:
        stop_and_check(third)
    assert audit(local).ok


def test_audit_of_a_running_pool_gives_one_verdict(pool, tmp_path):
    log = tmp_path / "live.log"
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
    done = threading.Event()
    errors = []

    def submitter():
        try:
            for _ in range(25):
                pool.schedd.submit(job, 4)
        except Exception as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=submitter, name="submitter")
    thread.start()
    verdicts, live = [], 0
    try:
        while not done.is_set() or pool.schedd.query("true", ["ProcId"]):
            report = audit(pool.local_dir)
            verdicts.append([str(f) for f in report.findings])
            live += 1
    finally:
        thread.join()
    assert not errors
    assert live >= 3
    assert all(v == [] for v in verdicts), [v for v in verdicts if v][:3]
    wait_until(lambda: _terminated(log) == 100, 30, what="the user log to catch up")
    assert audit(pool.local_dir).ok


def _fill(disk) -> None:
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"x" * 1024)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_user_log_on_a_full_disk_is_written_once_there_is_room(pool, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        log = disk / "jobs.log"
        _fill(disk)
        job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
        cluster = pool.schedd.submit(job, 10)
        wait_until(lambda: len(pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == 10,
                   60, what="10 jobs to finish")
        assert _terminated(log) == 0
        behind = {f.job for f in audit(pool.local_dir).findings if f.kind == "userlog"}
        assert behind == {f"{cluster}.{p}" for p in range(10)}
        (disk / "filler").unlink()                   # room again; nothing else happens
        wait_until(lambda: _terminated(log) == 10, 30, what="the log to be completed")
        wait_until(lambda: audit(pool.local_dir).ok, 10, what="a clean audit")
        assert ("\n" + log.read_text()).count("\n000 (") == 10     # every event once
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_tampered_history_row_is_rebuilt_from_the_journal_at_start(tmp_path):
    """One changed byte in a history row: audit flags it at its position; the next start
    finds the history no longer adds up to its digest and rebuilds the tables from the
    journal (as it does a queue snapshot that does not match), so the pool serves the
    journal's row, not the tampered one, and audit agrees again."""
    local = tmp_path / "pool"
    pool = PersonalPool(local_dir=local).start()
    try:
        cluster = pool.schedd.submit(ClassAd({"Cmd": "/bin/sh", "Arguments": "-c 'exit 7'",
                                              "Iwd": str(tmp_path)}), 2)
        wait_until(lambda: len(pool.schedd.history(f"ClusterId == {cluster}", ["ExitCode"])) == 2,
                   120, what="both jobs in the history")
    finally:
        stop_and_check(pool)
    conn = sqlite3.connect(local / DB_NAME)
    try:
        (position, ad), = conn.execute("SELECT position, ad FROM history WHERE proc = 1").fetchall()
        assert '"ExitCode": "7"' in ad or "ExitCode" in ad
        i = ad.index("ExitCode")
        seven = ad.index("7", i)
        conn.execute("UPDATE history SET ad = ? WHERE position = ?",
                     (ad[:seven] + "8" + ad[seven + 1:], position))     # one byte
        conn.commit()
    finally:
        conn.close()
    report = audit(local)
    assert [(f.kind, f.position) for f in report.findings] == [("history", position)]

    again = PersonalPool(local_dir=local).start()
    try:
        codes = sorted(ad["ExitCode"] for ad in again.schedd.history(f"ClusterId == {cluster}",
                                                                      ["ExitCode"]))
        assert codes == [7, 7]
        done = subprocess.run([sys.executable, "-m", "jobledger", "history", "--local-dir",
                               str(local), "-constraint", f"ClusterId == {cluster} && ExitCode == 8"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and f"{cluster}.1" not in done.stdout, done.stdout
    finally:
        stop_and_check(again)
    assert audit(local).ok
