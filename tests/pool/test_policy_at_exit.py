"""The periodic policy is checked when a job exits, before its exit policy.

HTCondor's shadow evaluates PeriodicHold and PeriodicRemove as a job exits
(UserPolicy's PERIODIC_THEN_EXIT) before OnExitHold and OnExitRemove: a job whose
PeriodicRemove became true while it ran is removed, not completed, even when it
ends before the schedd's next periodic walk.  The pool's walk runs once an hour
here (PERIODIC_EXPR_INTERVAL), so only the check at exit can act.
"""

from __future__ import annotations

import pytest

import jobledger as htcondor
from jobledger.tracking.jobeventlog import JobEventLog
from tests.pool.conftest import running_pool, wait_until


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, PERIODIC_EXPR_INTERVAL="3600", MAX_PERIODIC_EXPR_INTERVAL="3600")


def submit(pool, tmp_path, **policy):
    log = tmp_path / "job.log"
    description = htcondor.Submit({"executable": "/bin/true", "log": str(log), **policy})
    return pool.schedd.submit(description).cluster(), log


def event_types(log):
    return [int(event.type) for event in JobEventLog(str(log)).events(stop_after=0)]


def test_periodic_remove_true_at_exit_removes_the_job(pool, tmp_path):
    cluster, log = submit(pool, tmp_path, periodic_remove="NumShadowStarts >= 1")
    ad = wait_until(lambda: pool.schedd.history(f"ClusterId == {cluster}", ["JobStatus", "RemoveReason", "ExitCode"]),
                    60, what="the job to leave the queue")[0]
    assert ad["JobStatus"] == 3 and "PeriodicRemove" in ad["RemoveReason"] and ad["ExitCode"] == 0
    assert event_types(log) == [0, 1, 9]              # SUBMIT, EXECUTE, ABORTED: no TERMINATED


def test_periodic_hold_true_at_exit_holds_the_job(pool, tmp_path):
    cluster, log = submit(pool, tmp_path, periodic_hold="NumJobStarts >= 1", on_exit_remove="true")
    ad = wait_until(lambda: [a for a in pool.schedd.query(f"ClusterId == {cluster}",
                                                          ["JobStatus", "HoldReasonCode", "HoldReason"])
                             if a["JobStatus"] == 5], 60, what="the hold")[0]
    assert ad["HoldReasonCode"] == 3 and "PeriodicHold" in ad["HoldReason"]
    assert event_types(log) == [0, 1, 12]
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_a_quiet_periodic_policy_leaves_the_exit_policy_to_decide(pool, tmp_path):
    cluster, log = submit(pool, tmp_path, periodic_remove="NumJobStarts > 5")
    ad = wait_until(lambda: pool.schedd.history(f"ClusterId == {cluster}", ["JobStatus"]), 60,
                    what="the job to complete")[0]
    assert ad["JobStatus"] == 4 and event_types(log) == [0, 1, 5]
