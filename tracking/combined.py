"""The combined tracker: user-log events for speed, a rare poll for certainty.

Event-based tracking is fast and cheap but trusts that every event reaches
the log; polling is slow but sees what the schedd sees.  ``CombinedTracker``
follows the logs like ``UserLogTracker`` and, every ``check_interval``
seconds (default 10 min), asks the schedd (one narrow query and the history
since the last check, via a ``PollTracker``).  A job whose schedd status
differs from the one its events gave is a *suspect*; if it still differs
``confirm_after`` seconds later (its events were not just in flight), the
events never came: a ``Discrepancy`` is recorded (``discrepancies``,
``on_discrepancy`` callbacks, anomaly ``missing_events``) and, with
``adopt=True`` (default), the schedd's state is taken, so waiting on the
job does not hang.  A job the schedd has and no log ever mentioned counts
the same way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

import attrs

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import JobState
from jobledger.tracking.core import Batch
from jobledger.tracking.poll import PollTracker
from jobledger.tracking.userlogs import UserLogTracker

__all__ = ["CombinedTracker", "Discrepancy"]


@attrs.frozen
class Discrepancy:
    """The events of ``job`` say ``tracked`` (None: no event at all); the schedd ``schedd``."""

    job: JobId
    tracked: int | None
    schedd: int
    noticed: float


class CombinedTracker(UserLogTracker):
    kind = "combined"

    def __init__(self, logs: Iterable[str | os.PathLike] = (), *, schedd,
                 constraint: str | None = None, check_interval: float = 600.0,
                 confirm_after: float = 60.0, adopt: bool = True,
                 checkpoint: str | os.PathLike | None = None, interval: float = 1.0,
                 notify: bool = True, discover: bool = False, clock=time.monotonic):
        self.check_interval = check_interval
        self.confirm_after = confirm_after
        self.adopt = adopt
        self.discrepancies: list[Discrepancy] = []
        self._on_discrepancy: list[Callable[[Discrepancy], object]] = []
        self._checker = PollTracker(schedd, constraint, min_interval=0, summaries=False)
        self._suspects: dict[JobId, tuple[int | None, int, float]] = {}
        self._last_check: float | None = None
        super().__init__(logs, schedd=schedd if discover else None, constraint=constraint,
                         checkpoint=checkpoint, interval=interval, notify=notify, clock=clock)

    def _checkpoint_kind(self) -> str:
        return "combined"

    def on_discrepancy(self, callback: Callable[[Discrepancy], object]) -> None:
        self._on_discrepancy.append(callback)

    def _check_due(self, now: float) -> bool:
        if self._last_check is None or now - self._last_check >= self.check_interval:
            return True
        return bool(self._suspects) and any(now - t >= self.confirm_after
                                            for _, _, t in self._suspects.values())

    def _reconcile(self, batch: Batch) -> list:
        """Compare with the schedd once the logs' events of this step are folded."""
        now = self.clock()
        if batch.more or not self._check_due(now):
            return []                          # catch up with the logs before comparing
        self._last_check = now
        checker = self._checker
        checker._fold(checker._read(), {})         # the schedd's view, folded into the checker
        adopted: list[JobState] = []
        current: dict[JobId, tuple[int | None, int, float]] = {}
        for job, seen in checker.states.items():
            mine = self.states.get(job)
            tracked = None if mine is None else int(mine.status)
            if tracked == int(seen.status):
                continue
            first = self._suspects.get(job)
            if first is None or first[:2] != (tracked, int(seen.status)):
                current[job] = (tracked, int(seen.status), now)
                continue
            if now - first[2] < self.confirm_after:
                current[job] = first
                continue
            found = Discrepancy(job, tracked, int(seen.status), first[2])
            self.discrepancies.append(found)
            self._count("missing_events")
            for callback in list(self._on_discrepancy):
                callback(found)
            if self.adopt:
                adopted.append(seen)
        self._suspects = current
        return adopted
