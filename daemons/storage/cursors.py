"""The user-log writer's state in ``journal.sqlite``: its cursor, each file's
(position, offset), the jobs' log targets and the logs that failed.

``LogCursors(path, turn=...)`` holds its own connection (the projector writes
beside the schedd's appends); ``turn``, the store's writer lock, makes the two
take turns in this process, so neither waits in SQLite's busy handler (which
sleeps a millisecond or more each time it finds the database locked).  ``commit(...)`` saves the
files written, the failures, the target changes and the cursor in one
transaction: a crash leaves either all of them or none (daemons.userlog_files
reconciles the files with the saved offsets).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Iterable, NamedTuple

from jobledger.daemons.storage.errors import guard
from jobledger.daemons.storage.schema import connect

__all__ = ["LogCursors", "FileState"]


class FileState(NamedTuple):
    path: str
    position: int       # last journal position written to the file
    offset: int         # the file's size after that write
    sequence: int = 0   # event log: rotation sequence
    ctime: int = 0      # event log: creation time in its header


class LogCursors:
    """Reads and writes the log writer's tables (see the module docstring)."""

    def __init__(self, path, name: str = "logs", turn: AbstractContextManager | None = None):
        self.path = path
        self.name = name
        self._turn = turn if turn is not None else nullcontext()
        with guard("opening the journal", path):
            self._conn = connect(path, "FULL")

    def close(self) -> None:
        self._conn.close()

    def _all(self, sql: str, args: tuple = ()) -> list:
        with guard("reading the log writer's state", self.path):
            return self._conn.execute(sql, args).fetchall()

    def position(self) -> int:
        """The journal position the logs hold everything up to."""
        rows = self._all("SELECT position FROM projection WHERE name=?", (self.name,))
        return rows[0][0] if rows else 0

    def save_position(self, position: int) -> None:
        self._all("INSERT OR REPLACE INTO projection VALUES (?, ?, 0)", (self.name, position))

    def load_state(self, path: str) -> FileState:
        rows = self._all("SELECT position, offset, sequence, ctime FROM log_files WHERE path=?",
                         (path,))
        return FileState(path, *rows[0]) if rows else FileState(path, 0, 0)

    def save_states(self, states: Iterable[FileState]) -> None:
        with guard("saving the log writer's state", self.path):
            self._conn.executemany("INSERT OR REPLACE INTO log_files VALUES (?,?,?,?,?)",
                                   list(states))

    def targets(self) -> dict[tuple[int, int], tuple[str, str]]:
        """(cluster, proc) -> (log path, format) of every job with a user log."""
        return {(c, p): (path, fmt) for c, p, path, fmt in
                self._all("SELECT cluster, proc, path, format FROM log_jobs")}

    def failures(self) -> dict[str, tuple[int, str]]:
        """User logs that could not be written: path -> (last position written, error)."""
        return {path: (position, error) for path, position, error in
                self._all("SELECT path, position, error FROM log_failures")}

    def note_failure(self, path: str, error: str) -> None:
        self._all("UPDATE log_failures SET error=? WHERE path=?", (error, path))

    def commit(self, states: list[FileState], failures: list[tuple[str, int, str]],
               targets: dict, position: int | None) -> None:
        """One transaction: file states, new failures, target changes
        ((cluster, proc) -> (path, format) or None), the cursor."""
        self._transaction(self._commit, states, failures, targets, position)

    def repaired(self, state: FileState) -> None:
        """A failed log was written up to ``state``: save it and clear the failure."""
        self._transaction(self._repaired, state)

    def _commit(self, conn, states, failures, targets, position) -> None:
        conn.executemany("INSERT OR REPLACE INTO log_files VALUES (?,?,?,?,?)", list(states))
        conn.executemany("INSERT OR REPLACE INTO log_failures VALUES (?,?,?)", failures)
        gone = [key for key, target in targets.items() if target is None]
        conn.executemany("DELETE FROM log_jobs WHERE cluster=? AND proc=?", gone)
        conn.executemany("INSERT OR REPLACE INTO log_jobs VALUES (?,?,?,?)",
                         [(*key, *target) for key, target in targets.items() if target is not None])
        if position is not None:
            conn.execute("INSERT OR REPLACE INTO projection VALUES (?, ?, 0)", (self.name, position))

    def _repaired(self, conn, state) -> None:
        conn.execute("INSERT OR REPLACE INTO log_files VALUES (?,?,?,?,?)", tuple(state))
        conn.execute("DELETE FROM log_failures WHERE path=?", (state.path,))

    def _transaction(self, body, *args) -> None:
        conn = self._conn
        with self._turn, guard("saving the log writer's state", self.path):
            conn.execute("BEGIN IMMEDIATE")
            try:
                body(conn, *args)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

