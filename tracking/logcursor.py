"""Where a tracker stands in one user log, and reading on from there.

A ``LogCursor`` is (path, byte offset, file identity).  ``read(limit)`` opens
the log with ``JobEventLog`` resumed at the offset (the same state a pickled
reader carries: path, offset, identity), takes the complete events after it
without blocking (``events(stop_after=0)``) and closes the file again: a
tracker of ten thousand logs holds no open files between reads.  An event
still being written stays unread until its terminator arrives.  A log that
was replaced or truncated under the offset raises ``LogReplaced``; garbled
records are skipped by the reader and counted here (``unreadable``).
"""

from __future__ import annotations

import os
import time

import attrs

from jobledger.eventcore.errors import HTCondorException, UserLogFileChanged
from jobledger.tracking.jobevent import JobEvent
from jobledger.tracking.jobeventlog import JobEventLog

__all__ = ["LogCursor", "LogEvent", "LogReplaced"]


class LogEvent:
    """What the status fold reads of an event: its number, ids, time and body
    attributes (``get`` is exact-case, as the fold asks).  A batch of events
    keeps neither their text nor their full ``JobEvent`` mapping: what a step
    holds at once stays small, and nothing is converted that the fold does not read."""

    __slots__ = ("type", "cluster", "proc", "timestamp", "_attrs")

    def __init__(self, event: JobEvent):
        self.type = event._item.header.number
        self.cluster = event.cluster
        self.proc = event.proc
        self.timestamp = event.timestamp
        self._attrs = event._item.attrs

    def get(self, key: str, default=None):
        return self._attrs.get(key, default)

    def __repr__(self) -> str:
        return f"LogEvent({self.type}, {self.cluster}.{self.proc}, {self.timestamp})"


class LogReplaced(Exception):
    """The file at the cursor's path is not the one its offset belongs to."""


@attrs.define
class LogCursor:
    path: str
    offset: int = 0
    device: int = 0
    inode: int = 0
    year: int = attrs.field(factory=lambda: time.localtime().tm_year)
    unreadable: int = 0

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
        if not self.inode:
            return False
        return (st.st_dev, st.st_ino) != (self.device, self.inode) or st.st_size < self.offset

    def _open(self) -> JobEventLog | None:
        ident = (self.device, self.inode) if self.inode else None
        log = JobEventLog.__new__(JobEventLog)
        try:                              # resume exactly as unpickling a saved reader does
            log.__setstate__({"path": self.path, "offset": self.offset, "ident": ident,
                              "stop_after": 0, "year": self.year, "errors": "ignore",
                              "closed": False, "zone": None})
        except HTCondorException:
            if not os.path.exists(self.path):
                return None               # not created yet
            raise
        return log

    def read(self, limit: int | None = None) -> tuple[list[LogEvent], int, bool]:
        """(events, offset after them, whether more may be waiting) from the offset."""
        log = self._open()
        if log is None:
            return [], self.offset, False
        events: list[LogEvent] = []
        more = False
        try:
            if not self.inode:
                self.device, self.inode = log.__getstate__()["ident"]
            for event in log.events(0):
                events.append(LogEvent(event))
                if limit is not None and len(events) >= limit:
                    more = True
                    break
            self.unreadable += sum(1 for kind, *_ in log.problems if kind == "garbled")
            return events, log.offset, more
        except UserLogFileChanged as exc:
            raise LogReplaced(str(exc)) from exc
        finally:
            log.close()
