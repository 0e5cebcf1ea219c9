"""The tracking API as users import it, used the way the tutorial uses trackers."""

from __future__ import annotations

import jobledger.tracking as tracking
from eventcore.ids import JobId
from tests.tracking.workload import workload, write_userlogs


def test_facade_exports_exactly_the_trackers():
    assert sorted(tracking.__all__) == sorted(
        ["BatchSummary", "Change", "CombinedTracker", "Discrepancy", "JobState", "JournalTracker",
         "PollTracker", "UserLogTracker", "all_done", "any_failed", "any_held", "summarize"])
    for name in tracking.__all__:
        assert getattr(tracking, name).__module__.split(".")[0] in ("eventcore", "tracking")


def test_wait_for_a_cluster_then_iterate_its_changes(tmp_path):
    load = workload(60, seed=2)
    paths = write_userlogs(load, tmp_path)
    cluster = 3
    with tracking.UserLogTracker(paths) as tracker:
        seen = []
        tracker.add_callback(seen.append)
        try:
            states = tracker.wait_until(tracking.all_done(cluster=cluster, expected=10), timeout=5)
            done = all(states[JobId(cluster, p)].done for p in range(10))
        except TimeoutError:
            done = False
        expect_done = all(load.finals[JobId(cluster, p)].status in (3, 4) for p in range(10))
        assert done == expect_done
        assert {c.job for c in seen} >= {JobId(cluster, p) for p in range(10)}
        summary = {b.cluster: b for b in tracking.summarize(tracker.states)}[cluster]
        assert summary.total == 10
