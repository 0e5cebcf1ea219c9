"""Recovery from the nodes log, as HTCondor's DAGMan does it (Dag::Bootstrap in recovery
mode): a DAGMan that finds its lock file, or is given -DoRecov, reads the nodes log from
the start and takes each node's job from the ``DAG Node: NAME`` of its submit event, so a
new DAGMan job for the same DAG runs again nothing that already ran.  A run that does not
recover starts the nodes log empty (HTCondor truncates it), so a later recovery reads that
run's events only."""

from __future__ import annotations

from tests.dag.test_dagman import run_dag, script, write

FOREIGN = ("000 ({cluster}.000.000) 2024-01-01 00:00:00 Job submitted from host: <10.0.0.1:9618>\n"
           "    DAG Node: FAKE{i}\n...\n")


def _node(tmp_path, code=0):
    script(tmp_path / "node.sh", f'echo "$1" >> {tmp_path}/runs.txt\nexit {code}\n')
    write(tmp_path / "node.sub", f"executable = {tmp_path}/node.sh\narguments = $(JOB)\nqueue\n")


def _runs(tmp_path) -> list[str]:
    path = tmp_path / "runs.txt"
    return path.read_text().split() if path.exists() else []


DAG = "JOB A node.sub\nJOB B node.sub\nJOB C node.sub\nPARENT A CHILD B\nPARENT B CHILD C\n"


def test_dorecov_reads_the_nodes_log_and_runs_nothing_again(pool, tmp_path):
    _node(tmp_path)
    _, ad = run_dag(pool, tmp_path, DAG)
    assert ad["ExitCode"] == 0 and _runs(tmp_path) == ["A", "B", "C"]
    log = tmp_path / "d.dag.nodes.log"
    theirs = "".join(FOREIGN.format(cluster=900000 + i, i=i) for i in range(50))
    with open(log, "a") as f:          # another writer's events, of no node of this DAG
        f.write(theirs)
    _, ad = run_dag(pool, tmp_path, DAG, {"DoRecov": True, "force": True})
    out = (tmp_path / "d.dag.dagman.out").read_text()
    assert ad["ExitCode"] == 0, out[-3000:]
    assert _runs(tmp_path) == ["A", "B", "C"]              # nothing ran again
    assert "Running in recovery mode because -DoRecovery flag was specified" in out
    assert "Running in RECOVERY mode... >>>" in out and "...done with RECOVERY mode <<<" in out
    assert "Event: ULOG_SUBMIT for unknown Node (900000.0.0) {01/01/24 00:00:00}: ignoring... " \
           "[recovery mode]" in out
    assert "Event: ULOG_JOB_TERMINATED for HTCondor Node C (" in out
    assert theirs in log.read_text()                       # the other writer's events stay


def test_recovery_keeps_the_retries_a_node_used(pool, tmp_path):
    _node(tmp_path, code=3)
    dag = "JOB A node.sub\nRETRY A 2\nJOB B node.sub\nPARENT A CHILD B\n"
    _, ad = run_dag(pool, tmp_path, dag)
    assert ad["ExitCode"] == 1 and _runs(tmp_path) == ["A", "A", "A"]
    _, ad = run_dag(pool, tmp_path, dag, {"DoRecov": True, "force": True})
    out = (tmp_path / "d.dag.dagman.out").read_text()
    assert ad["ExitCode"] == 1, out[-3000:]                # A failed its last retry: as before
    assert _runs(tmp_path) == ["A", "A", "A"]


def test_a_run_that_does_not_recover_starts_the_nodes_log_empty(pool, tmp_path):
    _node(tmp_path)
    run_dag(pool, tmp_path, DAG)
    log = tmp_path / "d.dag.nodes.log"
    first = log.read_text()
    _, ad = run_dag(pool, tmp_path, DAG, {"force": True})
    assert ad["ExitCode"] == 0 and _runs(tmp_path) == ["A", "B", "C"] * 2
    second = log.read_text()
    assert second.count('DAGNodeName = "A"') == 1 and second.count("Job terminated.\n") == 3
    assert first not in second
    assert f"MultiLogFiles: truncating log file {log}" in (tmp_path / "d.dag.dagman.out").read_text()


def test_a_node_whose_job_the_schedd_never_had_is_lost_track_of(pool, tmp_path):
    """The log says RECOVERY's job 999 was submitted, the schedd knows no such job of this
    DAGMan: HTCondor's VerifyJobsInQueue gives up with a rescue DAG and exit 1."""
    _node(tmp_path)
    write(tmp_path / "d.dag.nodes.log",
          "000 (999.000.000) 2024-03-27 12:20:00 Job submitted from host: <10.0.0.1:9618>\n"
          "    DAG Node: RECOVERY\n...\n")
    _, ad = run_dag(pool, tmp_path, "JOB RECOVERY node.sub\nJOB AFTER node.sub\nPARENT RECOVERY CHILD AFTER\n",
                    {"DoRecov": True})
    out = (tmp_path / "d.dag.dagman.out").read_text()
    assert ad["ExitCode"] == 1, out[-3000:]
    assert "1 nodes claim to have jobs submitted to queue. Verifying..." in out
    assert "ERROR: DAGMan lost track of node RECOVERY (ClusterId=999). Please resubmit DAG from " \
           "produced rescue file." in out
    assert (tmp_path / "d.dag.rescue001").exists() and _runs(tmp_path) == []
