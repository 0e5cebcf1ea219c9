"""The journal rows job epochs are folded from (``eventcore.projections.epochs``).

Only clusters with a job that ever started (an EXECUTE event) can have an
epoch: their rows are read, in order, a chunk at a time, on a connection of
the store's chunked reads; the rest of the journal is passed over in SQL.
"""

from __future__ import annotations

import sqlite3
from typing import Iterator

from jobledger.eventcore.codecs.journal import Row
from jobledger.eventcore.status import EXECUTE
from jobledger.daemons.storage.errors import translate
from jobledger.daemons.storage.reader import Reader

__all__ = ["rows_of_runs"]

CHUNK = 500


def rows_of_runs(store) -> Iterator[Row]:
    """The journal rows of every cluster with a job that started, in position order."""
    conn = store._scanner()
    try:
        reader = Reader.over(conn, store.path)
        sql = (f"SELECT {reader.columns} FROM journal WHERE cluster IN "
               "(SELECT DISTINCT cluster FROM journal WHERE event = ?) ORDER BY position")
        try:
            cursor = conn.execute(sql, (EXECUTE,))
            try:
                rows = cursor.fetchmany(CHUNK)
                while rows:
                    for row in rows:
                        yield Row(*row)
                    rows = cursor.fetchmany(CHUNK)
            finally:
                cursor.close()
        except sqlite3.Error as exc:
            raise translate(exc, "reading the job epochs", store.path) from None
    finally:
        store._scanner(done=conn)
