"""The poll tracker follows the scalable-tracking guidance: few, narrow, summarised queries."""

from __future__ import annotations

from jobledger.daemons.storage.store import Store
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.classad import ClassAd, ExprTree
from tests.tracking.schedds import StoreSchedd
from tests.tracking.workload import journal_records, workload
from jobledger.tracking.poll import PROJECTION, PollTracker


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def pool(tmp_path, n=40, upto=None):
    load = workload(n, seed=4)
    store = Store(tmp_path / "pool", durability="normal")
    groups = journal_records(load)
    for group in groups[:upto]:
        store.append(group)
    return load, store, groups


def finish(tracker, store, load, rest, summaries=None):
    """Write the rest of the workload, take one more round: every job's final state is known."""
    for group in rest:
        store.append(group)
    tracker.step()
    if summaries is not None:
        assert tracker.summaries is summaries
    assert {j: s.status for j, s in tracker.states.items()} == {j: f.status for j, f in load.finals.items()}
    tracker.stop()
    store.close()


def test_at_most_one_round_per_minute_by_default(tmp_path):
    load, store, _ = pool(tmp_path)
    schedd = StoreSchedd(store)
    clock = Clock()
    tracker = PollTracker(schedd, clock=clock)
    assert tracker.min_interval == 60.0
    tracker.step()
    calls = len(schedd.calls)
    clock.now += 59
    assert tracker.step() == [] and len(schedd.calls) == calls
    clock.now += 1
    tracker.step()
    assert len(schedd.calls) > calls
    tracker.stop()
    store.close()


def test_quiet_round_costs_one_summary_and_one_history_query(tmp_path):
    load, store, _ = pool(tmp_path)
    schedd = StoreSchedd(store)
    tracker = PollTracker(schedd, min_interval=0)
    tracker.step()
    schedd.calls.clear()
    tracker.step()
    kinds = [(c[0], c[2] if c[0] == "query" else None) for c in schedd.calls]
    assert kinds == [("history", None), ("query", 2)]      # history since the mark; GroupBy
    tracker.stop()
    store.close()


def test_only_clusters_whose_counts_moved_are_queried_job_by_job(tmp_path):
    load, store, groups = pool(tmp_path, upto=60)
    schedd = StoreSchedd(store)
    tracker = PollTracker(schedd, min_interval=0)
    tracker.step()
    group = groups[60]
    store.append(group)
    moved = {r.job.cluster for r in group}
    schedd.calls.clear()
    tracker.step()
    per_job = [c[1] for c in schedd.calls if c[0] == "query" and c[2] == 0]
    assert set(per_job) <= {f"ClusterId == {c}" for c in moved}    # never the other clusters
    assert len({j.cluster for j in load.finals}) > len(moved)
    finish(tracker, store, load, groups[61:])


def test_projection_is_narrow(tmp_path):
    assert len(PROJECTION) < 16 and {"ClusterId", "ProcId", "JobStatus"} <= set(PROJECTION)


class NoGroupSchedd(StoreSchedd):
    def query(self, constraint="true", projection=(), callback=None, limit=-1, opts=0):
        if opts:
            return []                     # answers GroupBy with nothing, like some schedds
        return super().query(constraint, projection, callback, limit, opts)


def test_schedd_whose_groups_do_not_add_up_is_asked_job_by_job(tmp_path):
    load, store, groups = pool(tmp_path, upto=30)
    tracker = PollTracker(NoGroupSchedd(store), min_interval=0)
    tracker.step()
    assert tracker.summaries is False
    finish(tracker, store, load, groups[30:])


def test_a_job_in_neither_queue_nor_history_is_counted_vanished(tmp_path):
    load, store, _ = pool(tmp_path, upto=5)

    class Forgetful(StoreSchedd):
        def query(self, constraint="true", projection=(), callback=None, limit=-1, opts=0):
            return [] if self.forget else super().query(constraint, projection, callback, limit, opts)

    schedd = Forgetful(store)
    schedd.forget = False
    tracker = PollTracker(schedd, min_interval=0, summaries=False)
    tracker.step()
    known = set(tracker.states)
    schedd.forget = True
    tracker.step()
    assert tracker.anomalies.get("vanished", 0) >= 1
    assert set(tracker.states) == known                  # last known states are kept
    assert JobId(1, 0) in known
    tracker.stop()
    store.close()


class HTCondorGroupSchedd(StoreSchedd):
    """Groups as HTCondor's schedd does: the constraint selects the jobs and is tested
    again on each group ad, which holds only the grouped attributes (so a constraint
    on any other attribute is undefined there and drops the group)."""

    def query(self, constraint="true", projection=(), callback=None, limit=-1, opts=0):
        ads = super().query(constraint, projection, callback, limit, opts)
        if not opts:
            return ads
        return [ad for ad in ads if _true(constraint, {k: v for k, v in ad.items() if k != "ServerTime"})]

    def history(self, constraint=None, projection=(), match=-1, since=None):
        ads = [{k: v for k, v in ad.items() if not projection or k in projection}
               for ad in super().history(None, (), -1, since) if constraint is None or _true(constraint, ad)]
        return ads if match < 0 else ads[:match]


def _true(constraint, ad) -> bool:
    return ExprTree(str(constraint)).eval(ClassAd(ad)) is True


def test_groups_include_what_the_constraint_reads(tmp_path):
    """With HTCondor's grouping, a constraint on Owner still gets per-cluster counts."""
    load, store, groups = pool(tmp_path, upto=30)
    schedd = HTCondorGroupSchedd(store)
    tracker = PollTracker(schedd, 'Owner == "alice"', min_interval=0)
    tracker.step()
    assert tracker.summaries is True
    grouped = [c for c in schedd.calls if c[0] == "query" and c[2]]
    assert grouped and all(c[1] == 'Owner == "alice"' for c in grouped)
    finish(tracker, store, load, groups[30:], summaries=True)
