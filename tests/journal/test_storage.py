"""The storage package (daemons/storage/): schema versions, the one error
mapping, history reads that stop early, committed entries in memory for the
projector, and ``jobledger journal sql``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from jobledger.daemons.projector import Projector
from jobledger.daemons.storage import recent as recent_module
from jobledger.daemons.storage.errors import translate
from jobledger.daemons.storage.reader import Reader
from jobledger.daemons.storage.schema import SCHEMA_VERSION
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.errors import JournalCorrupt, JournalError, TrackerError
from jobledger.eventcore.events import event_to_dict, make_event
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import Entry, job_id
from jobledger.eventcore.records import ClusterAd, EventRecord, LeaveQueue, ProcAd, SetAttributes, quote_string
from jobledger.cli import main
from jobledger.tracking.journal import JournalTracker

V1_DUMP = Path(__file__).parent / "data" / "journal_v1.sql"
T = 1_700_000_000


def ev(c, p, n, t):
    return EventRecord(JobId(c, p), event_to_dict(make_event(n, cluster=c, proc=p, timestamp=t)))


def submit(c, procs, log=None, owner="alice"):
    ad = {"Owner": quote_string(owner), "Cmd": '"/bin/true"'}
    if log is not None:
        ad["UserLog"] = quote_string(str(log))
    records = [ClusterAd(c, ad)]
    for p in range(procs):
        records += [ProcAd(JobId(c, p), {"JobStatus": "1"}), ev(c, p, 0, T + c)]
    return records


def finish(c, p, t=T + 100):
    return [ev(c, p, 1, t), ev(c, p, 5, t + 1), LeaveQueue(JobId(c, p))]


def v1_journal(directory: Path) -> Path:
    """journal.sqlite as main's code wrote it before the storage package (schema 1)."""
    directory.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(directory / "journal.sqlite")
    conn.executescript(V1_DUMP.read_text("utf-8"))
    conn.close()
    return directory / "journal.sqlite"


def set_version(path: Path, value: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value=? WHERE name='schema'", (value,))
    conn.commit()
    conn.close()


# ------------------------------------------------------------------ schema --
def test_a_version_1_journal_is_read_and_upgraded_in_place(tmp_path):
    path = v1_journal(tmp_path / "pool")
    with Reader(path) as reader:                 # read-only: read as it is, not upgraded
        assert reader.head()[0] == 19
        assert reader.keyed("submit-2").cluster == 2
    assert sqlite3.connect(path).execute("SELECT value FROM meta").fetchone() == ("1",)
    store = Store(tmp_path / "pool")
    try:
        assert store.recovered == "current"      # the v1 snapshot is kept, not rebuilt
        assert store.head() == 19
        assert store.job_count() == 5
        assert [ad["ClusterId"] for ad in store.history()] == ["1"]
        assert store.job_ad(JobId(2, 1))["JobPrio"] == "5"
        assert store.keyed("submit-3").position == 11
        assert store.next_cluster_id() == 4
        store.append(finish(2, 0))
        assert store.job_count() == 4
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE name='schema'").fetchone() == (str(SCHEMA_VERSION),)
    assert "event" in {r[1] for r in conn.execute("PRAGMA table_info(journal)")}
    conn.close()
    reopened = Store(tmp_path / "pool")
    assert reopened.recovered == "current" and reopened.head() == 22
    reopened.close()


def test_a_journal_without_the_event_column_is_upgraded(tmp_path):
    path = v1_journal(tmp_path / "pool")
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE journal DROP COLUMN event")
    conn.commit()
    conn.close()
    with Reader(path) as reader:
        assert reader.rows(0, 1)[0].event is None
    store = Store(tmp_path / "pool")
    assert store.head() == 19 and store.job_count() == 5
    store.close()


@pytest.mark.parametrize("version, words", [("4", "schema version 4, newer"),
                                            ("0", "schema version 0"),
                                            ("two", "'two' is not a number")])
def test_an_unknown_version_is_refused_never_misread(tmp_path, version, words):
    path = v1_journal(tmp_path / "pool")
    set_version(path, version)
    before = path.read_bytes()
    for opener in (lambda: Store(tmp_path / "pool"), lambda: Store(tmp_path / "pool", readonly=True),
                   lambda: Reader(path)):
        with pytest.raises(JournalError, match=words) as caught:
            opener()
        assert str(path) in str(caught.value)
    assert path.read_bytes() == before
    result = CliRunner().invoke(main, ["journal", "sql", "SELECT 1", "--local-dir",
                                       str(tmp_path / "pool")])
    assert result.exit_code == 1 and words in result.output
    with JournalTracker(path, notify=False) as tracker:
        with pytest.raises(TrackerError, match=words):
            tracker.step()


# ------------------------------------------------------------------ errors --
def test_sqlite_errors_map_to_the_error_tree():
    assert type(translate(sqlite3.IntegrityError("UNIQUE constraint failed"), "append")) \
        is JournalError
    damaged = translate(sqlite3.DatabaseError("file is not a database"), "reading", "/x/j")
    assert isinstance(damaged, JournalCorrupt) and damaged.path == "/x/j"
    locked = translate(sqlite3.OperationalError("database is locked"), "append", "/x/j")
    assert type(locked) is JournalError and "database is locked" in str(locked)


def test_a_damaged_journal_is_our_error_in_the_projector(tmp_path):
    store = Store(tmp_path / "pool")
    store.append(submit(1, 1, tmp_path / "a.log"))
    projector = Projector(store, fsync=False)
    projector.cursors._conn.execute("DROP TABLE log_files")
    with pytest.raises(JournalError, match="log_files"):
        projector.catch_up()
    projector.close()
    store.close()


# ----------------------------------------------------------------- history --
def test_history_stops_reading_once_match_ads_matched(tmp_path):
    calls = []

    def counting(text):
        def predicate(ad):
            calls.append(ad["ClusterId"])
            return True
        return predicate

    store = Store(tmp_path / "pool", durability="normal", constraint_filter=counting)
    store.append(submit(1, 2000))
    store.append([r for p in range(2000) for r in finish(1, p)])
    statements = []
    scanner = store.reads.take()        # the connection chunked reads take next
    scanner.set_trace_callback(statements.append)
    store.reads.give_back(scanner)
    assert len(store.history(match=3)) == 3
    assert any("LIMIT 3" in s for s in statements)
    found = store.history("ClusterId == 1", match=5)
    assert [int(ad["ProcId"]) for ad in found] == [1999, 1998, 1997, 1996, 1995]
    assert len(calls) == 5
    assert len(store.history(match=-1)) == 2000
    store.close()


# --------------------------------------------------- committed, in memory --
def workload(tmp_path):
    out = submit(1, 3, tmp_path / "one.log") + submit(2, 2, tmp_path / "two.log", owner="bob")
    out += finish(1, 0) + [SetAttributes(JobId(2, 1), {"JobPrio": "3"}, ["Foo"])]
    out += [SetAttributes(JobId(2, 1), {"UserLog": quote_string(str(tmp_path / "moved.log"))})]
    out += [ev(2, 0, 1, T + 200), ev(2, 1, 1, T + 200), ev(2, 1, 12, T + 210)]
    return out


def test_entries_in_memory_equal_the_entries_read_back(tmp_path):
    store = Store(tmp_path / "pool")
    store.append(submit(9, 1))
    assert store.recent(0, 10) is None          # nobody follows: nothing is kept
    store.keep_recent()
    first = store.head()
    for record in workload(tmp_path):
        store.append([record])
    recent = store.recent(first, 1000)
    assert [Entry(r.position, r.time, job_id(r.cluster, r.proc), r.type, payload, r.key)
            for r, payload in recent] == list(store.entries(after=first))
    assert [r for r, _ in recent] == list(store.rows(after=first))
    assert store.recent(first + 3, 2) == recent[3:5]      # what the follower has is dropped
    assert store.recent(first, 10) is None
    assert store.recent(store.head(), 10) == []
    store.close()


def test_two_followers_each_get_every_record_and_the_one_behind_keeps_them(tmp_path):
    store = Store(tmp_path / "pool")
    store.keep_recent()
    store.keep_recent("queuelog")
    first = store.head()
    for record in workload(tmp_path):
        store.append([record])
    everything = store.recent(first, 1000)
    assert [r for r, _ in everything] == list(store.rows(after=first))
    assert store.recent(first + 5, 1000) == everything[5:]          # the projector goes ahead
    assert store.recent(store.head(), 10) == []
    assert store.recent(first + 2, 2, "queuelog") == everything[2:4]  # kept for the writer
    assert store.recent(store.head(), 10, "queuelog") == []
    assert store.recent(first + 3, 10) is None                        # both have it: dropped
    store.close()


def test_a_follower_too_far_behind_reads_the_journal(tmp_path, monkeypatch):
    monkeypatch.setattr(recent_module, "RECENT", 10)
    store = Store(tmp_path / "pool")
    store.keep_recent()
    store.append(submit(1, 20))                  # 41 records: only the last 10 are kept
    assert store.recent(0, 100) is None
    assert [r.position for r, _ in store.recent(31, 100)] == list(range(32, 42))
    store.close()


def test_the_projector_writes_the_same_from_memory_and_from_the_journal(tmp_path, monkeypatch):
    logs = {}
    for mode in ("memory", "journal"):
        base = tmp_path / mode
        if mode == "journal":
            monkeypatch.setattr(recent_module, "RECENT", 2)     # the window is always too short
        store = Store(base / "pool")
        projector = Projector(store, event_log=str(base / "events.log"), fsync=False)
        loads = []
        original = projector.cursors.targets
        monkeypatch.setattr(projector.cursors, "targets", lambda: loads.append(1) or original())
        for record in workload(base):
            store.append([record])
            projector.catch_up()
        assert len(loads) == 1          # the targets are kept, not reloaded per catch-up
        projector.close()
        store.close()
        logs[mode] = {p.name: [line for line in p.read_text().splitlines()
                               if "Global JobLog" not in line]     # its header: the time now
                      for p in base.glob("*.log")}
    assert logs["memory"] == logs["journal"]
    assert set(logs["memory"]) == {"one.log", "two.log", "moved.log", "events.log"}


def test_after_a_restart_the_projector_reads_the_journal(tmp_path):
    store = Store(tmp_path / "pool")
    store.append(submit(1, 2, tmp_path / "a.log"))
    store.close()
    store = Store(tmp_path / "pool")
    assert store.recent(0, 10) is None          # this store committed none of it
    projector = Projector(store, fsync=False)
    assert projector.catch_up() == store.head()
    assert (tmp_path / "a.log").read_text().count("Job submitted") == 2
    projector.close()
    store.close()


# --------------------------------------------------------------------- sql --
def run_sql(local, *args):
    return CliRunner().invoke(main, ["journal", "sql", *args, "--local-dir", str(local)])


def test_journal_sql_prints_rows_as_a_table_json_or_csv(tmp_path):
    store = Store(tmp_path / "pool")
    store.append(submit(1, 2) + submit(2, 1, owner="bob"))
    store.close()
    query = "SELECT cluster, proc, owner FROM queue_jobs ORDER BY cluster, proc"
    table = run_sql(tmp_path / "pool", query)
    assert table.exit_code == 0, table.output
    assert table.output.splitlines()[0].split() == ["cluster", "proc", "owner"]
    assert table.output.splitlines()[-1].split() == ["2", "0", "bob"]
    as_json = run_sql(tmp_path / "pool", query, "--json")
    assert json.loads(as_json.output)[0] == {"cluster": 1, "proc": 0, "owner": "alice"}
    as_csv = run_sql(tmp_path / "pool", query, "--csv")
    assert as_csv.output.splitlines() == ["cluster,proc,owner", "1,0,alice", "1,1,alice",
                                          "2,0,bob"]


@pytest.mark.parametrize("statement, words", [
    ("DELETE FROM journal", "only reads"),
    ("UPDATE queue_jobs SET status = 5", "only reads"),
    ("DROP TABLE history", "only reads"),
    ("PRAGMA journal_mode=DELETE", "only reads"),
    ("SELEC * FROM journal", "syntax error"),
    ("SELECT * FROM nowhere", "no such table: nowhere"),
    ("SELECT 1; DELETE FROM journal", "one statement at a time"),
])
def test_journal_sql_refuses_writes_and_reports_bad_sql_in_one_line(tmp_path, statement, words):
    store = Store(tmp_path / "pool")
    store.append(submit(1, 1))
    store.close()
    before = (tmp_path / "pool" / "journal.sqlite").read_bytes()
    result = run_sql(tmp_path / "pool", statement)
    assert result.exit_code == 1
    assert words in result.output and len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert (tmp_path / "pool" / "journal.sqlite").read_bytes() == before
    assert run_sql(tmp_path / "pool", "SELECT count(*) AS n FROM journal", "--csv").output \
        == "n\n3\n"
