"""The event-based tracker: follows many user logs at once.

Logs are given as paths, or found with ONE schedd query (each job's
``UserLog``, relative paths taken from its ``Iwd``); that query also tells
which jobs were submitted on hold, which their logs cannot say (only the
submit event is written).  Each log is read from
its saved byte offset; the offsets are saved with the job states.

Change notification is per DIRECTORY (``tracking.watch``): a thousand logs
in one directory cost one watch and no open files; the watchdog handler
only notes which log changed and wakes the tracker, which reads just those
logs.  So a step costs what was written since the last one: the number of
new events, not the number of jobs.  Where notifications are not available
every log's size is checked each ``interval`` instead; with notifications a
slow ``sweep`` (default 30 s) still checks sizes, in case one was missed.

A log replaced or truncated under the tracker (another inode, or shorter
than the offset) is read again from its start; a checkpoint whose offsets
no longer fit the files means a full replay.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from jobledger.eventcore.projections.jobstate import JobState, state_from_ad
from jobledger.tracking.core import Batch, Seed, Tracker
from jobledger.tracking.logcursor import LogCursor, LogReplaced
from jobledger.tracking.watch import DirectoryWatcher

__all__ = ["UserLogTracker", "discover", "logs_of_jobs"]


def logs_of_jobs(schedd, constraint: str | None = None) -> list[str]:
    """The user logs of the jobs matching ``constraint`` (see ``discover``)."""
    return discover(schedd, constraint)[0]


SUBMITTED_ON_HOLD = (15, 16)      # HoldReasonCode: hold = true, spooling input


def discover(schedd, constraint: str | None = None) -> tuple[list[str], list[JobState]]:
    """The jobs' user logs, and the jobs held since submission: one schedd query.

    With a constraint, the history is asked too (jobs that already left the
    queue still wrote their logs); without one only the queue is asked.  A job
    submitted on hold writes only its submit event, so its log cannot say it
    is held: those jobs' states are returned to seed the tracker.
    """
    paths = set()
    projection = ["ClusterId", "ProcId", "UserLog", "Iwd", "JobStatus", "HoldReasonCode",
                  "HoldReasonSubCode", "HoldReason", "QDate", "EnteredCurrentStatus"]
    queued = list(schedd.query(constraint or "true", projection))
    ads = queued + (list(schedd.history(constraint, projection, -1)) if constraint else [])
    for ad in ads:
        log = ad.get("UserLog")
        if not isinstance(log, str) or not log:
            continue
        iwd = ad.get("Iwd")
        paths.add(os.path.normpath(os.path.join(iwd, log) if isinstance(iwd, str) else log))
    held = [state_from_ad(ad) for ad in queued
            if ad.get("JobStatus") == 5 and ad.get("HoldReasonCode") in SUBMITTED_ON_HOLD
            and "ClusterId" in ad and "ProcId" in ad]
    return sorted(paths), held


class UserLogTracker(Tracker):
    """Tracks every job that writes to the given user logs."""

    kind = "userlog"

    def __init__(self, logs: Iterable[str | os.PathLike] = (), *, schedd=None,
                 constraint: str | None = None, checkpoint: str | os.PathLike | None = None,
                 interval: float = 1.0, notify: bool = True, batch: int = 20000,
                 sweep: float = 30.0, clock=time.monotonic):
        paths = [os.path.abspath(os.fspath(p)) for p in logs]
        self._seeds: list[JobState] = []
        if schedd is not None:
            found, self._seeds = discover(schedd, constraint)
            paths += found
        self.batch = batch
        self.sweep = sweep
        self.clock = clock
        self._cursors: dict[str, LogCursor] = {}
        self._lock = threading.Lock()
        self._pending: set[str] = set()           # logs to read on the next step
        self._last_sweep: float | None = None
        self._watcher = DirectoryWatcher(self.wake, notify=notify)
        for path in dict.fromkeys(paths):
            self._cursors[path] = LogCursor(path)
        self._watcher.add(self._cursors)
        super().__init__(checkpoint=checkpoint, interval=interval)

    def _checkpoint_kind(self) -> str:
        return "userlog"

    @property
    def logs(self) -> list[str]:
        return list(self._cursors)

    def add_logs(self, paths: Iterable[str | os.PathLike]) -> None:
        """Follow more logs (read from their start on the next step)."""
        new = [os.path.abspath(os.fspath(p)) for p in paths]
        with self._lock:
            new = [p for p in new if p not in self._cursors]
            for path in new:
                self._cursors[path] = LogCursor(path)
            self._pending.update(new)
        self._watcher.add(new)
        self.wake()

    # --- positions ------------------------------------------------------------------

    def _seek(self, positions: Mapping[str, Any]) -> bool:
        for path, (offset, device, inode) in positions.items():
            cursor = self._cursors.get(path)
            if cursor is None:
                cursor = self._cursors[path] = LogCursor(path)
                self._watcher.add([path])
            cursor.offset, cursor.device, cursor.inode = offset, device, inode
            if cursor.changed():
                for c in self._cursors.values():
                    c.offset, c.device, c.inode = 0, 0, 0
                return False
        return True

    def _rollback(self, batch: Batch) -> None:
        self._seeds += [item.state for item in batch.items if isinstance(item, Seed)]
        with self._lock:
            self._pending.update(batch.positions)

    def _advance(self, positions: Mapping[str, Any]) -> None:
        for path, (offset, device, inode) in positions.items():
            cursor = self._cursors[path]
            cursor.offset, cursor.device, cursor.inode = offset, device, inode

    # --- reading ----------------------------------------------------------------------

    def _due_logs(self) -> set[str]:
        now = self.clock()
        with self._lock:
            due, self._pending = self._pending, set()
        due |= self._watcher.take_dirty()
        if (not self._watcher.watching or self._last_sweep is None
                or now - self._last_sweep >= self.sweep):
            self._last_sweep = now
            due |= {p for p, c in self._cursors.items() if c.size() not in (None, c.offset)}
        return due

    def _read(self) -> Batch:
        items: list = [Seed(s) for s in self._seeds if s.job not in self.states]
        self._seeds = []
        positions: dict[str, list[int]] = {}
        more = False
        budget = self.batch
        for path in sorted(self._due_logs()):
            cursor = self._cursors.get(path)
            if cursor is None:
                continue
            if budget <= 0:
                with self._lock:
                    self._pending.add(path)
                more = True
                continue
            replaced = cursor.changed()
            garbled = cursor.unreadable
            try:
                if replaced:
                    raise LogReplaced(path)
                events, end, unread = cursor.read(budget)
            except LogReplaced:
                replaced = True
                self._count("log_replaced")
                cursor.offset, cursor.device, cursor.inode = 0, 0, 0
                events, end, unread = cursor.read(budget)
            if cursor.unreadable > garbled:
                self.anomalies["unreadable"] = (self.anomalies.get("unreadable", 0)
                                                + cursor.unreadable - garbled)
            if unread:
                with self._lock:
                    self._pending.add(path)
                more = True
            if end != cursor.offset or replaced:
                positions[path] = [end, cursor.device, cursor.inode]
            items.extend(events)
            budget -= len(events)
        return Batch(items, positions, more)

    def watch(self) -> "UserLogTracker":
        """Turn on change notifications (``start()`` does; steps then read only changed logs)."""
        self._watcher.start()
        return self

    def start(self) -> "UserLogTracker":
        self.watch()
        super().start()
        return self

    def _close(self) -> None:
        self._watcher.stop()
        super()._close()
