"""InitialWaitDuration: set at a job's first start to the seconds it waited since it was
queued (HTCondor's shadow sets it once, from JobMaterializeDate or QDate); a second run
leaves it alone."""

from __future__ import annotations

from jobledger import JobAction
from jobledger.eventcore.decide.runs import first_start_attrs
from jobledger.eventcore.classad import ClassAd
from tests.pool.conftest import wait_until


def test_first_start_attrs_prefers_the_materialize_date_and_is_set_once():
    assert first_start_attrs({"QDate": "100"}, 130.7) == {"InitialWaitDuration": "30"}
    assert first_start_attrs({"QDate": "100", "JobMaterializeDate": "120"}, 130) == {"InitialWaitDuration": "10"}
    assert first_start_attrs({"QDate": "100", "InitialWaitDuration": "5"}, 130) == {}
    assert first_start_attrs({"QDate": "200"}, 130) == {"InitialWaitDuration": "0"}   # a clock step back
    assert first_start_attrs({}, 130) == {}


def test_a_job_keeps_its_first_wait_across_a_second_run(pool, tmp_path):
    gate = tmp_path / "gate"
    gate.touch()
    job = ClassAd({"Cmd": "/bin/sh", "Arguments": f"-c 'while [ -e {gate} ]; do sleep 0.05; done'",
                   "Iwd": str(tmp_path), "LeaveJobInQueue": True})
    cluster = pool.schedd.submit(job, 1)

    def ad():
        found = pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus", "InitialWaitDuration", "QDate",
                                                                 "NumJobStarts", "JobStartDate"])
        return found[0] if found else None
    wait_until(lambda: ad()["JobStatus"] == 2, 60, what="the job to run")
    first = ad()
    assert 0 <= first["InitialWaitDuration"] <= first["JobStartDate"] - first["QDate"] + 1
    pool.schedd.act(JobAction.Vacate, f"ClusterId == {cluster}")
    wait_until(lambda: ad()["NumJobStarts"] >= 2 and ad()["JobStatus"] == 2, 60, what="a second run")
    assert ad()["InitialWaitDuration"] == first["InitialWaitDuration"]
    gate.unlink()
    wait_until(lambda: ad()["JobStatus"] == 4, 60, what="the job to complete")
    pool.schedd.act(JobAction.Remove, f"ClusterId == {cluster}")
