"""The queue and history tables as the queue fold's snapshot (eventcore.projections.queue).

``TableLoader`` feeds a ``QueueFold`` the rows it has not seen yet;
``write_changes`` writes what the fold changed; ``fold_range`` folds the
journal after a position into the tables (streaming: memory does not grow
with the journal) and moves the ``queue`` row of ``projection`` there;
``rebuild`` drops the tables and folds everything.
All run on the writer's connection, inside or around its transactions.

``queue_counts`` holds the number of jobs per (cluster, status), kept by
``write_changes`` from the status each changed proc had before (the fold
says it), in the same transaction as the rows: the schedd's ads and the
negotiator's per-submitter demand read a few rows instead of counting the
queue.  ``check_counts`` compares them with the rows (one pass over the status
index) when a store opens, and rewrites them if they disagree (a table written
by a jobledger that did not keep them).

The history table is only ever appended to, so it carries a digest: the
``history`` row of ``projection`` holds its row count and the sum of its
rows' CRCs, kept in the transaction that inserts them.  ``history_intact``
recomputes it (a pool's start does, as it checks the journal): a row changed
or lost outside these functions -- one changed byte -- no longer adds up, and
the store rebuilds the tables from the journal rather than serve it.
"""

from __future__ import annotations

import sqlite3
import zlib

from jobledger.eventcore.codecs.journal import decode_payload
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.queue import Proc, QueueFold, owner_of
from jobledger.daemons.storage.adrow import decode_ad, encode_ad
from jobledger.daemons.storage.schema import create_tables

__all__ = ["TableLoader", "write_changes", "fold_range", "rebuild", "snapshot_position",
           "save_snapshot", "history_intact", "check_counts"]

_DIGEST_MOD = 1 << 62


def _row_crc(row: tuple) -> int:
    """CRC of one history row (position, cluster, proc, owner, completion date, ad)."""
    return zlib.crc32("\x1f".join(map(str, row)).encode("utf-8", "surrogatepass"))


def _add_to_digest(conn: sqlite3.Connection, rows: list) -> None:
    # (one statement: a job leaving the queue adds a history row at nearly every commit)
    conn.execute("INSERT INTO projection VALUES ('history', ?, ?) ON CONFLICT(name) DO UPDATE "
                 "SET position = position + excluded.position, "
                 "checksum = (checksum + excluded.checksum) % ?",
                 (len(rows), sum(map(_row_crc, rows)) % _DIGEST_MOD, _DIGEST_MOD))


def history_intact(conn: sqlite3.Connection) -> bool:
    """Whether the history rows add up to their digest (a table kept before the digest
    existed is taken as it is, and its digest written now)."""
    count, total = 0, 0
    for row in conn.execute("SELECT position, cluster, proc, owner, completion_date, ad "
                            "FROM history"):
        count, total = count + 1, total + _row_crc(row)
    kept = conn.execute("SELECT position, checksum FROM projection WHERE name='history'").fetchone()
    if kept is None:
        with conn:
            conn.execute("INSERT OR REPLACE INTO projection VALUES ('history', ?, ?)",
                         (count, total % _DIGEST_MOD))
        return True
    return kept == (count, total % _DIGEST_MOD)

_ABSENT = object()


class TableLoader:
    """Feeds the queue fold from the queue tables (rows it has not seen)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def proc(self, cluster, proc):
        row = self.conn.execute("SELECT status, ad FROM queue_jobs WHERE cluster=? AND proc=?",
                                (cluster, proc)).fetchone()
        return Proc(row[0], decode_ad(row[1])) if row else None

    def cluster(self, cluster):
        row = self.conn.execute("SELECT ad FROM queue_clusters WHERE cluster=?",
                                (cluster,)).fetchone()
        return decode_ad(row[0]) if row else None

    def proc_count(self, cluster):
        return self.conn.execute("SELECT count(*) FROM queue_jobs WHERE cluster=?",
                                 (cluster,)).fetchone()[0]

    def preload(self, fold: QueueFold, records) -> None:
        """Look up at once the procs ``records`` submit that ``fold`` has not seen
        (one range query per cluster instead of one query per proc)."""
        wanted: dict[int, list[int]] = {}
        for record in records:
            if record.type == "proc" and (record.job.cluster, record.job.proc) not in fold.procs:
                wanted.setdefault(record.job.cluster, []).append(record.job.proc)
            elif record.type == "procs":
                cluster = record.cluster
                wanted.setdefault(cluster, []).extend(
                    p for p in record.procs if (cluster, p) not in fold.procs)
        for cluster, procs in wanted.items():
            if not procs:
                continue
            found = {proc: Proc(status, decode_ad(ad)) for proc, status, ad in self.conn.execute(
                "SELECT proc, status, ad FROM queue_jobs WHERE cluster=? AND proc BETWEEN ? AND ?",
                (cluster, min(procs), max(procs)))}
            for proc in procs:
                fold.procs[(cluster, proc)] = found.get(proc)


def snapshot_position(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """(position, checksum) the queue tables reflect, None if never built."""
    return conn.execute("SELECT position, checksum FROM projection WHERE name='queue'").fetchone()


def save_snapshot(conn: sqlite3.Connection, position: int, checksum: int) -> None:
    conn.execute("INSERT OR REPLACE INTO projection VALUES ('queue', ?, ?)", (position, checksum))


def write_changes(conn: sqlite3.Connection, fold: QueueFold) -> None:
    """Write the rows ``fold`` changed since it last gave its changes."""
    changes = fold.take_changes()
    upserts, deletes = [], []
    owners: dict[int, str | None] = {}
    counts: dict[tuple[int, int], int] = {}     # (cluster, status) -> jobs more or fewer
    for key, before in changes.procs.items():
        row = fold.procs.get(key)
        after = None if row is None else row.status
        if before != after:
            if before is not None:
                counts[(key[0], before)] = counts.get((key[0], before), 0) - 1
            if after is not None:
                counts[(key[0], after)] = counts.get((key[0], after), 0) + 1
        if row is None:
            deletes.append(key)
            continue
        if "Owner" in row.ad:
            owner = owner_of(row.ad)
        else:
            owner = owners.get(key[0], _ABSENT)
            if owner is _ABSENT:
                owner = owners[key[0]] = owner_of(fold.cluster(key[0]) or {})
        upserts.append((key[0], key[1], row.status, owner, encode_ad(row.ad)))
    if deletes:
        conn.executemany("DELETE FROM queue_jobs WHERE cluster=? AND proc=?", deletes)
    if upserts:
        conn.executemany(
            "INSERT INTO queue_jobs VALUES (?,?,?,?,?) ON CONFLICT(cluster, proc) "
            "DO UPDATE SET status=excluded.status, owner=excluded.owner, ad=excluded.ad "
            "WHERE owner IS NOT excluded.owner OR status != excluded.status "
            "OR ad != excluded.ad", upserts)
    if counts:
        _count(conn, counts)
    gone = []
    for cluster in changes.clusters:
        ad = fold.clusters.get(cluster)
        if ad is None:
            conn.execute("DELETE FROM queue_clusters WHERE cluster=?", (cluster,))
            gone.append(cluster)
        else:
            conn.execute("INSERT OR REPLACE INTO queue_clusters VALUES (?,?)",
                         (cluster, encode_ad(ad)))
            owner = owner_of(ad)
            if owner is not None:
                conn.execute("UPDATE queue_jobs SET owner=? WHERE cluster=? AND owner IS NOT ?",
                             (owner, cluster, owner))
    if changes.history:
        rows = [(h.position, h.cluster, h.proc, h.owner, h.completion_date, encode_ad(h.ad))
                for h in changes.history]
        conn.executemany("INSERT INTO history VALUES (?,?,?,?,?,?)", rows)
        _add_to_digest(conn, rows)
    fold.forget(deletes, gone)


def _count(conn: sqlite3.Connection, counts: dict[tuple[int, int], int]) -> None:
    """Add ``counts`` to queue_counts; a (cluster, status) left with no job has no row."""
    changed = [(cluster, status, n) for (cluster, status), n in counts.items() if n]
    conn.executemany("INSERT INTO queue_counts VALUES (?,?,?) ON CONFLICT(cluster, status) "
                     "DO UPDATE SET n = n + excluded.n", changed)
    fewer = [(cluster, status) for cluster, status, n in changed if n < 0]
    if fewer:
        conn.executemany("DELETE FROM queue_counts WHERE cluster=? AND status=? AND n <= 0", fewer)


_COUNT_ROWS = ("SELECT cluster, status, count(*) FROM queue_jobs INDEXED BY queue_jobs_status "
               "GROUP BY status, cluster")


def check_counts(conn: sqlite3.Connection) -> bool:
    """Whether queue_counts agrees with the queue's rows; if not, it is rewritten from
    them (one pass over the status index, which holds the cluster: no ad is read)."""
    kept = {(cluster, status): n for cluster, status, n in
            conn.execute("SELECT cluster, status, n FROM queue_counts")}
    rows = {(cluster, status): n for cluster, status, n in conn.execute(_COUNT_ROWS)}
    if kept == rows:
        return True
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM queue_counts")
        conn.executemany("INSERT INTO queue_counts VALUES (?,?,?)",
                         [(cluster, status, n) for (cluster, status), n in rows.items()])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return False


FOLD_CHUNK = 20_000   # journal records folded between two writes of the tables
FOLD_CACHE = 20_000   # jobs a long fold keeps in memory (the tables hold the rest)


def fold_range(conn: sqlite3.Connection, fold: QueueFold, after: int, columns: str) -> QueueFold:
    """Fold the journal after ``after`` into the tables, in one transaction; return
    the fold to go on with (``fold`` or the one that replaced it).

    Streaming: every FOLD_CHUNK records the changes are written (inside the
    transaction), which makes the fold forget the jobs that left; past
    FOLD_CACHE jobs in memory the fold starts afresh on a loader reading the
    tables written so far.  Memory holds a chunk and a bounded cache, not the
    journal's jobs, however long the journal is.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        last = (after, 0)
        cursor = conn.execute(f"SELECT {columns} FROM journal WHERE position > ? "
                              "ORDER BY position", (after,))
        rows = cursor.fetchmany(FOLD_CHUNK)
        while rows:
            _fold_rows(fold, rows)
            last = rows[-1][0], rows[-1][7]
            rows = cursor.fetchmany(FOLD_CHUNK)
            if rows:
                fold = _spill(conn, fold)
        write_changes(conn, fold)
        save_snapshot(conn, *last)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return fold


def _fold_rows(fold: QueueFold, rows: list) -> None:
    """Fold journal rows (``columns`` order); events that cannot change the fold
    are not decoded."""
    apply, passes, jobs = fold.apply, fold.passes_over, {}
    for position, time, cluster, proc, kind, text, _key, _checksum, number in rows:
        job = jobs.get((cluster, proc))
        if job is None:
            job = jobs[(cluster, proc)] = JobId(cluster, proc)
        if number is not None and passes(job, number):
            fold.position = position
            continue
        apply(position, time, job, kind, decode_payload(kind, text, position))


def _spill(conn: sqlite3.Connection, fold: QueueFold) -> QueueFold:
    """Write the fold's changes (it forgets the jobs that left); keep it lean (see
    ``fold_range``)."""
    write_changes(conn, fold)
    if len(fold.procs) > FOLD_CACHE:
        return QueueFold(TableLoader(conn))
    return fold


def rebuild(conn: sqlite3.Connection, columns: str) -> None:
    """Drop the queue tables (even damaged ones) and fold the whole journal again."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")
    conn.execute("BEGIN IMMEDIATE")
    for table in ("queue_jobs", "queue_clusters", "queue_counts", "history"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("DELETE FROM projection WHERE name IN ('queue', 'history')")
    conn.execute("INSERT INTO projection VALUES ('history', 0, 0)")
    conn.execute("COMMIT")
    create_tables(conn)
    fold_range(conn, QueueFold(), 0, columns)     # from scratch: nothing to load at first
