"""How a job came to the queue (JobSubmitMethod) and what DAGMan's job takes from its submitter.

Against a real pool, with the commands run as a user runs them:

- condor_submit records JobSubmitMethod 0; condor_submit_dag's DAGMan job 0 as well
  (HTCondor's hands its .condor.sub to condor_submit); a node job DAGMan submits
  directly 1, and one it submits through condor_submit (``-SubmitMethod 0``) 0;
- the DAG's ``ENV GET`` names come from condor_submit_dag's environment and
  ``ENV SET`` pairs are set, so ``$ENV()`` in a node's description sees both;
- the DAGMan job is submitted without a batch name, so its SUBMIT event carries
  no structured notes; DAGMan names the batch (``<dag>+<cluster>``) when it starts;
- ``DAGMAN_DEBUG = D_PID D_CAT D_TEST`` puts ``(pid:N)`` and the line's category after the
  time of each dagman.out line, and DAGMan's D_TEST checks of its categories in;
- DAGMAN_INHERIT_ATTRS passes the DAGMan job's attributes on to its node jobs under
  DAGMAN_INHERIT_ATTRS_PREFIX's name, through a SUBDAG EXTERNAL to its nodes too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import jobledger as htcondor
from jobledger.daemons.dagman.process import inherited
from jobledger.tracking.jobeventlog import JobEventLog
from tests.pool.conftest import running_pool, wait_until

BIN = os.path.dirname(sys.executable)
NODE = 'executable = /bin/true\nMy.Case = "$ENV(DAG_CASE)"\nMy.FromSet = "$ENV(FROM_SET)"\nqueue\n'
DAG = f"""ENV GET DAG_CASE
ENV SET FROM_SET=seven
JOB A a.sub
JOB B @=desc
{NODE}@desc
PARENT A CHILD B
"""


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, DAGMAN_DEBUG="D_PID D_CAT D_TEST", DAGMAN_INHERIT_ATTRS="Color, Size",
                            DAGMAN_INHERIT_ATTRS_PREFIX="Orig_")


def command(pool, *argv, cwd, **env):
    environ = {**os.environ, "CONDOR_CONFIG": str(pool.config_file), **env}
    done = subprocess.run([os.path.join(BIN, argv[0]), *argv[1:]], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done
    return int(re.search(r"submitted to cluster (\d+)\.", done.stdout).group(1))


def finished(pool, constraint, count):
    rows = pool.schedd.history(constraint, ["ClusterId", "JobSubmitMethod", "DAGNodeName", "Case", "FromSet",
                                            "JobBatchName", "ExitCode"])
    return rows if len(rows) == count else None


def run_dag(pool, directory, case, *flags):
    directory.mkdir()
    (directory / "a.sub").write_text(NODE)
    (directory / "d.dag").write_text(DAG)
    cluster = command(pool, "condor_submit_dag", *flags, "d.dag", cwd=directory, DAG_CASE=case)
    wait_until(lambda: finished(pool, f"ClusterId == {cluster}", 1), 120, what="the DAGMan job to finish")
    nodes = wait_until(lambda: finished(pool, f"DAGManJobId == {cluster}", 2), 30, what="the node jobs")
    dagman = finished(pool, f"ClusterId == {cluster}", 1)[0]
    return cluster, dagman, sorted(nodes, key=lambda ad: ad["DAGNodeName"])


def test_condor_submit_records_method_0(pool, tmp_path):
    (tmp_path / "job.sub").write_text("executable = /bin/true\nqueue 2\n")
    cluster = command(pool, "condor_submit", "job.sub", cwd=tmp_path)
    # each job in the queue or, once it has left, in the history (one may leave between the
    # two reads: it is then in both, the same ad)
    wanted = f"ClusterId == {cluster}", ["ProcId", "JobSubmitMethod"]
    ads = pool.schedd.query(*wanted) + pool.schedd.history(*wanted)
    assert {ad["ProcId"]: ad["JobSubmitMethod"] for ad in ads} == {0: 0, 1: 0}


@pytest.mark.parametrize("flags, node_method", [((), 1), (("-SubmitMethod", "0"), 0)],
                         ids=["direct", "condor_submit"])
def test_dag_submit_methods_and_environment(pool, tmp_path, flags, node_method):
    directory = tmp_path / "dag"
    cluster, dagman, nodes = run_dag(pool, directory, f"case-{node_method}", *flags)
    assert dagman["ExitCode"] == 0 and dagman["JobSubmitMethod"] == 0
    assert [ad["DAGNodeName"] for ad in nodes] == ["A", "B"]
    for ad in nodes:
        assert ad["JobSubmitMethod"] == node_method
        assert ad["Case"] == f"case-{node_method}"        # ENV GET, from condor_submit_dag's environment
        assert ad["FromSet"] == "seven"                   # ENV SET
        assert ad["JobBatchName"] == f"d.dag+{cluster}"
    # DAGMan named its own batch; its SUBMIT event, written before, has no structured notes
    assert dagman["JobBatchName"] == f"d.dag+{cluster}"
    submit = next(iter(JobEventLog(str(directory / "d.dag.dagman.log")).events(stop_after=0)))
    assert int(submit.type) == 0 and "StructuredNotes" not in submit.keys()
    # condor_submit's temporary file for the inline description is gone
    assert not list(directory.glob("*-inline.*.temp"))
    out = (directory / "d.dag.dagman.out").read_text()
    if node_method == 0:
        assert "Submitting HTCondor Node B job(s)" in out


def test_dagman_debug_d_pid_heads_each_line(pool, tmp_path):
    directory = tmp_path / "dag"
    run_dag(pool, directory, "pid")
    lines = (directory / "d.dag.dagman.out").read_text().splitlines()
    pid = int(next(re.search(r"\*\* PID = (\d+)", line).group(1) for line in lines if "** PID = " in line))
    head = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d \(pid:(\d+)\) \(D_ALWAYS\) ")
    assert lines and all(head.match(line) and int(head.match(line).group(1)) == pid for line in lines)


def test_dagman_checks_its_categories_in_d_test_lines(pool, tmp_path):
    directory = tmp_path / "dag"
    directory.mkdir()
    (directory / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (directory / "s.dag").write_text("JOB X a.sub\nCATEGORY X LOCAL\n")
    (directory / "d.dag").write_text("JOB A a.sub\nJOB B a.sub\nCATEGORY A BIG\nCATEGORY B BIG\nMAXJOBS BIG 1\n"
                                     "MAXJOBS EMPTY 2\nSPLICE S s.dag\n")
    cluster = command(pool, "condor_submit_dag", "d.dag", cwd=directory)
    wait_until(lambda: finished(pool, f"ClusterId == {cluster}", 1), 120, what="the DAGMan job to finish")
    out = (directory / "d.dag.dagman.out").read_text()
    checks = re.findall(r"\(D_TEST\) CHECK CATEGORY (\S+) (\d+) (-?\d+)\n", out)
    assert checks == [("BIG", "2", "1"), ("EMPTY", "0", "2"), ("S+LOCAL", "1", "-1")]
    assert "(D_ALWAYS) Warning: category EMPTY has no assigned nodes" in out
    assert "(D_ALWAYS) Warning: category S+LOCAL has no throttle value set" in out


def test_inherit_attrs_reach_nodes_and_a_sub_dags_nodes(pool, tmp_path):
    (tmp_path / "top.dag").write_text("JOB A a.sub\nSUBDAG EXTERNAL B sub.dag\n")
    (tmp_path / "sub.dag").write_text("JOB C a.sub\n")
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        description = htcondor.Submit.from_dag("top.dag")
        description["My.Color"] = '"red"'
        cluster = pool.schedd.submit(description).cluster()
    finally:
        os.chdir(old)
    wait_until(lambda: finished(pool, f"ClusterId == {cluster}", 1), 120, what="the DAGMan job to finish")
    rows = wait_until(lambda: pool.schedd.history("Orig_Color =!= undefined", ["DAGNodeName", "Orig_Color", "Orig_Size"])
                      if len(pool.schedd.history("Orig_Color =!= undefined", ["ClusterId"])) == 3 else None,
                      30, what="the three node jobs")
    assert sorted(ad["DAGNodeName"] for ad in rows) == ["A", "B", "C"]
    assert all(ad["Orig_Color"] == "red" and "Orig_Size" not in ad for ad in rows)   # Size: not in the ad


def test_inherited_reads_the_prefixed_name_in_a_sub_dag():
    top = {"Color": '"red"', "Size": "3"}
    assert inherited(top, ["color", "Weight"], "Orig_") == {"Orig_color": '"red"'}
    sub = {"DAGManJobId": "7", "Orig_Color": '"red"', "Color": '"blue"'}
    assert inherited(sub, ["Color"], "Orig_") == {"Orig_Color": '"red"'}
    assert inherited({"Color": "1"}, ["Color"], "") == {"Color": "1"}


@pytest.mark.parametrize("always", [True, False], ids=["always_run_post", "default"])
def test_always_run_post_after_a_failed_pre(pool, tmp_path, always):
    """DAGMAN_ALWAYS_RUN_POST (here from condor_submit_dag's environment, which the DAGMan job
    takes through its _CONDOR_* getenv): a failed PRE skips the job and runs POST with $RETURN
    -1004 and $PRE_SCRIPT_RETURN the PRE's code; POST's success makes the node succeed."""
    (tmp_path / "pre.sh").write_text("#!/bin/sh\nexit 3\n")
    (tmp_path / "post.sh").write_text('#!/bin/sh\necho "$1 $2" > post.args\nexit 0\n')
    for name in ("pre.sh", "post.sh"):
        (tmp_path / name).chmod(0o755)
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "d.dag").write_text("JOB A a.sub\nSCRIPT PRE A pre.sh\nSCRIPT POST A post.sh $RETURN $PRE_SCRIPT_RETURN\n")
    env = {"_CONDOR_DAGMAN_ALWAYS_RUN_POST": "True"} if always else {}
    cluster = command(pool, "condor_submit_dag", "d.dag", cwd=tmp_path, **env)
    dagman = wait_until(lambda: finished(pool, f"ClusterId == {cluster}", 1), 120, what="the DAGMan job")[0]
    assert not pool.schedd.history(f"DAGManJobId == {cluster}", ["ClusterId"])      # the job never ran
    if always:
        assert dagman["ExitCode"] == 0 and (tmp_path / "post.args").read_text() == "-1004 3\n"
    else:
        assert dagman["ExitCode"] == 1 and not (tmp_path / "post.args").exists()
