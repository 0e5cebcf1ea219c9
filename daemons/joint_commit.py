"""A run's end and the next run on its claim, committed to the journal together.

When a job exits and its claim passes to the next idle job (claim reuse),
two threads of the schedd have records due at about the same time: the one
answering the starter (the records that end the run) and the handover's
worker (the next run's attributes and EXECUTE, once its starter is up).
Appended apart they took two commits, one after the other, each with its
fsync, and the starter's answer waited for both.  ``JointCommit`` puts them
in one commit (``Store.append_each``: each batch still accepted or refused
on its own).

The worker ``append(records)``s the next run's records: it offers them and
waits.  The reporter ``take()``s them (waiting, outside any lock, until they
are offered or the worker ``withdraw()``s: no next run), then ``commit(its
own records)`` appends both, and ``release()`` (always, in a ``finally``)
appends the taken records alone if its own were never committed (a stale
report).  A worker whose offer is not taken within ``wait`` seconds appends
alone.  Either way every record offered is committed exactly once and the
worker learns its result (a position, or the exception that refused it).

One thread may do both parts (a plain starter's next job, found by the thread
that received the end: no hand-off between threads that share one interpreter
lock): it ``offer(records, then)``s them without waiting, takes and commits
them with its own, and ``finish()``es: ``then(result)`` learns the outcome
(the records are committed alone first if they were not taken).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

OFFER_WAIT = 10.0   # seconds an offer waits to be taken (the reporter's activation bound)


class JointCommit:
    """One run's end and the next run's start in one commit (see the module docstring)."""

    def __init__(self, store, wait: float = OFFER_WAIT):
        self.store = store
        self.wait = wait
        self._cond = threading.Condition()
        self._state = "open"    # open -> offered -> taken -> settled; or closed (each alone)
        self._offered: list | None = None
        self._result = None     # the offered records' position, or what refused them
        self._then: Callable[[Any], None] | None = None    # (offer) told the result by finish()

    # -- the handover's worker -------------------------------------------------------
    def append(self, records: list) -> int:
        """Commit ``records`` with the reporter's, or alone if it does not take them."""
        with self._cond:
            if self._state == "open":
                self._state, self._offered = "offered", list(records)
                self._cond.notify_all()
                self._cond.wait_for(lambda: self._state != "offered", self.wait)
                if self._state == "offered":
                    self._state = "closed"          # not taken in time: alone
                else:
                    self._cond.wait_for(lambda: self._state == "settled")
                    if isinstance(self._result, BaseException):
                        raise self._result
                    return self._result
        return self.store.append(records)

    def offer(self, records: list, then: Callable[[Any], None]) -> None:
        """Offer ``records`` without waiting (the reporter's own thread, before it takes
        them); ``finish()`` tells ``then`` their result."""
        with self._cond:
            if self._state != "open":
                raise RuntimeError(f"records offered to a joint commit that is {self._state}")
            self._state, self._offered, self._then = "offered", list(records), then

    def finish(self) -> None:
        """(After the reporter's commit, in the thread that ``offer``ed.)  Records
        offered and not committed yet go alone; ``then`` learns their result."""
        if self._then is None:
            return
        with self._cond:
            if self._state == "offered":
                self._state = "taken"
        self.release()
        then, self._then = self._then, None
        then(self._result)

    def withdraw(self) -> None:
        """The worker has no records (no next run): the reporter commits alone."""
        with self._cond:
            if self._state == "open":
                self._state = "closed"
                self._cond.notify_all()

    # -- the reporter ----------------------------------------------------------------
    def take(self, timeout: float | None = None) -> bool:
        """Wait until the worker offered its records (True: the reporter commits them
        now) or withdrew (False)."""
        with self._cond:
            self._cond.wait_for(lambda: self._state != "open",
                                self.wait if timeout is None else timeout)
            if self._state == "offered":
                self._state = "taken"
                return True
            if self._state == "open":
                self._state = "closed"
                self._cond.notify_all()
            return False

    def commit(self, records: list) -> int:
        """Append ``records`` (with the taken ones, if any, in the same commit); their
        position, or raise what refused them."""
        if self._state != "taken":
            return self.store.append(records)
        try:
            mine, theirs = self.store.append_each([records, self._offered])
        except BaseException as exc:
            self._settle(exc)
            raise
        self._settle(theirs)
        if isinstance(mine, BaseException):
            raise mine
        return mine

    def commit_each(self, batches: list, gate=None) -> list:
        """Append ``batches`` (each accepted or refused on its own, as ``Store.append_each``)
        and then the taken records, if any, in one commit; ``gate(records)`` may wrap the
        taken ones (a batch function: a condition checked in the commit).  The results of
        ``batches`` (a position, or the exception that refused one)."""
        if self._state != "taken":
            return self.store.append_each(batches)
        offered = self._offered if gate is None else gate(self._offered)
        try:
            results = self.store.append_each([*batches, offered])
        except BaseException as exc:
            self._settle(exc)
            raise
        self._settle(results[-1])
        return results[:-1]

    def release(self) -> None:
        """Taken records not committed yet (the reporter's were not due) go alone."""
        if self._state != "taken":
            return
        try:
            result = self.store.append(self._offered)
        except BaseException as exc:   # noqa: BLE001 - the worker re-raises it
            result = exc
        self._settle(result)

    def _settle(self, result) -> None:
        with self._cond:
            self._result, self._state = result, "settled"
            self._cond.notify_all()
