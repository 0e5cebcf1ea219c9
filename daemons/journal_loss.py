"""Going on with a journal as it is: ``jobledger journal accept-loss``, the owner's decision.

A journal behind its high-water mark, or one whose record chain is damaged, stops the
pool's start (``daemons.journal_check``); this moves the mark to what the journal holds,
cutting it first at its first damaged record (``daemons.journal_cut``), with the pool's
LOCAL_DIR locked so that no master starts meanwhile.
"""

from __future__ import annotations

import os
from pathlib import Path

from jobledger.eventcore.errors import JournalCorrupt, JournalError
from jobledger.daemons.journal_check import known_cluster, logged_cluster, written_logs
from jobledger.daemons.journal_cut import cut_journal
from jobledger.daemons.master import lock_local_dir, pool_running_in
from jobledger.daemons.storage.check import open_readonly, reason, verify
from jobledger.daemons.storage.evidence import HighWater, Mark
from jobledger.daemons.storage.schema import DB_NAME

__all__ = ["accept_loss"]


def accept_loss(local_dir, said: list | None = None) -> tuple[Mark | None, Mark]:
    """Go on with the journal as it is (the owner's decision); return (old mark, new mark).

    A journal behind its high-water mark (lost WAL frames, a lost -wal): the
    mark moves back to it.  A journal whose own record chain is damaged (a
    page that cannot be read, a checksum mismatch, a gap, an unreadable
    block): it is cut at the first damaged record, everything before it kept
    (daemons.journal_cut), and the mark set there.  Refused while the pool
    runs.  Cluster ids keep counting from the largest ever used.  ``said``
    gets a line for each thing given up.
    """
    local_dir = Path(local_dir)
    lock = lock_local_dir(local_dir)         # held while the mark moves: no master starts
    if lock is None:
        raise JournalError(f"{pool_running_in(local_dir)}: stop it first")
    try:
        return _move_mark(local_dir, local_dir / DB_NAME, said if said is not None else [])
    finally:
        os.close(lock)


def _move_mark(local_dir: Path, path: Path, said: list) -> tuple[Mark | None, Mark]:
    water = HighWater(local_dir)
    old, head, checksum, cluster = water.mark, 0, 0, 0
    logs: list[str] = []
    if path.exists():
        try:
            conn = open_readonly(path)
        except JournalError as exc:
            raise JournalCorrupt(f"the database file cannot be read: {reason(exc)}; put back "
                                 "a copy of journal.sqlite", path=str(path)) from None
        try:
            verdict = verify(conn, local_dir)
            head, checksum = verdict.head, verdict.checksum
            logs = written_logs(local_dir, conn)
            cluster = max([known_cluster(conn, old)] + [logged_cluster(p) for p in logs])
        finally:
            conn.close()
        damaged = [f for f in verdict.faults if f.kind != "evidence"]
        if damaged:
            cut = cut_journal(local_dir, damaged)
            head, checksum = cut.head, cut.checksum
            said += cut.lines()
    else:
        cluster = max([known_cluster(None, old)]
                      + [logged_cluster(p) for p in written_logs(local_dir, None)])
    new = Mark(head, checksum, cluster)       # no id a log already shows is used again
    water.reset(new)
    water.close()
    return old, new
