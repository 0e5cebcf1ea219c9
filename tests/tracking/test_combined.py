"""The combined tracker reports (and repairs) events that never reached the log."""

from __future__ import annotations

from jobledger.daemons.storage.store import Store
from jobledger.eventcore.ids import JobId
from tests.tracking.schedds import StoreSchedd
from tests.tracking.workload import journal_records, userlog_chunks, workload
from jobledger.tracking.combined import CombinedTracker


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def setup(tmp_path, drop):
    """All records in the journal; the user logs miss the events ``drop`` selects."""
    load = workload(40, seed=5)
    store = Store(tmp_path / "pool", durability="normal")
    for group in journal_records(load):
        store.append(group)
    logs = tmp_path / "logs"
    logs.mkdir()
    chunks = userlog_chunks(load, logs)
    lost = [s for s in load.steps if drop(s)]
    for step, (path, data) in zip(load.steps, chunks):
        with open(path, "ab") as f:
            if not drop(step):
                f.write(data)
    return load, store, sorted({p for p, _ in chunks}), lost


def test_lost_terminate_event_is_reported_after_confirmation_and_adopted(tmp_path):
    victim = next(j for j, f in sorted(workload(40, seed=5).finals.items())
                  if f.status == 4 and j.cluster == 2)
    load, store, paths, lost = setup(tmp_path, lambda s: s.job == victim and s.number == 5)
    clock = Clock()
    found = []
    tracker = CombinedTracker(paths, schedd=StoreSchedd(store), check_interval=600,
                              confirm_after=60, clock=clock)
    tracker.on_discrepancy(found.append)
    tracker.step()                                  # first check: a suspect, not yet reported
    assert found == [] and tracker.states[victim].status != load.finals[victim].status
    clock.now = 30
    tracker.step()                                  # not confirmed yet: no check
    assert found == []
    clock.now = 61
    tracker.step()
    assert [(d.job, d.schedd) for d in found] == [(victim, load.finals[victim].status)]
    assert tracker.states[victim].status == load.finals[victim].status
    assert tracker.anomalies["missing_events"] == 1
    assert all(tracker.states[j].status == f.status for j, f in load.finals.items())
    tracker.stop()
    store.close()


def test_late_events_are_not_reported(tmp_path):
    load, store, paths, lost = setup(tmp_path, lambda s: s.job == JobId(1, 1) and s.number != 0)
    clock = Clock()
    tracker = CombinedTracker(paths, schedd=StoreSchedd(store), check_interval=600,
                              confirm_after=60, clock=clock)
    tracker.step()
    with open(paths[0], "ab") as f:                 # the events were only late
        from tests.tracking.workload import event_text
        for step in lost:
            f.write(event_text(step).encode())
    clock.now = 61
    tracker.step()
    assert tracker.discrepancies == []
    assert tracker.states[JobId(1, 1)].status == load.finals[JobId(1, 1)].status
    tracker.stop()
    store.close()


def test_job_no_log_mentions_is_reported(tmp_path):
    ghost = JobId(3, 0)
    load, store, paths, _ = setup(tmp_path, lambda s: s.job == ghost)
    clock = Clock()
    tracker = CombinedTracker(paths, schedd=StoreSchedd(store), check_interval=0,
                              confirm_after=0, clock=clock, adopt=False)
    tracker.step()
    tracker.step()
    assert [(d.job, d.tracked) for d in tracker.discrepancies] == [(ghost, None)]
    assert ghost not in tracker.states                 # adopt=False: reported only
    tracker.stop()
    store.close()
