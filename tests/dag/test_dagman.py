"""DAGMan in a real pool: Submit.from_dag, the scheduler-universe DAGMan job, its files.

Each test writes a DAG in its own directory, submits it as a user would
(``Submit.from_dag`` + ``Schedd.submit``, or ``jobledger dag submit``) and
waits for the DAGMan job to leave the queue.
"""

from __future__ import annotations

import json
import os
import stat

import pytest
from click.testing import CliRunner

import jobledger as htcondor
from jobledger.eventcore.errors import DagError
from jobledger.cli import main as cli
from tests.pool.conftest import wait_until
from jobledger.tracking.jobeventlog import JobEventLog

ECHO = "executable = /bin/echo\narguments = $(JOB) retry $(RETRY) $(x)\noutput = $(JOB).out\nqueue\n"


def write(path, text, mode=None):
    path.write_text(text)
    if mode:
        path.chmod(mode)
    return path


def script(path, body):
    return write(path, "#!/bin/sh\n" + body, stat.S_IRWXU)


def run_dag(pool, directory, dag_text, options=None, name="d.dag"):
    """Submit the DAG in ``directory``; return (DAGMan cluster, its history ad) once it has left."""
    write(directory / name, dag_text)
    old = os.getcwd()
    os.chdir(directory)
    try:
        cluster = pool.schedd.submit(htcondor.Submit.from_dag(name, options or {})).cluster()
    finally:
        os.chdir(old)
    return cluster, wait_dagman(pool, cluster)


def wait_dagman(pool, cluster):
    def gone():
        if pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"]):
            return None
        return pool.schedd.history(f"ClusterId == {cluster}", ["ExitCode", "JobStatus"])
    return wait_until(gone, 60, what=f"DAGMan job {cluster} to finish")[0]


def node_jobs(pool, cluster):
    attrs = ["ClusterId", "DAGNodeName", "DAGManJobId", "JobBatchName", "ExitCode", "JobStatus"]
    return sorted(pool.schedd.history(f"DAGManJobId == {cluster}", attrs), key=lambda ad: ad["ClusterId"])


def test_diamond_with_vars_scripts_and_htcondor_files(pool, tmp_path):
    write(tmp_path / "echo.sub", ECHO)
    script(tmp_path / "post.sh", 'echo "$@" >> post.txt\n')
    dag = ('JOB A echo.sub\nJOB B echo.sub\nJOB C echo.sub\nJOB D echo.sub\nVARS ALL_NODES x="X"\n'
           'VARS D x="last"\nPARENT A CHILD B C\nPARENT B C CHILD D\nSCRIPT POST D post.sh $JOB $RETURN\n'
           'DOT d.dot\nJOBSTATE_LOG js.log\nNODE_STATUS_FILE st.txt\nSAVE_POINT_FILE B\n')
    cluster, ad = run_dag(pool, tmp_path, dag)
    assert ad["ExitCode"] == 0 and ad["JobStatus"] == 4
    assert (tmp_path / "A.out").read_text() == "A retry 0 X\n"
    assert (tmp_path / "D.out").read_text() == "D retry 0 last\n"
    assert (tmp_path / "post.txt").read_text() == "D 0\n"
    jobs = node_jobs(pool, cluster)
    assert sorted(j["DAGNodeName"] for j in jobs) == ["A", "B", "C", "D"]
    assert {j["JobBatchName"] for j in jobs} == {f"d.dag+{cluster}"}
    # Parents terminate before their children are submitted (the nodes log says so).
    seen = {}
    for event in JobEventLog(str(tmp_path / "d.dag.nodes.log")).events(stop_after=0):
        seen.setdefault((event.cluster, int(event.type)), event)
    by_name = {j["DAGNodeName"]: j["ClusterId"] for j in jobs}
    order = [e for e in JobEventLog(str(tmp_path / "d.dag.nodes.log")).events(stop_after=0)]
    position = {(e.cluster, int(e.type)): i for i, e in enumerate(order)}
    assert position[(by_name["A"], 5)] < position[(by_name["B"], 0)]
    submit_a = order[position[(by_name["A"], 0)]]
    assert 'DAGNodeName = "A"' in submit_a.raw_text       # the SUBMIT event's note names the node
    assert max(position[(by_name["B"], 5)], position[(by_name["C"], 5)]) < position[(by_name["D"], 0)]
    out = (tmp_path / "d.dag.dagman.out").read_text()
    assert "EXITING WITH STATUS 0" in out
    metrics = json.loads((tmp_path / "d.dag.metrics").read_text())
    assert (metrics["nodes"], metrics["nodes_succeeded"], metrics["jobs_succeeded"], metrics["exitcode"],
            metrics["DagStatus"], metrics["dagman_id"], metrics["version"]) == (4, 4, 4, 0, 0, str(cluster), "25.14.1")
    assert (tmp_path / "d.dag.dagman.log").exists() and (tmp_path / "d.dag.condor.sub").exists()
    assert not list(tmp_path.glob("d.dag.rescue*"))
    assert '"A" -> "B";' in (tmp_path / "d.dot").read_text()
    jobstate = (tmp_path / "js.log").read_text()
    for words in (f"INTERNAL *** DAGMAN_STARTED {cluster}.0 ***", " A SUBMIT ", " D JOB_SUCCESS 0 ",
                  " D POST_SCRIPT_SUCCESS 0 ", "INTERNAL *** DAGMAN_FINISHED 0 ***"):
        assert words in jobstate, words
    assert "NodesDone = 4;" in (tmp_path / "st.txt").read_text()
    assert "DONE A" in (tmp_path / "save_files" / "B-d.dag.save").read_text()


def test_retry_failure_rescue_and_resubmit_runs_only_what_is_not_done(pool, tmp_path):
    write(tmp_path / "echo.sub", ECHO)
    script(tmp_path / "flaky.sh", 'n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; '
                                  '[ "$n" -ge 1 ]\n')
    write(tmp_path / "flaky.sub", "executable = flaky.sh\nqueue\n")
    script(tmp_path / "gate.sh", "[ -e fixed ]\n")
    write(tmp_path / "gate.sub", "executable = gate.sh\nqueue\n")
    dag = ("JOB A echo.sub\nJOB F flaky.sub\nJOB G gate.sub\nJOB Z echo.sub\nRETRY F 2\n"
           "PARENT A CHILD F G\nPARENT G CHILD Z\n")
    cluster, ad = run_dag(pool, tmp_path, dag)
    assert ad["ExitCode"] == 1
    jobs = node_jobs(pool, cluster)
    assert [j["DAGNodeName"] for j in jobs].count("F") == 2          # failed once, retried
    assert "Z" not in {j["DAGNodeName"] for j in jobs}               # futile
    rescue = (tmp_path / "d.dag.rescue001").read_text()
    assert "DONE A" in rescue and "DONE F" in rescue and "DONE G" not in rescue
    assert "# Nodes that failed: 1" in rescue
    result = CliRunner().invoke(cli, ["dag", "rescue", str(tmp_path / "d.dag")])
    assert result.exit_code == 0 and "2 of 4 node(s) DONE" in result.output
    (tmp_path / "fixed").touch()
    cluster2, ad2 = run_dag(pool, tmp_path, dag)
    assert ad2["ExitCode"] == 0
    assert sorted(j["DAGNodeName"] for j in node_jobs(pool, cluster2)) == ["G", "Z"]
    assert not (tmp_path / "d.dag.rescue002").exists()


def test_abort_dag_on_final_node_pre_skip_noop(pool, tmp_path):
    write(tmp_path / "echo.sub", ECHO)
    script(tmp_path / "exit.sh", 'exit "$1"\n')
    write(tmp_path / "exit3.sub", "executable = exit.sh\narguments = 3\nqueue\n")
    script(tmp_path / "record.sh", 'echo "$@" >> final.txt\n')
    dag = ("JOB S echo.sub\nSCRIPT PRE S exit.sh 7\nPRE_SKIP S 7\nJOB N echo.sub NOOP\n"
           "JOB A exit3.sub\nJOB B echo.sub\nPARENT S N CHILD A\nPARENT A CHILD B\n"
           "ABORT-DAG-ON A 3 RETURN 2\nFINAL F echo.sub\nSCRIPT PRE F record.sh $DAG_STATUS $FAILED_COUNT\n")
    cluster, ad = run_dag(pool, tmp_path, dag)
    # HTCondor wins over RETURN 2: the FINAL node succeeded, so condor_dagman exits 0 (dag.cpp
    # DoneSuccess; HTCondor's job_dagman_abort-final-B test: RETURN 1, FINAL succeeds, DAG succeeds)
    assert ad["ExitCode"] == 0
    status = pool.schedd.history(f"ClusterId == {cluster}", ["DAG_Status"])[0]
    assert status["DAG_Status"] == 3                  # DAG_STATUS_ABORT stays in the ad
    assert (tmp_path / "d.dag.rescue001").exists()   # written when the DAG aborted, before F ran
    names = [j["DAGNodeName"] for j in node_jobs(pool, cluster)]
    assert names == ["A", "F"]                        # S skipped by PRE_SKIP, N is NOOP, B never ran
    assert (tmp_path / "final.txt").read_text() == "3 1\n"
    assert (tmp_path / "F.out").read_text() == "F retry 0\n"


def test_maxjobs_keeps_one_node_job_at_a_time_and_inline_descriptions(pool, tmp_path):
    dag = ("SUBMIT-DESCRIPTION sleepy {\nexecutable = /bin/sleep\narguments = 0.2\n}\n"
           + "".join(f"JOB N{i} sleepy\n" for i in range(4)) + "CATEGORY N0 c\nCATEGORY N1 c\nMAXJOBS c 1\n")
    cluster, ad = run_dag(pool, tmp_path, dag, {"maxjobs": 1})
    assert ad["ExitCode"] == 0
    live, most = 0, 0
    for event in JobEventLog(str(tmp_path / "d.dag.nodes.log")).events(stop_after=0):
        live += {0: 1, 5: -1}.get(int(event.type), 0)
        most = max(most, live)
    assert most == 1 and len(node_jobs(pool, cluster)) == 4


def test_removing_the_dagman_job_removes_its_node_jobs(pool, tmp_path):
    write(tmp_path / "long.sub", "executable = /bin/sleep\narguments = 300\nqueue\n")
    write(tmp_path / "d.dag", "JOB A long.sub\nJOB B long.sub\n")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        cluster = pool.schedd.submit(htcondor.Submit.from_dag("d.dag")).cluster()
    finally:
        os.chdir(old)
    wait_until(lambda: len(pool.schedd.query(f"DAGManJobId == {cluster}", ["ClusterId"])) == 2, 30,
               what="both node jobs")
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    wait_until(lambda: not pool.schedd.query(f"DAGManJobId == {cluster} || ClusterId == {cluster}",
                                             ["ClusterId"]), 30, what="the DAG's jobs to leave")
    assert {j["JobStatus"] for j in node_jobs(pool, cluster)} == {3}


def test_bad_dag_is_an_error_naming_the_line(pool, tmp_path, monkeypatch):
    # as htcondor2's from_dag (and condor_submit_dag): the DAG goes in all the same and its
    # DAGMan job fails with the parse error in dagman.out (HTCondor's upstream DAGMan tests)
    write(tmp_path / "bad.dag", "JOB A a.sub\nPARENT A CHILD Nope\n")
    monkeypatch.chdir(tmp_path)
    cluster = pool.schedd.submit(htcondor.Submit.from_dag("bad.dag")).cluster()
    assert wait_dagman(pool, cluster)["ExitCode"] == 1
    out = (tmp_path / "bad.dag.dagman.out").read_text()
    assert "ERROR: Failed to parse bad.dag: bad.dag:2: unknown node 'Nope'" in out
    with pytest.raises(DagError, match="cannot read 'gone.dag'"):
        htcondor.Submit.from_dag("gone.dag")
    # jobledger's own command refuses it before submitting anything
    before = len(pool.schedd.query("true", ["ClusterId"]))
    result = CliRunner().invoke(cli, ["dag", "submit", "bad.dag", "--local-dir", str(pool.local_dir)])
    assert result.exit_code == 1 and "bad.dag:2: unknown node 'Nope'" in result.output
    assert "Traceback" not in result.output
    assert len(pool.schedd.query("true", ["ClusterId"])) == before
    assert "maxjobs" in htcondor.Submit.from_dag_options()


def test_cli_submit_and_status(pool, tmp_path, monkeypatch):
    write(tmp_path / "echo.sub", ECHO)
    write(tmp_path / "c.dag", "JOB A echo.sub\nJOB B echo.sub\nPARENT A CHILD B\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["dag", "submit", "c.dag", "--batch-name", "mine",
                                      "--local-dir", str(pool.local_dir)])
    assert result.exit_code == 0, result.output
    cluster = int(result.output.strip().rsplit(" ", 1)[1].rstrip("."))
    wait_dagman(pool, cluster)
    status = CliRunner().invoke(cli, ["dag", "status", str(cluster), "--local-dir", str(pool.local_dir)])
    assert status.exit_code == 0 and "Completed, exit code 0" in status.output
    assert "2 node(s) with jobs: 2 Completed" in status.output
    assert {j["JobBatchName"] for j in node_jobs(pool, cluster)} == {"mine"}


def test_condor_submit_dag(pool, tmp_path, monkeypatch):
    from jobledger.condor_cli import submit_dag
    from tests.condor_cli.conftest import run
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "echo.sub", ECHO)
    write(tmp_path / "s.dag", "JOB A echo.sub\n")
    dry = run(submit_dag.main, "-no_submit", "s.dag")
    assert dry.status == 0 and "s.dag.condor.sub" in dry.out and "not submitting" in dry.out
    ran = run(submit_dag.main, "-f", "-maxjobs", "2", "-batch-name", "viaCLI", "s.dag")   # -no_submit left its file
    assert ran.status == 0, ran.err
    cluster = int(ran.out.split("submitted to cluster ")[1].split(".")[0])
    assert wait_dagman(pool, cluster)["ExitCode"] == 0
    assert "-MaxJobs 2" in (tmp_path / "s.dag.condor.sub").read_text()
    write(tmp_path / "bad.dag", "JOB A echo.sub\nRETRY A lots\n")
    bad = run(submit_dag.main, "bad.dag")     # submitted, as HTCondor's: its DAGMan says why it fails
    assert bad.status == 0, bad.err
    cluster = int(bad.out.split("submitted to cluster ")[1].split(".")[0])
    assert wait_dagman(pool, cluster)["ExitCode"] == 1
    assert "Failed to parse bad.dag: bad.dag:2:" in (tmp_path / "bad.dag.dagman.out").read_text()
    missing = run(submit_dag.main, "missing.dag")
    assert missing.status == 1 and "missing.dag" in missing.err and "Traceback" not in missing.err
    assert run(submit_dag.main, "-maxjobs").status == 1


def submit_in(pool, directory, name):
    old = os.getcwd()
    os.chdir(directory)
    try:
        return pool.schedd.submit(htcondor.Submit.from_dag(name)).cluster()
    finally:
        os.chdir(old)


def test_dagman_class_pause_resume_throttles_and_halt(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
    write(tmp_path / "echo.sub", ECHO)
    write(tmp_path / "slow.sub", "executable = /bin/sleep\narguments = 1\nqueue\n")
    dag = "JOB A slow.sub\nJOB B echo.sub\nPARENT A CHILD B\n"
    write(tmp_path / "p.dag", dag)
    cluster = submit_in(pool, tmp_path, "p.dag")
    dagman = htcondor.DAGMan(cluster)
    wait_until(lambda: pool.schedd.query(f"ClusterId == {cluster}", ["DAGManContact"])[0].get("DAGManContact"),
               30, what="DAGMan's contact address")
    wait_until(lambda: pool.schedd.query(f"DAGManJobId == {cluster}", ["ClusterId"]), 30, what="A queued")
    throttles = dagman.set_throttles(max_nodes=5, max_idle=7)
    assert (throttles["DAGMan_MaxJobs"], throttles["DAGMan_MaxIdle"]) == (5, 7)
    assert dagman.halt(reason="testing", pause=True) == (True, f"Paused DAG {cluster}")
    log = str(tmp_path / "p.dag.nodes.log")
    wait_until(lambda: any(int(e.type) == 5 for e in JobEventLog(log).events(0)), 30, what="A to end")
    dagman.set_throttles(max_pre=3)                  # a round trip: DAGMan is alive and paused
    assert not pool.schedd.query(f"DAGManJobId == {cluster} && DAGNodeName == \"B\"", ["ClusterId"])
    assert dagman.resume() == (True, f"Resumed DAG {cluster}")
    assert wait_dagman(pool, cluster)["ExitCode"] == 0
    # halt (not pause): nothing new starts, and once A is done DAGMan leaves with a rescue DAG
    write(tmp_path / "h.dag", dag)
    cluster = submit_in(pool, tmp_path, "h.dag")
    wait_until(lambda: pool.schedd.query(f"ClusterId == {cluster}", ["DAGManContact"])[0].get("DAGManContact"),
               30, what="DAGMan's contact address")
    wait_until(lambda: pool.schedd.query(f"DAGManJobId == {cluster}", ["ClusterId"]), 30, what="A queued")
    assert htcondor.DAGMan(cluster).halt()[0]
    assert wait_dagman(pool, cluster)["ExitCode"] == 1
    assert "DONE A" in (tmp_path / "h.dag.rescue001").read_text()
    assert htcondor.DAGMan(cluster).resume()[0] is False      # it is gone
    with pytest.raises(TypeError):
        htcondor.DAGMan("12")


def test_subdag_external_runs_as_its_own_dagman_job(pool, tmp_path):
    write(tmp_path / "echo.sub", ECHO)
    (tmp_path / "inner").mkdir()
    write(tmp_path / "inner" / "echo.sub", ECHO)
    write(tmp_path / "inner" / "inner.dag", "JOB X echo.sub\nJOB Y echo.sub\nPARENT X CHILD Y\n")
    cluster, ad = run_dag(pool, tmp_path, "JOB A echo.sub\nSUBDAG EXTERNAL S inner.dag DIR inner\n"
                                          "PARENT A CHILD S\n")
    assert ad["ExitCode"] == 0
    inner = [j for j in node_jobs(pool, cluster) if j["DAGNodeName"] == "S"]
    assert len(inner) == 1 and inner[0]["ExitCode"] == 0
    assert sorted(j["DAGNodeName"] for j in node_jobs(pool, inner[0]["ClusterId"])) == ["X", "Y"]
    assert (tmp_path / "inner" / "Y.out").read_text() == "Y retry 0\n"
    assert "EXITING WITH STATUS 0" in (tmp_path / "inner" / "inner.dag.dagman.out").read_text()


def test_prepend_vars_are_seen_by_the_descriptions_conditionals(pool, tmp_path):
    # HTCondor's DAGMan sets PREPEND VARS before reading the description (so its if/else
    # sees them and its own lines win), the others after it
    dag = ("JOB C @=desc\nexecutable = /bin/true\nif defined CUSTOM_VAR\n  My.HasCustomVar = True\nelse\n"
           "  My.HasCustomVar = False\nendif\nMy.Kept = \"$(KEEP)\"\nKEEP = file\n@desc\n"
           "JOB N @=desc\nexecutable = /bin/true\nif defined CUSTOM_VAR\n  My.HasCustomVar = True\nelse\n"
           "  My.HasCustomVar = False\nendif\n@desc\n"
           "VARS C PREPEND CUSTOM_VAR=\"True\" KEEP=\"dag\"\n")
    cluster, ad = run_dag(pool, tmp_path, dag)
    assert ad["ExitCode"] == 0
    jobs = {j["DAGNodeName"]: j for j in pool.schedd.history(f"DAGManJobId == {cluster}",
                                                             ["DAGNodeName", "HasCustomVar", "Kept"])}
    assert (jobs["C"]["HasCustomVar"], jobs["C"]["Kept"]) == (True, "file")
    assert jobs["N"]["HasCustomVar"] is False


def test_a_dag_runs_again_from_a_save_point_file(pool, tmp_path):
    # SAVE_POINT_FILE B: written in save_files/ when B starts; -load_save (from_dag's
    # load_save) starts a new run with the nodes done then (A) done; the file B rewrites
    # on the new run keeps the old one as .old
    write(tmp_path / "echo.sub", ECHO)
    dag = "JOB A echo.sub\nJOB B echo.sub\nPARENT A CHILD B\nSAVE_POINT_FILE B\n"
    first, ad = run_dag(pool, tmp_path, dag)
    assert ad["ExitCode"] == 0
    saved = tmp_path / "save_files" / "B-d.dag.save"
    assert [line for line in saved.read_text().splitlines() if line.startswith("DONE")] == ["DONE A"]
    second, ad = run_dag(pool, tmp_path, dag, {"load_save": "B-d.dag.save"})
    assert ad["ExitCode"] == 0
    assert [j["DAGNodeName"] for j in node_jobs(pool, second)] == ["B"]
    out = (tmp_path / "d.dag.dagman.out").read_text()
    assert f"Loading saved progress from {os.path.join('.', 'save_files', 'B-d.dag.save')}" in out
    assert "Number of pre-completed nodes: 1" in out
    assert (tmp_path / "save_files" / "B-d.dag.save.old").exists() and saved.exists()
