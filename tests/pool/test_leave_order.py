"""A job leaves the queue, and enters the history, only after its terminal event is in its user log.

HTCondor writes JOB_TERMINATED (or JOB_ABORTED) before the job leaves the
queue, and scripts poll ``condor_q`` and then read the log.  The schedd
answers a query or history only once the user logs hold every event up to
the journal head read after the answer, so each job seen gone (or in the
history) must already have its terminal event in the log -- checked at every
observation while short jobs stream through a real pool.
"""

from __future__ import annotations

import re

import jobledger as htcondor
from jobledger.classad import ClassAd
from tests.pool.conftest import wait_until

JOBS = 40


def ended_in_log(log, cluster) -> set[int]:
    """Procs of ``cluster`` with a terminated (005) or aborted (009) event in ``log``."""
    text = log.read_text() if log.exists() else ""
    return {int(proc) for proc in re.findall(rf"^00[59] \({cluster:03d}\.(\d+)\.", text, re.M)}


def test_gone_from_the_queue_means_terminated_in_the_log(pool, tmp_path):
    log = tmp_path / "jobs.log"
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
    cluster = pool.schedd.submit(job, JOBS)
    everyone, observations = set(range(JOBS)), 0

    def check() -> bool:
        nonlocal observations
        queued = {ad["ProcId"] for ad in pool.schedd.query(f"ClusterId == {cluster}", ["ProcId"])}
        left = {ad["ProcId"] for ad in pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])}
        logged = ended_in_log(log, cluster)
        observations += 1
        assert (everyone - queued) <= logged, f"gone from the queue, not in the log: {everyone - queued - logged}"
        assert left <= logged, f"in the history, not in the log: {left - logged}"
        return not queued

    wait_until(check, 120, 0.0, what="every job to leave the queue")
    assert observations > 1


def test_a_removed_job_is_aborted_in_the_log_before_it_leaves(pool, tmp_path):
    log = tmp_path / "removed.log"
    job = ClassAd({"Cmd": "/bin/sleep", "Arguments": "600", "Iwd": str(tmp_path), "UserLog": str(log),
                   "JobStatus": 5})
    cluster = pool.schedd.submit(job, 5)
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    assert pool.schedd.query(f"ClusterId == {cluster}", ["ProcId"]) == []
    assert ended_in_log(log, cluster) == set(range(5))
