"""The store's read side: the connections reads use, so that no read waits on the writer.

``ReadConnections(path, connect)`` holds one connection for point reads (``read``,
``point``: under ``lock``, a statement at a time) and a few idle ones for chunked reads
(``take``/``give_back``).  A chunked read gets a connection of its own: a statement left
open between chunks holds its connection's read snapshot, and point reads (``job_ad``)
must see every commit; a new connection per read cost the schedd ~12 % of its CPU.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from jobledger.daemons.storage.errors import guard
from jobledger.daemons.storage.reader import Reader

__all__ = ["ReadConnections", "IDLE"]

IDLE = 4      # connections of chunked reads kept open between reads
# The point-read connection's page cache, KiB: point reads need the upper levels of the
# B-trees, not the 64 MiB the writer keeps (a scan through it held that much in the
# schedd for good, once the queue outgrew it); the OS caches the file anyway.
POINT_CACHE_KIB = 8192


class ReadConnections:
    """Point reads on one locked connection; chunked reads on connections of their own."""

    def __init__(self, path: Path, connect: Callable[[], sqlite3.Connection]):
        self.path = path
        self.lock = threading.Lock()
        self.reader = connect()
        self.reader.execute(f"PRAGMA cache_size=-{POINT_CACHE_KIB}")
        self._idle: list[sqlite3.Connection] = []

    def read(self, sql: str, args: tuple = (), what: str = "reading the queue") -> list:
        """Every row of one statement, on the point-read connection."""
        with self.lock, guard(what, self.path):
            return self.reader.execute(sql, args).fetchall()

    @contextmanager
    def point(self) -> Iterator[Reader]:
        """The journal reader over the point-read connection, the lock held meanwhile."""
        with self.lock:
            yield Reader.over(self.reader, self.path)

    def take(self) -> sqlite3.Connection:
        """A connection for one chunked read: give it back with ``give_back``."""
        with self.lock:
            if self._idle:
                return self._idle.pop()
        return Reader(self.path, check=False).conn

    def give_back(self, conn: sqlite3.Connection) -> None:
        with self.lock:
            if len(self._idle) < IDLE and not conn.in_transaction:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self.lock:
            self.reader.close()
            for conn in self._idle:
                conn.close()
            self._idle.clear()
