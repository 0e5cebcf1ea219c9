"""The tracking API as users import it, used the way the tutorial uses trackers."""

from __future__ import annotations

import pytest

import jobledger.tracking as tracking
from jobledger.eventcore.ids import JobId
from tests.tracking.workload import workload, write_userlogs


def test_facade_exports_exactly_the_trackers():
    assert sorted(tracking.__all__) == sorted(
        ["BatchSummary", "Change", "CombinedTracker", "Discrepancy", "JobState", "JournalTracker",
         "PollTracker", "UserLogTracker", "all_done", "any_failed", "any_held", "summarize"])
    for name in tracking.__all__:
        assert getattr(tracking, name).__module__.split(".")[1] in ("eventcore", "tracking")


def test_wait_for_a_cluster_then_iterate_its_changes(tmp_path):
    load = workload(60, seed=2)
    paths = write_userlogs(load, tmp_path)
    finished = [c for c in range(1, 7)
                if all(load.finals[JobId(c, p)].status in (3, 4) for p in range(10))]
    unfinished = [c for c in range(1, 7) if c not in finished]
    assert finished and unfinished
    with tracking.UserLogTracker(paths) as tracker:
        seen = []
        tracker.add_callback(seen.append)
        states = tracker.wait_until(tracking.all_done(cluster=finished[0], expected=10), timeout=10)
        assert all(states[JobId(finished[0], p)].done for p in range(10))
        with pytest.raises(TimeoutError):
            tracker.wait_until(tracking.all_done(cluster=unfinished[0], expected=10), timeout=0.2)
        assert {c.job for c in seen} == set(load.finals)
        summary = {b.cluster: b for b in tracking.summarize(tracker.states)}[finished[0]]
        assert (summary.total, summary.done) == (10, 10)
