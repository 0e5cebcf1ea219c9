"""The hourly and daily usage counters of User and Project records (eventcore.projections.usage,
pure): what counts, the buckets on HTCondor's clock, and the rings as HTCondor publishes them
(schedd_daily_usage_stats in qmgmt.h, stats_entry_daily in generic_stats.h,
ScheddStatistics::CountJobsTick in schedd.cpp)."""

from __future__ import annotations

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import MemoryJournal
from jobledger.eventcore.projections.usage import StatsClock, UsageFold, ring_items
from jobledger.eventcore.records import ClusterAd, LeaveQueue, ProcAd, quote_string

from tests.journal.helpers import as_blocks, event

T0 = 1_700_006_400          # a UTC midnight
UTC = StatsClock()
A = JobId(1, 0)


def job(cluster: int = 1, owner: str = "alice", project: str | None = "chem", cpus: int = 1,
        procs: int = 1) -> list:
    ad = {"Owner": quote_string(owner), "RequestCpus": str(cpus)}
    if project:
        ad["ProjectName"] = quote_string(project)
    records: list = [ClusterAd(cluster, ad)]
    for p in range(procs):
        records += [ProcAd(JobId(cluster, p), {"JobStatus": "1"}), event(JobId(cluster, p), 0)]
    return records


def fold_of(batches, clock=UTC) -> UsageFold:
    journal = MemoryJournal()
    for records, when in batches:
        journal.append(records, time=when)
    fold = UsageFold(clock)
    fold.apply_all(journal.entries())
    return fold


def test_runs_holds_and_requeues_count_as_htcondor_counts_them():
    fold = fold_of([
        (job(cpus=2), T0 + 100),
        ([event(A, 1)], T0 + 1000),            # launched; idle 900 s at 2 cpus
        ([event(A, 4)], T0 + 2000),            # evicted: requeued; 1000 s of slot time
        ([event(A, 1)], T0 + 3000),            # launched again; idle 1000 s
        ([event(A, 12)], T0 + 4000),           # held while running: counted; slot 1000 s
        ([event(A, 13)], T0 + 5000),           # released: idle again
        ([event(A, 12)], T0 + 6000),           # held while idle: HTCondor does not count it
    ])
    ads = fold.publish(T0 + 7000, start=T0)
    # idle 900 + 1000 + 1000 s at weight 2, in units of the 4-hour bucket
    expected = {"HourlyJobsSlotTime": "{2000}", "DailyJobsSlotTime": "{}",
                "HourlyJobsWeightedIdle": "{0.402778}", "DailyJobsWeightedIdle": "{}",
                "HourlyJobsLaunched": "{2}", "DailyJobsLaunched": "{}",
                "HourlyJobsRequeued": "{1}", "DailyJobsRequeued": "{}",
                "HourlyJobsHeld": "{1}", "DailyJobsHeld": "{}"}
    assert ads[("user", "alice")] == expected
    assert ads[("project", "chem")] == expected
    assert list(expected)[::2] == [f"HourlyJobs{c}" for c in
                                   ("SlotTime", "WeightedIdle", "Launched", "Requeued", "Held")]
    # FailedToStart is zero: not published (IF_NONZERO)
    assert not any("FailedToStart" in name for name in ads[("user", "alice")])


def test_a_shadow_exception_is_a_failure_to_start_and_a_job_without_project_counts_for_its_user_only():
    fold = fold_of([
        (job(project=None), T0),
        ([event(A, 1)], T0 + 10),
        ([event(A, 7, Message="the starter exited without an outcome")], T0 + 20),
    ])
    ads = fold.publish(T0 + 20, start=T0)
    assert set(ads) == {("user", "alice")}
    assert ads[("user", "alice")]["HourlyJobsFailedToStart"] == "{1}"
    assert ads[("user", "alice")]["HourlyJobsLaunched"] == "{1}"


def test_time_is_split_at_bucket_edges_and_open_spells_count_up_to_now():
    edge = T0 + 4 * 3600
    fold = fold_of([(job(), edge - 300), ([event(A, 1)], edge - 100)])
    ads = fold.publish(edge + 200, start=edge - 300)[("user", "alice")]
    assert ads["HourlyJobsSlotTime"] == "{200,100}"          # newest bucket first
    assert ads["HourlyJobsWeightedIdle"] == f"{{0.000000,{200 / 14400:f}}}"
    # nothing was folded meanwhile: publishing again later counts the running job on
    later = fold.publish(edge + 4 * 3600 + 50, start=edge - 300)[("user", "alice")]
    assert later["HourlyJobsSlotTime"] == "{50,14400,100}"


def test_days_hold_the_sum_of_each_local_day_newest_first():
    fold = fold_of([(job(procs=3), T0 - 2 * 86400 + 60)] +
                   [([event(JobId(1, p), 1)], T0 - (2 - p) * 86400 + 3600) for p in range(3)] +
                   [([event(JobId(1, p), 5), LeaveQueue(JobId(1, p))], T0 - (2 - p) * 86400 + 7200)
                    for p in range(3)])
    ads = fold.publish(T0 + 3 * 3600, start=T0 - 2 * 86400)[("user", "alice")]
    # today: the third job ran 01:00-02:00 (bucket 0); yesterday and the day before one each
    assert ads["HourlyJobsLaunched"] == "{1,0,0,0,0,0}"
    assert ads["DailyJobsLaunched"] == "{1,1}"
    assert ads["HourlyJobsSlotTime"] == "{3600,0,0,0,0,0}"
    assert ads["DailyJobsSlotTime"] == "{3600,3600}"


def test_buckets_follow_local_standard_time_and_the_tick_midnight():
    # Lord Howe is UTC+10:30 standard (C's timezone = -37800); daylight saving is ignored
    howe = StatsClock(bias=-37800)
    local_midnight = T0 - 37800 + 86400       # 00:00 standard time there
    assert howe.bucket(local_midnight) == howe.bucket(local_midnight - 1) + 1
    assert howe.day(local_midnight) == howe.day(local_midnight - 1) + 1
    assert howe.phase(local_midnight + 99) == 99
    noon = StatsClock(midnight=12 * 3600)     # DAILY_STATS_TICK_MIDNIGHT = 12h: days turn at noon
    assert noon.day(T0 + 12 * 3600) == noon.day(T0 + 12 * 3600 - 1) + 1
    assert noon.day(T0) == noon.day(T0 - 1)


def test_rings_grow_as_htcondors_stats_entry_daily():
    # started in bucket 0, first count in it: one item, plus one per edge crossed, at most 6
    assert ring_items(UTC, T0 + 100, T0, T0 + 50) == (1, 0)
    assert ring_items(UTC, T0 + 4 * 3600 + 1, T0, T0 + 50) == (2, 0)
    # first count after an edge: the ring was empty at the edge, so one item fewer
    assert ring_items(UTC, T0 + 4 * 3600 + 100, T0, T0 + 4 * 3600 + 50) == (1, 0)
    assert ring_items(UTC, T0 + 30 * 3600, T0, T0 + 50) == (6, 1)
    assert ring_items(UTC, T0 + 30 * 86400, T0, T0 + 50) == (6, 10)


def test_a_record_ring_starts_with_its_first_job_and_blocks_fold_as_single_procs():
    plain = [(job(owner="bob", procs=2), T0 + 5 * 3600), ([event(JobId(1, 1), 1)], T0 + 5 * 3600 + 60)]
    blocks = [(as_blocks(records), when) for records, when in plain]
    for batches in (plain, blocks):
        ads = fold_of(batches).publish(T0 + 5 * 3600 + 120, start=T0)[("user", "bob")]
        assert ads["HourlyJobsLaunched"] == "{1}"       # bob's ring began at 05:00, not at T0
        assert ads["HourlyJobsWeightedIdle"] == f"{{{(60 + 120) / 14400:f}}}"


def test_old_buckets_are_pruned_but_totals_keep_a_counter_published():
    fold = fold_of([(job(), T0), ([event(A, 1)], T0 + 10), ([event(A, 5), LeaveQueue(A)], T0 + 20)])
    now = T0 + 40 * 86400
    fold.prune(now)
    assert all(not row for tally in fold.tallies.values() for row in tally.buckets.values())
    ads = fold.publish(now, start=T0)[("user", "alice")]
    assert ads["HourlyJobsLaunched"] == "{0,0,0,0,0,0}"
    assert ads["DailyJobsLaunched"] == "{0,0,0,0,0,0,0,0,0,0}"
    assert fold.jobs == {} and fold.clusters == {}


def test_an_edit_moves_the_open_spell_to_the_project_and_weight_now_set():
    from jobledger.eventcore.records import SetAttributes
    fold = fold_of([
        (job(project="chem", cpus=1), T0),
        ([SetAttributes(A, set={"ProjectName": quote_string("bio"), "RequestCpus": "4"}, delete=())],
         T0 + 1440),
    ])
    ads = fold.publish(T0 + 2880, start=T0)
    assert ads[("project", "chem")]["HourlyJobsWeightedIdle"] == f"{{{1440 / 14400:f}}}"
    assert ads[("project", "bio")]["HourlyJobsWeightedIdle"] == f"{{{4 * 1440 / 14400:f}}}"
    assert ads[("user", "alice")]["HourlyJobsWeightedIdle"] == f"{{{5 * 1440 / 14400:f}}}"
