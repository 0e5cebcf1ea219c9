"""condor_vacate_job: a running job is stopped and goes back to idle to run again (004
in its user log, then 001 again); a job not running is left alone and named."""

from __future__ import annotations

from jobledger.eventcore.classad import ClassAd
from jobledger.condor_cli.vacate_job import main
from tests.condor_cli.conftest import run, wait_until


def _status(pool, cluster):
    ads = pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"])
    return ads[0]["JobStatus"] if ads else None


def test_vacate_puts_a_running_job_back_to_idle_and_it_runs_again(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    log = tmp_path / "job.log"
    gate = tmp_path / "gate"
    gate.touch()
    job = ClassAd({"Cmd": "/bin/sh", "Arguments": f"-c 'while [ -e {gate} ]; do sleep 0.05; done'",
                   "Iwd": str(tmp_path), "UserLog": str(log)})
    cluster = pool.schedd.submit(job, 1)
    wait_until(lambda: _status(pool, cluster) == 2, 60, what="the job to run")
    ran = run(main, f"{cluster}.0")
    assert (ran.status, ran.out.strip()) == (0, f"Job {cluster}.0 vacated"), ran
    wait_until(lambda: "\n004 (" in "\n" + log.read_text(), 60, what="the evicted event")
    wait_until(lambda: log.read_text().count("\n001 (") + log.read_text().startswith("001 (") >= 2, 60,
               what="the job to run again")
    gate.unlink()
    wait_until(lambda: _status(pool, cluster) is None, 60, what="the job to finish")
    ran = run(main, "-fast", f"{cluster}.0")
    assert ran.status == 1 and f"Job {cluster}.0 not found" in ran.err


def test_a_job_not_running_is_left_alone(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "JobStatus": 5, "HoldReason": "\"kept\""})
    cluster = pool.schedd.submit(job, 1)
    ran = run(main, f"{cluster}.0")
    assert ran.status == 1 and f"Job {cluster}.0 not running to be vacated" in ran.err
    assert _status(pool, cluster) == 5
    pool.schedd.act(__import__("jobledger").JobAction.Remove, f"ClusterId == {cluster}")
