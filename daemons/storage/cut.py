"""The journal a cut leaves (``jobledger journal accept-loss`` on a damaged chain,
daemons.journal_cut): written as a new database file beside the old one."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from jobledger.daemons.storage.schema import JOURNAL_COLUMNS, connect, create_private, migrate
from jobledger.eventcore.codecs.journal import Row
from jobledger.eventcore.errors import JournalError

__all__ = ["write_cut_journal"]


def write_cut_journal(fresh: Path, kept: list[Row], states, log_jobs, failures, cursor: int, head: int) -> None:
    """A new journal at ``fresh`` holding the rows ``kept`` (the journal cut after
    ``head``), the log writers' state after the cut (``states``: log_files rows,
    ``log_jobs``, ``failures``, the ``logs`` cursor) and no queue or history rows:
    the store rebuilds those from the journal when it opens it.  Fsynced."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{fresh}{suffix}").unlink(missing_ok=True)
    create_private(fresh)
    conn = connect(fresh)
    try:
        migrate(conn, fresh)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(f"INSERT INTO journal ({', '.join(JOURNAL_COLUMNS)}) VALUES ({', '.join('?' * 9)})",
                         [tuple(r) for r in kept])
        conn.executemany("INSERT INTO log_files (path, position, offset, sequence, ctime) "
                         "VALUES (?, ?, ?, ?, ?)", states)
        conn.executemany("INSERT OR REPLACE INTO log_jobs (cluster, proc, path, format) VALUES (?, ?, ?, ?)",
                         log_jobs)
        conn.executemany("INSERT INTO log_failures (path, position, error) VALUES (?, ?, ?)",
                         [(p, min(pos, head), error) for p, pos, error in failures])
        if cursor:
            conn.execute("INSERT INTO projection VALUES ('logs', ?, 0)", (cursor,))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise JournalError(f"writing the cut journal {fresh}: {exc}") from None
    finally:
        conn.close()
    with open(fresh, "rb") as f:
        os.fsync(f.fileno())
