"""START_SCHEDULER_UNIVERSE against a real pool: the schedd publishes its START_*_UNIVERSE
policies (condor_q -analyze reads them) and starts a scheduler-universe job only when
its policy is true for it, as HTCondor's schedd does (schedd.cpp at 7491a14)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons.schedd.local import START_SCHEDULER_UNIVERSE, start_expression
from jobledger.tracking.jobeventlog import JobEventLog
from tests.pool.conftest import running_pool, wait_until

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def one_at_a_time(tmp_path_factory):
    yield from running_pool(tmp_path_factory, START_SCHEDULER_UNIVERSE="TotalSchedulerJobsRunning < 1")


def _gated(tmp_path: Path, name: str, log: Path) -> tuple[htcondor.Submit, Path]:
    gate = tmp_path / f"{name}.gate"
    gate.touch()
    script = tmp_path / f"{name}.sh"
    script.write_text('#!/bin/sh\nwhile [ -e "$1" ]; do sleep 0.05; done\n')
    script.chmod(0o755)
    return htcondor.Submit({"universe": "scheduler", "executable": str(script), "arguments": str(gate),
                            "initialdir": str(tmp_path), "log": str(log)}), gate


def _schedd_ad(pool) -> htcondor.ClassAd:
    return htcondor.Collector().locate(htcondor.DaemonType.Schedd)


def test_a_second_scheduler_job_waits_for_the_policy(one_at_a_time, tmp_path):
    pool = one_at_a_time
    log = tmp_path / "jobs.log"
    first_job, first_gate = _gated(tmp_path, "first", log)
    second_job, second_gate = _gated(tmp_path, "second", log)
    schedd = htcondor.Schedd()
    first = schedd.submit(first_job).cluster()
    wait_until(lambda: schedd.query(f"ClusterId == {first}", ["JobStatus"])[0]["JobStatus"] == 2, 60,
               what="the first job to run")
    second = schedd.submit(second_job).cluster()
    # the schedd's ad says why the second waits: one running, the policy false for it
    wait_until(lambda: _ad_running(pool) == 1, 60, what="the schedd's ad to count the running job")
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    analyzed = subprocess.run([str(BIN / "condor_q"), "-analyze", f"{second}.0"], env=env,
                              capture_output=True, text=True, timeout=60)
    assert "This schedd's StartSchedulerUniverse evalutes to false for this job." in analyzed.stdout, \
        analyzed.stdout
    first_gate.unlink()
    wait_until(lambda: schedd.query(f"ClusterId == {second}", ["JobStatus"])[0]["JobStatus"] == 2, 60,
               what="the second job to run once the first ended")
    second_gate.unlink()
    wait_until(lambda: not schedd.query(f"ClusterId == {first} || ClusterId == {second}", ["JobStatus"]), 60,
               what="both jobs to leave the queue")
    order = [(e.cluster, e.type) for e in JobEventLog(str(log)).events(0)
             if e.type in (htcondor.JobEventType.EXECUTE, htcondor.JobEventType.JOB_TERMINATED)]
    assert order == [(first, htcondor.JobEventType.EXECUTE), (first, htcondor.JobEventType.JOB_TERMINATED),
                     (second, htcondor.JobEventType.EXECUTE), (second, htcondor.JobEventType.JOB_TERMINATED)]


def _ad_running(pool) -> int | None:
    ads = htcondor.Collector().query(htcondor.AdType.Schedd, projection=["TotalSchedulerJobsRunning"])
    return ads[0].get("TotalSchedulerJobsRunning") if ads else None


def test_the_schedd_publishes_its_policies(pool):
    ad = htcondor.Collector().query(htcondor.AdType.Schedd)[0]
    assert str(ad.lookup("StartSchedulerUniverse")) == "TotalSchedulerJobsRunning < 500"
    assert str(ad.lookup("StartLocalUniverse")) == "TotalLocalJobsRunning < 200"
    assert ad["TotalSchedulerJobsRunning"] == 0


def test_a_setting_that_is_no_expression_gives_htcondors_default():
    assert start_expression("", START_SCHEDULER_UNIVERSE) == "TotalSchedulerJobsRunning < 500"
    assert start_expression("TotalSchedulerJobsRunning <", START_SCHEDULER_UNIVERSE) == START_SCHEDULER_UNIVERSE
    assert start_expression(" Owner == \"me\" ", START_SCHEDULER_UNIVERSE) == 'Owner == "me"'
