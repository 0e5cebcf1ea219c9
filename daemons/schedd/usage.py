"""The hourly and daily usage the schedd's User and Project records carry in a query.

The counters are a projection of the journal (``eventcore.projections.usage``), folded
on from where the last query left them, each time the records are queried, and published
as HTCondor's schedd publishes them (``HourlyJobs*``, ``DailyJobs*``) with
``HourlyStatsStartTime`` (when the stats begin: the journal's first record, or the
schedd's start while the journal is empty -- HTCondor's is its schedd's start, as its
counters start from zero with it; these are the journal's, so they outlive a restart),
``HourlyStatsUnitSize`` (14400), and ``HourlyStatsUnitPhase`` (users) or
``HourlyStatsTickTime`` (projects), as HTCondor's QUERY_USERREC_ADS answers.

The clock is HTCondor's: ``TickBias`` is C's ``timezone`` (local standard time, seconds
west of UTC) and ``DAILY_STATS_TICK_MIDNIGHT`` shifts midnight.
"""

from __future__ import annotations

import threading
import time

from jobledger.eventcore.projections.usage import HOUR_BUCKET, StatsClock, UsageFold

__all__ = ["UsageStats", "local_clock"]


def local_clock(tick_midnight: int = 0) -> StatsClock:
    """The schedd's stats clock: its zone's standard offset (``time.timezone``, which is
    C's ``timezone`` after ``tzset``), daylight saving ignored as HTCondor ignores it."""
    time.tzset()
    return StatsClock(bias=int(time.timezone), midnight=int(tick_midnight))


class UsageStats:
    """The counters of the schedd's journal, folded on at each query."""

    def __init__(self, store, clock: StatsClock, start_time: float):
        self.store = store
        self.start_time = start_time
        self.fold = UsageFold(clock)
        self.lock = threading.Lock()

    def attributes(self, now: float | None = None) -> dict[tuple[str, str], dict[str, str]]:
        """(kind, name) -> the attributes a record of that kind (``user`` by Owner,
        ``project`` by ProjectName) adds to a query's answer, as at ``now``; the key
        ``(kind, "")`` holds those every record of the kind carries."""
        with self.lock:
            head = self.store.head()
            if head > self.fold.position:
                self.fold.apply_all(self.store.entries(after=self.fold.position))
            now = time.time() if now is None else now
            self.fold.prune(now)
            first = self.fold.first_time
            start = int(first if first is not None else self.start_time)
            out = self.fold.publish(now, start)
            common = {"HourlyStatsStartTime": str(start), "HourlyStatsUnitSize": str(HOUR_BUCKET)}
            out[("user", "")] = dict(common, HourlyStatsUnitPhase=str(self.fold.clock.phase(now)))
            out[("project", "")] = dict(common, HourlyStatsTickTime=str(int(now)))
            return out
