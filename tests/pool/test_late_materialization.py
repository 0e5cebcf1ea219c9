"""Late materialization on a real pool: a cluster's job factory, as HTCondor's schedd keeps one.

A submit with ``max_materialize`` / ``max_idle`` puts its first jobs in the queue and the
rest later, as earlier ones leave the queue (``max_materialize``) or start to run
(``max_idle``); the schedd keeps the submit digest and the items in its spool and the
cluster ad says where the factory stands.  Every job is made exactly once, across a
``kill -9`` of the schedd too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.tracking.jobeventlog import JobEventLog
from tests.pool.conftest import running_pool, wait_until


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS="4", PERIODIC_EXPR_INTERVAL="1")


def spool_dir(pool) -> Path:
    return Path(pool.local_dir) / "spool"


def daemon_pid(pool, name: str) -> int:
    status = ipc.call(ipc.sinful(str(Path(pool.local_dir) / "run" / "master.sock")), "status")
    return status[name]["pid"]


def cluster_ad(pool, cluster: int) -> dict:
    ads = pool.schedd.query(f"ClusterId == {cluster} && ProcId is undefined",
                            opts=htcondor.QueryOpts.IncludeClusterAd)
    return ads[0] if ads else {}


def present(pool, cluster: int) -> list:
    return pool.schedd.query(f"ClusterId == {cluster}", ["ProcId", "JobStatus", "JobMaterializeDate"])


def test_max_materialize_keeps_the_queue_small_until_every_job_ran(pool, tmp_path):
    log = tmp_path / "jobs.log"
    sub = htcondor.Submit({"executable": "/bin/sleep", "arguments": "0", "log": str(log),
                           "max_materialize": "2"})
    result = pool.schedd.submit(sub, count=6)
    cluster = result.cluster()
    assert result.num_procs() == 6
    seen = set()

    def watch():
        jobs = present(pool, cluster)
        assert len(jobs) <= 2, jobs
        seen.update(ad["ProcId"] for ad in jobs)
        return pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"], match=6) \
            if len(pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == 6 else None
    done = wait_until(watch, 120, interval=0.05, what="the six jobs to complete")
    assert sorted(ad["ProcId"] for ad in done) == list(range(6))
    submits = [e.proc for e in JobEventLog(str(log)).events(stop_after=0) if int(e.type) == 0]
    assert sorted(submits) == list(range(6))          # one SUBMIT event a job, each job once
    wait_until(lambda: not cluster_ad(pool, cluster), 30, what="the cluster ad to leave")
    digest = spool_dir(pool) / str(cluster) / f"condor_submit.{cluster}.digest"
    wait_until(lambda: not digest.exists(), 30, what="the factory's files to go with the cluster")


def test_max_idle_counts_idle_and_held_jobs(pool):
    sub = htcondor.Submit({"executable": "/bin/sleep", "arguments": "0", "hold": "true", "max_idle": "3"})
    cluster = pool.schedd.submit(sub, count=5).cluster()
    jobs = wait_until(lambda: present(pool, cluster), 30, what="the first jobs")
    assert sorted(ad["ProcId"] for ad in jobs) == [0, 1, 2]          # held jobs are not running
    ad = cluster_ad(pool, cluster)
    assert ad["JobMaterializeMaxIdle"] == 3 and ad["JobMaterializeNextProcId"] == 3
    assert ad["TotalSubmitProcs"] == 5 and all("JobMaterializeDate" in j for j in jobs)
    pool.schedd.act(htcondor.JobAction.Release, f"ClusterId == {cluster}")
    # as the first run, the last two are made (held, as the submit says)
    later = wait_until(lambda: [j for j in present(pool, cluster) if j["ProcId"] >= 3], 120,
                       what="jobs 3 and 4")
    assert all(j["JobStatus"] == 5 for j in later)
    wait_until(lambda: len(present(pool, cluster)) == 2 or None, 120, what="the first three to leave")
    pool.schedd.act(htcondor.JobAction.Release, f"ClusterId == {cluster}")
    wait_until(lambda: len(pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == 5 or None,
               120, what="all five jobs")


def test_the_spool_holds_the_digest_and_the_items(pool, tmp_path):
    sub = htcondor.Submit('executable = /bin/sleep\narguments = $(secs)\nhold = true\nMy.Tag = "$(name)"\n'
                          'max_materialize = 2\nqueue name,secs from (\n  a 1\n  b 2\n  c 3\n)\n')
    cluster = pool.schedd.submit(sub).cluster()
    ad = wait_until(lambda: cluster_ad(pool, cluster), 30, what="the cluster ad")
    digest = Path(ad["JobMaterializeDigestFile"])
    items = Path(ad["JobMaterializeItemsFile"])
    assert digest == spool_dir(pool) / str(cluster % 10000) / f"condor_submit.{cluster}.digest"
    assert items.read_text() == "a 1\nb 2\nc 3\n"
    text = digest.read_text()
    assert text.startswith("FACTORY.Requirements=MY.Requirements\narguments=$(secs)\nFACTORY.Iwd=")
    assert "executable" not in text and 'My.Tag="$(name)"' in text
    assert text.endswith(f"\n\nQueue 1 name,secs from {items}\n")
    assert ad["Tag"] == "a"                 # the first item is the cluster ad's
    jobs = pool.schedd.query(f"ClusterId == {cluster}", ["ProcId", "Tag", "Args"])
    assert [(j["ProcId"], j["Tag"], j["Args"]) for j in jobs] == [(0, "a", "1"), (1, "b", "2")]
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_condor_submit_factory_and_its_count(pool, tmp_path):
    subfile = tmp_path / "job.sub"
    subfile.write_text("executable = /bin/sleep\narguments = 0\nhold = true\nqueue 3\n")
    out = subprocess.run([str(Path(sys.executable).parent / "condor_submit"), "-factory", str(subfile)],
                         capture_output=True, text=True, timeout=60, env=pool_env(pool))
    assert out.returncode == 0, out.stderr
    assert "3 job(s) submitted to cluster" in out.stdout
    cluster = int(out.stdout.strip().rsplit(" ", 1)[1].rstrip("."))
    ad = wait_until(lambda: cluster_ad(pool, cluster), 30, what="the cluster ad")
    assert "JobMaterializeDigestFile" in ad and "JobMaterializeLimit" not in ad
    assert Path(ad["JobMaterializeDigestFile"]).read_text().endswith("\n\nQueue 3\n")
    assert len(present(pool, cluster)) == 3     # no limit: every job at once
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def pool_env(pool) -> dict:
    env = dict(os.environ)
    env["CONDOR_CONFIG"] = str(Path(pool.local_dir) / "condor_config")
    return env


def test_a_schedd_killed_while_materializing_makes_every_job_once(pool, tmp_path):
    log = tmp_path / "jobs.log"
    total = 40
    sub = htcondor.Submit({"executable": "/bin/sleep", "arguments": "0", "log": str(log),
                           "max_materialize": "3"})
    cluster = pool.schedd.submit(sub, count=total).cluster()

    def finished(at_least: int):
        try:
            ads = pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])
        except (ipc.ConnectionLost, htcondor.HTCondorException):
            return None         # the schedd is starting again
        return ads if len(ads) >= at_least else None
    for victim_at in (5, 15, 25):
        wait_until(lambda: finished(victim_at), 120, what=f"{victim_at} jobs done")
        before = daemon_pid(pool, "schedd")
        os.kill(before, signal.SIGKILL)
        wait_until(lambda: daemon_pid(pool, "schedd") != before, 60, what="a new schedd")
    done = wait_until(lambda: finished(total), 240, what="every job")
    assert sorted(ad["ProcId"] for ad in done) == list(range(total))     # each once, none lost
    submits = [e.proc for e in JobEventLog(str(log)).events(stop_after=0) if int(e.type) == 0]
    assert sorted(submits) == list(range(total))


def test_hold_pauses_the_factory_release_resumes_it_and_remove_ends_it(pool):
    sub = htcondor.Submit({"executable": "/bin/sleep", "arguments": "300", "max_materialize": "1"})
    cluster = pool.schedd.submit(sub, count=4).cluster()
    wait_until(lambda: present(pool, cluster), 30, what="the first job")
    pool.schedd.act(htcondor.JobAction.Hold, f"ClusterId == {cluster}")
    ad = cluster_ad(pool, cluster)
    assert ad["JobMaterializePaused"] == 1 and ad["JobMaterializePauseReason"] == "via condor_hold"
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster} && ProcId isnt undefined")
    # the factory is paused: job 0 leaves and no job 1 comes; the cluster ad stays
    wait_until(lambda: not present(pool, cluster) and cluster_ad(pool, cluster), 60, what="job 0 to leave")
    assert cluster_ad(pool, cluster)["JobMaterializeNextProcId"] == 1
    pool.schedd.act(htcondor.JobAction.Release, f"ClusterId == {cluster}")
    jobs = wait_until(lambda: present(pool, cluster), 30, what="job 1")
    assert [j["ProcId"] for j in jobs] == [1] and "JobMaterializePaused" in cluster_ad(pool, cluster)
    assert cluster_ad(pool, cluster)["JobMaterializePaused"] == 0
    result = pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    assert result["TotalSuccess"] == 2          # job 1 and the factory, as HTCondor counts them
    wait_until(lambda: not cluster_ad(pool, cluster), 60, what="the cluster to leave")
    assert sorted(ad["ProcId"] for ad in pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == [0, 1]
    digest = spool_dir(pool) / str(cluster) / f"condor_submit.{cluster}.digest"
    wait_until(lambda: not digest.exists(), 30, what="the factory's files to go with the cluster")


def test_a_scheduler_universe_factory_runs_every_job(pool):
    sub = htcondor.Submit({"universe": "scheduler", "executable": "/bin/true", "max_materialize": "1"})
    cluster = pool.schedd.submit(sub, count=3).cluster()
    done = wait_until(lambda: (lambda h: h if len(h) == 3 else None)(
        pool.schedd.history(f"ClusterId == {cluster}", ["ProcId", "JobStatus"])), 120, what="three jobs")
    assert sorted(ad["ProcId"] for ad in done) == [0, 1, 2] and {ad["JobStatus"] for ad in done} == {4}
