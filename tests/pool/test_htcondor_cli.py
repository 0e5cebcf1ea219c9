"""The ``htcondor`` command-line tool shipped in the HTCondor wheel (htcondor_cli), run
unchanged against a pool: only its ``import htcondor2``/``classad2`` resolve to jobledger
(tests/pool/htcondor_shim/sitecustomize.py, first on PYTHONPATH in these runs only)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor2_api
from tests.pool.conftest import running_pool, wait_until

pytest.importorskip("htcondor_cli")
ROOT = Path(__file__).resolve().parents[2]
SHIM = Path(__file__).resolve().parent / "htcondor_shim"


@pytest.fixture(scope="module")
def jobset_pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, USE_JOBSETS="true")


def htcondor(pool, cwd, *args) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SHIM), str(ROOT)]),
               CONDOR_CONFIG=str(pool.config_file))
    done = subprocess.run([sys.executable, "-c",
                           "import sys; from htcondor_cli.cli import main; sys.exit(main())", *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


def test_the_shim_really_runs_jobledger(jobset_pool, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SHIM), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", "import htcondor2, classad2; print(htcondor2.__name__, "
                          "classad2.__name__)"], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["jobledger", "jobledger.classad"]


def test_job_submit_status_out_log_and_eventlog_read(jobset_pool, tmp_path):
    (tmp_path / "job.sub").write_text("executable = /bin/sh\narguments = \"-c 'sleep 1; echo hi'\"\n"
                                      "output = out.txt\nerror = err.txt\nlog = job.log\nqueue\n")
    code, out = htcondor(jobset_pool, tmp_path, "job", "submit", "job.sub")
    assert code == 0
    job = re.search(r"Job (\d+) was submitted", out).group(1)
    wait_until(lambda: jobset_pool.schedd.history(f"ClusterId == {job}", ["ProcId"]), 30,
               what="the job to finish")
    code, out = htcondor(jobset_pool, tmp_path, "job", "status", job)
    assert code == 0 and f"Job {job} has completed." in out
    goodput = float(re.search(r"Job had ([\d.]+)% goodput", out).group(1))
    assert goodput > 50.0
    code, out = htcondor(jobset_pool, tmp_path, "job", "out", job)
    assert code == 0 and "hi" in out.splitlines()
    code, out = htcondor(jobset_pool, tmp_path, "job", "log", job)
    assert code == 0 and f"005 ({int(job):03d}.000.000)" in out
    code, out = htcondor(jobset_pool, tmp_path, "eventlog", "read", "job.log")
    assert code == 0 and re.search(rf"^{job}\.0\s+slot1_\d+@", out, re.MULTILINE)


def _at_rest(pool) -> bool:
    """The schedd, collector and negotiator advertise a recent duty cycle of at most 0.95:
    htcondor_cli calls that full health ("Good"); a daemon whose recent window is mostly
    its own start (a young pool on a busy machine) is rightly "Poor" until it settles."""
    ads = pool.collector.query(htcondor2_api.AdTypes.Any,
                               'MyType == "Scheduler" || MyType == "Collector" || MyType == "Negotiator"',
                               ["MyType", "RecentDaemonCoreDutyCycle"])
    types = {ad.get("MyType") for ad in ads}
    return types >= {"Scheduler", "Collector", "Negotiator"} and \
        all(float(ad.get("RecentDaemonCoreDutyCycle", 1.0)) <= 0.95 for ad in ads)


def test_ap_and_cm_status(jobset_pool, tmp_path):
    wait_until(lambda: _at_rest(jobset_pool), 120, what="the daemons' duty cycles to settle")
    code, out = htcondor(jobset_pool, tmp_path, "ap", "status")
    assert code == 0 and "Access Point" in out and "DutyCycle" in out and "Good" in out
    code, out = htcondor(jobset_pool, tmp_path, "cm", "status")
    assert code == 0 and "Central Manager" in out and "Good" in out


def test_jobset_submit_list_status_remove(jobset_pool, tmp_path):
    (tmp_path / "set.txt").write_text("name = cliset\niterator = table x {\n a\n b\n}\n"
                                      "job {\n executable = /bin/sleep\n arguments = 60\n}\n")
    code, out = htcondor(jobset_pool, tmp_path, "jobset", "submit", "set.txt")
    assert code == 0 and "Submitted job set cliset containing 1 job clusters." in out
    code, out = htcondor(jobset_pool, tmp_path, "jobset", "list")
    assert code == 0 and out.split()[:2] == ["JOB_SET_NAME", "cliset"]
    # the JobSet ad behind it, through the API
    schedd = jobset_pool.schedd
    sets = schedd.query('MyType == "JobSet"', opts=htcondor2_api.QueryOpt.IncludeJobsetAds)
    jobs = schedd.query('JobSetName == "cliset"', ["ClusterId", "JobSetId"])
    assert len(sets) == 1 and len(jobs) == 2
    assert sets[0]["JobSetName"] == "cliset" and sets[0]["NumJobs"] == 2
    assert sets[0]["JobSetId"] == jobs[0]["JobSetId"] == jobs[0]["ClusterId"]
    assert sets[0]["NumIdle"] + sets[0]["NumRunning"] == 2 and sets[0]["NumSchedulerJobs"] == 0
    assert schedd.query('MyType == "JobSet"') == []
    code, out = htcondor(jobset_pool, tmp_path, "jobset", "status", "cliset")
    assert code == 0 and "cliset currently has" in out
    assert re.search(r"Job cluster \d+ with 2 total jobs", out)
    code, out = htcondor(jobset_pool, tmp_path, "jobset", "remove", "cliset")
    assert code == 0 and "Removed 2 jobs matching job set cliset" in out
    wait_until(lambda: not jobset_pool.schedd.query('JobSetName == "cliset"', ["ProcId"]), 30,
               what="the set's jobs to leave")
    code, out = htcondor(jobset_pool, tmp_path, "jobset", "list")
    assert "No active job sets found" in out
