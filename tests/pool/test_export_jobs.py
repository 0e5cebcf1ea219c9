"""Job export with a real pool: ``Schedd.export_jobs`` writes the clusters to a
job_queue.log and puts their jobs in the externally managed state (not matched, not
started); ``import_exported_job_results`` merges back what the external manager changed
and hands the jobs back (they run); ``unexport_jobs`` hands them back without results.
Layout and semantics as HTCondor's schedd (schedd.cpp ExportJobs and friends)."""

from __future__ import annotations

import pytest

import jobledger as htcondor
import jobledger.v1 as v1
from jobledger.eventcore.projections.queuelog_read import read_queue_log
from tests.pool.conftest import running_pool, wait_until


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS="4", NEGOTIATOR_INTERVAL="1")


def submit(schedd, where, count, executable="/bin/sleep", arguments="1", hold=True) -> int:
    return schedd.submit(htcondor.Submit({
        "executable": executable, "arguments": arguments, "request_cpus": "1", "request_memory": "1",
        "initialdir": str(where), "hold": "true" if hold else "false"}), count=count).cluster()


def in_history(schedd, cluster) -> int:
    return len(schedd.history(f"ClusterId == {cluster}", ["ProcId"]))


def test_export_import_round_trip(pool, tmp_path):
    schedd = htcondor.Schedd()
    exported = submit(schedd, tmp_path, 2)
    out = tmp_path / "export"
    out.mkdir()
    result = schedd.export_jobs(exported, str(out), "/new/spool")
    assert (result["TotalJobAds"], result["TotalClusterAds"]) == (2, 1)
    assert result["Log"] == str(out / "job_queue.log") and result["User"]

    ads = read_queue_log((out / "job_queue.log").read_text())
    assert int(ads[(0, 0)]["NextClusterNum"]) > exported
    assert ads[(exported, -1)]["LeaveJobInQueue"] == "true"
    for proc in (0, 1):
        assert ads[(exported, proc)]["Iwd"] == \
            f'"/new/spool/{exported % 10000}/{proc}/cluster{exported}.proc{proc}.subproc0"'
    managed = schedd.query(f"ClusterId == {exported}", ["Managed", "ManagedManager"])
    assert all(ad["Managed"] == "External" and ad["ManagedManager"] == "Lumberjack" for ad in managed)
    # exporting again finds nothing left to export in it
    assert schedd.export_jobs(exported, str(tmp_path), "/x")["TotalJobAds"] == 0

    # released, the exported jobs stay idle while a job submitted after them runs out
    schedd.act(htcondor.JobAction.Release, f"ClusterId == {exported}")
    control = submit(schedd, tmp_path, 1, "/bin/true", "", hold=False)
    wait_until(lambda: in_history(schedd, control) == 1, 120, what="the control job to finish")
    still = schedd.query(f"ClusterId == {exported}", ["JobStatus", "NumJobStarts"])
    assert [(ad["JobStatus"], ad.get("NumJobStarts", 0)) for ad in still] == [(1, 0), (1, 0)]

    # the external manager's changes, and a transaction it was killed in the middle of
    with (out / "job_queue.log").open("a") as log:
        log.write(f"105 \n103 {exported}.0 ExitCode 0\n103 {exported}.0 RemoteWallClockTime 12.0\n"
                  f'103 {exported}.0 JobStatus 4\n103 {exported}.0 Owner "mallory"\n'
                  f'103 {exported}.0 ExternalNote "done elsewhere"\n106 \n'
                  f'105 \n103 {exported}.1 Color "torn"\n')
    back = schedd.import_exported_job_results(str(out))
    assert back["TotalJobAds"] == 2
    # HTCondor merges JobStatus as it is; here status moves only by events: named, not merged
    assert back["NotMerged"] == "JobStatus"
    ads = {ad["ProcId"]: ad for ad in schedd.query(
        f"ClusterId == {exported}", ["ProcId", "ExitCode", "RemoteWallClockTime", "Owner", "ExternalNote",
                                      "Color", "Managed"])}
    assert ads[0]["ExitCode"] == 0 and ads[0]["RemoteWallClockTime"] == 12.0
    assert ads[0]["ExternalNote"] == "done elsewhere" and ads[0]["Owner"] != "mallory"
    assert "Color" not in ads[1] and "Managed" not in ads[0] and "Managed" not in ads[1]
    # handed back, they are the schedd's again: matched, run, done
    wait_until(lambda: in_history(schedd, exported) == 2, 120, what="the imported jobs to run")
    # a second import finds none still exported
    assert schedd.import_exported_job_results(str(out))["TotalJobAds"] == 0


def test_unexport_takes_whole_clusters_back(pool, tmp_path):
    schedd = v1.Schedd()
    cluster = submit(schedd, tmp_path, 2)
    try:
        assert schedd.export_jobs(f"{cluster}.1", str(tmp_path), "##")["TotalJobAds"] == 2   # ids: the cluster
        assert (tmp_path / "job_queue.log").is_file()
        result = schedd.unexport_jobs([f"{cluster}.0"])
        assert (result["TotalJobAds"], result["TotalClusterAds"]) == (2, 1)
        assert all("Managed" not in ad for ad in schedd.query(f"ClusterId == {cluster}", ["Managed"]))
        assert schedd.unexport_jobs(cluster)["TotalJobAds"] == 0
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_bad_requests_say_what_is_wrong(pool, tmp_path):
    schedd = htcondor.Schedd()
    cluster = submit(schedd, tmp_path, 1)
    try:
        with pytest.raises(htcondor.HTCondorException, match="not an absolute path"):
            schedd.export_jobs(cluster, "relative/dir", "##")
        with pytest.raises(htcondor.HTCondorException, match="is not a directory"):
            schedd.export_jobs(cluster, str(tmp_path / "absent"), "##")
        with pytest.raises(htcondor.HTCondorException, match="No clusters to export"):
            schedd.export_jobs(999999, str(tmp_path), "##")
        with pytest.raises(htcondor.HTCondorException, match="No clusters to unexport"):
            schedd.unexport_jobs("ClusterId == 999999")
        with pytest.raises(htcondor.HTCondorException, match="Failed to initialize import job log"):
            schedd.import_exported_job_results(str(tmp_path))
        (tmp_path / "job_queue.log").write_text("107 1 CreationTimestamp 1\n103 1.0 Bad-Name 3\n")
        with pytest.raises(htcondor.HTCondorException, match="line 2: 'Bad-Name' is not an attribute name"):
            schedd.import_exported_job_results(str(tmp_path))
        (tmp_path / "job_queue.log").write_bytes(b"\xff\xfe")
        with pytest.raises(htcondor.HTCondorException, match="Failed to initialize import job log"):
            schedd.import_exported_job_results(str(tmp_path))
        with pytest.raises(htcondor.HTCondorValueError):
            schedd.export_jobs("not an id or ((", str(tmp_path), "##")
        with pytest.raises(TypeError):
            schedd.unexport_jobs(True)
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
