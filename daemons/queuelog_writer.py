"""JOB_QUEUE_LOG: HTCondor's text transaction log of the job queue, one more projection
of the journal, written by the schedd behind its commits.

``JobQueueLogWriter(journal_path, log_path, wait=store.wait_for_position, wake=store.wake_waiters,
recent=...)`` follows the journal: the entries the store committed, from its memory
while it holds them (``recent``, ``Store.recent`` as a follower of its own), else
through a read-only reader of its own (``daemons.storage.reader``).  The entries
after the position the file reaches are
folded (``eventcore.projections.queuelog_live``) and appended as one transaction per
catch-up, written with one ``write`` and fsynced.  The queue it folds is kept in an
SQLite file beside the log (``.<name>.fold``, ``daemons.queuelog_state``), no more than
``SETTLE_EVERY`` procs of it in memory: those a few catch-ups in a row change stay
there between them, put back in the file when that many gather and at a clean stop.
A writer that stops cleanly keeps that file, marked with the journal position the fold
reflects, the journal's checksum there, and the log's size, header and last 64 KiB
(their CRCs) as it leaves it.  The next start goes on from the file when all of that
still holds -- it folds only what is new -- and folds the whole journal again when
anything differs (or no mark is there: a writer killed after its start removed it).  ``start()``/``stop()`` run it in a
thread (``stop()`` re-raises the error that ended it); ``catch_up()`` does one round.

Exactly once across crashes, the file being its own cursor: each transaction ends with
``106 #journal N``.  At start the writer keeps the file up to its last whole
transaction (a torn tail, written when the schedd was killed, is cut off), folds the
journal silently up to that N -- the ads as the file last wrote them -- and writes
from N on.  A file that is not a job queue log this writer can continue (no header,
or no position on its last end line) is moved aside to ``<name>.old`` and a new one
started from the whole journal.
"""

from __future__ import annotations

import os
import threading
import time as _time
import zlib
from itertools import islice
from pathlib import Path
from typing import Mapping, NamedTuple

from jobledger.daemons.queuelog_state import SqliteProcs
from jobledger.daemons.storage.reader import Reader
from jobledger.eventcore.codecs.journal import Row, expand_block
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import job_id, row_entries
from jobledger.eventcore.projections.queuelog_live import (
    BEGIN_LINE, QueueLogFold, as_journaled, end_line, end_position, file_header,
)

__all__ = ["JobQueueLogWriter", "recover"]

CHUNK = 50_000           # journal positions read per step: one transaction
BATCH = 2_048            # entries folded at a time
WRITE_BYTES = 4 << 20    # a transaction's text held before it is written on
# Seconds to let appends gather after a catch-up: BATCH_WINDOW, doubled after each window
# in which more came, up to BATCH_WINDOW_MAX (a steady stream: fewer, bigger transactions
# and fsyncs); back to BATCH_WINDOW once the writer finds nothing new.
BATCH_WINDOW, BATCH_WINDOW_MAX = 0.02, 0.2
TAIL_BYTES = 65536       # of the log, in the fold file's mark


BLOCK = 1 << 20          # bytes read at a time when recover() looks for the last end line
HEADER_BYTES = 65536     # how far recover() looks for the file's two header lines


def recover(path: Path) -> int | None:
    """Cut ``path`` back to its last whole transaction; the journal position it reaches
    (0 for a file holding only its header), or None if it is no log to continue (no
    header, or its last end line names no position).  The file is read from its end,
    a block at a time, back to that line: a start does not read a 10^6-job log whole."""
    try:
        f = open(path, "r+b")
    except FileNotFoundError:
        return None
    with f:
        start = f.read(HEADER_BYTES)
        first = start.find(b"\n")
        header_end = start.find(b"\n", first + 1) if first >= 0 else -1
        if not start.startswith(b"107 ") or header_end < 0 \
                or not start[first + 1:header_end].startswith(b"101 0.0 "):
            return None
        size = f.seek(0, os.SEEK_END)
        keep, position = header_end + 1, 0
        found = _last_end(f, header_end, size)
        if found is not None:
            line, keep = found
            position = end_position(line.decode("utf-8", "replace"))
            if position is None:
                return None
        if keep < size:
            f.truncate(keep)
            os.fsync(f.fileno())
    return position


def _last_end(f, header_end: int, size: int) -> tuple[bytes, int] | None:
    """The last whole line of ``f`` (past its header, which ends at ``header_end``) that
    begins ``106 ``, and the offset just past it; None if there is none."""
    upper = size            # lines starting before this offset are still to be looked at
    while upper > header_end:
        low = max(header_end, upper - BLOCK)
        f.seek(low)
        data = f.read(upper - low + 4096)      # and what follows: an end line's end
        at = data.rfind(b"\n106 ", 0, upper - low + 4)    # its "\n" before ``upper``
        while at >= 0:
            end = data.find(b"\n", at + 1)
            if end >= 0:
                return data[at + 1:end], low + end + 1
            if low + len(data) < size:      # over 4 KiB: no end line of ours
                return b"106 ?", size
            at = data.rfind(b"\n106 ", 0, at + 4)   # torn: the last line, cut short
        upper = low
    return None


class _Entry(NamedTuple):
    """An entry as the fold reads it (``eventcore.journal.Entry``'s fields), made
    for a record the store holds in memory at a tuple's cost."""

    position: int
    time: float
    job: JobId
    type: str
    payload: Mapping


_new = tuple.__new__      # an _Entry without the Python frame of its __new__


def _entries_of(row: Row, payload: Mapping, after: int) -> list:
    """The entries of a committed ``row`` after ``after``, its payload as appended.  Of
    a block of procs, each proc's and the last SUBMIT event's (the position the block
    reaches): a proc just made is idle or held, and its SUBMIT event leaves it so."""
    if row.type == "procs":
        last, time, cluster = row.position, row.time, row.cluster
        return [_new(_Entry, (at, time, job_id(cluster, proc), what, body))
                for at, proc, what, body in expand_block(payload, last, after)
                if what == "proc" or at == last]
    if row.position <= after:
        return []
    return [_new(_Entry, (row.position, row.time, job_id(row.cluster, row.proc), row.type,
                          as_journaled(row.type, payload)))]


class JobQueueLogWriter:
    def __init__(self, journal_path, log_path, wait=None, wake=None, fsync: bool = True, log=None,
                 recent=None):
        self.log = log                   # a logging.Logger told of the error that stops the thread
        self.journal_path = Path(journal_path)
        self.path = Path(log_path)
        self._wait, self._wake = wait, wake
        self._recent = recent            # (after, limit) -> the store's (row, payload) in memory, or None
        self.fsync = fsync
        self.state = QueueLogFold()      # replaced at open() by one folding into SQLite
        self._procs: SqliteProcs | None = None
        self._reader: Reader | None = None
        self._file = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.resumed = False             # whether open() went on from a kept fold
        self._whole = True               # the fold and the file agree (no step cut short)
        self._log_position = 0           # the position the log's last end line names

    @property
    def position(self) -> int:
        return self.state.position

    def open(self) -> None:
        """Recover the file and fold the journal up to where it ends (or go on from the
        kept fold)."""
        self._whole = False              # until the fold reaches the file
        self.path.parent.mkdir(parents=True, exist_ok=True)
        reached = recover(self.path)
        self._reader = Reader(self.journal_path)
        if reached is not None and reached > self._reader.head()[0]:
            # The file holds changes the journal no longer has (its loss was accepted with
            # `journal accept-loss`): it describes ads that never were, so it starts over.
            reached = None
        if reached is None:
            if self.path.exists():
                os.replace(self.path, self.path.with_name(self.path.name + ".old"))
            with open(self.path, "w") as f:
                f.write(file_header(int(_time.time())))
                f.flush()
                os.fsync(f.fileno())
            reached = 0
        self._procs = SqliteProcs(self.path.with_name(f".{self.path.name}.fold"))
        self.state = QueueLogFold(self._procs)
        self._log_position = reached
        self.resumed = self._go_on(reached)
        if not self.resumed:
            if self._procs.kept is not None:
                self._procs.start_over()
            self._fold_to(reached)
        self._file = open(self.path, "a", encoding="utf-8")
        self._whole = True

    def _fold_to(self, reached: int) -> None:
        """Fold the journal up to ``reached``: the ads as the file has them, nothing written."""
        after = 0
        while after < reached:
            rows = self._reader.rows_spanning(after, min(CHUNK, reached - after))
            entries = [e for row in rows for e in row_entries(row, after=after) if e.position <= reached]
            if not entries:
                break
            self.state.apply(entries)
            after = entries[-1].position
        self.state.position = reached

    def _log_identity(self) -> list[int]:
        """The log's size and the CRCs of its first line and of its last TAIL_BYTES."""
        with open(self.path, "rb") as f:
            header = f.readline()
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read()
        return [size, zlib.crc32(header), zlib.crc32(tail)]

    def _go_on(self, reached: int) -> bool:
        """Go on from the kept fold if its mark holds for this journal and this log."""
        mark = self._procs.kept
        if mark is None:
            return False
        try:
            position = int(mark["position"])
            holds = (0 < position and reached == mark["log_position"] <= position
                     and position <= self._reader.head()[0]
                     and self._reader.checksum_at(position) == mark["journal_checksum"]
                     and self._log_identity() == mark["log"])
            if holds:
                self.state.restore(mark["state"])
                holds = self.state.position == position
        except (KeyError, TypeError, ValueError, AttributeError):
            holds = False
        if not holds:
            self.state = QueueLogFold(self._procs)
            return False
        self._procs.go_on()
        return True

    def _mark(self) -> dict | None:
        """What the fold file is kept with (None: it is not to be kept)."""
        if not self._whole or self._error is not None or self._reader is None:
            return None
        position = self.state.position
        checksum = self._reader.checksum_at(position) if position > 0 else None
        if checksum is None:
            return None
        self.state.settle()
        return {"position": position, "journal_checksum": checksum, "log_position": self._log_position,
                "log": self._log_identity(), "state": self.state.saved()}

    def catch_up(self) -> int:
        """Append what the journal holds past the file; the position reached."""
        with self._lock:
            if self._file is None:
                self.open()
            while True:
                after = self.state.position
                if not self._step(after):
                    return after

    def _step(self, after: int) -> bool:
        """One transaction: the entries of up to CHUNK positions after ``after``.  Its
        text goes to the file in one write, or, past WRITE_BYTES (a big submit's), in
        pieces as it is folded (a transaction cut short by a crash has no end line:
        ``recover`` cuts it off); False when the journal holds none."""
        entries = self._entries(after)
        self._whole = False
        pending: list[str] = []
        size, begun, any_entry = 0, False, False
        while True:
            batch = list(islice(entries, BATCH))
            if not batch:
                break
            any_entry = True
            lines = self.state.apply(batch)
            if not lines:
                continue
            if not begun:
                pending.append(BEGIN_LINE)
                begun = True
            text = "\n".join(lines) + "\n"
            pending.append(text)
            size += len(text)
            if size > WRITE_BYTES:
                self._file.write("".join(pending))
                pending, size = [], 0
        if begun:
            pending.append(end_line(self.state.position))
            self._file.write("".join(pending))
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())
            self._log_position = self.state.position
        self._whole = True
        return any_entry

    def _entries(self, after: int):
        """The entries of up to CHUNK positions after ``after`` (or of one block of procs):
        from the store's memory while it holds them (``recent``: no JSON to decode,
        their names sorted where the records follow their order, ``as_journaled``),
        else read back from the journal."""
        pairs = self._recent(after, CHUNK) if self._recent is not None else None
        if pairs is not None:
            return (e for row, payload in pairs for e in _entries_of(row, payload, after))
        rows = self._reader.rows_spanning(after, CHUNK)
        return (e for row in rows for e in row_entries(row, after=after))

    def start(self, interval: float = 0.5) -> None:
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, args=(interval,), name="queuelog", daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        window = BATCH_WINDOW
        try:
            while not self._stopping.is_set():
                reached = self.catch_up()
                if self._wait is not None:
                    self._stopping.wait(window)
                    if self._wait(reached + 1, 0, self._stopping):     # more came meanwhile
                        window = min(2 * window, BATCH_WINDOW_MAX)
                    else:
                        window = BATCH_WINDOW
                        self._wait(reached + 1, interval, self._stopping)
                else:
                    self._stopping.wait(interval)
        except BaseException as exc:   # kept, re-raised by stop()
            self._error = exc
            if self.log is not None:
                self.log.error("JOB_QUEUE_LOG %s: not written past journal position %d: %r",
                               self.path, self.state.position, exc)

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            if self._wake is not None:
                self._wake()
            thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def close(self) -> None:
        """Close the log and the journal; the fold file is kept (see the module docstring)
        when the fold and the log agree."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
            mark = None
            try:
                if self._procs is not None:
                    mark = self._mark()
            finally:
                if self._reader is not None:
                    self._reader.close()
                    self._reader = None
                if self._procs is not None:
                    self._procs.close(mark)
                    self._procs = None
