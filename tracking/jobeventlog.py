"""``JobEventLog``: htcondor2's job event log reader, without its traps.

Drop-in for ``htcondor2.JobEventLog``::

    for event in JobEventLog("job.log").events(stop_after=0):
        print(event.type, event.cluster, event.proc, event["HoldReason"])

Same API and meaning: ``events(stop_after)`` (``None`` blocks until the next
event, ``0`` never blocks, ``N`` waits until N seconds after the call),
``StopIteration`` leaves the reader usable (call ``events()`` again to poll
a growing file), iterating without ``events()`` blocks, ``close()``, the
context manager, pickling that resumes at the next unread event.  The
format (text, JSON, XML) is detected from the first non-blank byte.

Where htcondor2's behaviour is a trap, this reader differs (the
"quirks checklist" of shared/spec/userlog.md):

* ``stop_after`` may be a float (fractions of a second);
* no process-wide lock: readers in different threads do not serialise
  (one reader object is not meant to be shared between threads);
* an incomplete last event is held back until its terminator is written;
  a crashed writer's fragment followed by a new event is reported as
  garbled and the new event is read (HTCondor loses it);
* a garbled event is reported and reading continues with the next one:
  ``errors="warn"`` (default) emits a ``UserLogWarning``, ``"raise"``
  raises ``UserLogReadError`` (an ``HTCondorException``, like htcondor2's
  ``ULOG_RD_ERROR``; the next call continues after the bad event),
  ``"ignore"`` drops it.  Non-event lines are skipped, not a stop; both
  kinds are kept in ``problems`` (the last 100);
* a truncated file, or a path that now names another file (rotated,
  replaced), raises ``UserLogFileChanged`` instead of reading stale or
  empty data; so does resuming a pickled reader on another file;
* a file that is not an event log warns once (htcondor2 silently yields
  nothing);
* each ``JobEvent`` also has ``raw_text``, ``offset``, ``end_offset``.

``year`` (for legacy ``MM/DD`` dates; default: the current local year when
the reader is created) and ``zone`` (default: the process's local time
zone) are parameters so tests and tools can read old logs reproducibly.
"""

from __future__ import annotations

import collections
import math
import os
import stat
import time
import warnings

from jobledger.eventcore.codecs.userlog import Garbled, Parsed, TextReaderState, detect_format, scan
from jobledger.eventcore.errors import HTCondorException, UserLogFileChanged, UserLogReadError, UserLogWarning
from jobledger.tracking.filewake import FileWatch
from jobledger.tracking.jobevent import JobEvent, JobEventV1
from jobledger.tracking.localzone import LOCAL_ZONE

__all__ = ["JobEventLog", "JobEventLogV1"]

_CHUNK = 256 << 10      # read per fill: a bigger chunk keeps more parsed events alive at once, and the
                        # garbage collector then walks them again and again (4 MiB read ~25% slower)
MAX_RECORD_BYTES = 64 << 20     # one event (or unreadable stretch) at most
_POLL = 0.05           # the longest sleep between looks (a writer's append wakes it sooner: filewake)


def _deadline(stop_after):
    if stop_after is None:
        return None
    if isinstance(stop_after, bool) or isinstance(stop_after, int):
        return time.monotonic() + max(int(stop_after), 0)
    if isinstance(stop_after, float) and not math.isnan(stop_after):
        return time.monotonic() + max(stop_after, 0.0)
    raise TypeError("deadline must be an integer or a float (seconds)")


class JobEventLog:
    """Reads events from a job event log file (see the module docstring)."""

    _EVENT = JobEvent

    def __init__(self, filename: str, *, year: int | None = None, zone=None,
                 errors: str = "warn"):
        if not isinstance(filename, str):
            raise TypeError("filename must be a str")
        if not filename:
            raise ValueError("filename must not be empty")
        if errors not in ("warn", "raise", "ignore"):
            raise ValueError("errors must be 'warn', 'raise' or 'ignore'")
        self._path = filename
        self._errors = errors
        self._year = year if year is not None else time.localtime().tm_year
        self._zone = zone if zone is not None else LOCAL_ZONE
        self._deadline = None
        self._setup(0)

    def _setup(self, offset: int, ident=None):
        self._fd = None
        self._watch = None      # made at the first wait at the end, kept until close()
        self._closed = False
        try:
            # non-blocking: a FIFO nobody writes must not hang the open
            self._fd = os.open(self._path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise HTCondorException(
                f"Could not initialize JobEventLog: {exc.strerror}: '{self._path}'.") from exc
        st = os.fstat(self._fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            self._fd = None
            raise HTCondorException(
                f"Could not initialize JobEventLog: not a regular file: '{self._path}'.")
        self._ident = (st.st_dev, st.st_ino)
        self._changed = None
        if ident is not None and tuple(ident) != self._ident:
            self._changed = "the file was replaced since this reader was saved"
        elif st.st_size < offset:
            self._changed = "the file is shorter than where this reader stopped"
        self._state = TextReaderState(self._zone, self._year, time.time())
        self._format = None
        self._pending = collections.deque()
        self._consumed = offset
        self._scan_pos = offset
        self._size_seen = -1
        self._chunk = _CHUNK
        self.problems = collections.deque(maxlen=100)

    # -- htcondor2's API ---------------------------------------------------
    def events(self, stop_after=None) -> "JobEventLog":
        """Set how long ``next()`` may wait; returns the reader itself."""
        self._deadline = _deadline(stop_after)
        return self

    def __iter__(self):
        return self

    def __next__(self) -> JobEvent:
        if self._closed:
            raise StopIteration
        while True:
            while self._pending:
                base, item = self._pending.popleft()
                self._consumed = base + item.end
                if isinstance(item, Parsed):
                    return self._EVENT(item, base)
                self._problem(item, base)
            if self._fill():
                continue
            if self._path_replaced():
                if self._fill():        # what was appended before the rename
                    continue
                raise UserLogFileChanged("the path now names another file (rotated or replaced)",
                                         self._path, self._consumed)
            if not self._wait():
                raise StopIteration

    def close(self) -> None:
        """Release the file; ``next()`` then stops at once, forever."""
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)
        self._release_watch()
        self._closed = True
        self._pending.clear()

    def _release_watch(self) -> None:
        watch, self._watch = getattr(self, "_watch", None), None
        if watch is not None:
            watch.close()

    def __del__(self):
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self._release_watch()
        except OSError:
            pass

    def __enter__(self) -> "JobEventLog":
        self._deadline = None
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getstate__(self):
        remaining = None
        if self._deadline is not None:
            remaining = max(self._deadline - time.monotonic(), 0.0)
        return {"path": self._path, "offset": self._consumed, "ident": self._ident,
                "stop_after": remaining, "year": self._year, "errors": self._errors,
                "closed": self._closed, "zone": None if self._zone is LOCAL_ZONE else self._zone}

    def __setstate__(self, state):
        self._path = state["path"]
        self._errors = state["errors"]
        self._year = state["year"]
        self._zone = state["zone"] or LOCAL_ZONE
        self._deadline = _deadline(state["stop_after"])
        if state["closed"]:
            self._fd, self._closed, self._pending = None, True, collections.deque()
            self._watch = None
            self._consumed = state["offset"]
            self._ident = state["ident"]
            return
        self._setup(state["offset"], state["ident"])

    # -- extras --------------------------------------------------------------
    @classmethod
    def resume(cls, filename: str, offset: int, *, ident=None, year: int | None = None,
               zone=None, errors: str = "warn", stop_after=0) -> "JobEventLog":
        """A reader positioned at ``offset`` (what ``.offset`` reported earlier).

        ``ident`` is the ``(st_dev, st_ino)`` the offset belongs to (``.ident``);
        if the path now names another file, the first ``next()`` raises
        ``UserLogFileChanged``.  Same as unpickling a saved reader.
        """
        log = cls.__new__(cls)
        log.__setstate__({"path": filename, "offset": offset, "ident": ident,
                          "stop_after": stop_after,
                          "year": year if year is not None else time.localtime().tm_year,
                          "errors": errors, "closed": False, "zone": zone})
        return log

    @property
    def ident(self) -> tuple[int, int]:
        """``(st_dev, st_ino)`` of the file being read."""
        return self._ident

    @property
    def path(self) -> str:
        return self._path

    @property
    def offset(self) -> int:
        """Byte offset of the next unread record (what pickling saves)."""
        return self._consumed

    # -- reading -------------------------------------------------------------
    def _fill(self) -> bool:
        """Read and parse what was appended; True if anything was queued."""
        if self._changed:
            message, self._changed = self._changed, None
            raise UserLogFileChanged(message, self._path, self._consumed)
        fd = self._fd
        size = os.fstat(fd).st_size
        self._size_seen = size
        if size < self._scan_pos:
            raise UserLogFileChanged("the file was truncated", self._path, self._scan_pos)
        if size == self._scan_pos or self._format == "unknown":
            return False
        while True:
            data = os.pread(fd, self._chunk, self._scan_pos)
            if self._format is None:
                fmt = detect_format(data)
                if fmt is None:
                    return False
                self._format = fmt
                if fmt == "unknown":
                    self._report(UserLogReadError("not a job event log (unknown format)",
                                                  self._path, 0))
                    return False
            items, nxt = scan(self._format, data, 0, self._state)
            if items or nxt:
                base = self._scan_pos
                self._pending.extend((base, item) for item in items)
                self._scan_pos = base + nxt
                if items:
                    return True
                continue                # progress without a record (prologue, blanks)
            if len(data) < self._chunk:
                return False            # an incomplete record: wait for the rest
            if self._chunk >= MAX_RECORD_BYTES:
                self._format = "unknown"    # not read further: memory stays bounded
                self._report(UserLogReadError(f"an event longer than {MAX_RECORD_BYTES} bytes; "
                                              "the log is not read further", self._path, self._scan_pos))
                return False
            self._chunk *= 2            # one record larger than the chunk

    def _problem(self, item, base: int) -> None:
        kind = "garbled" if isinstance(item, Garbled) else "skipped"
        self.problems.append((kind, base + item.offset, base + item.end, item.text[:200]))
        if isinstance(item, Garbled):
            self._report(UserLogReadError(f"ULOG_RD_ERROR: unreadable event ({item.reason})",
                                          self._path, base + item.offset))

    def _report(self, error: UserLogReadError) -> None:
        if self._errors == "raise":
            raise error
        if self._errors == "warn":
            warnings.warn(UserLogWarning(str(error)), stacklevel=4)

    def _path_replaced(self) -> bool:
        """At the end of the data: does the path now name another file?"""
        try:
            st = os.stat(self._path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) != self._ident

    def _wait(self) -> bool:
        """Wait for the file to grow (or change); False when the deadline passed."""
        fd = self._fd
        while True:
            now = time.monotonic()
            if self._deadline is not None and now >= self._deadline:
                return False
            size = os.fstat(fd).st_size
            if size != self._size_seen:
                return True
            try:
                st = os.stat(self._path)
                if (st.st_dev, st.st_ino) != self._ident:
                    return True
            except OSError:
                pass
            pause = _POLL if self._deadline is None else min(_POLL, self._deadline - now)
            if self._watch is None:
                self._watch = FileWatch(self._path)
            self._watch.wait(pause, lambda: os.fstat(fd).st_size != self._size_seen)


class JobEventLogV1(JobEventLog):
    """The v1 bindings' ``JobEventLog``: the same reader, handing out ``JobEventV1``."""

    _EVENT = JobEventV1
