"""Storage faults with real damage to real files: the journal never silently goes back in time.

A changed byte, a damaged queue or history row, a page of garbage in the
middle of the database, WAL frames SQLite has to drop, a deleted journal:
audit names each fault with its position, the start check refuses, and the
high-water mark outside the database tells a journal that lost its tail.
"""

from __future__ import annotations

import datetime
import os
import signal
import sqlite3
import stat

import pytest
from click.testing import CliRunner

from jobledger.daemons.audit import audit
from jobledger.daemons.storage.evidence import HighWater, evidence_path
from jobledger.daemons.journal_check import check_before_start
from jobledger.daemons.journal_loss import accept_loss
from jobledger.daemons.storage.store import DB_NAME, Store
from jobledger.eventcore.errors import JournalBehind, JournalCorrupt
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import SetAttributes
from jobledger.cli import main
from tests.journal.helpers import all_ads, life, submit
from tests.pool.conftest import wait_until

UTC = datetime.timezone.utc
WAL_FRAME = 24 + 4096     # frame header + page (the store's page size)


def _flip_all(path, needle: bytes, replacement: bytes) -> int:
    data = path.read_bytes()
    count = data.count(needle)
    path.write_bytes(data.replace(needle, replacement))
    return count


def _small_journal(local) -> Store:
    store = Store(local, constraint_filter=all_ads)
    store.append(submit(1, 3))
    store.append([SetAttributes(JobId(1, 1), {"Foo": '"bar"'})])
    store.append(life(JobId(1, 0)))
    return store


def test_a_changed_key_inside_a_set_payload_is_reported_not_a_crash(tmp_path):
    local = tmp_path / "pool"
    store = _small_journal(local)
    [row] = [r for r in store.rows() if r.type == "set"]
    store.close()
    assert _flip_all(local / DB_NAME, b'"set":{"Foo"', b'"sex":{"Foo"') == 1
    report = audit(local, tz=UTC)
    kinds = {(f.kind, f.position) for f in report.findings}
    assert ("checksum", row.position) in kinds and ("payload", row.position) in kinds
    with pytest.raises(JournalCorrupt) as info:
        check_before_start(local)
    assert f"checksum at position {row.position}" in str(info.value)
    result = CliRunner().invoke(main, ["audit", "--local-dir", str(local)])
    assert result.exit_code == 1 and result.exception is None or isinstance(result.exception, SystemExit)
    assert f"[payload] position {row.position} job 1.1" in result.output


def test_damaged_queue_and_history_rows_are_findings(tmp_path):
    local = tmp_path / "pool"
    _small_journal(local).close()
    db = local / DB_NAME
    assert _flip_all(db, b'Args\x1f"2"', b'Args\x1f"X"') >= 1      # job 1.2's queue row
    assert _flip_all(db, b'Args\x1f"0"', b'Args\x1f"Y"') >= 1      # job 1.0's history row
    report = audit(local, tz=UTC)
    found = {(f.kind, f.job) for f in report.findings}
    assert found == {("queue", "1.2"), ("history", "1.0")}


def test_a_page_of_garbage_mid_file_is_reported_with_positions_and_refused(tmp_path):
    local = tmp_path / "pool"
    store = Store(local, constraint_filter=all_ads)
    for cluster in range(1, 41):
        store.append(submit(cluster, 25))
    head = store.head()
    middle = next(r for r in store.rows() if r.position == head // 2)
    store.close()
    db = local / DB_NAME
    data = bytearray(db.read_bytes())
    at = data.find(middle.payload.encode())
    page = at // 4096
    data[page * 4096:(page + 1) * 4096] = os.urandom(4096)
    db.write_bytes(bytes(data))
    report = audit(local, tz=UTC)
    pages = [f for f in report.findings if f.kind == "page" and f.position is not None]
    assert pages and all(f.position <= middle.position for f in pages)
    # the rows after the damaged page are still read and checked
    assert report.counts["records"] > middle.position - pages[0].position
    with pytest.raises(JournalCorrupt) as info:
        check_before_start(local)
    assert "page at position" in str(info.value)


def _append_and_die(local, wfd):
    store = Store(local)
    for cluster in range(1, 11):
        store.append(submit(cluster, 5))
        store.append(life(JobId(cluster, 0)))
    os.write(wfd, f"{store.head()}\n".encode())
    os.kill(os.getpid(), signal.SIGKILL)     # no close: the WAL stays as it is


def _run_and_kill(local) -> int:
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rfd)
            _append_and_die(local, wfd)
        finally:
            os._exit(1)
    os.close(wfd)
    with os.fdopen(rfd) as out:
        head = int(out.read())
    os.waitpid(pid, 0)
    return head


def test_damaged_wal_frames_are_found_by_the_high_water_mark(tmp_path):
    local = tmp_path / "pool"
    head = _run_and_kill(local)
    wal = local / f"{DB_NAME}-wal"
    data = bytearray(wal.read_bytes())
    frames = (len(data) - 32) // WAL_FRAME
    assert frames > 4
    data[32 + (frames - 3) * WAL_FRAME + 24 + 200] ^= 0xFF    # SQLite drops frames from here
    wal.write_bytes(bytes(data))
    conn = sqlite3.connect(f"file:{local / DB_NAME}?mode=ro", uri=True)
    kept = conn.execute("SELECT max(position) FROM journal").fetchone()[0] or 0
    conn.close()
    assert kept < head                               # the journal went back in time
    with pytest.raises(JournalBehind) as info:       # no writer may open it
        Store(local)
    assert f"records {kept + 1}..{head} are missing" in str(info.value)
    with pytest.raises(JournalBehind):
        check_before_start(local)
    report = audit(local, tz=UTC)
    assert [f.kind for f in report.findings] == ["evidence"]
    assert any("accept-loss" in n for n in report.notes)
    old, new = accept_loss(local)                    # the owner goes on without them
    assert (old.position, new.position, new.cluster) == (head, kept, 10)
    with Store(local) as store:
        assert store.next_cluster_id() == 11         # cluster ids are never reused
        store.append(submit(11, 1))
    assert check_before_start(local).ok


def test_a_deleted_journal_is_refused_and_audited(tmp_path):
    local = tmp_path / "pool"
    _small_journal(local).close()
    for name in os.listdir(local):
        if name.startswith(DB_NAME):
            os.unlink(local / name)
    with pytest.raises(JournalBehind):
        check_before_start(local)
    [finding] = audit(local, tz=UTC).findings
    assert finding.kind == "evidence" and "journal is gone" in finding.message
    with pytest.raises(JournalBehind):
        Store(local)
    result = CliRunner().invoke(main, ["journal", "accept-loss", "--local-dir", str(local)])
    assert result.exit_code == 0, result.output
    assert "new clusters start after 1" in result.output
    with Store(local) as store:
        assert store.next_cluster_id() == 2


def test_a_torn_mark_write_leaves_the_other_slot(tmp_path):
    local = tmp_path / "pool"
    store = _small_journal(local)
    mark = store.evidence.mark
    store.append(life(JobId(1, 1)))
    newer = store.evidence.mark
    store.close()
    path = evidence_path(local)
    data = bytearray(path.read_bytes())
    slot = 0 if b"position=%d " % newer.position in data[:96] else 1
    data[slot * 96 + 20] ^= 0x01                     # the newer slot torn
    path.write_bytes(bytes(data))
    assert HighWater(local).read() == mark            # the older one is still evidence
    assert check_before_start(local).ok


def test_journal_files_are_private_and_a_close_checkpoints_the_wal(tmp_path):
    local = tmp_path / "pool"
    old = os.umask(0o022)
    try:
        store = _small_journal(local)
        for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm"):
            assert stat.S_IMODE(os.stat(local / name).st_mode) == 0o600, name
        assert os.path.getsize(local / f"{DB_NAME}-wal") > 0
        store.close()
    finally:
        os.umask(old)
    wal = local / f"{DB_NAME}-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    assert stat.S_IMODE(os.stat(evidence_path(local)).st_mode) == 0o600


def test_a_log_that_could_not_be_written_is_completed_without_new_records(tmp_path):
    """The projector's thread retries a failed log with back-off, journal quiet or not."""
    from jobledger.daemons.projector import Projector
    store = Store(tmp_path / "pool", constraint_filter=all_ads)
    log = tmp_path / "jobs.log"
    log.mkdir()                                      # a directory where the log goes
    store.append(submit(1, 2, log=str(log)))
    projector = Projector(store, tz=UTC)
    projector.start(interval=0.05)
    try:
        store.append(life(JobId(1, 0)) + life(JobId(1, 1)))
        assert projector.wait_for_position(store.head(), 10)
        assert str(log) in projector.failures()
        findings = audit(store.local_dir, tz=UTC).findings
        assert sorted((f.kind, f.job) for f in findings) == [("userlog", "1.0"), ("userlog", "1.1")]
        log.rmdir()                                  # repaired; no record is appended after
        wait_until(lambda: not projector.failures(), 20, what="the projector's retry")
    finally:
        projector.stop()
        projector.close()
    assert log.read_text().count("...\n") == 6
    assert audit(store.local_dir, tz=UTC).ok
    store.close()


def test_the_event_log_is_evidence_when_journal_and_mark_are_both_gone(tmp_path):
    from jobledger.daemons.projector import Projector
    local, events = tmp_path / "pool", tmp_path / "EventLog"
    store = _small_journal(local)
    projector = Projector(store, event_log=str(events), tz=UTC)
    projector.catch_up()
    projector.close()
    store.close()
    (local / "condor_config").write_text(f"EVENT_LOG = {events}\n")
    for name in os.listdir(local):
        if name.startswith(DB_NAME):
            os.unlink(local / name)
    evidence_path(local).unlink()
    with pytest.raises(JournalBehind) as info:
        check_before_start(local)
    assert f"{events} holds events of cluster 1" in str(info.value)
    old, new = accept_loss(local)
    assert (old, new.cluster) == (None, 1)          # cluster 1 is not handed out again
    with Store(local) as again:
        assert again.next_cluster_id() == 2
    assert check_before_start(local).ok
