"""A DAG as its user sees it from the command line: cluster ids without gaps, condor_q's
DAG row counting nodes, `jobledger dag status` of a failed DAG (nodes that never ran
included), and condor_submit_dag refusing to run a finished DAG again without -f
(HTCondor's dagman_utils.cpp, ensureOutputFilesExist)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.eventcore.errors import HTCondorException
from tests.pool.conftest import wait_until

BIN = Path(sys.executable).parent
TRUE = "executable = /bin/true\nqueue\n"
FALSE = "executable = /bin/false\nqueue\n"


def gated(gate: Path) -> str:
    return (f"executable = /bin/sh\narguments = \"-c 'while [ -e {gate} ]; do sleep 0.05; done'\"\n"
            "queue\n")


def command(pool, where: Path, *args, ok: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    done = subprocess.run([str(BIN / args[0]), *args[1:]], cwd=where, env=env, capture_output=True,
                          text=True, timeout=180)
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def submitted(done: subprocess.CompletedProcess) -> int:
    return int(done.stdout.split("submitted to cluster ")[1].split(".")[0])


def finished(pool, cluster: int) -> dict:
    def gone():
        if pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"]):
            return None
        return pool.schedd.history(f"ClusterId == {cluster}", ["ExitCode", "JobStatus"])
    return wait_until(gone, 120, what=f"DAGMan job {cluster} to finish")[0]


def test_cluster_ids_have_no_gaps_around_dags(pool, tmp_path):
    """HTCondor hands a DAG's node jobs the next ids as they are submitted: a plain job,
    a 4-node chain, a plain job, another DAG -- one id after the other."""
    (tmp_path / "true.sub").write_text(TRUE)
    (tmp_path / "chain.dag").write_text("JOB A true.sub\nJOB B true.sub\nJOB C true.sub\nJOB D true.sub\n"
                                        "PARENT A CHILD B\nPARENT B CHILD C\nPARENT C CHILD D\n")
    first = submitted(command(pool, tmp_path, "condor_submit", "true.sub"))
    dag = submitted(command(pool, tmp_path, "condor_submit_dag", "chain.dag"))
    assert finished(pool, dag)["ExitCode"] == 0
    after = submitted(command(pool, tmp_path, "condor_submit", "true.sub"))
    nodes = pool.schedd.history(f"DAGManJobId == {dag}", ["ClusterId", "DAGNodeName"])
    assert sorted((ad["ClusterId"], ad["DAGNodeName"]) for ad in nodes) == \
        [(dag + 1, "A"), (dag + 2, "B"), (dag + 3, "C"), (dag + 4, "D")]
    assert (dag, after) == (first + 1, dag + 5)
    again = submitted(command(pool, tmp_path, "condor_submit_dag", "-f", "chain.dag"))
    assert again == after + 1 and finished(pool, again)["ExitCode"] == 0
    assert submitted(command(pool, tmp_path, "condor_submit", "true.sub")) == again + 5


def batch_row(pool, where: Path, dag: int) -> list[str] | None:
    """condor_q -batch's row of the DAG's batch: [DONE, RUN, IDLE, HOLD, TOTAL] ("_" is 0)."""
    out = command(pool, where, "condor_q", "-batch", "-allusers").stdout
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("OWNER"))
    counts = 5 if " HOLD " in header else 4     # HOLD is shown only when a job is held
    for line in lines:
        if line.split()[1:2] == [f"w.dag+{dag}"]:
            cells = ["0" if c == "_" else c for c in line.split()[4:4 + counts]]
            return cells if counts == 5 else cells[:3] + ["0"] + cells[3:]
    return None


def test_condor_q_counts_a_dags_nodes(pool, tmp_path):
    """As HTCondor's condor_q: TOTAL and DONE are the DAG's nodes (the DAGMan job's
    DAG_NodesTotal and DAG_NodesDone), RUN/IDLE its node jobs -- not the DAGMan job."""
    gate = tmp_path / "gate"
    gate.touch()
    (tmp_path / "true.sub").write_text(TRUE)
    (tmp_path / "gated.sub").write_text(gated(gate))
    (tmp_path / "w.dag").write_text("JOB A true.sub\nJOB B gated.sub\nJOB C gated.sub\nJOB D true.sub\n"
                                    "PARENT B CHILD D\n")
    dag = submitted(command(pool, tmp_path, "condor_submit_dag", "w.dag"))
    try:
        def counted():
            row = batch_row(pool, tmp_path, dag)
            if row is None:
                return None
            done, running, idle, held, total = (int(c) for c in row)
            return done == 1 and total == 4 and running + idle == 2 and held == 0
        wait_until(counted, 120, what="the DAG row to count 1 of 4 nodes done and 2 node jobs queued")
        ad = pool.schedd.query(f"ClusterId == {dag}", ["DAG_NodesTotal", "DAG_NodesDone", "DAG_NodesQueued",
                                                       "DAG_NodesUnready", "DAG_Status"])[0]
        assert ad["DAG_NodesTotal"] == 4 and ad["DAG_Status"] == 0
    finally:
        gate.unlink()
    assert finished(pool, dag)["ExitCode"] == 0
    final = pool.schedd.history(f"ClusterId == {dag}", ["DAG_NodesTotal", "DAG_NodesDone", "DAG_NodesFailed"])[0]
    assert (final["DAG_NodesTotal"], final["DAG_NodesDone"], final["DAG_NodesFailed"]) == (4, 4, 0)


def test_dag_status_of_a_failed_dag_names_the_nodes_that_never_ran(pool, tmp_path):
    (tmp_path / "true.sub").write_text(TRUE)
    (tmp_path / "false.sub").write_text(FALSE)
    (tmp_path / "f.dag").write_text("JOB A false.sub\nJOB B true.sub\nJOB C true.sub\nJOB D true.sub\n"
                                    "PARENT A CHILD B\nPARENT B CHILD D\n")
    dag = submitted(command(pool, tmp_path, "condor_submit_dag", "f.dag"))
    assert finished(pool, dag)["ExitCode"] == 1
    shown = command(pool, tmp_path, "jobledger", "dag", "status", str(dag)).stdout.splitlines()
    assert shown[0] == f"DAG {dag} (f.dag+{dag}): Failed, exit code 1 (at least one node failed)"
    assert "2 node(s) never ran: B D" in shown
    never = [line.split() for line in shown if line.endswith("never ran") and line.startswith("  ")]
    assert [words[0] for words in never] == ["B", "D"]
    ran = {line.split()[0]: line.split()[2:] for line in shown if line.startswith("  ") and "never" not in line}
    assert ran == {"A": ["Completed", "exit", "1"], "C": ["Completed", "exit", "0"]}


def test_a_finished_dag_is_not_run_again_without_f(pool, tmp_path):
    (tmp_path / "true.sub").write_text(TRUE)
    (tmp_path / "once.dag").write_text("JOB A true.sub\n")
    dag = submitted(command(pool, tmp_path, "condor_submit_dag", "once.dag"))
    assert finished(pool, dag)["ExitCode"] == 0
    before = pool.schedd.query("true", ["ClusterId"])
    refused = command(pool, tmp_path, "condor_submit_dag", "once.dag", ok=False)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (
        'ERROR: "once.dag.condor.sub" already exists.\n'
        'ERROR: "once.dag.lib.out" already exists.\n'
        'ERROR: "once.dag.lib.err" already exists.\n'
        'ERROR: "once.dag.dagman.log" already exists.\n'
        "\nSome file(s) needed by condor_dagman already exist. Either:\n- Rename them\n"
        '- Use the "-f" option to force them to be overwritten\n\tor\n'
        '- Use the "-update_submit" option to update the submit file and continue.\n')
    jl = command(pool, tmp_path, "jobledger", "dag", "submit", "once.dag", ok=False)
    assert jl.returncode == 1 and 'ERROR: "once.dag.condor.sub" already exists.' in jl.stderr
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(HTCondorException, match="Unable to write condor_dagman output files"):
            htcondor.Submit.from_dag("once.dag")
    finally:
        os.chdir(old)
    assert pool.schedd.query("true", ["ClusterId"]) == before
    forced = submitted(command(pool, tmp_path, "condor_submit_dag", "-f", "once.dag"))
    assert finished(pool, forced)["ExitCode"] == 0
    assert len(pool.schedd.history(f"DAGManJobId == {forced}", ["ClusterId"])) == 1


def test_a_failed_dag_runs_its_rescue_dag_without_f(pool, tmp_path):
    """AutoRescue: the earlier run's files do not stop it; -f instead sets the rescue DAG
    aside (renamed .old) and runs every node again."""
    (tmp_path / "true.sub").write_text(TRUE)
    flag = tmp_path / "fail"
    flag.touch()
    (tmp_path / "maybe.sub").write_text(f"executable = /bin/sh\narguments = \"-c '! [ -e {flag} ]'\"\nqueue\n")
    (tmp_path / "r.dag").write_text("JOB A true.sub\nJOB B maybe.sub\nPARENT A CHILD B\n")
    dag = submitted(command(pool, tmp_path, "condor_submit_dag", "r.dag"))
    assert finished(pool, dag)["ExitCode"] == 1 and (tmp_path / "r.dag.rescue001").exists()
    flag.unlink()
    rescue = submitted(command(pool, tmp_path, "condor_submit_dag", "r.dag"))
    assert finished(pool, rescue)["ExitCode"] == 0
    names = [ad["DAGNodeName"] for ad in pool.schedd.history(f"DAGManJobId == {rescue}", ["DAGNodeName"])]
    assert names == ["B"]                       # A was DONE in the rescue DAG
    forced = submitted(command(pool, tmp_path, "condor_submit_dag", "-f", "r.dag"))
    assert finished(pool, forced)["ExitCode"] == 0
    assert (tmp_path / "r.dag.rescue001.old").exists() and not (tmp_path / "r.dag.rescue001").exists()
    names = sorted(ad["DAGNodeName"] for ad in pool.schedd.history(f"DAGManJobId == {forced}", ["DAGNodeName"]))
    assert names == ["A", "B"]
