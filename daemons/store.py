"""The pool's journal and queue in SQLite: the commit point of every command.

``Store(local_dir, durability="fsync")`` opens (creating if needed)
``<local_dir>/journal.sqlite`` in WAL mode.  API for the schedd:

``append(records, expected_head=None, time=None) -> int``
    Append journal records (``eventcore.records``) atomically and return the
    last position.  In the same SQLite transaction the queue projection is
    folded and its rows written, so the queue never disagrees with the
    journal.  Raises ``PositionConflict`` (head is not ``expected_head``),
    ``InvalidTransition`` (the status table refuses an event; nothing is
    appended) or ``JournalError``.  Records whose ``key`` is already in the
    journal are skipped.  Thread-safe (and safe against a second process:
    the write lock is SQLite's); in "group" mode concurrent appends share
    commits.
``append_stream(chunks, time=None) -> int``
    Append the records of every chunk (an iterable of record iterables, e.g.
    a big submission arriving over IPC) in ONE transaction, folding and
    writing each chunk's rows as it comes, so memory holds one chunk, not
    the whole stream.  Anything raised while the chunks are read (a client
    gone mid-stream) or folded rolls the whole stream back: nothing of it is
    committed.  Holds the journal's write lock while the chunks arrive.
``head() -> int``                          last position (0 = empty)
``wait_for_position(pos, timeout) -> bool``  True once ``head() >= pos``
``entries(after=0, limit=None)``           ``Entry`` objects, ascending
``rows(after=0)``                          raw rows with checksums (audit)
``job_ad(job) -> dict | None``             merged ad (attr -> expression text)
``job_status(job) -> JobStatus | None``
``query(constraint, projection, limit)``   merged ads of matching jobs
``history(constraint, projection, match, since)``  left jobs, newest first
``status_counts()`` / ``job_count()``      JobStatus -> jobs; all jobs in the queue
``next_cluster_id()``                      1 + the largest cluster ever seen
``keyed(key) -> Row | None``               the row holding an idempotency key
``rebuild_queue()``                        drop the queue and fold the journal again
``close()``
``recovered``                              how the open found the queue: "empty",
                                           "current", "caught-up", "rebuilt", "read-only"

``Store(local_dir, readonly=True)`` opens an existing journal for reading
only (no queue catch-up; ``append`` refuses): tools such as replay/export.

Ads come back as ``dict`` name -> ClassAd expression text.  Constraints are
ClassAd expression text: ``==`` conjuncts on ClusterId, ProcId, JobStatus
or Owner use indexes (daemons.queryplan); the rest is evaluated by
``constraint_filter`` (a callable ``text -> predicate(ad) -> bool``, by
default the ClassAd engine's).

Durability (explicit, chosen at open):

- ``"fsync"``: each append is its own transaction, ``synchronous=FULL``:
  the WAL is fsynced before ``append`` returns.
- ``"group"``: group commit.  Appends that arrive while a commit is under
  way queue up; the next writer drains the whole queue into one transaction
  and one fsync (``synchronous=FULL``), and each append returns after that
  commit.  ``group_window`` (default 0, bounded by the caller) makes the
  writer wait that many seconds for more arrivals first.  Same guarantee
  as "fsync", more throughput under concurrent load.
- ``"normal"``: ``synchronous=NORMAL``: survives a killed process, may lose
  the last commits on power loss (SQLite WAL semantics).

Evidence: a writing store keeps the journal's high-water mark outside the
database (``daemons.evidence``: last committed position, its checksum, the
largest cluster id), advanced after each commit and before the appends of
that commit return (a ``pwrite``; fsynced at most once a second).  Opening for writing a journal that does not reach its
mark (lost WAL frames, a deleted or replaced ``journal.sqlite``) raises
``JournalBehind``; ``next_cluster_id`` never goes below the mark's cluster.
The database file is created 0600 (its -wal and -shm follow), and ``close``
checkpoints the WAL into it (``wal_checkpoint(TRUNCATE)``).

Restart: the queue tables are the projection's snapshot; the ``projection``
row says which journal position (and checksum there) they reflect.  On open
the records after it are folded; if the snapshot does not belong to this
journal (position past the head, checksum differs) or cannot be read (bad
rows, a damaged table) the queue is rebuilt from the whole journal instead,
never a stall.  Rows that were edited behind the store's back but still
read fine are not detected here: ``jobledger audit`` compares the tables
with a fold of the journal.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time as _time
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable, Iterator

from eventcore.codecs.journal import Row, decode_payload, make_rows, record_to_payload
from eventcore.errors import (
    InvalidTransition, JournalBehind, JournalCorrupt, JournalError, PositionConflict,
)
from eventcore.ids import JobId
from eventcore.journal import Entry, entry_from_row
from eventcore.projections.queue import Proc, QueueFold, merged_ad, owner_of
from eventcore.records import Record, quote_string
from eventcore.status import JobStatus
from daemons.adrow import decode_ad, encode_ad
from daemons.adtext import compile_filter
from daemons.evidence import HighWater, Mark
from daemons.queryplan import plan

__all__ = ["Store", "DURABILITY", "DB_NAME", "default_constraint_filter"]

DB_NAME = "journal.sqlite"
QUERY_CHUNK = 500      # rows read under the read lock at a time by query()
STREAM_CACHE = 20_000  # jobs append_stream's fold keeps in memory before starting afresh
_ABSENT = object()
# attributes kept in queue_jobs columns (a projection of only these reads no ad)
_COLUMN_ATTRS = {"clusterid": "ClusterId", "procid": "ProcId", "jobstatus": "JobStatus",
                 "owner": "Owner"}
DURABILITY = ("fsync", "group", "normal")
SCHEMA_VERSION = "1"


def default_constraint_filter(text: str) -> Callable[[dict], bool]:
    """A predicate over ads (attr -> expression text) from the ClassAd engine."""
    return compile_filter(text)


def _create_private(path: Path) -> None:
    """The database file, mode 0600 (SQLite gives its -wal and -shm the same mode)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        try:
            os.chmod(f"{path}{suffix}", 0o600)
        except FileNotFoundError:
            pass


def _translate(exc: sqlite3.Error, what: str) -> JournalError:
    return JournalError(f"{what}: {exc.__class__.__name__}: {exc}")


class _Request:
    __slots__ = ("records", "expected", "time", "result", "error", "done")

    def __init__(self, records, expected, time=None):
        self.records = records
        self.expected = expected
        self.time = time
        self.result = None
        self.error = None
        self.done = False


class _TableLoader:
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


class Store:
    """SQLite journal + queue projection (see the module docstring)."""

    def __init__(self, local_dir, durability: str = "fsync", group_window: float = 0.0,
                 constraint_filter: Callable[[str], Callable[[dict], bool]] | None = None,
                 clock: Callable[[], float] = _time.time, readonly: bool = False):
        if durability not in DURABILITY:
            raise ValueError(f"durability must be one of {DURABILITY}, not {durability!r}")
        self.local_dir = Path(local_dir)
        self.path = self.local_dir / DB_NAME
        self.durability = durability
        self.group_window = group_window
        self.constraint_filter = constraint_filter or default_constraint_filter
        self.clock = clock
        self.cache_limit = 500_000   # jobs the writer keeps in memory before starting afresh
        self._write_lock = threading.Lock()   # one writer connection
        self._read_lock = threading.Lock()
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._leader = False
        self.evidence: HighWater | None = None
        if not readonly:
            self.local_dir.mkdir(parents=True, exist_ok=True)
            _create_private(self.path)
            self.evidence = HighWater(self.local_dir, sync=durability != "normal")
        elif not self.path.exists():
            raise JournalError(f"no journal at {self.path}")
        self._conn = self._connect()
        self._reader = self._connect()
        self._scanners: list[sqlite3.Connection] = []   # idle connections of chunked queries
        self._head, self._last_checksum = self._read_head()
        self._committed = self._head   # _head runs ahead of it while a transaction is open
        self._fold = QueueFold(_TableLoader(self._conn))
        self.readonly = readonly
        if not readonly:
            self._max_cluster = self._check_evidence()
        self.recovered = "read-only" if readonly else self._catch_up_queue()

    # ------------------------------------------------------------ set-up --
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=" + ("NORMAL" if self.durability == "normal" else "FULL"))
            conn.execute("PRAGMA foreign_keys=OFF")
            conn.execute("PRAGMA cache_size=-65536")
            conn.executescript(resources.files("schemas").joinpath("store.sql").read_text("utf-8"))
            columns = {row[1] for row in conn.execute("PRAGMA table_info(journal)")}
            if "event" not in columns:      # a journal from before the column existed
                conn.execute("ALTER TABLE journal ADD COLUMN event INTEGER")
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        except sqlite3.DatabaseError as exc:
            raise JournalCorrupt(f"cannot open the journal: {exc}", path=str(self.path)) from None
        return conn

    def _check_evidence(self) -> int:
        """Refuse a journal behind its high-water mark; return the largest cluster id used."""
        from daemons.journal_check import RECOVERY, evidence_faults
        mark = self.evidence.mark
        faults = evidence_faults(self._conn, mark, self._head, self.local_dir)
        if faults:
            self.close()
            raise JournalBehind(f"{faults[0].message}. "
                                + RECOVERY.format(local_dir=self.local_dir), path=str(self.path))
        if mark is not None and mark.position == self._head:
            return mark.cluster
        cluster = self._conn.execute("SELECT max(cluster) FROM journal").fetchone()[0] or 0
        cluster = max(cluster, mark.cluster if mark else 0)
        if self._head:
            self.evidence.reset(Mark(self._head, self._last_checksum, cluster))
        return cluster

    def _read_head(self, conn=None) -> tuple[int, int]:
        row = (conn or self._conn).execute(
            "SELECT position, checksum FROM journal ORDER BY position DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, 0)

    def close(self) -> None:
        """Close; a writer checkpoints the WAL into the database file first."""
        with self._write_lock, self._read_lock:
            if not self.readonly and getattr(self, "recovered", None) is not None:
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error:
                    pass      # a reader holds the WAL: the next writer checkpoints it
            self._conn.close()
            self._reader.close()
            for conn in self._scanners:
                conn.close()
            self._scanners.clear()
            if self.evidence is not None:
                self.evidence.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ append --
    def append(self, records: Iterable[Record], expected_head: int | None = None,
               time: float | None = None) -> int:
        """Append atomically; return the last position (see module docstring).

        ``time`` overrides the store's clock for these records (tests, tools).
        """
        if self.readonly:
            raise JournalError(f"{self.path} is open read-only")
        request = _Request(list(records), expected_head, time)
        if self.durability != "group":
            self._commit_and_mark([request])
        else:
            self._group_append(request)
        if request.error is not None:
            raise request.error
        return request.result

    def _group_append(self, request: _Request) -> None:
        with self._cond:
            self._pending.append(request)
            while self._leader and not request.done:
                self._cond.wait()
            if request.done:
                return
            self._leader = True
        try:
            if self.group_window > 0:
                _time.sleep(self.group_window)   # let followers join (bounded)
            with self._cond:
                batch, self._pending = self._pending, []
            self._commit_and_mark(batch)
        finally:
            with self._cond:
                self._leader = False
                self._cond.notify_all()

    def _commit_and_mark(self, batch: list[_Request]) -> None:
        """Commit ``batch``, then advance the high-water mark, then wake its appenders.

        The mark is written outside the write lock (the next batch commits
        meanwhile) and before any append of the batch returns: an
        acknowledged append is always within the mark.
        """
        try:
            with self._write_lock:
                mark = self._commit(batch)
            if mark is not None:
                self.evidence.advance(*mark)
        finally:
            for request in batch:
                request.done = True
            with self._cond:
                self._cond.notify_all()

    def append_stream(self, chunks: Iterable[Iterable[Record]], time: float | None = None) -> int:
        """Append every record of ``chunks`` in one transaction; the last position.

        Each chunk is folded and its rows written inside the transaction as it
        arrives; the fold's cache starts afresh between chunks once it holds
        more than ``STREAM_CACHE`` jobs (its loader reads the transaction's
        own rows), so a stream of 10^6 procs never holds them all.  An
        exception from ``chunks`` or from the fold rolls everything back.
        """
        if self.readonly:
            raise JournalError(f"{self.path} is open read-only")
        with self._write_lock:
            conn, mark = self._conn, None
            try:
                self._begin()
                keys: set[str] = set()
                for chunk in chunks:
                    request, rows = _Request(list(chunk), None, time), []
                    self._apply_request(request, rows, keys)
                    if request.error is not None:
                        raise request.error
                    if rows:
                        conn.executemany("INSERT INTO journal VALUES (?,?,?,?,?,?,?,?,?)", rows)
                        self._write_changes(conn)
                        self._max_cluster = max(self._max_cluster, max(r.cluster for r in rows))
                    if len(self._fold.procs) > STREAM_CACHE:
                        self._fold = QueueFold(_TableLoader(conn))
                mark = self._finish()
                position = self._head
            except BaseException as exc:
                error = self._abort(exc)
                if error is exc:
                    raise
                raise error from exc
        if mark is not None:
            self.evidence.advance(*mark)
        with self._cond:
            self._cond.notify_all()
        return position

    def _begin(self) -> None:
        """BEGIN IMMEDIATE; start the fold afresh if another process wrote meanwhile."""
        self._conn.execute("BEGIN IMMEDIATE")
        head, checksum = self._read_head()
        if head != self._head or checksum != self._last_checksum:
            self._fold = QueueFold(_TableLoader(self._conn))   # another process wrote
        self._head, self._last_checksum = head, checksum

    def _finish(self) -> tuple[int, int, int] | None:
        """Record the projection's position, COMMIT; the mark to record (None: nothing new)."""
        conn = self._conn
        written = self._head != self._committed
        if written:
            conn.execute("INSERT OR REPLACE INTO projection VALUES ('queue', ?, ?)",
                         (self._head, self._last_checksum))
        conn.execute("COMMIT")
        self._committed = self._head
        if len(self._fold.procs) > self.cache_limit:
            self._fold = QueueFold(_TableLoader(conn))   # a cache: the tables hold it all
        return (self._head, self._last_checksum, self._max_cluster) if written else None

    def _abort(self, exc: BaseException) -> BaseException:
        """Roll back the open transaction and reset to the committed state; the
        error to give the appenders (sqlite3 errors translated)."""
        conn = self._conn
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        self._head, self._last_checksum = self._read_head()
        self._committed = self._head
        self._fold = QueueFold(_TableLoader(conn))
        if isinstance(exc, sqlite3.IntegrityError):
            return JournalError(f"append refused: {exc}")
        if isinstance(exc, sqlite3.Error):
            return _translate(exc, "append failed")
        return exc

    def _commit(self, batch: list[_Request]) -> tuple[int, int, int] | None:
        """One SQLite transaction (one fsync) for every request of ``batch``.

        Requests are folded one by one (a refused one is rolled back in the
        fold alone); the rows of all accepted ones are written at the end.
        Returns the mark to record (position, checksum, largest cluster id),
        None when nothing was written.
        """
        conn = self._conn
        mark = None
        try:
            self._begin()
            rows: list[Row] = []
            keys: set[str] = set()
            for request in batch:
                self._apply_request(request, rows, keys)
            if rows:
                conn.executemany("INSERT INTO journal VALUES (?,?,?,?,?,?,?,?,?)", rows)
                self._write_changes(conn)
                self._max_cluster = max(self._max_cluster, max(r.cluster for r in rows))
            mark = self._finish()
        except BaseException as exc:
            error = self._abort(exc)
            for request in batch:
                if request.error is None:
                    request.result, request.error = None, error
            if not isinstance(exc, Exception):
                raise
        return mark

    def _apply_request(self, request: _Request, out: list[Row], keys: set[str]) -> None:
        """Fold one request; on success add its rows to ``out`` and advance the head."""
        fold = self._fold
        if request.expected is not None and request.expected != self._head:
            request.error = PositionConflict(request.expected, self._head)
            return
        records = self._drop_known_keys(request.records, keys)
        if not records:
            request.result = self._head
            return
        now = float(self.clock() if request.time is None else request.time)
        fold.begin()
        try:
            payloads = [record_to_payload(r) for r in records]
            rows = make_rows(records, self._head + 1, now, self._last_checksum, payloads)
            apply = fold.apply
            for row, record, payload in zip(rows, records, payloads):
                apply(row.position, now, record.job, row.type, payload)
        except Exception as exc:
            fold.rollback()
            request.error = exc
            return
        fold.commit()
        keys.update(r.key for r in records if r.key is not None)
        out.extend(rows)
        self._head, self._last_checksum = rows[-1].position, rows[-1].checksum
        request.result = self._head

    def _drop_known_keys(self, records: list, pending: set[str]) -> list:
        keys = [r.key for r in records if r.key is not None]
        if not keys:
            return records
        known = set(pending)
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            known.update(k for (k,) in self._conn.execute(
                f"SELECT key FROM journal WHERE key IN ({marks})", chunk))
        out = []
        for record in records:
            if record.key is not None:
                if record.key in known:
                    continue
                known.add(record.key)
            out.append(record)
        return out

    def _write_changes(self, conn: sqlite3.Connection, fold: QueueFold | None = None) -> None:
        fold = fold or self._fold
        changes = fold.take_changes()
        upserts, deletes = [], []
        owners: dict[int, str | None] = {}
        for key in changes.procs:
            row = fold.procs.get(key)
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
        for cluster in changes.clusters:
            ad = fold.clusters.get(cluster)
            if ad is None:
                conn.execute("DELETE FROM queue_clusters WHERE cluster=?", (cluster,))
            else:
                conn.execute("INSERT OR REPLACE INTO queue_clusters VALUES (?,?)",
                             (cluster, encode_ad(ad)))
                owner = owner_of(ad)
                if owner is not None:
                    conn.execute("UPDATE queue_jobs SET owner=? WHERE cluster=? AND owner IS NOT ?",
                                 (owner, cluster, owner))
        if changes.history:
            conn.executemany("INSERT INTO history VALUES (?,?,?,?,?,?)",
                             [(h.position, h.cluster, h.proc, h.owner, h.completion_date,
                               encode_ad(h.ad)) for h in changes.history])

    # ----------------------------------------------------------- restart --
    def _catch_up_queue(self) -> str:
        """Bring the queue tables to the journal head; say how ("current", ...)."""
        with self._write_lock:
            try:
                row = self._conn.execute(
                    "SELECT position, checksum FROM projection WHERE name='queue'").fetchone()
                if row is None and self._head == 0:
                    return "empty"
                if row is not None and self._snapshot_matches(*row):
                    if row[0] == self._head:
                        return "current"
                    self._fold_range(row[0])
                    return "caught-up"
            except (InvalidTransition, JournalCorrupt, KeyError, TypeError, ValueError,
                    sqlite3.DatabaseError):
                pass   # the snapshot does not hold what it claims: replay everything
            self._rebuild()
            return "rebuilt"

    def _snapshot_matches(self, position: int, checksum: int) -> bool:
        if position > self._head or position < 0:
            return False
        if position == 0:
            return checksum == 0
        found = self._conn.execute("SELECT checksum FROM journal WHERE position=?",
                                   (position,)).fetchone()
        return found is not None and found[0] == checksum

    def _fold_range(self, after: int, fold: QueueFold | None = None) -> None:
        conn = self._conn
        fold = fold or self._fold
        conn.execute("BEGIN IMMEDIATE")
        try:
            last = (after, 0)
            cursor = conn.execute(
                "SELECT position, time, cluster, proc, type, payload, checksum, event FROM journal "
                "WHERE position > ? ORDER BY position", (after,))
            apply, passes, jobs = fold.apply, fold.passes_over, {}
            position = checksum = None
            for position, time, cluster, proc, kind, text, checksum, number in cursor:
                job = jobs.get((cluster, proc))
                if job is None:
                    job = jobs[(cluster, proc)] = JobId(cluster, proc)
                if number is not None and passes(job, number):
                    fold.position = position
                    continue
                apply(position, time, job, kind, decode_payload(kind, text, position))
            if position is not None:
                last = (position, checksum)
            self._write_changes(conn, fold)
            conn.execute("INSERT OR REPLACE INTO projection VALUES ('queue', ?, ?)", last)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            self._fold = QueueFold(_TableLoader(conn))
            raise

    def _rebuild(self) -> None:
        conn = self._conn
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute("BEGIN IMMEDIATE")
        for table in ("queue_jobs", "queue_clusters", "history"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")   # even a damaged one
        conn.execute("DELETE FROM projection WHERE name='queue'")
        conn.execute("COMMIT")
        conn.executescript(resources.files("schemas").joinpath("store.sql").read_text("utf-8"))
        fold = QueueFold()        # from scratch: nothing to load
        self._fold_range(0, fold)
        self._fold = QueueFold(_TableLoader(conn))

    def rebuild_queue(self) -> None:
        """Drop the queue projection and fold the whole journal again."""
        with self._write_lock:
            self._rebuild()

    # ------------------------------------------------------------- reads --
    def head(self) -> int:
        with self._read_lock:
            return self._read_head(self._reader)[0]

    def wait_for_position(self, position: int, timeout: float | None = None) -> bool:
        """Block until the journal holds ``position`` (or ``timeout`` seconds pass)."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        while True:
            # not _head: it counts the records of a transaction still open
            if self._committed >= position or self.head() >= position:
                return True
            remaining = None if deadline is None else deadline - _time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            with self._cond:
                self._cond.wait(0.05 if remaining is None else min(0.05, remaining))

    def rows(self, after: int = 0, limit: int | None = None) -> Iterator[Row]:
        sql = ("SELECT position, time, cluster, proc, type, payload, key, checksum, event "
               "FROM journal "
               "WHERE position > ? ORDER BY position")
        args: tuple = (after,)
        if limit is not None:
            sql += " LIMIT ?"
            args = (after, limit)
        conn = self._connect_reader()
        try:
            for row in conn.execute(sql, args):
                yield Row(*row)
        finally:
            conn.close()

    def _connect_reader(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA query_only=ON")
        return conn

    def entries(self, after: int = 0, limit: int | None = None) -> Iterator[Entry]:
        return (entry_from_row(row) for row in self.rows(after, limit))

    def _read(self, sql: str, args: tuple = ()) -> list:
        with self._read_lock:
            return self._reader.execute(sql, args).fetchall()

    def job_ad(self, job: JobId) -> dict | None:
        rows = self._read("SELECT j.ad, c.ad FROM queue_jobs j LEFT JOIN queue_clusters c "
                          "ON c.cluster = j.cluster WHERE j.cluster=? AND j.proc=?",
                          (job.cluster, job.proc))
        if not rows:
            return None
        proc_ad, cluster_ad = rows[0]
        return merged_ad(decode_ad(cluster_ad) if cluster_ad else None, decode_ad(proc_ad))

    def job_status(self, job: JobId) -> JobStatus | None:
        rows = self._read("SELECT status FROM queue_jobs WHERE cluster=? AND proc=?",
                          (job.cluster, job.proc))
        return JobStatus(rows[0][0]) if rows else None

    def cluster_ad(self, cluster: int) -> dict | None:
        rows = self._read("SELECT ad FROM queue_clusters WHERE cluster=?", (cluster,))
        return decode_ad(rows[0][0]) if rows else None

    def status_counts(self) -> dict[int, int]:
        """JobStatus -> number of jobs in the queue (from the status index)."""
        return dict(self._read("SELECT status, count(*) FROM queue_jobs GROUP BY status"))

    def owner_status_counts(self) -> dict[tuple[str, int], int]:
        """(Owner, JobStatus) -> number of jobs in the queue (for the Submitter ads)."""
        return {(owner or "", status): n for owner, status, n in self._read(
            "SELECT owner, status, count(*) FROM queue_jobs GROUP BY owner, status")}

    def job_count(self) -> int:
        """Number of jobs (proc ads) in the queue."""
        return self._read("SELECT count(*) FROM queue_jobs")[0][0]

    def keyed(self, key: str) -> Row | None:
        """The journal row holding ``key`` (idempotent submits and imports), or None."""
        rows = self._read("SELECT position, time, cluster, proc, type, payload, key, checksum, "
                          "event FROM journal WHERE key=?", (key,))
        return Row(*rows[0]) if rows else None

    def next_cluster_id(self) -> int:
        """1 + the largest cluster id ever committed (by the high-water mark too: never reused)."""
        rows = self._read("SELECT max(cluster) FROM journal")
        mark = self.evidence.mark if self.evidence is not None else None
        return max(rows[0][0] or 0, mark.cluster if mark else 0) + 1

    def query(self, constraint: str | None = None, projection: Iterable[str] | None = None,
              limit: int = -1, deadline: float | None = None) -> list[dict]:
        """Merged ads of the jobs matching ``constraint``, by (cluster, proc).

        ``constraint``: ClassAd text or anything whose ``str()`` is (an ExprTree).
        Rows are read in chunks and the constraint is evaluated between them,
        outside the read lock, so appends (which take it) are never held up for
        long; past ``deadline`` (``time.monotonic()``) ``TimeoutError``.
        """
        if constraint is not None and not isinstance(constraint, str):
            constraint = str(constraint)
        p = plan(constraint)
        predicate = self.constraint_filter(p.residual) if p.residual else None
        wanted = list(projection or [])
        if wanted and predicate is None and all(w.lower() in _COLUMN_ATTRS for w in wanted):
            return self._query_columns(p, wanted, limit)
        sql = ("SELECT j.cluster, j.ad, c.ad FROM queue_jobs j LEFT JOIN queue_clusters c "
               f"ON c.cluster = j.cluster WHERE {p.where} ORDER BY j.cluster, j.proc")
        out: list[dict] = []
        cluster_cache: dict[int, dict | None] = {}
        # A connection of its own: a statement left open between chunks holds its
        # connection's read snapshot, and point reads (job_ad) must see every commit.
        conn, cursor = self._scanner(), None
        try:
            cursor = conn.execute(sql, p.params)
            rows = cursor.fetchmany(QUERY_CHUNK)
            while rows:
                for cluster, proc_ad, cluster_ad in rows:
                    if deadline is not None and _time.monotonic() > deadline:
                        raise TimeoutError("the query ran past its time budget")
                    if cluster not in cluster_cache:
                        cluster_cache[cluster] = decode_ad(cluster_ad) if cluster_ad else None
                    ad = merged_ad(cluster_cache[cluster], decode_ad(proc_ad))
                    if predicate is not None and not predicate(ad):
                        continue
                    out.append(_project(ad, wanted))
                    if 0 <= limit <= len(out):
                        return out
                rows = cursor.fetchmany(QUERY_CHUNK)
        finally:
            if cursor is not None:
                cursor.close()
            self._scanner(done=conn)
        return out

    def _scanner(self, done: sqlite3.Connection | None = None) -> sqlite3.Connection | None:
        """A reader connection for one chunked query; ``done=conn`` gives it back (a few are kept)."""
        with self._read_lock:
            if done is None:
                if self._scanners:
                    return self._scanners.pop()
            elif len(self._scanners) < 4 and not done.in_transaction:
                self._scanners.append(done)
                return None
        if done is None:
            return self._connect_reader()
        done.close()
        return None

    def _query_columns(self, p, wanted: list[str], limit: int) -> list[dict]:
        """A projection of indexed columns only: no ad is decoded."""
        sql = (f"SELECT j.cluster, j.proc, j.status, j.owner FROM queue_jobs j WHERE {p.where} "
               "ORDER BY j.cluster, j.proc")
        if limit >= 0:
            sql += f" LIMIT {int(limit)}"
        names = [(_COLUMN_ATTRS[w.lower()], w.lower()) for w in wanted]
        out = []
        for cluster, proc, status, owner in self._read(sql, p.params):
            values = {"clusterid": str(cluster), "procid": str(proc), "jobstatus": str(status),
                      "owner": None if owner is None else quote_string(owner)}
            out.append({name: values[low] for name, low in names if values[low] is not None})
        return out

    def history(self, constraint: str | None = None, projection: Iterable[str] | None = None,
                match: int = -1, since: str | int | None = None) -> list[dict]:
        """Ads of jobs that left the queue, newest first (schedd.md 6.3)."""
        if constraint is not None and not isinstance(constraint, str):
            constraint = str(constraint)
        predicate = self.constraint_filter(constraint) if constraint else None
        stop = _since_predicate(since, self.constraint_filter) if since is not None else None
        wanted = list(projection or [])
        out: list[dict] = []
        with self._read_lock:
            rows = self._reader.execute("SELECT ad FROM history ORDER BY position DESC").fetchall()
        for (text,) in rows:
            ad = decode_ad(text)
            if stop is not None and stop(ad):
                break
            if predicate is not None and not predicate(ad):
                continue
            out.append(_project(ad, wanted))
            if 0 <= match <= len(out):
                break
        return out


def _project(ad: dict, wanted: list[str]) -> dict:
    if not wanted:
        return ad
    lower = {k.lower(): k for k in ad}
    return {lower[w.lower()]: ad[lower[w.lower()]] for w in wanted if w.lower() in lower}


def _since_predicate(since, compile_filter) -> Callable[[dict], bool]:
    """``since`` (int cluster, "C.P", or an expression) as a predicate over ads."""
    if isinstance(since, bool):
        raise TypeError("since must be an int, a 'C.P' string or an expression")
    if isinstance(since, int):
        return lambda ad: _int_of(ad, "ClusterId") == since
    text = str(since).strip()
    parts = text.split(".")
    if len(parts) == 2 and all(p.strip().lstrip("-").isdigit() for p in parts):
        cluster, proc = int(parts[0]), int(parts[1])
        return lambda ad: (_int_of(ad, "ClusterId"), _int_of(ad, "ProcId")) == (cluster, proc)
    if text.isdigit():
        return lambda ad: _int_of(ad, "ClusterId") == int(text)
    return compile_filter(text)


def _int_of(ad: dict, name: str) -> int | None:
    try:
        return int(ad.get(name, ""))
    except ValueError:
        return None
