"""Where a tracker stands in one user log, and reading on from there.

A ``LogCursor`` is (path, byte offset, file identity).  ``read(limit)``
returns the complete events after the offset and the offset after the last
one; an event still being written stays unread until its terminator
arrives.  The identity (device, inode) and the size tell a log that was
replaced or truncated under the tracker (``changed()``): its saved offset no
longer means anything.
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from eventcore.codecs.userlog_text_read import Parsed, TextReaderState, scan_text

__all__ = ["LogCursor", "LogEvent"]

CHUNK = 4 << 20      # bytes read per call at most (a huge backlog is read in pieces)


class LogEvent:
    """One event read from a log, shaped like ``htcondor2.JobEvent`` for the fold."""

    __slots__ = ("type", "cluster", "proc", "timestamp", "_attrs", "offset", "end")

    def __init__(self, parsed: Parsed):
        header = parsed.header
        self.type = header.number
        self.cluster = header.cluster
        self.proc = header.proc
        self.timestamp = header.epoch
        self._attrs = parsed.attrs
        self.offset = parsed.offset
        self.end = parsed.end

    def get(self, key: str, default: Any = None) -> Any:
        return self._attrs.get(key, default)

    def __repr__(self) -> str:
        return f"LogEvent({self.type:03d}, {self.cluster}.{self.proc}, at {self.offset})"


@attrs.define
class LogCursor:
    path: str
    offset: int = 0
    device: int = 0
    inode: int = 0
    _state: TextReaderState = attrs.field(factory=TextReaderState, repr=False)

    def identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_ino

    def size(self) -> int | None:
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            return None

    def changed(self) -> bool:
        """True if the file is no longer the one the offset belongs to."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False                  # not there (yet): nothing read, nothing lost
        if self.offset == 0 and not self.inode:
            return False
        return (st.st_dev, st.st_ino) != (self.device, self.inode) or st.st_size < self.offset

    def read(self, limit: int | None = None) -> tuple[list[LogEvent], int, bool]:
        """(events, offset after them, whether more complete events may follow)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return [], self.offset, False
        try:
            st = os.fstat(fd)
            if not self.inode:
                self.device, self.inode = st.st_dev, st.st_ino
            want = min(st.st_size - self.offset, CHUNK)
            buf = os.pread(fd, want, self.offset) if want > 0 else b""
        finally:
            os.close(fd)
        if not buf:
            return [], self.offset, False
        items, end = scan_text(buf, 0, self._state, limit)
        events = [LogEvent(p) for p in items if isinstance(p, Parsed)]
        for e in events:
            e.offset += self.offset
            e.end += self.offset
        new = self.offset + end
        more = new > self.offset and ((limit is not None and len(events) >= limit)
                                      or self.offset + len(buf) < st.st_size)
        return events, new, more

    def position(self) -> list[int]:
        return [self.offset, self.device, self.inode]
