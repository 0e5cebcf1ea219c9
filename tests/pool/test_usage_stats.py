"""The hourly and daily usage counters of User and Project records against a real pool:
after jobs ran, were held while running, were vacated (requeued) and completed, the
``queryUserAds`` / ``queryProjectAds`` answers carry HTCondor's ``HourlyJobs*`` and
``DailyJobs*`` lists and ``HourlyStats*`` attributes, and ``condor_qusers -daily`` shows
them in HTCondor's layout.  Holding an idle job is not counted (HTCondor counts holds
that end a run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import jobledger as htcondor
from jobledger.daemons.client.api import _user
from jobledger.eventcore.enums import JobAction
from jobledger.eventcore.errors import HTCondorException
from jobledger.daemons.schedd.usage import local_clock
from tests.pool.conftest import running_pool, wait_until
from tests.pool.test_crash import daemon_pid


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS="2")


def qusers(pool, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    script = os.path.join(os.path.dirname(sys.executable), "condor_qusers")
    return subprocess.run([script, *args], env=env, capture_output=True, text=True, timeout=60)


def submit(schedd, tmp_path, **extra) -> int:
    desc = {"executable": "/bin/sleep", "arguments": "600", "initialdir": str(tmp_path)}
    desc.update(extra)
    return schedd.submit(htcondor.Submit(desc)).cluster()


def job(schedd, cluster: int) -> dict:
    return schedd.query(f"ClusterId == {cluster}", ["JobStatus", "NumJobStarts"])[0]


def completed(schedd, cluster: int) -> bool:
    """Completed, or gone from the queue (one query: the job may leave between two)."""
    ads = schedd.query(f"ClusterId == {cluster}", ["JobStatus"])
    return not ads or ads[0]["JobStatus"] == 4


def running(schedd, cluster: int, starts: int = 1) -> bool:
    ad = job(schedd, cluster)
    return ad["JobStatus"] == 2 and ad.get("NumJobStarts", 0) >= starts


def test_counters_after_runs_holds_and_requeues(pool, tmp_path):
    schedd = htcondor.Schedd()
    began = int(time.time())
    schedd.addProjectRec("physics")     # (a project's record is made by a command here, not by its first job)
    held = submit(schedd, tmp_path, **{"+ProjectName": '"physics"'})
    vacated = submit(schedd, tmp_path, **{"+ProjectName": '"physics"'})
    wait_until(lambda: running(schedd, held) and running(schedd, vacated), 90, what="both jobs to run")
    schedd.act(JobAction.Hold, f"ClusterId == {held}")                 # a run ended by a hold
    schedd.act(JobAction.Vacate, f"ClusterId == {vacated}")            # requeued, then runs again
    wait_until(lambda: running(schedd, vacated, 2), 90, what="the vacated job's second run")
    idle_held = submit(schedd, tmp_path, hold="true")                  # held idle: not counted
    done = submit(schedd, tmp_path, executable="/bin/true", arguments="")
    wait_until(lambda: completed(schedd, done), 90, what="the short job to complete")
    schedd.act(JobAction.Remove, f"ClusterId >= {held}")
    wait_until(lambda: not schedd.query(f"ClusterId >= {held} && JobStatus != 3", ["JobStatus"]), 90,
               what="the jobs to go")
    assert idle_held

    me = _user()
    (user,) = schedd.queryUserAds(f'Owner == "{me}"')
    (project,) = schedd.queryProjectAds('Name == "physics"')
    now = time.time()
    for ad, launched in ((user, 4), (project, 3)):
        assert since(ad, "Launched", began, now) == launched
        assert since(ad, "Held", began, now) == 1
        assert since(ad, "Requeued", began, now) == 1
        assert "HourlyJobsFailedToStart" not in ad and "DailyJobsFailedToStart" not in ad
        assert sum(ad["HourlyJobsSlotTime"]) + sum(ad["DailyJobsSlotTime"]) >= 0
        assert all(isinstance(v, float) for v in ad["HourlyJobsWeightedIdle"])
        assert 1 <= len(ad["HourlyJobsLaunched"]) <= 6 and len(ad["DailyJobsLaunched"]) <= 10
        assert ad["HourlyStatsUnitSize"] == 4 * 3600
        assert ad["HourlyStatsStartTime"] <= now    # the journal's first record
    assert 0 <= user["HourlyStatsUnitPhase"] < 4 * 3600 and "HourlyStatsTickTime" not in user
    assert project["HourlyStatsTickTime"] >= began and "HourlyStatsUnitPhase" not in project
    # the stats are in the ad before the constraint is tested, as HTCondor injects them
    assert schedd.queryUserAds(f'Owner == "{me}" && sum(HourlyJobsLaunched) >= 4')
    assert set(schedd.queryUserAds(f'Owner == "{me}"', ["User", "HourlyJobsHeld"])[0].keys()) == {"User", "HourlyJobsHeld"}

    # condor_qusers -daily: the record's row, then its spans; counts as the ad has them
    def shown():
        before = schedd.queryUserAds(f'Owner == "{me}"')[0]
        out = qusers(pool, "-daily", me)
        after = schedd.queryUserAds(f'Owner == "{me}"')[0]
        same = before["HourlyStatsUnitPhase"] <= after["HourlyStatsUnitPhase"]   # no bucket edge between
        return same and (out, after)
    out, ad = wait_until(shown, 30, what="condor_qusers -daily within one bucket")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    heading = lines[0].split()
    assert heading == ["Name", "Launched", "NoExec", "Requeued", "Held", "SlotHours", "IdleWeight"]
    assert lines[1].rstrip() == ad["User"]
    starts = [lines[0].index(word) for word in heading]      # columns are left-aligned
    cells = [lines[2][a:b].strip() for a, b in zip(starts, [*starts[1:], None])]
    label, launched, no_exec, requeued, held_n, slot_hours, idle = cells
    assert lines[2].startswith("    last ") and label.endswith(" hrs") and no_exec == ""
    assert (int(launched), int(requeued), int(held_n)) == (
        ad["HourlyJobsLaunched"][0], ad["HourlyJobsRequeued"][0], ad["HourlyJobsHeld"][0])
    assert slot_hours == f"{ad['HourlyJobsSlotTime'][0] / 3600.0:.2f}"
    assert idle == f"{ad['HourlyJobsWeightedIdle'][0]:.2f}"
    widths = {len(line) for line in lines}
    assert len(widths) == 1          # every row padded to the columns' widths, as HTCondor's
    # -projects: the project's record and its spans
    out = qusers(pool, "-daily", "-projects")
    assert out.returncode == 0 and out.stdout.splitlines()[1].rstrip() == "physics"


def test_a_starter_killed_is_counted_as_a_failure_to_start(pool, tmp_path):
    """A run whose starter dies without an outcome (kill -9) is a shadow exception here:
    counted in FailedToStart (as HTCondor's JOB_NOT_STARTED; HTCondor's shadow would try to
    reconnect to a starter lost mid-run instead, not counted), and the job runs again."""
    schedd = htcondor.Schedd()
    began = time.time()
    schedd.addProjectRec("chemistry")
    cluster = submit(schedd, tmp_path, **{"+ProjectName": '"chemistry"'})
    wait_until(lambda: running(schedd, cluster), 90, what="the job to run")
    pid = schedd.query(f"ClusterId == {cluster}", ["StarterPid"])[0]["StarterPid"]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: running(schedd, cluster, 2), 90, what="the job's second run")
    schedd.act(JobAction.Remove, f"ClusterId == {cluster}")
    (ad,) = schedd.queryProjectAds('Name == "chemistry"')
    now = time.time()
    assert since(ad, "FailedToStart", began, now) == 1
    assert since(ad, "Launched", began, now) == 2
    assert total(ad, "Requeued") == total(ad, "Held") == 0


def test_the_counters_outlive_a_schedd_kill(fresh_pool, tmp_path):
    """They are the journal's: the schedd killed and started again answers the same counts
    (HTCondor's schedd starts its counters again from zero)."""
    me, schedd = _user(), fresh_pool.schedd
    done = submit(schedd, tmp_path, executable="/bin/true", arguments="")
    wait_until(lambda: completed(schedd, done), 90, what="a job to complete")
    before = schedd.queryUserAds(f'Owner == "{me}"')[0]
    assert total(before, "Launched") == 1
    pid = daemon_pid(fresh_pool, "schedd")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: daemon_pid(fresh_pool, "schedd") != pid, 30, what="a new schedd")
    after = wait_until(lambda: _query(me), 60, what="the restarted schedd to answer")
    for name in ("Launched", "Held", "Requeued", "FailedToStart"):
        assert total(after, name) == total(before, name)
    assert after["HourlyStatsStartTime"] == before["HourlyStatsStartTime"]


def since(ad, counter: str, began: float, now: float) -> int:
    """A counter's count in the buckets from ``began``'s to ``now``'s (newest first in the
    list), on the schedd's clock (this process's zone, as the pool's)."""
    clock = local_clock()
    items = clock.bucket(now) - clock.bucket(began) + 1
    return sum(ad.get(f"HourlyJobs{counter}", [])[:items])


def total(ad, counter: str) -> int:
    """A counter's count over today's buckets and the days kept (0 when not published)."""
    return sum(ad.get(f"HourlyJobs{counter}", [])) + sum(ad.get(f"DailyJobs{counter}", []))


def _query(me):
    try:
        return htcondor.Schedd().queryUserAds(f'Owner == "{me}"')[0]
    except HTCondorException:
        return None
