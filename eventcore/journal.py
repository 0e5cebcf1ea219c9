"""The journal interface: ``Entry``, the ``Journal`` protocol, ``MemoryJournal``.

The journal is an append-only, totally ordered list of records.  Positions
start at 1 and have no gaps; ``head()`` is the last position (0 when empty).
A ``procs`` record (a block of new procs) takes two positions a proc and is
read as the ``proc`` and ``event`` entries it stands for, each at its own
position (``row_entries``), so entries never share a position.

``append(records, expected_head=None, time=None) -> last position`` is
atomic (``time``: the append's time; the SQLite store reads its clock when
it is None, the pure ``MemoryJournal`` requires it):
all records get consecutive positions or none is kept.  ``expected_head``
makes concurrent appenders safe: when given and the journal does not end
there, ``PositionConflict`` is raised and nothing is appended.  A record
whose ``key`` the journal already holds is skipped (idempotent ingestion);
if every record is skipped the head is returned unchanged.

``MemoryJournal`` is the pure reference implementation (time is an
argument, no I/O); ``daemons.storage.store.Store`` is the SQLite one.  Both pass
the same contract tests (tests/journal/test_journal_contract.py).
"""

from __future__ import annotations

import bisect
from typing import Iterable, Iterator, Mapping, Protocol

import attrs

from jobledger.eventcore.codecs.journal import (
    Row, decode_payload, expand_block, make_rows, record_from_payload,
)
from jobledger.eventcore.errors import JournalCorrupt, PositionConflict
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import Record

__all__ = ["Entry", "Journal", "MemoryJournal", "entry_from_row", "row_entries",
           "entries_of_rows", "job_id"]


@attrs.frozen
class Entry:
    """One journal record at its position: ``(position, time, job, type, payload)``."""

    position: int
    time: float
    job: JobId
    type: str
    payload: Mapping
    key: str | None = None

    @property
    def record(self) -> Record:
        """The typed record (``eventcore.records``)."""
        return record_from_payload(self.type, self.job, dict(self.payload), self.key)


_JOBS: dict[tuple[int, int], JobId] = {}


def job_id(cluster: int, proc: int) -> JobId:
    """The ``JobId`` (shared by the entries of one job: a bounded cache)."""
    job = _JOBS.get((cluster, proc))
    if job is None:
        if len(_JOBS) > 10_000:     # jobs in flight; completed ones must not stay
            _JOBS.clear()
        job = _JOBS[(cluster, proc)] = JobId(cluster, proc)
    return job


def entry_from_row(row: Row | tuple) -> Entry:
    """Decode a stored row (upcasting its payload) into an ``Entry``."""
    position, time, cluster, proc, kind, payload, key = row[:7]
    return Entry(position, time, job_id(cluster, proc), kind,
                 decode_payload(kind, payload, position), key)


def row_entries(row: Row | tuple, payload: Mapping | None = None, after: int = 0) -> list[Entry]:
    """The entries a stored row stands for, those after ``after``: one, or a block's
    ``proc`` and ``event`` entries.  ``payload``: the row's payload as appended (no
    decode needed)."""
    position, time, cluster, proc, kind, text, key = row[:7]
    if kind != "procs":
        if position <= after:
            return []
        if payload is None:
            return [entry_from_row(row)]
        return [Entry(position, time, job_id(cluster, proc), kind, payload, key)]
    if payload is None:
        payload = decode_payload(kind, text, position)
    try:
        return [Entry(at, time, job_id(cluster, number), what, body)
                for at, number, what, body in expand_block(payload, position, after)]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise JournalCorrupt(f"unreadable 'procs' payload: {exc!r}", position) from None


def entries_of_rows(rows: Iterable, after: int = 0, limit: int | None = None) -> Iterator[Entry]:
    """The entries of ``rows`` after ``after`` (at most ``limit``), blocks expanded."""
    for row in rows:
        for entry in row_entries(row, after=after):
            if limit is not None:
                if limit <= 0:
                    return
                limit -= 1
            yield entry


class Journal(Protocol):
    """What every journal offers (memory and SQLite)."""

    def append(self, records: Iterable[Record], expected_head: int | None = None,
               time: float | None = None) -> int: ...

    def head(self) -> int: ...

    def entries(self, after: int = 0, limit: int | None = None) -> Iterator[Entry]: ...


class MemoryJournal:
    """A journal in a list: the reference for the contract tests and folds."""

    def __init__(self) -> None:
        self._rows: list[Row] = []
        self._keys: set[str] = set()

    def head(self) -> int:
        return self._rows[-1].position if self._rows else 0

    def append(self, records: Iterable[Record], expected_head: int | None = None,
               time: float | None = None) -> int:
        if time is None:
            raise TypeError("MemoryJournal.append needs the time (eventcore reads no clock)")
        head = self.head()
        if expected_head is not None and expected_head != head:
            raise PositionConflict(expected_head, head)
        fresh, seen = [], set()
        for record in records:
            if record.key is not None:
                if record.key in self._keys or record.key in seen:
                    continue
                seen.add(record.key)
            fresh.append(record)
        previous = self._rows[-1].checksum if self._rows else 0
        rows = make_rows(fresh, head + 1, float(time), previous)
        self._rows.extend(rows)
        self._keys |= seen
        return self.head()

    def entries(self, after: int = 0, limit: int | None = None) -> Iterator[Entry]:
        start = bisect.bisect_right(self._rows, after, key=lambda row: row.position)
        return entries_of_rows(self._rows[start:], after, limit)

    def rows(self) -> list[Row]:
        """The stored rows (for audits and tests)."""
        return list(self._rows)
