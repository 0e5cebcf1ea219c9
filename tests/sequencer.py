"""``Sequencer``: threads pass the code's named points (``eventcore.interleave``) in a
given order, so a race is a test that forces its interleaving every time.

    with Sequencer("act.chosen", "start.before-execute", "start.after-execute",
                   "act.append") as seq:
        ...start the threads, join them...

The n-th name of the order lets its thread through only once the names
before it were passed: here the action reads the job, then the run's EXECUTE
is committed, then the action commits what it decided on the job it read.
A name passes once in the order; later passes of it (a decision taken again)
and points not in the order go freely.  A thread that waits longer than
``timeout`` fails the test (``check``, called on leaving the ``with``)
instead of hanging it.  After the ``with``, ``passed`` lists the points in
the order they were passed.
"""

from __future__ import annotations

import threading

from jobledger.eventcore import interleave


class Sequencer:
    def __init__(self, *order: str, timeout: float = 10.0):
        unknown = [name for name in order if name not in interleave.POINTS]
        if unknown:
            raise ValueError(f"no such interleaving point: {unknown}")
        if len(set(order)) != len(order):
            raise ValueError("a point appears once in an order")
        self.order = order
        self.timeout = timeout
        self.passed: list[str] = []
        self._next = 0
        self._cond = threading.Condition()
        self._errors: list[str] = []

    def __call__(self, name: str) -> None:
        with self._cond:
            if name not in self.order[self._next:]:
                self.passed.append(name)
                return
            index = self.order.index(name)
            if not self._cond.wait_for(lambda: self._next == index, self.timeout):
                self._errors.append(f"{name} waited {self.timeout}s for "
                                    f"{self.order[self._next]} ({threading.current_thread().name})")
                self._next = len(self.order)       # let everyone go: the test fails
            else:
                self._next += 1
            self.passed.append(name)
            self._cond.notify_all()

    def reached(self) -> bool:
        """Every point of the order was passed."""
        with self._cond:
            return self._next >= len(self.order)

    def check(self) -> None:
        with self._cond:
            assert not self._errors, "; ".join(self._errors)
            assert self._next >= len(self.order), \
                f"never reached {self.order[self._next]} (passed: {self.passed})"

    def __enter__(self) -> "Sequencer":
        interleave.install(self)
        return self

    def __exit__(self, kind, exc, tb) -> None:
        interleave.uninstall()
        if kind is None:
            self.check()
