"""The pool's journal and queue in SQLite: the commit point of every command.

``Store(local_dir, durability="fsync")`` opens (creating if needed)
``<local_dir>/journal.sqlite`` in WAL mode.  API for the schedd:

``append(records, expected_head=None, time=None) -> int``
    Append journal records (``eventcore.records``) atomically and return the
    last position.  In the same SQLite transaction the queue projection is
    folded and its rows written, so the queue never disagrees with the
    journal.  Raises ``PositionConflict`` (head is not ``expected_head``),
    ``InvalidTransition`` (the status table refuses an event; nothing is
    appended), ``StaleDecision`` (an ``eventcore.records.Assumed`` among the
    records names a job state the job is not in at commit time: optimistic
    concurrency per job; nothing is appended) or ``JournalError``.  Records
    whose ``key`` is already in the
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
``rows(after=0, limit=None, positions=None)``  raw rows with checksums (audit)
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
                                           (rebuilt too when a history row does not add
                                           up to the history digest: one changed byte)

``Store(local_dir, readonly=True)`` opens an existing journal for reading
only (no queue catch-up; ``append`` refuses): tools such as replay/export.

Ads come back as ``dict`` name -> ClassAd expression text; the reads are
``daemons.storage.views.QueueViews`` (constraints evaluated by
``constraint_filter``, a callable ``text -> predicate(ad) -> bool``, by
default the ClassAd engine's).

Committed entries in memory: once ``keep_recent()`` was called (by the
projector), ``recent(after, limit)`` gives the rows this store committed
after ``after`` with their payloads as appended (daemons.storage.recent).
The projector follows the journal this way (daemons.projector).

The store is the writer; its other concerns are modules of their own:
``reads`` (daemons.storage.connections) the connections every read takes,
``QueueViews`` (daemons.storage.views) what condor_q and condor_history
read, daemons.storage.recovery what an open checks and catches up, and
daemons.storage.recent the committed records kept for the projector.

Schema: opening for writing creates or upgrades it (daemons.storage.schema);
a journal of an unknown version is refused, never misread.

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
database (``daemons.storage.evidence``: last committed position, its checksum, the
largest cluster id), advanced after each commit and before the appends of
that commit return (a ``pwrite``; fsynced at most once a second).  Opening for writing a journal that does not reach its
mark (lost WAL frames, a deleted or replaced ``journal.sqlite``) raises
``JournalBehind``; ``next_cluster_id`` never goes below the mark's cluster.
The database file is created 0600 (its -wal and -shm follow), and ``close``
checkpoints the WAL into it (``wal_checkpoint(TRUNCATE)``).

Restart: the queue tables are the projection's snapshot, brought to the
journal's head at open, or rebuilt from the whole journal when the snapshot
does not belong to it or cannot be read (daemons.storage.recovery).
"""

from __future__ import annotations

import sqlite3
import threading
import time as _time
from pathlib import Path
from typing import Callable, Iterable, Iterator

from jobledger.eventcore.codecs.journal import Row, make_rows, record_to_payload
from jobledger.eventcore.errors import JournalBehind, JournalError, PositionConflict, StaleDecision
from jobledger.eventcore.journal import Entry, entries_of_rows
from jobledger.eventcore.projections.queue import QueueFold
from jobledger.eventcore.records import Assumed, Record, split_assumed
from jobledger.daemons.storage import queue_tables
from jobledger.daemons.storage.connections import ReadConnections
from jobledger.daemons.storage.errors import guard, translate
from jobledger.daemons.storage.evidence import HighWater
from jobledger.daemons.storage.reader import Reader
from jobledger.daemons.storage.recent import RECENT, RecentCommits
from jobledger.daemons.storage.recovery import catch_up_queue, check_evidence
from jobledger.daemons.storage.schema import (
    DB_NAME, check_readable, connect, create_private, journal_columns, migrate,
)
from jobledger.daemons.storage.views import QueueViews, default_constraint_filter

__all__ = ["Store", "DURABILITY", "DB_NAME", "default_constraint_filter", "RECENT"]

DURABILITY = ("fsync", "group", "normal")
STREAM_CACHE = 20_000  # jobs append_stream's fold keeps in memory before starting afresh


class _Request:
    __slots__ = ("records", "expected", "time", "result", "error", "done")

    def __init__(self, records, expected, time=None):
        self.records = records
        self.expected = expected
        self.time = time
        self.result = None
        self.error = None
        self.done = False


class Store(QueueViews):
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
        # jobs the writer's fold keeps in memory before starting afresh (a cache: the
        # tables hold them all); 50,000 of them take about 30 MB
        self.cache_limit = 50_000
        self._write_lock = threading.Lock()   # one writer connection
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._leader = False
        self.evidence: HighWater | None = None
        self.readonly = readonly
        if not readonly:
            self.local_dir.mkdir(parents=True, exist_ok=True)
            create_private(self.path)
        elif not self.path.exists():
            raise JournalError(f"no journal at {self.path}")
        self._conn = self._connect(migrate_schema=not readonly)
        self.reads = ReadConnections(self.path, self._connect)
        if not readonly:
            self.evidence = HighWater(self.local_dir, sync=durability != "normal")
        self._columns = journal_columns(self._conn)
        self._own = Reader.over(self._conn, self.path)   # (one for every commit's head and keys)
        self._head, self._last_checksum = self._read_head()
        self._committed = self._head   # _head runs ahead of it while a transaction is open
        self._recent = RecentCommits(self._head + 1)   # for the projector (storage.recent)
        self._fold = QueueFold(queue_tables.TableLoader(self._conn))
        if readonly:
            self.recovered = "read-only"
            return
        try:
            self._max_cluster = check_evidence(self._conn, self.path, self.local_dir, self.evidence,
                                               self._head, self._last_checksum)
        except JournalBehind:
            self.close()
            raise
        with self._write_lock:
            self.recovered, self._fold = catch_up_queue(self._conn, self.path, self._head,
                                                        self._columns, self._fold)

    # ------------------------------------------------------------ set-up --
    def _connect(self, migrate_schema: bool = False) -> sqlite3.Connection:
        try:
            conn = connect(self.path, "NORMAL" if self.durability == "normal" else "FULL")
        except sqlite3.Error as exc:
            raise translate(exc, "opening the journal", self.path) from None
        try:
            if migrate_schema:
                migrate(conn, self.path)
            else:
                check_readable(conn, self.path)
        except BaseException:
            conn.close()
            raise
        return conn

    def _read_head(self) -> tuple[int, int]:
        """(position, checksum) at the head, as the writer's connection sees it."""
        return self._own.head()


    def close(self) -> None:
        """Close; a writer checkpoints the WAL into the database file first."""
        with self._write_lock:
            if not self.readonly and getattr(self, "recovered", None) is not None:
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error:
                    pass      # a reader holds the WAL: the next writer checkpoints it
            self._conn.close()
        self.reads.close()
        if self.evidence is not None:
            self.evidence.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ append --
    def append(self, records: Iterable[Record | Assumed], expected_head: int | None = None,
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

    def append_each(self, batches: Iterable[Iterable[Record]], time: float | None = None) -> list:
        """Append each batch atomically on its own, all in one commit (one fsync): for
        records of different jobs that fall due together (a run's end and the next run
        on its claim).  Returns, per batch, its last position or the exception that
        refused it (``InvalidTransition``...: that batch alone is rolled back) or that
        the commit failed with (then every batch has it: nothing was committed).

        A batch may be a function instead: given ``job_ad`` (a job's ad as the batches
        before it left it in this commit), it returns the batch's records, or raises to
        refuse it -- records decided on a state that is not committed yet (a run's end
        right after its start, in the same commit)."""
        if self.readonly:
            raise JournalError(f"{self.path} is open read-only")
        requests = [_Request(records if callable(records) else list(records), None, time)
                    for records in batches]
        if self.durability != "group":
            self._commit_and_mark(requests)
        else:
            self._group_append(*requests)
        return [r.result if r.error is None else r.error for r in requests]

    def _group_append(self, *requests: _Request) -> None:
        """Queue ``requests`` (they go into one commit together) and wait for their commit,
        leading it when no commit is under way."""
        with self._cond:
            self._pending.extend(requests)
            while self._leader and not requests[-1].done:
                self._cond.wait()
            if requests[-1].done:
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

    def _commit(self, batch: list[_Request]) -> tuple[int, int, int] | None:
        """One SQLite transaction (one fsync) for every request of ``batch``.

        Requests are folded one by one (a refused one is rolled back in the
        fold alone); the rows of all accepted ones are written at the end.
        Returns the mark to record (position, checksum, largest cluster id),
        None when nothing was written.
        """
        mark = None
        try:
            self._begin()
            rows: list[Row] = []
            payloads: list[dict] = []
            keys: set[str] = set()
            for request in batch:
                self._apply_request(request, rows, payloads, keys)
            self._write(rows)
            mark = self._finish()
            if rows:
                self._recent.add(rows, payloads)
        except BaseException as exc:
            error = self._abort(exc)
            for request in batch:
                if request.error is None:
                    request.result, request.error = None, error
            if not isinstance(exc, Exception):
                raise
        return mark

    def append_stream(self, chunks: Iterable[Iterable[Record]], time: float | None = None) -> int:
        """Append every record of ``chunks`` in one transaction; the last position.

        Each chunk is folded and its rows written inside the transaction as it
        arrives; the fold's cache starts afresh between chunks once it holds
        more than ``STREAM_CACHE`` jobs (its loader reads the transaction's
        own rows), so a stream of 10^6 procs never holds them all.  An
        exception from ``chunks`` or from the fold rolls everything back.
        The stream's entries are not kept in memory (``recent``): the
        projector reads them back from the journal.
        """
        if self.readonly:
            raise JournalError(f"{self.path} is open read-only")
        with self._write_lock:
            mark, big = None, False
            try:
                self._begin()
                keys: set[str] = set()
                for chunk in chunks:
                    request, rows = _Request(list(chunk), None, time), []
                    queue_tables.TableLoader(self._conn).preload(self._fold, request.records)
                    self._apply_request(request, rows, [], keys)
                    if request.error is not None:
                        raise request.error
                    self._write(rows)
                    if len(self._fold.procs) > STREAM_CACHE:
                        self._fold = QueueFold(queue_tables.TableLoader(self._conn))
                        big = True
                mark = self._finish()
                position = self._head
                self._recent.forget(position)
            except BaseException as exc:
                error = self._abort(exc)
                if error is exc:
                    raise
                raise error from exc
            if big:
                # A big stream filled the connection's page cache (64 MiB) and the fold (its
                # last chunk's jobs) with what later appends seldom need: both given back
                # (they read what they need), so the schedd does not keep its submit's peak.
                self._conn.execute("PRAGMA shrink_memory")
                self._fold = QueueFold(queue_tables.TableLoader(self._conn))
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
            self._fold = QueueFold(queue_tables.TableLoader(self._conn))   # another process wrote
            self._recent.forget(head)
        self._head, self._last_checksum = head, checksum

    def _write(self, rows: list[Row]) -> None:
        """The rows and the queue changes they made, inside the open transaction."""
        if rows:
            self._conn.executemany("INSERT INTO journal VALUES (?,?,?,?,?,?,?,?,?)", rows)
            queue_tables.write_changes(self._conn, self._fold)
            self._max_cluster = max(self._max_cluster, max(r.cluster for r in rows))

    def _finish(self) -> tuple[int, int, int] | None:
        """Record the projection's position, COMMIT; the mark to record (None: nothing new)."""
        conn = self._conn
        written = self._head != self._committed
        if written:
            queue_tables.save_snapshot(conn, self._head, self._last_checksum)
        conn.execute("COMMIT")
        self._committed = self._head
        if len(self._fold.procs) > self.cache_limit:
            self._fold = QueueFold(queue_tables.TableLoader(conn))   # a cache: the tables hold it all
        return (self._head, self._last_checksum, self._max_cluster) if written else None

    def _abort(self, exc: BaseException) -> BaseException:
        """Roll back the open transaction and reset to the committed state; the
        error to give the appenders (sqlite3 errors translated)."""
        conn = self._conn
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        self._head, self._last_checksum = self._read_head()
        self._committed = self._head
        self._fold = QueueFold(queue_tables.TableLoader(conn))
        return translate(exc, "append", self.path) if isinstance(exc, sqlite3.Error) else exc

    def _apply_request(self, request: _Request, out: list[Row], payloads_out: list[dict],
                       keys: set[str]) -> None:
        """Fold one request; on success add its rows to ``out`` and advance the head."""
        fold = self._fold
        if request.expected is not None and request.expected != self._head:
            request.error = PositionConflict(request.expected, self._head)
            return
        if callable(request.records):     # decided on the state the commit has reached
            try:
                request.records = list(request.records(fold.job_ad))
            except Exception as exc:  # noqa: BLE001 - the batch is refused, the others go on
                request.error = exc
                return
        records, assumed = split_assumed(request.records)
        stale = self._stale(assumed)
        if stale is not None:
            request.error = stale
            return
        records = self._drop_known_keys(records, keys)
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
        payloads_out.extend(payloads)
        self._head, self._last_checksum = rows[-1].position, rows[-1].checksum
        request.result = self._head

    def _stale(self, assumed: list[Assumed]) -> StaleDecision | None:
        """The first assumption the fold (the queue as of this commit) contradicts."""
        for each in assumed:
            proc = self._fold.proc(each.job.cluster, each.job.proc)
            status, claim = (None, None) if proc is None else (proc.status, proc.ad.get("ClaimId"))
            if not each.holds(status, claim):
                return StaleDecision(each.job, (each.status, each.claim), (status, claim))
        return None

    def _drop_known_keys(self, records: list, pending: set[str]) -> list:
        """Idempotency: records whose key is in the journal (or earlier in this commit) go."""
        keys = [r.key for r in records if r.key is not None]
        if not keys:
            return records
        known = set(pending) | self._own.known_keys(keys)
        out = []
        for record in records:
            if record.key is not None:
                if record.key in known:
                    continue
                known.add(record.key)
            out.append(record)
        return out

    # ---------------------------------------------- committed, in memory --
    @property
    def write_turn(self) -> threading.Lock:
        """The writer's lock, for another connection of this process that writes the
        journal's file (the projector's cursors): held, no commit of ours is under way."""
        return self._write_lock

    def keep_recent(self, follower: str = "projector") -> None:
        """Keep committed entries in memory for ``recent`` from now on (the projector and
        the JOB_QUEUE_LOG writer ask, each a ``follower``; without one nothing is kept,
        so appends pay nothing for it)."""
        with self._write_lock:
            self._recent.start(self._committed + 1, follower)

    def recent(self, after: int, limit: int, follower: str = "projector") -> list[tuple[Row, dict]] | None:
        """Up to ``limit`` (row, payload) this store committed after ``after``; None when
        they are not in memory: read the journal (``storage.recent.RecentCommits.after``)."""
        return self._recent.after(after, limit, follower)

    def rebuild_queue(self) -> None:
        """Drop the queue projection and fold the whole journal again."""
        with self._write_lock, guard("rebuilding the queue", self.path):
            try:
                queue_tables.rebuild(self._conn, self._columns)
            finally:
                self._fold = QueueFold(queue_tables.TableLoader(self._conn))

    # ------------------------------------------------------------- reads --
    def head(self) -> int:
        with self.reads.point() as reader:
            return reader.head()[0]

    def wake_waiters(self) -> None:
        """Wake every ``wait_for_position`` now (those given a ``stop`` look at it)."""
        with self._cond:
            self._cond.notify_all()

    def wait_for_position(self, position: int, timeout: float | None = None,
                          stop: threading.Event | None = None) -> bool:
        """Block until the journal holds ``position`` (or ``timeout`` seconds pass, or
        ``stop`` is set and ``wake_waiters`` called)."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        while stop is None or not stop.is_set():
            # not _head: it counts the records of a transaction still open.  The head
            # read catches another process's commits; our own ones notify _cond (and
            # need no read: a follower behind our commits goes on at once).
            if self._committed >= position or self.head() >= position:
                return True
            remaining = None if deadline is None else deadline - _time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            with self._cond:
                if self._committed < position:
                    self._cond.wait(0.5 if remaining is None else min(0.5, remaining))
            if self._committed >= position:
                return True
        return False

    def rows(self, after: int = 0, limit: int | None = None,
             positions: int | None = None) -> Iterator[Row]:
        """Raw rows with checksums (audit, the projector's catch-up), on a connection
        of the chunked reads (``reads.take``) so a long read holds no lock of the store.
        ``positions``: those standing for about that many entries
        (``Reader.rows_spanning``; ``limit`` is then not looked at)."""
        conn = self.reads.take()
        try:
            reader = Reader.over(conn, self.path)
            if positions is not None:
                yield from reader.rows_spanning(after, positions)
            elif limit is not None:
                yield from reader.rows(after, limit)
            else:
                yield from reader.iter_rows(after)
        finally:
            self.reads.give_back(conn)

    def entries(self, after: int = 0, limit: int | None = None) -> Iterator[Entry]:
        """Entries after ``after`` (at most ``limit``), blocks of procs expanded."""
        return entries_of_rows(self.rows(after, limit), after, limit)

    def keyed(self, key: str) -> Row | None:
        """The journal row holding ``key`` (idempotent submits and imports), or None."""
        with self.reads.point() as reader:
            return reader.keyed(key)

    def reserve_clusters(self, last: int) -> None:
        """Cluster ids up to ``last`` are handed out: ``next_cluster_id`` stays past them,
        across a restart too (the high-water mark keeps them; ``daemons.storage.evidence``)."""
        if self.evidence is not None:
            self.evidence.reserve_clusters(last)

    def committed_cluster_max(self) -> int:
        """The largest cluster id in the journal (0: none), reservations left out."""
        with self.reads.point() as reader:
            return reader.max_cluster()

    def next_cluster_id(self) -> int:
        """1 + the largest cluster id ever committed or reserved (by the high-water mark too:
        never reused).  The writer knows it without reading the journal: the largest cluster
        at open, raised by every append since (``_max_cluster``; a rolled-back append may
        leave it higher, which only skips ids) -- ``max(cluster)`` over the journal has no
        index to use and read the whole journal at every submit."""
        mark = self.evidence.mark if self.evidence is not None else None
        if self.readonly:
            with self.reads.point() as reader:
                cluster = reader.max_cluster()
        else:
            cluster = self._max_cluster
        return max(cluster, mark.cluster if mark else 0) + 1
