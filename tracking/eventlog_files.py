"""Read the global event log across its rotations, in order, exactly once.

HTCondor rotates ``EVENT_LOG`` when it grows past its size limit: with one
rotation the file becomes ``<file>.old``; with N it becomes ``<file>.1`` and
older ones shift to ``.2`` ... ``.N``.  Every file starts with a header
event whose ``sequence`` grows by one per rotation.

``GlobalEventLog(path)`` reads the oldest rotated file first, then the newer
ones, then the live file, and keeps following: when the live file is
rotated under it, it finishes the renamed file (through its open
descriptor) and continues with the new live file.  A gap in the header
sequences (rotations that happened while nobody read, whose files are gone)
is reported with a ``UserLogWarning`` naming the missed sequence numbers.
It iterates like ``JobEventLog`` (``events(stop_after)``, ``close()``,
context manager) and yields its ``JobEvent``s, header events included
(htcondor2 returns them too); ``current_path`` names the file being read.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from pathlib import Path

from jobledger.eventcore.codecs.userlog_eventlog import parse_header_info
from jobledger.eventcore.errors import UserLogFileChanged, UserLogWarning
from jobledger.tracking.jobeventlog import JobEventLog, _deadline

__all__ = ["GlobalEventLog", "rotated_files"]

_NUMBERED = re.compile(r"\.(\d+)\Z")


def rotated_files(path: str | os.PathLike) -> list[Path]:
    """The rotated files of ``path`` that exist, oldest first (``.N`` ... ``.1``, ``.old``)."""
    live = Path(path)
    numbered = []
    for candidate in live.parent.glob(live.name + ".*"):
        m = _NUMBERED.search(candidate.name[len(live.name):])
        if m and candidate.name == f"{live.name}.{m.group(1)}":
            numbered.append((int(m.group(1)), candidate))
    files = [p for _, p in sorted(numbered, reverse=True)]
    old = live.with_name(live.name + ".old")
    if old.exists():
        files.append(old)
    return files


class GlobalEventLog:
    """The global event log and its rotations as one stream (module docstring)."""

    def __init__(self, path: str, **reader_options):
        self._path = str(path)
        self._options = dict(reader_options)
        self._deadline = None
        self._queue = [str(p) for p in rotated_files(path)] + [self._path]
        self._reader = None
        self._last_sequence = None
        self._closed = False
        self._open_next()

    @property
    def current_path(self) -> str:
        return self._reader.path if self._reader else self._path

    def events(self, stop_after=None) -> "GlobalEventLog":
        self._deadline = _deadline(stop_after)
        return self

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            raise StopIteration
        while True:
            live = not self._queue
            try:
                event = next(self._reader.events(0 if not live else self._remaining()))
            except UserLogFileChanged:
                if not live:
                    raise
                self._queue.append(self._path)      # rotated: the new live file is next
                self._open_next()
                continue
            except StopIteration:
                if live:
                    raise
                self._open_next()
                continue
            self._note_header(event)
            return event

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self._closed = True

    def __enter__(self) -> "GlobalEventLog":
        self._deadline = None
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _remaining(self):
        if self._deadline is None:
            return None
        return max(self._deadline - time.monotonic(), 0.0)

    def _open_next(self) -> None:
        if self._reader is not None:
            self._reader.close()
        path = self._queue.pop(0)
        while True:
            try:
                self._reader = JobEventLog(path, **self._options)
                return
            except Exception:
                if path != self._path or not self._wait_for_live():
                    raise

    def _wait_for_live(self) -> bool:
        """The live file may not exist for an instant during a rotation."""
        for _ in range(100):
            if os.path.exists(self._path):
                return True
            time.sleep(0.01)
        return False

    def _note_header(self, event) -> None:
        if int(event["EventTypeNumber"]) != 8 or event.cluster != -1:
            return
        info = parse_header_info(event.get("Info"))
        if not info or not isinstance(info.get("sequence"), int):
            return
        seq = info["sequence"]
        last = self._last_sequence
        if last is not None and seq > last + 1:
            missed = ", ".join(str(s) for s in range(last + 1, seq))
            warnings.warn(UserLogWarning(
                f"{self._path}: event-log file(s) with sequence {missed} were rotated away "
                f"unread; their events are missing"), stacklevel=3)
        self._last_sequence = seq
