"""Write rendered events to log files exactly once, across crashes.

Log files cannot join the SQLite transaction, so each file keeps its own
``(position, offset)`` in the store's ``log_files`` table: the last journal
position written to it and the file's size after that write.  Writing is:

1. ``reconcile``: bytes past the saved offset (written, then a crash before
   the state was saved) are searched for the deterministic rendering of the
   next events: those found, in order, each starting a line, are kept (not
   written again).  A user log is shared by many writers (DAGMan's nodes
   log above all: DAGMan, condor_chirp and the user append to it too), so
   bytes that are not ours are never cut: the only cut is our own torn
   write, a fragment of the next event that ends the file;
2. the remaining events are appended, one ``write()`` each (``O_APPEND``),
   then fsynced (unless ``fsync=False``);
3. the caller saves the new ``(position, offset)`` with its own cursor in one
   transaction (``FileState`` rows, daemons.storage.cursors).

The global event log adds a header event at the start of every file and
rotation (``EventLogWriter``): the new sequence is saved *before* the rename,
so a crash mid-rotation is finished on restart by comparing the sequence in
the live file's header with the saved one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

from jobledger.daemons.safe_open import safe_open_fd
from jobledger.daemons.storage.cursors import FileState
from jobledger.eventcore.errors import UnsafePathError
from jobledger.eventcore.projections.userlog import render_header, rotation_names

__all__ = ["FileState", "reconcile", "find_ours", "append_texts",
           "UserLogWriter", "EventLogWriter", "header_sequence"]


def reconcile(path: str, offset: int, expected: list[bytes]) -> tuple[int, int]:
    """Keep the expected events found past ``offset``; cut only our own torn write.

    Returns ``(new offset, number of expected items already present)``: the
    new offset is the end of what the file holds now (other writers' events
    among ours included), less our torn fragment if one ended it.  A file
    shorter than ``offset`` (changed behind our back) is taken as it is:
    writing continues at its end.
    """
    try:
        fd = safe_open_fd(path, "r+b")
    except FileNotFoundError:
        return 0, 0
    try:
        size = os.fstat(fd).st_size
        if size <= offset:
            return size, 0
        tail = _read_from(fd, offset, size)
        starts, torn = find_ours(tail, expected)
        end = len(tail)
        if torn is not None:
            os.ftruncate(fd, offset + torn)
            os.fsync(fd)
            end = torn
        return offset + end, len(starts)
    finally:
        os.close(fd)


def _read_from(fd: int, offset: int, size: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    parts, got = [], 0
    while got < size - offset:
        chunk = os.read(fd, size - offset - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def find_ours(data: bytes, expected: list[bytes], start: int = 0) -> tuple[list[int], int | None]:
    """Our ``expected`` events in ``data`` from ``start``: in order, each at a line start,
    other writers' bytes allowed between them.  Returns where each found one begins (the
    first ``len(starts)`` of ``expected``), and where our torn write of the next one
    begins if such a fragment ends ``data`` (else None)."""
    starts: list[int] = []
    at = start
    for text in expected:
        found = _find_at_line_start(data, text, at)
        if found < 0:
            break
        starts.append(found)
        at = found + len(text)
    if len(starts) == len(expected):
        return starts, None
    return starts, _torn_start(data, at, expected[len(starts)])


def _find_at_line_start(data: bytes, text: bytes, start: int) -> int:
    """Where ``text`` first occurs in ``data`` at or after ``start``, at the start of a
    line (an event of ours begins one; another writer's events end in a newline)."""
    at = data.find(text, start)
    while at > start and data[at - 1:at] != b"\n":
        at = data.find(text, at + 1)
    return at


def _torn_start(data: bytes, start: int, text: bytes) -> int | None:
    """Where our torn write of ``text`` begins, if one ends ``data``: a line start at or
    after ``start`` from which the rest of ``data`` is a proper prefix of ``text``."""
    first = max(start, len(data) - len(text) + 1)
    for at in range(first, len(data)):
        if (at == start or data[at - 1:at] == b"\n") and text.startswith(data[at:]):
            return at
    return None


def append_texts(path: str, texts: list[bytes], fsync: bool = True) -> int:
    """Append each text with one ``write()``; return the file's size after."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = safe_open_fd(path, "ab")       # never through a symlink another user planted
    try:
        for text in texts:
            view = memoryview(text)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        if fsync and texts:
            os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


class UserLogWriter:
    """Exactly-once appends of ``(position, text)`` items to one user log.

    ``write(state, items, sync=False)`` leaves the fsync to the caller, so a
    caller can tell readers the events are in the file before paying for it
    (the saved state must still wait for the fsync): ``sync(path)``."""

    def __init__(self, fsync: bool = True):
        self.fsync = fsync

    def write(self, state: FileState, items: list[tuple[int, bytes]], sync: bool = True) -> FileState:
        pending = [(p, t) for p, t in items if p > state.position]
        if not pending:
            return state
        offset, done = reconcile(state.path, state.offset, [t for _, t in pending])
        rest = pending[done:]
        if rest:
            offset = append_texts(state.path, [t for _, t in rest], self.fsync and sync)
        return state._replace(position=pending[-1][0], offset=offset)

    def sync(self, path: str) -> None:
        """fsync ``path`` (the data ``write(..., sync=False)`` left in the page cache).

        A path that no longer names a file the pool may open (removed, or
        replaced by a planted symlink between the write and now) took the
        written bytes with it: they were written once, to the file that was
        there, and are not written again.  The next write to the path meets
        whatever is there now."""
        if self.fsync:
            try:
                fd = safe_open_fd(path, "rb")
            except (FileNotFoundError, UnsafePathError):
                return
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


_SEQUENCE = re.compile(rb"Global JobLog: .*? sequence=(\d+) ")


def header_sequence(path: str) -> int | None:
    """The ``sequence`` in an event log's header, or None (no file, no header)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(1024)
    except FileNotFoundError:
        return None
    m = _SEQUENCE.search(first)
    return int(m.group(1)) if m else None


class EventLogWriter:
    """The global event log: a header per file, rotation over ``max_size`` bytes."""

    def __init__(self, max_size: int = 1_000_000, max_rotations: int = 1, fsync: bool = True,
                 header: Callable[..., str] = render_header,
                 save: Callable[[FileState], None] | None = None):
        self.max_size = max_size
        self.max_rotations = max(1, max_rotations)
        self.fsync = fsync
        self.header = header
        self.save = save or (lambda state: None)

    def _header(self, state: FileState, size: int = 0) -> bytes:
        return self.header(state.ctime, state.sequence, size=size,
                           max_rotation=self.max_rotations).encode("utf-8")

    def _rotate_files(self, state: FileState) -> None:
        """Rename the full file away (its header rewritten with its final size)."""
        path = state.path
        if os.path.exists(path):
            size = os.path.getsize(path)
            old = state._replace(sequence=state.sequence - 1)
            old_ctime = _header_ctime(path)
            if old_ctime is not None:
                header = self.header(old_ctime, old.sequence, size=size,
                                     max_rotation=self.max_rotations).encode("utf-8")
                with open(path, "r+b") as f:
                    first = f.readline()
                    if len(first) == header.index(b"\n") + 1:
                        f.seek(0)
                        f.write(header[:len(first)])
        for source, target in rotation_names(path, self.max_rotations):
            if os.path.exists(source):
                os.replace(source, target)

    def recover(self, state: FileState) -> FileState:
        """Finish a rotation that a crash interrupted."""
        if state.sequence == 0:
            return state
        live = header_sequence(state.path)
        if live is not None and live < state.sequence:
            self._rotate_files(state)
        return state

    def write(self, state: FileState, items: list[tuple[int, bytes, int]]) -> FileState:
        """Append ``(position, text, time)`` items, rotating as HTCondor does."""
        pending = [item for item in items if item[0] > state.position]
        if not pending:
            return state
        state = self.recover(state)
        if state.sequence == 0:
            state = state._replace(sequence=1, ctime=int(pending[0][2]))
        expected = ([self._header(state)] if state.offset == 0 else []) + [t for _, t, _ in pending]
        offset, done = reconcile(state.path, state.offset, expected)
        if state.offset == 0:
            if done == 0:
                offset = append_texts(state.path, [expected[0]], self.fsync)
            else:
                done -= 1
        state = state._replace(offset=offset)
        batch: list[bytes] = []
        size, last = offset, state.position
        for position, text, when in pending[done:]:
            if self.max_size > 0 and size > self.max_size:
                state = self._flush(state, batch, last)
                batch = []
                state = state._replace(sequence=state.sequence + 1, ctime=int(when), offset=0)
                self.save(state)                 # the intent first, then the renames
                self._rotate_files(state)
                state = state._replace(offset=append_texts(state.path, [self._header(state)],
                                                           self.fsync))
                size = state.offset
            batch.append(text)
            size += len(text)
            last = position
        state = self._flush(state, batch, last)
        return state._replace(position=pending[-1][0])

    def _flush(self, state: FileState, batch: list[bytes], last: int) -> FileState:
        if not batch:
            return state._replace(position=max(state.position, last))
        return state._replace(position=last, offset=append_texts(state.path, batch, self.fsync))


_CTIME = re.compile(rb"Global JobLog: ctime=(\d+) ")


def _header_ctime(path: str) -> int | None:
    with open(path, "rb") as f:
        m = _CTIME.search(f.readline(1024))
    return int(m.group(1)) if m else None
