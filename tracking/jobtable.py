"""The trackers' job table: ``{JobId: JobState}``, finished jobs on disk.

A tracker promises every job's state, finished ones included (``all_done``
counts them, ``jobledger watch`` prints them), so nothing is dropped; but a
finished job's state no longer changes, so it need not stay in memory.
``JobTable`` keeps the jobs that are not finished as ``JobState`` objects and
writes each finished one as a row of a private temporary SQLite file (the
way the schedd moves a finished job out of its queue into its history): the
file's page cache is bounded, so the table's memory follows the jobs in
flight, not the jobs that ended.  Reading a finished job rebuilds an equal
``JobState``; counting finished jobs and reading their outcomes
(``finished``, ``outcomes``) does not build states at all.

A state that does not fit the columns (a number beyond 64 bits, a value of
another type, a string that is not valid text) stays an object, and so does
every finished state once the file could not be written (no room, no
temporary directory); the table is exact either way.

``copy()`` is cheap: the copy shares the file and sees it as of the copy
(rows carry a sequence number; a row a copy may still see is superseded,
not overwritten, until no copy can see it).  Writes to a copy stay in the
copy.  The table may be read from one thread while another writes it.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator, Mapping, MutableMapping

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import JobState
from jobledger.eventcore.status import JobStatus

__all__ = ["JobTable"]

_COLUMNS = ("status", "last_status", "entered_status", "submitted", "first_start", "last_start",
            "completed", "exit_code", "exit_signal", "exit_by_signal", "hold_reason", "hold_code",
            "hold_subcode", "starts", "holds", "evictions", "host", "seen_submit", "last_event",
            "last_event_time", "events")
_TEXT = frozenset({"hold_reason", "host"})
_FLAG = frozenset({"exit_by_signal", "seen_submit"})
_STATUS_COLUMNS = frozenset({"status", "last_status"})
_KINDS = tuple("text" if n in _TEXT else "flag" if n in _FLAG else "int" for n in _COLUMNS)
_COMPLETED = int(JobStatus.COMPLETED)
_STATUSES = {int(s): s for s in JobStatus}
_NOW = 2**62                  # "the latest row": above any sequence number
_PAGE = 2000                  # rows read at a time (the lock is not held between pages)
_FAILED = "status = {c} AND (exit_by_signal = 1 OR (exit_code IS NOT NULL AND exit_code != 0))".format(
    c=_COMPLETED)


def _cells(state: JobState) -> tuple | None:
    """The row of ``state``, or None when a value does not fit its column exactly."""
    out = []
    for name, kind in zip(_COLUMNS, _KINDS):
        v = getattr(state, name)
        if v is None:
            out.append(None)
        elif kind == "text":
            if type(v) is not str:
                return None
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return None
            out.append(v)
        elif kind == "flag":
            if type(v) is not bool:
                return None
            out.append(int(v))
        elif type(v) is int or (name in _STATUS_COLUMNS and isinstance(v, JobStatus)):
            if not -(2**63) <= v < 2**63:
                return None
            out.append(int(v))
        else:
            return None
    return tuple(out)


def _state(cluster: int, proc: int, cells) -> JobState:
    fields = dict(zip(_COLUMNS, cells))
    for name in _FLAG:
        if fields[name] is not None:
            fields[name] = bool(fields[name])
    for name in _STATUS_COLUMNS:
        v = fields[name]
        if v is not None:
            fields[name] = _STATUSES.get(v, v)
    return JobState(job=JobId(cluster, proc), **fields)


class _Finished:
    """The finished jobs' rows: a private temporary SQLite file (deleted when closed),
    shared by a table and its copies; ``seq`` numbers the writes."""

    _DDL = ("CREATE TABLE done (cluster INTEGER NOT NULL, proc INTEGER NOT NULL, "
            "seq INTEGER NOT NULL, " + ", ".join(_COLUMNS) + ", "
            "PRIMARY KEY (cluster, proc, seq)) WITHOUT ROWID")

    def __init__(self):
        db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=MEMORY")    # scratch: nothing to recover after a crash
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA cache_size=-1024")       # KiB: the memory the rows may take
        db.execute(self._DDL)
        self._db = db
        self._finalizer = weakref.finalize(self, db.close)
        self.lock = threading.Lock()
        self.seq = 0
        self.views: dict[int, int] = {}     # copies alive: token -> the seq each sees rows up to
        self._tokens = 0
        cols = ", ".join(_COLUMNS)
        self._latest = (f"SELECT {cols} FROM done WHERE cluster=? AND proc=? AND seq<=? "
                        "ORDER BY seq DESC LIMIT 1")
        self._insert = f"INSERT INTO done VALUES (?, ?, ?, {', '.join('?' * len(_COLUMNS))})"

    def get(self, cluster: int, proc: int, upto: int) -> tuple | None:
        """The row of (cluster, proc) as seen at ``upto``; None if none (or deleted)."""
        with self.lock:
            row = self._db.execute(self._latest, (cluster, proc, upto)).fetchone()
        return None if row is None or row[0] is None else row

    def put(self, cluster: int, proc: int, cells: tuple | None, new: bool = False) -> None:
        """Write (cluster, proc)'s row (None: delete it); ``new``: it has none now."""
        with self.lock:
            if new:        # one statement: no older row to supersede
                self._db.execute(self._insert, (cluster, proc, self.seq + 1, *cells))
                self.seq += 1
                return
            pinned = max(list(self.views.values()), default=-1)
            # rows no copy can see are overwritten; a copy's rows stay, superseded
            db = self._db
            db.execute("BEGIN")
            try:
                db.execute("DELETE FROM done WHERE cluster=? AND proc=? AND seq>?", (cluster, proc, pinned))
                if cells is not None or pinned >= 0:
                    db.execute(self._insert, (cluster, proc, self.seq + 1,
                                              *(cells or (None,) * len(_COLUMNS))))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            self.seq += 1

    def rows(self, upto: int, cluster: int | None = None, columns: str = "*"):
        """(cluster, proc, *columns) of every job's row seen at ``upto``, by job id; a page
        at a time, so writes may go on in between."""
        cols = ", ".join(_COLUMNS) if columns == "*" else columns
        one = "" if cluster is None else "AND cluster = ?"
        sql = (f"SELECT cluster, proc, status IS NULL, {cols} FROM (SELECT cluster, proc, max(seq), "
               f"{', '.join(_COLUMNS)} FROM done WHERE seq <= ? {one} AND (cluster > ? OR "
               f"(cluster = ? AND proc > ?)) GROUP BY cluster, proc ORDER BY cluster, proc LIMIT ?)")
        after = (-(2**63), -(2**63))
        while True:
            args = (upto,) + (() if cluster is None else (cluster,)) + (after[0], after[0], after[1], _PAGE)
            with self.lock:
                page = self._db.execute(sql, args).fetchall()
            for row in page:
                if not row[2]:                  # a deleted job's mark
                    yield (row[0], row[1], *row[3:])
            if len(page) < _PAGE:
                return
            after = page[-1][:2]

    def count(self, upto: int, cluster: int) -> int:
        """How many of ``cluster``'s jobs have a row seen at ``upto``."""
        with self.lock:
            return self._db.execute(
                "SELECT count(*) FROM (SELECT max(seq), status FROM done WHERE cluster = ? AND "
                "seq <= ? GROUP BY proc) WHERE status IS NOT NULL", (cluster, upto)).fetchone()[0]

    def pin(self, view: "JobTable", upto: int) -> int:
        """``view`` sees the rows as of ``upto`` (now, if _NOW) for as long as it lives."""
        with self.lock:
            seq = upto if upto < _NOW else self.seq
            self._tokens += 1
            self.views[self._tokens] = seq
            weakref.finalize(view, self.views.pop, self._tokens, None)
        return seq


class JobTable(MutableMapping):
    """``{JobId: JobState}`` with finished jobs on disk (see the module docstring)."""

    def __init__(self, states: Mapping[JobId, JobState] | None = None):
        self._live: dict[JobId, JobState] = {}
        self._disk: _Finished | None = None      # made at the first finished job
        self.seq = _NOW                          # a copy: the file as of this write
        self._hidden: set[JobId] = set()         # a copy's rows it deleted or replaced
        self._n = 0                              # finished jobs in the file (seen, not hidden)
        self._spill = True                       # False once the file could not be written
        if states:
            self.update(states)

    # -- the mapping ---------------------------------------------------------------
    def _row(self, job) -> tuple | None:
        if self._disk is None or type(job) is not JobId or job in self._hidden:
            return None
        return self._disk.get(job.cluster, job.proc, self.seq)

    def __getitem__(self, job: JobId) -> JobState:
        state = self._live.get(job)
        if state is not None:
            return state
        row = self._row(job)
        if row is None:
            raise KeyError(job)
        return _state(job.cluster, job.proc, row)

    def get(self, job, default=None):
        state = self._live.get(job)
        if state is not None:
            return state
        row = self._row(job)
        return default if row is None else _state(job.cluster, job.proc, row)

    def __contains__(self, job) -> bool:
        return job in self._live or self._row(job) is not None

    def __setitem__(self, job: JobId, state: JobState) -> None:
        cells = _cells(state) if state.done and type(job) is JobId and self.seq == _NOW else None
        if cells is not None and self._spill:
            try:
                disk = self._disk or self._make_disk()
                # a job held as an object has no row (but a deleted one's mark, maybe)
                new = job in self._live or disk.get(job.cluster, job.proc, _NOW) is None
                disk.put(job.cluster, job.proc, cells, new=new and job in self._live)
            except sqlite3.Error:
                self._spill = False     # no scratch file (no room, no temp directory): keep objects
            else:
                self._live.pop(job, None)
                self._n += new
                return
        self._drop_row(job)
        self._live[job] = state

    def __delitem__(self, job: JobId) -> None:
        if self._live.pop(job, None) is None and not self._drop_row(job):
            raise KeyError(job)

    def __len__(self) -> int:
        return len(self._live) + self._n

    def __iter__(self) -> Iterator[JobId]:
        for job in list(self._live):
            yield job
        for cluster, proc, *_ in self._rows(columns="status"):
            yield JobId(cluster, proc)

    def items(self):
        """(job, state) pairs: the live jobs, then the finished ones by job id."""
        return _Items(self)

    def copy(self) -> "JobTable":
        """The table as of now, sharing the file: cheap; writes to it stay in it."""
        twin = JobTable()
        twin._live = dict(self._live)
        twin._hidden = set(self._hidden)
        twin._n = self._n
        if self._disk is not None:
            twin._disk = self._disk
            twin.seq = self._disk.pin(twin, self.seq)
        return twin

    # -- finished jobs -----------------------------------------------------------------
    def live(self, cluster: int | None = None) -> list[JobState]:
        """The states held as objects (every job not finished), of ``cluster`` if given."""
        if cluster is None:
            return list(self._live.values())
        return [s for j, s in self._live.items() if j.cluster == cluster]

    def finished(self, cluster: int | None = None) -> int:
        """How many jobs (of ``cluster``) are held on disk: all finished."""
        if cluster is None:
            return self._n
        if self._disk is None:
            return 0
        if self._hidden:
            return sum(1 for _ in self._rows(cluster, "status"))
        return self._disk.count(self.seq, cluster)

    def brief(self):
        """``(cluster, proc, status, failed)`` of every job, finished ones without
        building their states (what per-batch counts need)."""
        for job, state in list(self._live.items()):
            failed = state.status == _COMPLETED and (bool(state.exit_by_signal) or bool(state.exit_code))
            yield job.cluster, job.proc, int(state.status), failed
        yield from self.outcomes()

    def outcomes(self, cluster: int | None = None):
        """``(cluster, proc, status, failed)`` of each job held on disk, without building
        its state: ``failed`` = completed with a non-zero exit code or a signal."""
        for c, p, status, failed in self._rows(cluster, f"status, {_FAILED}"):
            yield c, p, status, bool(failed)

    def _rows(self, cluster: int | None = None, columns: str = "*"):
        if self._disk is None:
            return
        hidden = self._hidden
        for row in self._disk.rows(self.seq, cluster, columns):
            if not hidden or JobId(row[0], row[1]) not in hidden:
                yield row

    def _make_disk(self) -> _Finished:
        self._disk = _Finished()
        return self._disk

    def _drop_row(self, job) -> bool:
        """Delete ``job``'s row (a copy only hides it); False if it had none."""
        if self._row(job) is None:
            return False
        self._n -= 1
        if self.seq == _NOW and self._spill:
            try:
                self._disk.put(job.cluster, job.proc, None)
                return True
            except sqlite3.Error:
                self._spill = False
        self._hidden.add(job)
        return True


class _Items:
    """``JobTable.items()``: iterable, sized, and cheap to make."""

    __slots__ = ("_table",)

    def __init__(self, table: JobTable):
        self._table = table

    def __len__(self) -> int:
        return len(self._table)

    def __iter__(self):
        t = self._table
        for job, state in list(t._live.items()):
            yield job, state
        for cluster, proc, *cells in t._rows():
            yield JobId(cluster, proc), _state(cluster, proc, cells)
