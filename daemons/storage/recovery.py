"""What a writing store does when it opens: the journal against its mark, the queue to its head.

``check_evidence`` refuses a journal behind its high-water mark (lost WAL frames, a deleted
or replaced ``journal.sqlite``: ``JournalBehind``) and gives the largest cluster id ever
used.  ``catch_up_queue`` brings the queue tables (the projection's snapshot; the
``projection`` row says which position and checksum they reflect) to the journal's head:
the records after the snapshot are folded; a snapshot that does not belong to this journal
(position past the head, checksum differs) or cannot be read (bad rows, a damaged table) is
rebuilt from the whole journal instead, never a stall.  The per-(cluster, status) job
counts kept beside the tables are checked against their rows first (and rewritten if
they disagree: ``queue_tables.check_counts``).  Rows edited behind the store's back
that still read fine are not detected here: ``jobledger audit`` compares the tables with a
fold of the journal.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from jobledger.eventcore.errors import InvalidTransition, JournalBehind, JournalError
from jobledger.eventcore.projections.queue import QueueFold
from jobledger.daemons.storage import queue_tables
from jobledger.daemons.storage.check import RECOVERY, evidence_faults
from jobledger.daemons.storage.errors import guard
from jobledger.daemons.storage.evidence import HighWater, Mark
from jobledger.daemons.storage.reader import Reader

__all__ = ["check_evidence", "catch_up_queue"]


def check_evidence(conn: sqlite3.Connection, path: Path, local_dir: Path, evidence: HighWater,
                   head: int, checksum: int) -> int:
    """Raise ``JournalBehind`` for a journal behind its mark; the largest cluster id used.
    A mark behind the journal (its last advance lost) is brought to the head."""
    mark = evidence.mark
    faults = evidence_faults(Reader.over(conn, path), mark, head, local_dir)
    if faults:
        raise JournalBehind(f"{faults[0].message}. " + RECOVERY.format(local_dir=local_dir),
                            path=str(path))
    if mark is not None and mark.position == head:
        return mark.cluster
    cluster = max(Reader.over(conn, path).max_cluster(), mark.cluster if mark else 0)
    if head:
        evidence.reset(Mark(head, checksum, cluster))
    return cluster


def catch_up_queue(conn: sqlite3.Connection, path: Path, head: int, columns: str,
                   fold: QueueFold) -> tuple[str, QueueFold]:
    """Bring the queue tables to ``head``; how ("empty", "current", "caught-up",
    "rebuilt") and the writer's fold to go on with."""
    try:
        row = queue_tables.snapshot_position(conn)
        if row is None and head == 0:
            return "empty", fold
        if row is not None and _snapshot_matches(conn, path, head, *row) \
                and queue_tables.history_intact(conn):
            queue_tables.check_counts(conn)    # before the fold below adds to them
            if row[0] == head:
                return "current", fold
            try:
                return "caught-up", queue_tables.fold_range(conn, fold, row[0], columns)
            except BaseException:
                fold = QueueFold(queue_tables.TableLoader(conn))
                raise
    except (InvalidTransition, JournalError, KeyError, TypeError, ValueError,
            sqlite3.DatabaseError):
        pass   # the snapshot does not hold what it claims: replay everything
    with guard("rebuilding the queue", path):
        queue_tables.rebuild(conn, columns)
    return "rebuilt", QueueFold(queue_tables.TableLoader(conn))


def _snapshot_matches(conn: sqlite3.Connection, path: Path, head: int, position: int,
                      checksum: int) -> bool:
    if position > head or position < 0:
        return False
    if position == 0:
        return checksum == 0
    return Reader.over(conn, path).checksum_at(position) == checksum
