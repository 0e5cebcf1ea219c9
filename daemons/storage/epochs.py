"""The journal rows job epochs are folded from (``eventcore.projections.epochs``).

Only clusters with a job that ever started (an EXECUTE event) can have an
epoch: their rows are read, in order, a chunk at a time, on a connection of
the store's chunked reads; the rest of the journal is passed over in SQL.
"""

from __future__ import annotations

from typing import Iterator

from jobledger.eventcore.codecs.journal import Row
from jobledger.eventcore.status import EXECUTE

__all__ = ["rows_of_runs"]


def rows_of_runs(store) -> Iterator[Row]:
    """The journal rows of every cluster with a job that started, in position order."""
    with store.reads.point() as reader:
        columns = reader.columns
    sql = (f"SELECT {columns} FROM journal WHERE cluster IN "
           "(SELECT DISTINCT cluster FROM journal WHERE event = ?) ORDER BY position")
    for rows in store._chunks(sql, (EXECUTE,), "reading the job epochs"):
        for row in rows:
            yield Row(*row)
