"""Is this journal whole?  The checks of the journal's own records, below any daemon.

``read_rows(conn, faults)`` yields the journal's rows in order and keeps
going past pages SQLite cannot read: each unreadable run of positions is a
``page`` fault (the rows after it are read again).  ``verify(conn)`` runs
the chained CRC and position continuity over them (``checksum``,
``continuity``), compares the end with the high-water mark kept outside
the database (``evidence``, storage.evidence) and returns a ``Verdict``.
The pool-level check built on it (the logs as evidence, refusing to start,
accepting a loss) is ``daemons.journal_check``.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Iterator, NamedTuple

from jobledger.eventcore.codecs.journal import Row, row_span
from jobledger.eventcore.errors import JournalCorrupt, JournalError
from jobledger.daemons.storage.evidence import HighWater, Mark
from jobledger.daemons.storage.reader import Reader

__all__ = ["Fault", "Verdict", "RECOVERY", "open_readonly", "read_rows", "verify", "evidence_faults",
           "reason"]


RECOVERY = (
    "To recover: stop the pool, put back journal.sqlite (with its -wal file) from a copy taken "
    "after the last commit, and start again; or, to go on with the journal as it is (jobs whose "
    "records are missing will run again, cluster ids still continue after the highest one ever "
    "used), run `jobledger journal accept-loss --local-dir {local_dir}`.")


class Fault(NamedTuple):
    kind: str          # page | checksum | continuity | evidence
    message: str
    position: int | None = None


class Verdict(NamedTuple):
    head: int          # last position read
    checksum: int      # chained checksum there
    records: int
    mark: Mark | None
    faults: list

    @property
    def ok(self) -> bool:
        return not self.faults


def open_readonly(path) -> Reader:
    return Reader(path)


def read_rows(reader: Reader, faults: list, after: int = 0) -> Iterator[tuple]:
    """The rows (tuples of ``Row``'s fields) after ``after`` in order; unreadable
    runs become ``page`` faults and reading goes on after them."""
    def lost(first: int, last: int | None, error) -> None:
        if last is None:
            faults.append(Fault("page", f"no row after position {first - 1} can be read "
                                f"({error}): a damaged page of the database file", first))
        else:
            faults.append(Fault("page", f"rows at positions {first}..{last} cannot be read "
                                f"({error}): a damaged page of the database file", first))
    return reader.rows_past_damage(after, lost)


def verify(conn: Reader, local_dir=None, keep: list | None = None) -> Verdict:
    """Chain, continuity and pages of the whole journal, and its end against the mark.

    ``keep``: a list the rows are appended to (audit reads them once).
    """
    # The mark first: read after the journal, it could be ahead of a live pool's snapshot.
    mark = HighWater(local_dir).read() if local_dir is not None else None
    faults: list = []
    rows = read_rows(conn, faults) if conn.exists() else iter(())   # no table: no rows, no damage
    if keep is not None:
        rows = _kept(rows, keep)
    head, checksum, count = _chain(rows, faults)
    faults.sort(key=lambda f: f.position or 0)
    faults += evidence_faults(conn, mark, head, local_dir)
    return Verdict(head, checksum, count, mark, faults)


def _kept(rows, keep: list):
    for row in rows:
        row = Row(*row)
        keep.append(row)
        yield row


def _chain(rows, faults: list) -> tuple[int, int, int]:
    """``verify_rows`` over raw tuples, inlined: this loop is the start-up cost of a
    pool (bench/bench_journal.py, 1M records).  Returns (last position, its
    checksum, rows)."""
    crc, expected, previous, count = zlib.crc32, 1, 0, 0
    position = 0
    for position, time, cluster, proc, kind, payload, key, checksum, _ in rows:
        if kind == "procs":       # a block of procs ends at the last position it stands for
            try:
                expected += row_span(kind, payload, position) - 1
            except (JournalError, KeyError, TypeError) as exc:
                faults.append(Fault("payload", f"unreadable block of procs: {_describe(exc)}",
                                    position))
        if position != expected:
            faults.append(Fault("continuity", f"position gap: expected {expected}, found "
                                f"{position}", position))
        try:
            want = crc(f"{position}\x1f{time!r}\x1f{cluster}\x1f{proc}\x1f{kind}\x1f{key or ''}"
                       f"\x1f{payload}".encode("utf-8"), previous)
        except (UnicodeError, TypeError):
            want = None
        if want != checksum:
            faults.append(Fault("checksum", f"checksum mismatch (stored {_hex(checksum)}, "
                                f"computed {_hex(want)})", position))
        previous, expected = checksum, position + 1
        count += 1
    return position, previous, count


def _describe(exc: Exception) -> str:
    return reason(exc) if isinstance(exc, JournalError) else repr(exc)


def reason(exc: JournalError) -> str:
    return exc.message if isinstance(exc, JournalCorrupt) else str(exc)


def _hex(value) -> str:
    return f"{value:08x}" if isinstance(value, int) else repr(value)


def evidence_faults(conn, mark: Mark | None, head: int, local_dir) -> list:
    """The journal against its high-water mark: behind it, or not the journal it recorded."""
    if mark is None or mark.position == 0:
        return []
    where = Path(local_dir) / "spool" / "journal.hwm"
    if head == 0 and conn is not None and not conn.exists():
        return [Fault("evidence", f"{conn.file_name() or 'journal.sqlite'} holds no journal at "
                      f"all, not even its tables (a young pool keeps them in journal.sqlite-wal "
                      f"until its first checkpoint), but {where} records that positions up to "
                      f"{mark.position} were committed: records 1..{mark.position} are missing "
                      "(a deleted or damaged journal.sqlite-wal)", 1)]
    if head < mark.position:
        return [Fault("evidence", f"the journal ends at position {head}, but {where} records "
                      f"that positions up to {mark.position} were committed: records "
                      f"{head + 1}..{mark.position} are missing (a damaged or deleted "
                      "journal.sqlite-wal, or a journal.sqlite deleted or replaced)", head + 1)]
    try:
        found = conn.checksum_at(mark.position)
    except JournalError:
        return []       # reported as a page fault
    if found is not None and found != mark.checksum:
        return [Fault("evidence", f"the record at position {mark.position} is not the one "
                      f"committed there (checksum {found:08x}, {where} records "
                      f"{mark.checksum:08x}): this journal.sqlite is another journal or was "
                      "rewritten", mark.position)]
    return []
