"""The projector: journal entries -> user-log files and the global event log.

The queue and history are projected by ``daemons.storage.store.Store.append``
in the append's own transaction.  Files cannot join it, so this projector
follows the journal behind the commit: it takes the committed entries from
the store in memory (``Store.recent``: the payloads as appended, never
encoded and decoded again) and reads the journal only after a restart or
when it fell behind the store's window.  Its state (cursor, each file's
position and offset, the jobs' log targets, failed logs) is in
``daemons.storage.cursors``; the jobs' log targets are loaded once and then
kept up to date from the records projected.

``Projector(store, event_log=None, max_event_log=1_000_000, event_log_rotations=1,
            user_log_format=TextFormat(), event_log_format=EVENT_LOG_FORMAT,
            tz=<local zone>, fsync=True)``

``catch_up() -> int``
    Write every event after the ``logs`` cursor to its user log (from the
    job's ``UserLog``) and to the event log; return the position reached.
    Exactly once per event across crashes (daemons.userlog_files).  A chunk
    that writes nothing (events bound for no file) moves the cursor in
    memory only, saved with the next write or at ``close()`` (at most
    ``UNSAVED_LIMIT`` positions behind: a restart folds them again).
``wait_for_position(position, timeout) -> bool``
    True once the files hold everything up to ``position``: written, so any
    reader of the file sees it (``visible``), not yet necessarily fsynced and
    saved (``position``).  Returns at once when they already do; otherwise
    woken by the catch-up that gets there, not by polling.
``start()`` / ``stop()``
    A background thread calling ``catch_up`` whenever the journal grows;
    ``stop()`` re-raises the error that ended the thread, if any.

Imported events are not written back to user logs (they came from one), but
they do go to the global event log, which describes the whole pool.

A user log that cannot be written (a full disk, its directory is gone, the
path is a directory, permissions) does not stop the others: it is recorded
in ``log_failures`` (``failures()``), its events wait, and every later
``catch_up`` tries it again from where it stopped, in order.  The thread
also retries on its own, with back-off (``RETRY_FIRST`` doubling up to
``RETRY_MAX`` seconds), so a log is completed once its disk has room again
even if the journal does not grow.  The global event log failing stops the
projector (``stop()`` re-raises the error).

A user log the pool refuses to open (``UnsafePathError``: a symlink or file
another user planted in a directory others can write) is recorded and
retried the same way, and ``on_refused(jobs, path, why)`` is called (outside
the projector's lock) with the jobs whose events it could not write, so the
schedd can hold them (HTCondor holds a job whose user log it cannot
initialize).
"""

from __future__ import annotations

import datetime
import threading
import time as _time

from jobledger.eventcore.codecs.userlog_text_write import TextFormat
from jobledger.eventcore.codecs.journal import decode_payload
from jobledger.eventcore.errors import UnsafePathError
from jobledger.eventcore.journal import Entry, entry_from_row, job_id, row_entries
from jobledger.eventcore.projections.userlog import EVENT_LOG_FORMAT, LogTargets, Target, planned_writes, render
from jobledger.daemons.storage.cursors import FileState, LogCursors
from jobledger.daemons.storage.interfaces import JournalFeed
from jobledger.tracking.localzone import LOCAL_TZINFO
from jobledger.daemons.userlog_files import EventLogWriter, UserLogWriter

__all__ = ["Projector", "local_zone", "CURSOR"]

CURSOR = "logs"
# journal positions the cursor may run ahead of its saved value while nothing is written
UNSAVED_LIMIT = 10_000
RETRY_FIRST, RETRY_MAX = 0.5, 30.0     # seconds between retries of failed user logs
# Seconds the follower waits after a catch-up, so appends gather (one write, fsync and
# cursor commit for them all): BATCH_WINDOW, doubled after each window in which more came,
# up to BATCH_WINDOW_MAX (a steady stream of jobs); back to BATCH_WINDOW once it finds
# nothing new.  A reader waiting for a position (a submit, a query) ends the window, and so
# does a stream that stops: a wide window ends once BATCH_WINDOW passed with no new append,
# so the last events of a stream reach their logs within about BATCH_WINDOW, not 0.2 s.
# The end of a DAG node's job (``hurry``: DAGMan reads the nodes log to start its children)
# ends it NODE_GAP after the last catch-up began (a chain's child goes out at once, a big
# DAG's ends still share catch-ups: each costs an fsync, a cursor commit and a round of DAGMan's).
# A run's end that leaves the queue with no idle or running job (``drained``: the stream is
# over) ends it at once.
BATCH_WINDOW, BATCH_WINDOW_MAX = 0.02, 0.2
NODE_GAP = 0.01


def _describe(exc: OSError) -> str:
    return f"{exc.strerror or exc.__class__.__name__}: {exc.filename or ''}".rstrip(": ")


def local_zone() -> datetime.tzinfo:
    """The machine's local time zone (user logs are written in local time, each
    event with the offset in force at its own instant)."""
    return LOCAL_TZINFO


class Projector:
    """Follows the journal and writes log files (see the module docstring)."""

    def __init__(self, store: JournalFeed, event_log: str | None = None,
                 max_event_log: int = 1_000_000, event_log_rotations: int = 1,
                 user_log_format: TextFormat = TextFormat(),
                 event_log_format: TextFormat = EVENT_LOG_FORMAT,
                 tz: datetime.tzinfo | None = None, fsync: bool = True, chunk: int = 5000,
                 on_refused=None):
        self.store = store
        self.on_refused = on_refused
        self._refused: list = []       # (jobs, path, why) found under the lock, told after it
        self.event_log = str(event_log) if event_log else None
        self.user_log_format = user_log_format
        self.event_log_format = event_log_format
        self.tz = tz or local_zone()
        self.chunk = chunk
        self.cursors = LogCursors(store.path, CURSOR, turn=store.write_turn)
        store.keep_recent()
        self._targets: LogTargets | None = None     # loaded at the first catch-up
        self._lock = threading.Lock()
        self._users = UserLogWriter(fsync=fsync)
        self._events = EventLogWriter(max_event_log, event_log_rotations, fsync=fsync,
                                      save=self._save_now)
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._gate = threading.Condition()  # the window's end: ...
        self._reader_waits = False          # ... now (a reader waits for a position, or stop())
        self._node_ended = False            # ... NODE_GAP after the last catch-up began
        self._error: BaseException | None = None
        self._retry_delay = RETRY_FIRST
        self._retry_at: float | None = None
        self.position = self._saved = self.cursors.position()
        self.visible = self.position    # events up to here are in their files (maybe not fsynced)
        self._shown = threading.Condition()

    def close(self) -> None:
        self.stop()
        with self._lock:
            if self.position > self._saved:
                self.cursors.save_position(self.position)
                self._saved = self.position
        self.cursors.close()

    # ------------------------------------------------------------ state --
    def _save_now(self, state: FileState) -> None:
        self.cursors.save_states([state])

    def targets(self) -> LogTargets:
        """The jobs' log targets: loaded once, then kept by the records projected."""
        if self._targets is None:
            self._targets = LogTargets({key: Target(path, fmt) for key, (path, fmt)
                                        in self.cursors.targets().items()})
        return self._targets

    # ----------------------------------------------------------- catch up --
    def catch_up(self) -> int:
        """Write everything the journal holds; return the position reached."""
        with self._lock:
            try:
                targets = self.targets()
                cursor = max(self.cursors.position(), self.position)   # past chunks that wrote nothing
                self._repair(targets, cursor)
                while True:
                    entries, last = self._next_chunk(cursor, targets)
                    if last is None:
                        break
                    cursor = self._project(entries, targets, last)
            except BaseException:
                self._targets = None        # the saved ones are the truth again
                raise
            self.position = cursor
            self._show(cursor)
            self._schedule_retry(grow=False)
        self._tell_refused()
        return cursor

    def _next_chunk(self, cursor: int, targets: LogTargets):
        """(entries after ``cursor``, the last position they cover) or (None, None) at the
        end: from the store's memory, or read from the journal when it is not there."""
        recent = self.store.recent(cursor, self.chunk)
        if recent:
            return self._entries(recent, targets, cursor), recent[-1][0].position
        if recent is not None and self.store.head() <= cursor:
            return None, None
        rows = list(self.store.rows(after=cursor, positions=self.chunk))   # blocks: many each
        if not rows:
            return None, None
        return self._entries(((row, None) for row in rows), targets, cursor), rows[-1].position

    def retry_failed(self) -> dict[str, tuple[int, str]]:
        """Try the failed user logs again (up to the cursor); return those still failing."""
        with self._lock:
            self._repair(self.targets(), self.position)
            failed = self._schedule_retry(grow=True)
        self._tell_refused()
        return failed

    def _schedule_retry(self, grow: bool) -> dict[str, tuple[int, str]]:
        """Back-off: the delay doubles with each retry of its own that fails."""
        failed = self.failures()
        if not failed:
            self._retry_at, self._retry_delay = None, RETRY_FIRST
            return failed
        if grow:
            self._retry_delay = min(self._retry_delay * 2, RETRY_MAX)
        self._retry_at = _time.monotonic() + self._retry_delay
        return failed

    def _entries(self, pairs, targets: LogTargets, after: int = 0):
        """Entries of ``pairs`` (row, payload as appended or None: decode the row's),
        but for events no file will hold.

        Without an event log, an event of a job with no user log is passed
        over undecoded (most of a big submit's SUBMIT events).
        """
        event_log = self.event_log
        for row, payload in pairs:
            if row.type == "event" and not event_log and not targets.of(row.cluster, row.proc):
                continue
            if row.type == "procs":
                yield from self._block_entries(row, payload, targets, after)
                continue
            if payload is None:
                yield entry_from_row(row)
            else:
                yield Entry(row.position, row.time, job_id(row.cluster, row.proc), row.type,
                            payload, row.key)

    def _block_entries(self, row, payload, targets: LogTargets, after: int):
        """A block's entries; its SUBMIT events only where a file will hold them.  Without
        an event log, a block no proc of which has a log (``LogTargets.silent_block``: most
        of a big submit's) is passed over unexpanded: its entries would change nothing."""
        event_log = self.event_log
        if not event_log:
            if payload is None:
                payload = decode_payload(row.type, row.payload, row.position)
            try:
                if targets.silent_block(row.cluster, payload):
                    return
            except (KeyError, TypeError, AttributeError):
                pass        # an unreadable block: row_entries says so
        for entry in row_entries(row, payload, after):
            if entry.type == "proc" or event_log or targets.of(entry.job.cluster, entry.job.proc):
                yield entry

    def _project(self, entries, targets: LogTargets, last: int) -> int:
        """Write ``entries`` to their files; commit the cursor at ``last``."""
        planned, planned_global = planned_writes(
            entries, targets, self.tz, self.user_log_format,
            self.event_log_format if self.event_log else None)
        per_file = {path: [(e.position, data) for e, data in items] for path, items in planned.items()}
        global_items = [(e.position, data, e.time) for e, data in planned_global]
        failed = self.failures()
        states, new_failures, written = [], [], []
        for path, items in per_file.items():
            if path in failed:
                continue       # waits for _repair, to keep the file's order
            state = self.cursors.load_state(path)
            try:
                written.append((state, self._users.write(state, items, sync=False)))
            except OSError as exc:
                new_failures.append((path, state.position, _describe(exc)))
                self._note_refused(exc, path, [e.job for e, _ in planned[path]])
        if global_items:
            states.append(self._events.write(self.cursors.load_state(self.event_log),
                                             global_items))
        # Readers may see these events now (the saved state waits for the fsync below),
        # unless a log failed: then only once its failure is recorded (the leave order).
        if not new_failures:
            self._show(last)
        if not (states or written or new_failures or targets.changed) and last - self._saved < UNSAVED_LIMIT:
            # Nothing written: a crash here only means folding these rows again
            # (they go to no file), so spare the commit and its fsync.
            return last
        for before, after in written:
            try:
                self._users.sync(after.path)
                states.append(after)
            except OSError as exc:
                new_failures.append((before.path, before.position, _describe(exc)))
        failing = set(failed) | {path for path, *_ in new_failures}
        self.cursors.commit(states, new_failures, self._saved_targets(targets, failing), last)
        targets.changed.clear()
        targets.gone = {key: t for key, t in targets.gone.items() if t.path in failing}
        self._saved = last
        self._show(last)
        return last

    @staticmethod
    def _saved_targets(targets: LogTargets, failing) -> dict:
        """The target changes to save: (path, format), or None for a target that went
        (its job left) -- but the target of a failing log stays saved until the log
        is repaired, so a restart can still write the job's events there."""
        return {key: None if target is None else (target.path, target.format)
                for key, target in targets.changed.items()
                if target is not None or targets.gone.get(key, Target("")).path not in failing}

    # ---------------------------------------------------------- failures --
    def failures(self) -> dict[str, tuple[int, str]]:
        """User logs that could not be written: path -> (last position written, error)."""
        return self.cursors.failures()

    def _repair(self, targets: LogTargets, cursor: int) -> None:
        """Try the failed user logs again: their events up to ``cursor``, in order."""
        for path in self.failures():
            state = self.cursors.load_state(path)
            items, jobs = [], []
            for e in self.store.entries(after=state.position):
                if e.position > cursor:
                    break
                if e.type != "event" or e.payload.get("imported"):
                    continue
                number = int(e.payload["event"]["type"])
                for target in targets.for_event(e.job.cluster, e.job.proc, number, gone=True):
                    if target.path == path:
                        text = render(e.payload["event"], self.user_log_format, self.tz, target.render_format)
                        items.append((e.position, text.encode("utf-8")))
                        jobs.append(e.job)
            try:
                state = self._users.write(state, items)
            except OSError as exc:
                self._note_refused(exc, path, jobs)
                self.cursors.note_failure(path, _describe(exc))
                continue
            self.cursors.repaired(state)
            gone = [key for key, target in targets.gone.items() if target.path == path]
            if gone:           # the targets of its jobs that left are not needed any more
                self.cursors.commit([], [], dict.fromkeys(gone), None)
                for key in gone:
                    del targets.gone[key]

    def _note_refused(self, exc: OSError, path: str, jobs) -> None:
        if isinstance(exc, UnsafePathError) and self.on_refused is not None:
            self._refused.append((sorted(set(jobs)), path, exc.why))

    def _tell_refused(self) -> None:
        with self._lock:
            refused, self._refused = self._refused, []
        for jobs, path, why in refused:
            self.on_refused(jobs, path, why)

    # ----------------------------------------------------------- waiting --
    def _show(self, position: int) -> None:
        """Events up to ``position`` are in their files: wake who waits for them."""
        with self._shown:
            if position > self.visible:
                self.visible = position
                self._shown.notify_all()

    def wait_for_position(self, position: int, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else _time.monotonic() + timeout
        while self.visible < position:
            if self._thread is None:
                self.catch_up()
                continue
            if self._error is not None:
                raise self._error
            self._wake()
            remaining = None if deadline is None else deadline - _time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            with self._shown:   # woken by _show, or by the thread's end (_run)
                if self.visible < position and self._error is None:
                    self._shown.wait(1.0 if remaining is None else min(1.0, remaining))
        return True

    def hurry(self) -> None:
        """A DAG node's job ended: DAGMan acts on it when it reads it in the nodes log, so
        the gathering window ends NODE_GAP after the last catch-up began, if not before."""
        with self._gate:
            self._node_ended = True
            self._gate.notify()

    def drained(self) -> None:
        """The queue holds no job that will write another event soon (none idle or
        running): the gathering window ends now, so the last events reach their logs at
        once instead of BATCH_WINDOW after the last append."""
        self._wake()

    def _wake(self) -> None:
        """End the gathering window now (a reader waits, or the thread stops)."""
        with self._gate:
            self._reader_waits = True
            self._gate.notify()

    def _gather(self, window: float, began: float) -> None:
        """Let the next appends gather for up to ``window`` seconds after a catch-up that
        began at ``began``: less when a reader waits, when BATCH_WINDOW passes with no new
        append (the stream stopped), or NODE_GAP after ``began`` once a DAG node ended."""
        deadline = _time.monotonic() + window
        head = self.store.head()
        while True:
            step = min(BATCH_WINDOW, deadline - _time.monotonic())
            if step <= 0 or self._window_ends(step, began):
                return
            now = self.store.head()
            if now == head:
                return
            head = now

    def _window_ends(self, seconds: float, began: float) -> bool:
        """Wait up to ``seconds``; True if the window ends now (a reader waits, the thread
        stops, or a DAG node ended and NODE_GAP passed since ``began``)."""
        end = _time.monotonic() + seconds
        with self._gate:
            while True:
                now = _time.monotonic()
                if self._reader_waits or self._stopping.is_set() or \
                        (self._node_ended and now >= began + NODE_GAP):
                    return True
                if now >= end:
                    return False
                self._gate.wait((min(end, began + NODE_GAP) if self._node_ended else end) - now)

    def start(self, interval: float = 0.5) -> None:
        """Follow the journal in a background thread."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, args=(interval,),
                                        name="projector", daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        window = BATCH_WINDOW
        try:
            while not self._stopping.is_set():
                if self.store.head() > self.position:
                    began = _time.monotonic()
                    with self._gate:            # what asks for the next catch-up from now on
                        self._reader_waits = self._node_ended = False
                    self.catch_up()
                    self._gather(window, began)
                    window = min(2 * window, BATCH_WINDOW_MAX) if self.store.head() > self.position \
                        else BATCH_WINDOW
                elif self._retry_at is not None and _time.monotonic() >= self._retry_at:
                    self.retry_failed()
                else:
                    self.store.wait_for_position(self.position + 1, interval, self._stopping)
        except BaseException as exc:   # kept, re-raised by stop()
            self._error = exc
            with self._shown:
                self._shown.notify_all()

    def stop(self) -> None:
        """Stop the thread; re-raise the error that ended it, if any."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            self._wake()
            self.store.wake_waiters()
            thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
