"""Where the JOB_QUEUE_LOG writer keeps the queue it folds: a scratch SQLite file of its
own beside the log, so the writer's memory does not grow with the queue.

``SqliteProcs(path)`` is the store of the writer's ``QueueLogFold``
(``eventcore.projections.queuelog_live.PackedProcs`` with its storage in SQLite): a
table of procs (their key one integer), each packed in one string (``pack_proc``; JSON when a text holds the
packing's separator), and one of clusters (the ad as JSON, the count of procs).  The
fold hands it what a step changed in one ``store`` call, one transaction.

The file is scratch: the writer folds the journal into it again at each start (the
log is its own cursor), so it is removed when opened and when closed, never fsynced,
and kept without a rollback journal.  Its page cache is bounded (``CACHE_KIB``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from jobledger.eventcore.projections.queue import Proc
from jobledger.eventcore.projections.queuelog_live import PackedProcs

__all__ = ["SqliteProcs", "CACHE_KIB"]

CACHE_KIB = 8192
_SCHEMA = """
CREATE TABLE procs (id INTEGER PRIMARY KEY, row TEXT NOT NULL);
CREATE TABLE clusters (cluster INTEGER PRIMARY KEY, ad TEXT, count INTEGER NOT NULL);
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
        _remove(self.path)
        self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "locking_mode = EXCLUSIVE",
                       f"cache_size = -{CACHE_KIB}"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.executescript(_SCHEMA)
        # the highest proc number stored per cluster: a new proc (a submit numbers them
        # upwards) is known absent without a look-up
        self._top: dict[int, int] = {}

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

    def close(self) -> None:
        self.db.close()
        _remove(self.path)
