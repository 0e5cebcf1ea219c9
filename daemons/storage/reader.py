"""Read-only access to ``journal.sqlite``: for tracking, audit, the checks and tools.

``Reader(path)`` opens the journal read-only (``mode=ro``: it never writes,
not even the WAL index of a stopped pool beyond what SQLite needs), refusing
a schema version it does not know (daemons.storage.schema).  ``Reader.over(conn)``
reads through a connection someone in this package already holds.  Every
``sqlite3.Error`` leaves as the project's error (daemons.storage.errors),
except where a method says it reports damage instead (``rows_past_damage``).

This module imports only the standard library, eventcore and this package's
schema and errors modules, so tracking/ may import it without the daemons.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable, Iterable, Iterator

from jobledger.eventcore.codecs.journal import Row, decode_payload
from jobledger.daemons.storage.errors import translate
from jobledger.daemons.storage.schema import check_readable, journal_columns

__all__ = ["Reader"]

_FAR = 1 << 62


class Reader:
    """Read-only queries on one journal (see the module docstring)."""

    def __init__(self, path, *, check: bool = True, _conn: sqlite3.Connection | None = None):
        self.path = Path(path)
        self._owned = _conn is None
        if _conn is None:
            try:
                _conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                        isolation_level=None, check_same_thread=False, timeout=30)
            except sqlite3.Error as exc:
                raise translate(exc, "opening the journal", self.path) from None
        self.conn = _conn
        self._columns: str | None = None
        if check:
            try:
                check_readable(_conn, self.path)
            except BaseException:
                self.close()
                raise

    @classmethod
    def over(cls, conn: sqlite3.Connection, path) -> "Reader":
        """A reader on a connection this package holds (not closed by ``close``)."""
        return cls(path, check=False, _conn=conn)

    def close(self) -> None:
        if self._owned:
            self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------- plumbing --
    def _all(self, sql: str, args: tuple = (), what: str = "reading the journal") -> list:
        try:
            return self.conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, what, self.path) from None

    @property
    def columns(self) -> str:
        if self._columns is None:
            try:
                columns = journal_columns(self.conn)
            except sqlite3.Error as exc:
                raise translate(exc, "reading the journal", self.path) from None
            if "NULL AS position" in columns:      # no journal table yet: ask again later
                return columns
            self._columns = columns
        return self._columns

    def snapshot(self) -> None:
        """Every read until ``close`` sees one state of the database."""
        self._all("BEGIN")

    def exists(self) -> bool:
        """The journal table is there (a pool may still be creating it)."""
        return bool(self._all("SELECT 1 FROM sqlite_master WHERE type='table' AND name='journal'"))

    # -------------------------------------------------------------- journal --
    def head(self) -> tuple[int, int]:
        """(last position, its checksum); (0, 0) when empty."""
        rows = self._all("SELECT position, checksum FROM journal ORDER BY position DESC LIMIT 1")
        return (rows[0][0], rows[0][1]) if rows else (0, 0)

    def rows(self, after: int = 0, limit: int | None = None) -> list[Row]:
        """The rows after ``after`` in order (at most ``limit``)."""
        sql = f"SELECT {self.columns} FROM journal WHERE position > ? ORDER BY position"
        if limit is None:
            return [Row(*r) for r in self._all(sql, (after,))]
        return [Row(*r) for r in self._all(sql + " LIMIT ?", (after, limit))]

    def rows_spanning(self, after: int, positions: int) -> list[Row]:
        """The rows after ``after`` in order that end within ``positions`` positions of
        it, or the next row when that one alone reaches further (a block of procs
        stands for two positions a proc): a read bounded by entries, not rows."""
        rows = self._all(f"SELECT {self.columns} FROM journal WHERE position > ? AND "
                         "position <= ? ORDER BY position", (after, after + max(positions, 1)))
        return [Row(*r) for r in rows] if rows else self.rows(after, 1)

    def iter_rows(self, after: int = 0) -> Iterator[Row]:
        """The rows after ``after`` in order, read as they are consumed."""
        try:
            for row in self.conn.execute(
                    f"SELECT {self.columns} FROM journal WHERE position > ? ORDER BY position",
                    (after,)):
                yield Row(*row)
        except sqlite3.Error as exc:
            raise translate(exc, "reading the journal", self.path) from None

    def checksum_at(self, position: int) -> int | None:
        rows = self._all("SELECT checksum FROM journal WHERE position=?", (position,))
        return rows[0][0] if rows else None

    def keyed(self, key: str) -> Row | None:
        """The row holding an idempotency key, or None."""
        rows = self._all(f"SELECT {self.columns} FROM journal WHERE key=?", (key,))
        return Row(*rows[0]) if rows else None

    def known_keys(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` already in the journal."""
        known: set[str] = set()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            known.update(k for (k,) in self._all(
                f"SELECT key FROM journal WHERE key IN ({marks})", tuple(chunk)))
        return known

    def max_cluster(self) -> int:
        """The largest cluster id in the journal (0: none)."""
        return self._all("SELECT max(cluster) FROM journal")[0][0] or 0

    def latest_cluster_ad(self, cluster: int) -> tuple[str, int] | None:
        """(payload, position) of the cluster's latest ``cluster`` record."""
        rows = self._all("SELECT payload, position FROM journal WHERE cluster = ? AND "
                         "type = 'cluster' ORDER BY position DESC LIMIT 1", (cluster,))
        return (rows[0][0], rows[0][1]) if rows else None

    def event_times(self, events: Iterable[int], cluster: int | None = None) -> list[tuple]:
        """(cluster, proc, ULog number, append time) of the event records with one of
        the numbers ``events``, in journal order (of one cluster when given)."""
        numbers = sorted({int(e) for e in events})
        sql = (f"SELECT cluster, proc, event, time, type, payload, position FROM journal "
               f"WHERE ((type = 'event' AND event IN ({','.join('?' * len(numbers))}))"
               f"{' OR type = ' + repr('procs') if 0 in numbers else ''})")
        args = tuple(numbers)
        if cluster is not None:
            sql, args = sql + " AND cluster = ?", args + (cluster,)
        out = []
        for found, proc, number, when, kind, payload, position in self._all(sql + " ORDER BY position", args):
            if kind == "procs":     # a block of procs: each proc's SUBMIT event
                out.extend((found, p, 0, when) for p in decode_payload(kind, payload, position)["procs"])
            else:
                out.append((found, proc, number, when))
        return out

    def rows_past_damage(self, after: int,
                         lost: Callable[[int, int | None, Exception], None]) -> Iterator[tuple]:
        """The rows (tuples of ``Row``'s fields) after ``after`` in order, going on past
        pages SQLite cannot read: each unreadable run is reported as
        ``lost(first, last, error)`` (``last`` None: nothing after ``first`` reads)."""
        position, conn = after, self.conn
        sql = f"SELECT {self.columns} FROM journal WHERE position > ? ORDER BY position"
        one = f"SELECT {self.columns} FROM journal WHERE position = ?"
        while True:
            try:
                for row in conn.execute(sql, (position,)):
                    position = row[0]
                    yield row
                return
            except sqlite3.DatabaseError as exc:
                error = exc
            resume = self._next_readable(position)
            if resume is None:
                lost(position + 1, None, error)
                return
            # A scan fails on the row *after* the one it would return next, so look
            # at each position up to the resume point on its own.
            run: list[int] = []
            for q in range(position + 1, resume + 1):
                try:
                    row = conn.execute(one, (q,)).fetchone()
                except sqlite3.DatabaseError:
                    run.append(q)
                    continue
                if run:
                    lost(run[0], run[-1], error)
                    run = []
                if row is not None:
                    yield row
            if run:
                lost(run[0], run[-1], error)
            position = resume

    def _readable_from(self, start: int) -> tuple[bool, int | None]:
        """(query from ``start`` works, its first position or None past the end)."""
        try:
            row = self.conn.execute("SELECT position, payload FROM journal WHERE position >= ? "
                                    "ORDER BY position LIMIT 1", (start,)).fetchone()
        except sqlite3.DatabaseError:
            return False, None
        return True, (row[0] if row else None)

    def _next_readable(self, last_good: int) -> int | None:
        """The first position after a damaged run that reads again (None: nothing does)."""
        failing, step = last_good + 1, 1
        while True:
            probe = min(last_good + 1 + step, _FAR)
            works, first = self._readable_from(probe)
            if works:
                break
            if probe >= _FAR:
                return None
            failing, step = probe, step * 2
        low, high = failing, probe        # query from `low` fails, from `high` works
        while high - low > 1:
            middle = (low + high) // 2
            works, found = self._readable_from(middle)
            if works:
                high, first = middle, found
            else:
                low = middle
        return first

    # ---------------------------------------------------------- projections --
    def projection_position(self, name: str) -> int | None:
        rows = self._all("SELECT position FROM projection WHERE name=?", (name,))
        return rows[0][0] if rows else None

    def queue_rows(self) -> list[tuple]:
        """(cluster, proc, status, ad text) of every queued job."""
        return self._all("SELECT cluster, proc, status, ad FROM queue_jobs")

    def cluster_rows(self) -> list[tuple]:
        """(cluster, ad text) of every queued cluster."""
        return self._all("SELECT cluster, ad FROM queue_clusters")

    def history_rows(self) -> list[tuple]:
        """(position, cluster, proc, ad text) of every job in the history."""
        return self._all("SELECT position, cluster, proc, ad FROM history")

    def log_paths(self) -> list[str]:
        """Every log file the projector has written."""
        return [p for (p,) in self._all("SELECT path FROM log_files")]

    def log_states(self) -> list[tuple]:
        """(path, position, offset, sequence, ctime) of every log file written."""
        return self._all("SELECT path, position, offset, sequence, ctime FROM log_files")

    def log_failures(self) -> list[tuple]:
        """(path, position, error) of every user log that could not be written."""
        return self._all("SELECT path, position, error FROM log_failures")

    def quick_check(self, limit: int = 100) -> list[str]:
        """SQLite's structure check: "ok" or the problems found."""
        try:
            return [r[0] for r in self.conn.execute(f"PRAGMA quick_check({int(limit)})")]
        except sqlite3.DatabaseError as exc:
            return [str(exc)]

    def file_name(self) -> str:
        return self._all("PRAGMA database_list")[0][2]

