"""What every tracker shares: the job table, delivery, waiting, the worker thread.

A tracker reads its source (user logs, the journal, a schedd) in *steps*.
One step: read what is new since the saved positions -> fold it into the job
table -> call the callbacks for each status change -> save states, positions
and memo in one checkpoint transaction -> wake waiters and iterators.  A
tracker killed anywhere in a step re-reads that step after a restart; since
the callbacks' durable record (``memo``) is saved with the positions, it
holds every change exactly once.

Use it either way:

- synchronously: ``tracker.step()`` (one read), ``wait_until(cond, timeout)``
  and ``changes()`` drive steps themselves when no worker runs;
- in the background: ``start()`` runs steps in a worker thread (woken by the
  source, or every ``interval`` seconds); ``stop()`` joins it and re-raises
  whatever the worker died of.  A worker never swallows an error: waiters
  and iterators re-raise it too.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from jobledger.eventcore.errors import TrackerTimeout
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import Change, JobState, apply_event, compare, job_of
from jobledger.tracking.checkpoint import Checkpoint
from jobledger.tracking.jobtable import JobTable

__all__ = ["Batch", "Seed", "Tracker"]

Condition = Callable[[Mapping[JobId, JobState]], bool]


@attrs.frozen
class Seed:
    """A job's first state from a record that is not an event (a journal proc ad)."""

    state: JobState


@attrs.frozen
class Batch:
    """What one read of a source produced, in source order.

    ``items`` are job events (folded), ``JobState``s seen directly in schedd
    ads (they replace what was known) and ``Seed``s (used for unknown jobs
    only).  ``positions`` is where the source stands after them; ``more``
    says the source had more to give than one batch.
    """

    items: list = attrs.Factory(list)
    positions: dict = attrs.Factory(dict)
    more: bool = False


class Tracker:
    """Base class: subclasses implement ``_read()`` and the position hooks."""

    kind = "tracker"

    def __init__(self, *, checkpoint: str | os.PathLike | None = None, interval: float = 1.0):
        self.interval = interval
        self.states: JobTable = JobTable()     # {JobId: JobState}; finished jobs on disk
        self.anomalies: dict[str, int] = {}
        self.memo: list = []                     # durable record for callbacks
        self._callbacks: list[Callable[[Change], Any]] = []
        self._subscribers: list[queue.SimpleQueue] = []
        self._cond = threading.Condition()
        self._step_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._checkpoint = Checkpoint(checkpoint, self._checkpoint_kind()) if checkpoint else None
        self.replays = 0                         # full replays forced by a bad checkpoint
        if self._checkpoint is not None:
            self._restore()

    # --- hooks for subclasses -------------------------------------------------

    def _checkpoint_kind(self) -> str:
        """Names the tracker and its sources; a checkpoint of another kind is not reused."""
        return self.kind

    def _read(self) -> Batch:
        raise NotImplementedError

    def _reconcile(self, batch: Batch) -> list:
        """After a batch is folded: items to fold on top (a cross-check's corrections)."""
        return []

    def _rollback(self, batch: Batch) -> None:
        """A step failed after reading ``batch``: make sure it is read again."""

    def _seek(self, positions: Mapping[str, Any]) -> bool:
        """Resume from saved positions; False if they no longer fit the source."""
        return True

    def _advance(self, positions: Mapping[str, Any]) -> None:
        """Move to the positions of a batch whose effects are saved."""

    # --- restore, step, deliver -----------------------------------------------

    def _restore(self) -> None:
        saved = self._checkpoint.open()
        if self._checkpoint.discarded:
            self.replays += 1
        if not self._seek(saved.positions):
            self._checkpoint.reset("the sources changed since the checkpoint")
            self.replays += 1
            self._seek({})
            return
        self.states = JobTable(saved.states)
        self.memo = list(saved.memo)
        self.anomalies = {k: v for k, v in saved.counters.items()}

    def step(self) -> list[Change]:
        """Read once, fold, deliver and save; returns the status changes."""
        self._raise_worker_error()
        with self._step_lock:
            batch = self._read()
            undo: dict[JobId, JobState | None] = {}
            anomalies, memo_size = dict(self.anomalies), len(self.memo)
            try:
                changes, touched = self._fold(batch, undo)
                extra = self._reconcile(batch)
                if extra:
                    more_changes, more_touched = self._fold(Batch(extra), undo)
                    changes += more_changes
                    touched |= more_touched
                for change in changes:
                    for callback in list(self._callbacks):
                        callback(change)
                if self._checkpoint is not None:
                    self._checkpoint.save((self.states[j] for j in touched), batch.positions,
                                          self.memo, self.anomalies)
            except BaseException:
                # Nothing of a failed step stays: the same input is read again next time.
                for job, old in undo.items():
                    if old is None:
                        self.states.pop(job, None)
                    else:
                        self.states[job] = old
                self.anomalies = anomalies
                del self.memo[memo_size:]
                self._rollback(batch)
                raise
            self._advance(batch.positions)
        with self._cond:
            for sub in self._subscribers:
                for change in changes:
                    sub.put(change)
            self._cond.notify_all()
        if batch.more:
            self._wake.set()
        return changes

    def _fold(self, batch: Batch, undo: dict) -> tuple[list[Change], set[JobId]]:
        """Fold a batch into ``states``; ``undo`` collects each touched job's state before."""
        changes: list[Change] = []
        touched: set[JobId] = set()
        states = self.states
        for item in batch.items:
            if isinstance(item, (JobState, Seed)):
                state = item if isinstance(item, JobState) else item.state
                old = states.get(state.job)
                if isinstance(item, Seed) and old is not None:
                    self._count("duplicate")
                    continue
                if old != state:
                    undo.setdefault(state.job, old)
                    states[state.job] = state
                    touched.add(state.job)
                    change = compare(old, state)
                    if change is not None:
                        changes.append(change)
                continue
            job = job_of(item)
            if job is None:
                continue
            old = states.get(job)
            step = apply_event(old, item, job)
            if step.state is not old:
                undo.setdefault(job, old)
                states[job] = step.state
                touched.add(job)
            if step.change is not None:
                changes.append(step.change)
            if step.anomaly is not None:
                self._count(step.anomaly.kind)
        return changes, touched

    def _count(self, kind: str) -> None:
        self.anomalies[kind] = self.anomalies.get(kind, 0) + 1

    # --- public API -------------------------------------------------------------

    def add_callback(self, callback: Callable[[Change], Any]) -> None:
        """Call ``callback(change)`` for every status change, in order.

        Callbacks run in the stepping thread before the checkpoint is saved; what
        they append to ``self.memo`` is saved with it (exactly once).  Other side
        effects happen at least once: after a crash the step is delivered again.
        """
        self._callbacks.append(callback)

    def snapshot(self) -> JobTable:
        """A copy of the job table (a ``{JobId: JobState}`` mapping) as of now."""
        with self._step_lock:
            return self.states.copy()

    def wait_until(self, condition: Condition, timeout: float | None = None) -> Mapping[JobId, JobState]:
        """Block until ``condition(states)`` holds; returns the states then.

        Raises ``TrackerTimeout`` after ``timeout`` seconds, or the worker's error.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._raise_worker_error()
            states = self.snapshot()
            if condition(states):
                return states
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TrackerTimeout(timeout, len(states))
            self._wait_for_progress(left)

    def changes(self, timeout: float | None = None) -> Iterator[Change]:
        """Iterate status changes as they happen; ends after ``timeout`` idle seconds."""
        sub: queue.SimpleQueue = queue.SimpleQueue()
        with self._cond:
            self._subscribers.append(sub)
        try:
            if self._thread is None:
                self.step()                      # what is there now, even with timeout=0
            idle_since = time.monotonic()
            while True:
                try:
                    yield sub.get_nowait()
                    idle_since = time.monotonic()
                    continue
                except queue.Empty:
                    pass
                self._raise_worker_error()
                left = None if timeout is None else timeout - (time.monotonic() - idle_since)
                if left is not None and left <= 0:
                    return
                self._wait_for_progress(left)
        finally:
            with self._cond:
                self._subscribers.remove(sub)

    def _wait_for_progress(self, timeout: float | None) -> bool:
        """Let one step happen (ours or the worker's); False if none did in time."""
        wait = self.interval if timeout is None else min(self.interval, max(timeout, 0))
        if self._thread is None:
            if self.step():
                return True
            time.sleep(wait)
            return bool(self.step())
        with self._cond:
            return self._cond.wait(wait if timeout is not None else None)

    # --- the worker ---------------------------------------------------------------

    def start(self) -> "Tracker":
        if self._thread is not None:
            raise RuntimeError("tracker already started")
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=f"{self.kind}-tracker", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                self.step()
                self._wake.wait(self.interval)
                self._wake.clear()
        except BaseException as exc:          # kept, re-raised by stop() and waiters
            self._error = exc
            with self._cond:
                self._cond.notify_all()

    def wake(self) -> None:
        """Ask the worker for a step now (sources call this on a change)."""
        self._wake.set()

    def stop(self) -> None:
        """Stop the worker and re-raise its error, if it had one."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            self._wake.set()
            thread.join()
        self._close()
        self._raise_worker_error()

    def _close(self) -> None:
        if self._checkpoint is not None:
            self._checkpoint.close()

    def _raise_worker_error(self) -> None:
        if self._error is not None:
            error = self._error
            raise error

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
