"""Where the JOB_QUEUE_LOG writer keeps the queue it folds: a scratch SQLite file of its
own beside the log, so the writer's memory does not grow with the queue.

``SqliteProcs(path)`` is the store of the writer's ``QueueLogFold``
(``eventcore.projections.queuelog_live.PackedProcs`` with its storage in SQLite): a
table of procs (their key one integer), each packed in one string (``pack_proc``; JSON when a text holds the
packing's separator), and one of clusters (the ad as JSON, the count of procs).  The
fold hands it what it changed since it last settled in one ``store`` call, one
transaction (``QueueLogFold.settle``).

The file is kept across restarts when the writer stops cleanly: ``keep(mark)`` makes
the file durable, then writes ``mark`` (what the writer needs to go on: the journal
position the fold reflects and the identity of the journal and of the log it wrote,
``daemons.queuelog_writer``) and makes that durable too.  ``SqliteProcs(path)`` opens
the file as it is and gives that mark as ``kept`` (None: none, or the file is not one
this code wrote); the writer checks it against the journal and the log and either
goes on from it (``go_on()``) or folds everything again (``start_over()``).  The mark
is removed, durably, before the first change after an open (``go_on``): a writer
killed later leaves a file without a mark, which the next start folds again.  Between
the marks the file is never fsynced and kept without a rollback journal; its page
cache is bounded (``CACHE_KIB``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from jobledger.eventcore.projections.queue import Proc
from jobledger.eventcore.projections.queuelog_live import PackedProcs

__all__ = ["SqliteProcs", "CACHE_KIB", "FORMAT"]

CACHE_KIB = 8192
FORMAT = 1       # of the file and its mark: another one is folded again
_SCHEMA = """
CREATE TABLE procs (id INTEGER PRIMARY KEY, row TEXT NOT NULL);
CREATE TABLE clusters (cluster INTEGER PRIMARY KEY, ad TEXT, count INTEGER NOT NULL);
CREATE TABLE mark (format INTEGER NOT NULL, value TEXT NOT NULL);
"""


def _id(cluster: int, proc: int) -> int:
    return (cluster << 32) | proc        # a proc's row: its key as one integer


def _remove(path: Path) -> None:
    for name in (path, path.with_name(path.name + "-journal")):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


class SqliteProcs(PackedProcs):
    def __init__(self, path) -> None:
        super().__init__()
        self.path = Path(path)
        self.kept: dict | None = None
        try:
            self.db = self._connect()
            self.kept = self._mark()
        except (sqlite3.DatabaseError, ValueError):   # not a file of ours: made again
            self.kept = None
        if self.kept is None:
            self.start_over()
        # the highest proc number stored per cluster: a new proc (a submit numbers them
        # upwards) is known absent without a look-up
        self._top: dict[int, int] = {}

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "locking_mode = EXCLUSIVE",
                       f"cache_size = -{CACHE_KIB}"):
            db.execute(f"PRAGMA {pragma}")
        return db

    def _mark(self) -> dict | None:
        rows = self.db.execute("SELECT format, value FROM mark").fetchall()
        if len(rows) != 1 or rows[0][0] != FORMAT:
            return None
        mark = json.loads(rows[0][1])
        return mark if isinstance(mark, dict) else None

    def start_over(self) -> None:
        """An empty file (whatever was there is removed)."""
        db = getattr(self, "db", None)
        if db is not None:
            db.close()
        _remove(self.path)
        self.db = self._connect()
        self.db.executescript(_SCHEMA)
        self.kept, self._top = None, {}

    def go_on(self) -> None:
        """Go on from the kept file: its mark goes first (durably), so that a writer
        killed from now on leaves a file the next start does not trust."""
        self.db.execute("DELETE FROM mark")
        self._sync()
        self.kept = None
        self._top = {cluster: top & 0xFFFFFFFF for cluster, top in self.db.execute(
            "SELECT c.cluster, (SELECT max(id) FROM procs WHERE id BETWEEN c.cluster << 32 "
            "AND (c.cluster << 32) | 4294967295) AS top FROM clusters c") if top is not None}

    def keep(self, mark: dict) -> None:
        """Make the file durable, then ``mark`` with it (see the module docstring)."""
        self._sync()
        self.db.execute("INSERT INTO mark VALUES (?, ?)", (FORMAT, json.dumps(mark)))
        self._sync()

    def _sync(self) -> None:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def load_proc(self, cluster: int, proc: int) -> str | Proc | None:
        if proc > self._top.get(cluster, -1):
            return None
        found = self.db.execute("SELECT row FROM procs WHERE id = ?", (_id(cluster, proc),)).fetchone()
        if found is None:
            return None
        text = found[0]
        if text.startswith("["):
            status, ad = json.loads(text)
            return Proc(status, ad)
        return text

    def load_cluster(self, cluster: int) -> tuple[dict | None, int] | None:
        found = self.db.execute("SELECT ad, count FROM clusters WHERE cluster = ?", (cluster,)).fetchone()
        if found is None:
            return None
        return (None if found[0] is None else json.loads(found[0])), found[1]

    def store(self, procs: list, clusters: list) -> None:
        put, gone, top = [], [], self._top
        for (cluster, proc), packed in procs:
            if packed is None:
                gone.append((_id(cluster, proc),))
                continue
            if isinstance(packed, Proc):
                packed = json.dumps([packed.status, packed.ad])
            put.append((_id(cluster, proc), packed))
            if proc > top.get(cluster, -1):
                top[cluster] = proc
        db = self.db
        db.execute("BEGIN")
        if put:
            db.executemany("INSERT OR REPLACE INTO procs VALUES (?, ?)", put)
        if gone:
            db.executemany("DELETE FROM procs WHERE id = ?", gone)
        for cluster, ad, count in clusters:
            if ad is None and not count:
                db.execute("DELETE FROM clusters WHERE cluster = ?", (cluster,))
                top.pop(cluster, None)
            else:
                db.execute("INSERT OR REPLACE INTO clusters VALUES (?, ?, ?)",
                           (cluster, None if ad is None else json.dumps(ad), count))
        db.execute("COMMIT")

    def close(self, keep: dict | None = None) -> None:
        """Close; the file is kept with the mark ``keep``, or removed."""
        if keep is not None:
            self.keep(keep)
        self.db.close()
        if keep is None:
            _remove(self.path)
