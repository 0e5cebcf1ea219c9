"""DAGMan's decisions (eventcore.dagman.run), driven by hand: each language feature at run time."""

from __future__ import annotations

from jobledger.eventcore.dagman import parse_dag
from jobledger.eventcore.dagman.report import metrics, node_status_text, rescue_text
from jobledger.eventcore.dags.nodestatus import NodeStatus, parse_node_status
from jobledger.eventcore.dagman.run import (ABORTED, DONE, EXECUTE, FAILED, FUTILE, HELD, QUEUED, TERMINATED, DagRun,
                               RemoveJobs, RunScript, SubmitJob, Throttles)


def make(text: str, throttles: Throttles = Throttles()) -> DagRun:
    return DagRun(parse_dag("t.dag", lambda p: text.encode()), throttles)


class Driver:
    """Plays the DAGMan process: submits get cluster ids, jobs end as told."""

    def __init__(self, run: DagRun):
        self.run = run
        self.next_cluster = 100
        self.cluster_of: dict[str, int] = {}
        self.log: list = []

    def step(self, now: float = 0.0) -> list:
        actions = self.run.actions(now)
        for action in actions:
            self.log.append(action)
            if isinstance(action, SubmitJob):
                self.next_cluster += 1
                self.cluster_of[action.node] = self.next_cluster
                self.run.submitted(action.node, self.next_cluster, 1)
        return actions

    def submitted_nodes(self, actions) -> list[str]:
        return [a.node for a in actions if isinstance(a, SubmitJob)]

    def finish(self, node: str, code: int = 0, now: float = 0.0) -> None:
        cluster = self.cluster_of[node]
        self.run.job_event(cluster, 0, EXECUTE, now)
        self.run.job_event(cluster, 0, TERMINATED, now, code)


DIAMOND = "JOB A a\nJOB B b\nJOB C c\nJOB D d\nPARENT A CHILD B C\nPARENT B C CHILD D\n"


def test_diamond_runs_in_order_and_exits_zero():
    d = Driver(make(DIAMOND))
    assert d.submitted_nodes(d.step()) == ["A"]
    assert d.step() == []
    d.finish("A")
    assert sorted(d.submitted_nodes(d.step())) == ["B", "C"]
    d.finish("B")
    assert d.step() == []
    d.finish("C")
    assert d.submitted_nodes(d.step()) == ["D"]
    d.finish("D")
    d.step()
    assert d.run.exit_code == 0 and d.run.counts()[DONE] == 4


def test_retry_then_unless_exit_stops_retrying():
    d = Driver(make("JOB A a\nRETRY A 3 UNLESS-EXIT 7\n"))
    d.step()
    d.finish("A", 1)
    assert d.submitted_nodes(d.step()) == ["A"] and d.run.nodes["A"].retry == 1
    d.finish("A", 7)
    d.step()
    assert d.run.nodes["A"].status == FAILED and d.run.exit_code == 1


def test_failed_node_makes_descendants_futile_and_others_go_on():
    d = Driver(make("JOB A a\nJOB B b\nJOB C c\nJOB E e\nPARENT A CHILD B\nPARENT B CHILD C\n"))
    assert sorted(d.submitted_nodes(d.step())) == ["A", "E"]
    d.finish("A", 2)
    d.finish("E")
    d.step()
    assert [d.run.nodes[n].status for n in "ABCE"] == [FAILED, FUTILE, FUTILE, DONE]
    assert d.run.exit_code == 1 and d.run.status == 2
    text = rescue_text(d.run, "t.dag", "now")
    assert "DONE E" in text and "DONE A" not in text and "# Nodes that failed: 1" in text


def test_pre_script_pre_skip_and_post_script_decides():
    d = Driver(make("JOB A a\nJOB B b\nJOB C c\nSCRIPT PRE A pre $JOB $RETRY\nPRE_SKIP A 3\n"
                    "SCRIPT POST B post $RETURN $JOBID\nSCRIPT PRE C pre\n"))
    actions = d.step()
    scripts = [a for a in actions if isinstance(a, RunScript)]
    assert (scripts[0].node, scripts[0].kind, scripts[0].argv) == ("A", "PRE", ("pre", "A", "0"))
    assert d.submitted_nodes(actions) == ["B"]
    d.run.script_done("A", "PRE", 3, 0)        # PRE_SKIP: done, no job
    d.run.script_done("C", "PRE", 1, 0)        # PRE failed: node failed, no job
    d.finish("B", 5)
    post = [a for a in d.step() if isinstance(a, RunScript)]
    assert post[0].argv == ("post", "5", f"{d.cluster_of['B']}.0")
    d.run.script_done("B", "POST", 0, 0)       # POST exit 0 makes the node succeed
    d.step()
    assert [d.run.nodes[n].status for n in "ABC"] == [DONE, DONE, FAILED]
    assert "A" not in d.cluster_of


def test_defer_reruns_the_script_later():
    d = Driver(make("JOB A a\nSCRIPT DEFER 4 10 PRE A pre\n"))
    d.step(0)
    d.run.script_done("A", "PRE", 4, 0)
    assert d.step(5) == []
    assert [a.kind for a in d.step(10)] == ["PRE"]
    d.run.script_done("A", "PRE", 0, 10)
    assert d.submitted_nodes(d.step(10)) == ["A"]


def test_abort_dag_on_removes_jobs_runs_final_whose_success_is_the_dags():
    """HTCondor wins over the RETURN value here: a FINAL node that succeeds after ABORT-DAG-ON makes
    condor_dagman exit 0 (dag.cpp DoneSuccess; HTCondor's job_dagman_abort-final-B: RETURN 1, FINAL
    succeeds, "DAG is not expected to fail", DagStatus 5 in the node status file)."""
    d = Driver(make("JOB A a\nJOB B b\nJOB C c\nPARENT A CHILD C\nABORT-DAG-ON A 9 RETURN 5\nFINAL F f\n"
                    "SCRIPT POST F post $DAG_STATUS $FAILED_COUNT\n"))
    d.step()
    d.finish("A", 9)
    actions = d.step()
    assert RemoveJobs(d.cluster_of["B"], "ABORT-DAG-ON node A exited with 9") in actions
    assert d.submitted_nodes(actions) == [] and d.run.nodes["C"].status == FUTILE
    d.run.job_event(d.cluster_of["B"], 0, ABORTED, 0)      # FINAL waits for the removal
    assert d.submitted_nodes(d.step()) == ["F"]
    d.finish("F")
    post = [a for a in d.step() if isinstance(a, RunScript) and a.node == "F"]
    assert post[0].argv == ("post", "3", "2")     # A, and B (removed)
    d.run.script_done("F", "POST", 0, 0)
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.wants_rescue) == (0, 3, True)   # DAG_Status stays 3 (ABORT)
    assert 'DagStatus = 5; /* "STATUS_DONE (success)" */' in node_status_text(d.run, 5)


def test_abort_dag_on_without_final_returns_its_value_and_return_0_succeeds():
    d = Driver(make("JOB A a\nJOB B b\nABORT-DAG-ON A 9 RETURN 5\n"))
    d.step()
    d.finish("A", 9)
    d.step()
    d.run.job_event(d.cluster_of["B"], 0, ABORTED, 0)
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.wants_rescue) == (5, 3, True)
    assert 'DagStatus = 6; /* "STATUS_ERROR (aborted)" */' in node_status_text(d.run, 5)
    # RETURN 0: dag.cpp CheckForDagAbort leaves DAG_STATUS OK; DoneSuccess -> success, no rescue DAG
    d = Driver(make("JOB A a\nJOB B b\nABORT-DAG-ON A 9 RETURN 0\n"))
    d.step()
    d.finish("A", 9)
    d.step()
    d.run.job_event(d.cluster_of["B"], 0, ABORTED, 0)
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.wants_rescue) == (0, 0, False)
    assert 'DagStatus = 5; /* "STATUS_DONE (success)" */' in node_status_text(d.run, 5)


def test_abort_dag_on_then_a_failing_final_exits_1():
    """job_dagman_abort-final-A: RETURN 0, then the FINAL node fails: exit 1, DagStatus 6 (failed)."""
    d = Driver(make("JOB A a\nABORT-DAG-ON A 5 RETURN 0\nFINAL E e\n"))
    d.step()
    d.finish("A", 5)
    assert d.submitted_nodes(d.step()) == ["E"]
    d.finish("E", 1)
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.wants_rescue) == (1, 2, True)
    assert 'DagStatus = 6; /* "STATUS_ERROR (failed)" */' in node_status_text(d.run, 5)


def test_final_result_is_the_dags():
    """What HTCondor's DAGMan publishes when a node failed and the FINAL node then succeeded
    (dag.cpp, dagman_main.cpp at 7491a14; HTCondor's job_dagman_final-D and -L): exit 0
    (DoneSuccess(true) -> ExitSuccess), but DAG_STATUS stays 2 (NODE_FAILED: main_shutdown_rescue
    forced it and nothing resets it), so the DAG_Status attribute and the .metrics "DagStatus" say
    2 beside "exitcode" 0; the rescue DAG written before FINAL ran stays; the node status file
    says DagStatus 5 STATUS_DONE (success).  (LSST BPS therefore reads such a run FAILED by its
    id, from DAG_Status, and SUCCEEDED by its path, from the exit code: on HTCondor too.)"""
    d = Driver(make("JOB A a\nJOB B b\nFINAL F f\nSCRIPT PRE F pre $DAG_STATUS $FAILED_COUNT\n"))
    d.step()
    d.finish("A", 1)
    d.finish("B", 0)
    pre = [a for a in d.step() if isinstance(a, RunScript)]
    assert pre[0].argv == ("pre", "2", "1")
    d.run.script_done("F", "PRE", 0, 0)
    assert d.submitted_nodes(d.step()) == ["F"]
    d.finish("F", 0)
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.wants_rescue, d.run.succeeded()) == (0, 2, True, True)
    text = node_status_text(d.run, 5)
    assert 'DagStatus = 5; /* "STATUS_DONE (success)" */' in text
    assert "NodesDone = 2;" in text and "NodesFailed = 1;" in text
    data = metrics(d.run, dagman_id="7.0", start=1.0, end=2.0, rescue_number=0, version="25.14.1")
    assert (data["exitcode"], data["DagStatus"], data["nodes"], data["nodes_failed"], data["nodes_succeeded"],
            data["dagman_id"], data["has_final_node"]) == (0, 2, 3, 1, 2, "7", True)


def test_a_failing_final_node_fails_a_dag_that_had_succeeded():
    """job_dagman_final-K/ProcessJobProcEnd: the FINAL node's failure counts (DAG_STATUS 2, exit 1)."""
    d = Driver(make("JOB A a\nFINAL F f\n"))
    d.step()
    d.finish("A")
    assert d.submitted_nodes(d.step()) == ["F"]
    d.finish("F", 4)
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.failed_count, d.run.wants_rescue) == (1, 2, 1, True)


def test_a_halted_dag_runs_its_final_node_whose_success_is_the_dags():
    """job_dagman_final-I: halted with nothing running, DAGMan runs FINAL with DAG_STATUS 6; FINAL
    succeeds: exit 0, DagStatus 5 (success).  Without FINAL a halted DAG exits 1 with a rescue DAG."""
    d = Driver(make("JOB A a\nJOB B b\nPARENT A CHILD B\nFINAL F f\nSCRIPT PRE F pre $DAG_STATUS\n"))
    d.step()
    d.run.halt()
    d.finish("A")
    pre = [a for a in d.step() if isinstance(a, RunScript)]
    assert pre[0].argv == ("pre", "6") and d.run.nodes["B"].status != QUEUED
    d.run.script_done("F", "PRE", 0, 0)
    assert d.submitted_nodes(d.step()) == ["F"]
    d.finish("F")
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.wants_rescue) == (0, 6, True)
    assert 'DagStatus = 5; /* "STATUS_DONE (success)" */' in node_status_text(d.run, 5)
    d = Driver(make("JOB A a\nJOB B b\nPARENT A CHILD B\n"))
    d.step()
    d.run.halt()
    d.finish("A")
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.wants_rescue) == (1, 6, True)


def test_service_nodes_are_outside_the_counts_and_their_failure_fails_nothing():
    """dag.cpp Dag::Add keeps SERVICE nodes out of the node list (NodesTotal, the status file's
    node ads, DAG_NodesTotal); a failed SERVICE node is not counted (FAILED_COUNT, the exit) but
    sets DAG_STATUS 2 (Dag::SetStatus is called for it too)."""
    d = Driver(make("JOB A a\nSERVICE S s\n"))
    d.step()
    d.finish("S", 3)
    d.finish("A")
    d.step()
    assert (d.run.exit_code, d.run.status, d.run.failed_count) == (0, 2, 0)
    text = node_status_text(d.run, 5)
    assert 'Node = "S"' not in text and "NodesTotal = 1;" in text and d.run.counts()[DONE] == 1
    data = metrics(d.run, dagman_id="7.0", start=1.0, end=2.0, rescue_number=0, version="25.14.1")
    assert (data["nodes"], data["service_nodes"], data["service_nodes_failed"], data["total_nodes"],
            data["total_nodes_run"]) == (1, 1, 1, 2, 2)


def test_maxjobs_and_category_throttles_and_priority_order():
    text = ("JOB A a\nJOB B b\nJOB C c\nJOB D d\nPRIORITY D 10\nCATEGORY A slow\nCATEGORY B slow\n"
            "MAXJOBS slow 1\n")
    d = Driver(make(text, Throttles(max_jobs=2)))
    assert d.submitted_nodes(d.step()) == ["D", "A"]
    d.finish("D")
    assert d.submitted_nodes(d.step()) == ["C"]      # B waits: category slow is full
    d.finish("A")
    assert d.submitted_nodes(d.step()) == ["B"]


def test_maxidle_counts_idle_procs():
    d = Driver(make("JOB A a\nJOB B b\nJOB C c\n", Throttles(max_idle=1)))
    assert d.submitted_nodes(d.step()) == ["A"]
    d.run.job_event(d.cluster_of["A"], 0, EXECUTE, 0)
    assert d.submitted_nodes(d.step()) == ["B"]


def test_maxpre_limits_running_pre_scripts():
    d = Driver(make("JOB A a\nJOB B b\nSCRIPT PRE ALL_NODES pre\n", Throttles(max_pre=1)))
    assert [a.node for a in d.step()] == ["A"]
    d.run.script_done("A", "PRE", 0, 0)
    assert sorted((type(a).__name__, a.node) for a in d.step()) == [("RunScript", "B"), ("SubmitJob", "A")]


def test_noop_and_done_nodes_run_nothing():
    d = Driver(make("JOB A a NOOP\nJOB B b DONE\nJOB C c\nPARENT A B CHILD C\n"))
    assert d.submitted_nodes(d.step()) == ["C"]


def test_hold_script_runs_when_a_job_is_held():
    d = Driver(make("JOB A a\nSCRIPT HOLD A onhold $JOB\n"))
    d.step()
    d.run.job_event(d.cluster_of["A"], 0, HELD, 0)
    assert [a.argv for a in d.step()] == [("onhold", "A")]


def test_service_and_provisioner_go_first_and_are_removed_at_the_end():
    d = Driver(make("JOB A a\nSERVICE S s\nPROVISIONER P p\n"))
    assert sorted(d.submitted_nodes(d.step())) == ["P", "S"]
    d.run.job_event(d.cluster_of["P"], 0, EXECUTE, 0)
    assert d.submitted_nodes(d.step()) == ["A"]
    d.finish("A")
    removed = {a.cluster for a in d.step() if isinstance(a, RemoveJobs)}
    assert removed == {d.cluster_of["P"], d.cluster_of["S"]} and d.run.exit_code == 0


def test_recovery_adopts_known_clusters_and_submits_only_the_rest():
    run = make(DIAMOND)
    run.adopt("A", 7, 0)
    run.adopt("B", 8, 0)
    run.adopt("B", 9, 1)                   # B's second attempt is the current one
    assert run.actions(0) == []
    run.job_event(7, 0, TERMINATED, 0, 0)
    assert run.actions(0) == [SubmitJob("C", 0)]
    run.job_event(8, 0, TERMINATED, 0, 1)  # the old attempt's event changes nothing
    assert run.nodes["B"].status == QUEUED and run.nodes["B"].retry == 1


def test_reports_metrics_and_node_status():
    d = Driver(make(DIAMOND))
    for node in ("A", "B", "C", "D"):
        d.step()
        if node in d.cluster_of:
            d.finish(node)
    d.step()
    d.finish("D")
    d.step()
    data = metrics(d.run, dagman_id="3.0", start=1.0, end=3.5, rescue_number=0, version="x")
    assert list(data) == [      # dagman_metrics.cpp DagmanMetricsV2::Report's keys, in its order
        "client", "version", "type", "metrics_version", "start_time", "end_time", "duration", "exitcode",
        "dagman_id", "parent_dagman_id", "rescue_dag_number", "has_final_node", "nodes", "nodes_failed",
        "nodes_succeeded", "dag_nodes", "dag_nodes_failed", "dag_nodes_succeeded", "provisioner_nodes",
        "service_nodes", "service_nodes_failed", "service_nodes_succeeded", "total_nodes", "total_nodes_run",
        "jobs_submitted", "jobs_succeeded", "jobs_failed", "DagStatus"]
    assert (data["nodes"], data["nodes_succeeded"], data["exitcode"], data["duration"], data["DagStatus"]) == (
        4, 4, 0, 2.5, 0)
    assert (data["jobs_submitted"], data["jobs_succeeded"], data["jobs_failed"], data["dagman_id"]) == (4, 4, 0, "3")
    assert 'Node = "D";' in node_status_text(d.run, 5) and "NodesDone = 4;" in node_status_text(d.run, 5)


def test_the_node_status_file_dagman_writes_reads_back_with_htcondor_dags_reader():
    """The runner's NODE_STATUS_FILE and the htcondor.dags reader share one numbering."""
    d = Driver(make(DIAMOND))
    d.step()
    d.finish("A")
    d.step()                                  # B and C submitted, D waits
    report = parse_node_status(node_status_text(d.run, 7), "status")
    assert report.complete and report.end_time == 7
    assert report.nodes["A"].status == NodeStatus.DONE
    assert {report.nodes["B"].status, report.nodes["C"].status} == {NodeStatus.SUBMITTED}
    assert report.nodes["D"].status == NodeStatus.NOT_READY
    assert "STATUS_SUBMITTED" in node_status_text(d.run, 7)


def test_recovery_takes_a_recorded_post_result_and_runs_an_unrecorded_post_again():
    """Recovery replays the nodes log: A's job terminated and its POST_SCRIPT_TERMINATED event
    is there (POST does not run again; its exit code 0 frees C); B's job terminated but its
    POST never finished (it runs again)."""
    run = make("JOB A a\nJOB B b\nJOB C c\nSCRIPT POST A p.sh\nSCRIPT POST B p.sh $RETURN\n"
               "PARENT A B CHILD C\n")
    run.adopt("A", 7, 0)
    run.adopt("B", 8, 0)
    run.job_event(7, 0, TERMINATED, 0.0, 0)
    run.job_event(8, 0, TERMINATED, 0.0, 3)
    run.post_script_recorded("A", 7, 0, 0.0)
    run.post_script_recorded("B", 99, 0, 0.0)          # another attempt's job: not this one's
    actions = run.actions(0.0)
    assert actions == [RunScript("B", "POST", ("p.sh", "3"))]
    assert run.nodes["A"].status == DONE and run.nodes["C"].waiting_on == 1
    run.script_done("B", "POST", 0, 0.0)
    assert [a.node for a in run.actions(0.0) if isinstance(a, SubmitJob)] == ["C"]
    run.post_script_recorded("B", 8, 0, 0.0)          # read back after the fact: nothing changes
    assert run.nodes["B"].status == DONE and run.running_scripts["POST"] == 0


def test_a_recorded_failing_post_retries_the_node():
    run = make("JOB A a\nSCRIPT POST A p.sh\nRETRY A 1\n")
    run.adopt("A", 7, 0)
    run.job_event(7, 0, TERMINATED, 0.0, 0)
    run.post_script_recorded("A", 7, 2, 0.0)
    assert [a.node for a in run.actions(0.0) if isinstance(a, SubmitJob)] == ["A"]
    assert run.nodes["A"].retry == 1


def test_node_status_file_is_htcondors_layout_while_running():
    """NODE_STATUS_FILE as HTCondor's DAGMan writes it (dag.cpp, DumpNodeStatus, htcondor/htcondor
    7491a14), the file LSST BPS's report reads with classad.parseAds: DagFiles, the DAG's state in
    node-status numbers with its note, JobProcsHeld/JobProcsIdle, per node JobProcsQueued and
    JobProcsHeld, and NextUpdate in the end ad."""
    import time
    d = Driver(make(DIAMOND))
    d.step()
    d.finish("A")
    d.step()                                  # B and C submitted (idle), D waits
    d.run.job_event(d.cluster_of["C"], 0, EXECUTE, 0.0)
    text = node_status_text(d.run, 1000, ("t.dag",), 30)
    when = time.ctime(1000)
    assert text == f'''[
  Type = "DagStatus";
  DagFiles = {{
    "t.dag"
  }};
  Timestamp = 1000; /* "{when}" */
  DagStatus = 3; /* "STATUS_SUBMITTED ()" */
  NodesTotal = 4;
  NodesDone = 1;
  NodesPre = 0;
  NodesQueued = 2;
  NodesPost = 0;
  NodesReady = 0;
  NodesUnready = 1;
  NodesFutile = 0;
  NodesFailed = 0;
  JobProcsHeld = 0;
  JobProcsIdle = 1; /* includes held */
]
[
  Type = "NodeStatus";
  Node = "A";
  NodeStatus = 5; /* "STATUS_DONE" */
  StatusDetails = "";
  RetryCount = 0;
  JobProcsQueued = 0;
  JobProcsHeld = 0;
]
[
  Type = "NodeStatus";
  Node = "B";
  NodeStatus = 3; /* "STATUS_SUBMITTED" */
  StatusDetails = "idle";
  RetryCount = 0;
  JobProcsQueued = 1;
  JobProcsHeld = 0;
]
[
  Type = "NodeStatus";
  Node = "C";
  NodeStatus = 3; /* "STATUS_SUBMITTED" */
  StatusDetails = "not_idle";
  RetryCount = 0;
  JobProcsQueued = 1;
  JobProcsHeld = 0;
]
[
  Type = "NodeStatus";
  Node = "D";
  NodeStatus = 0; /* "STATUS_NOT_READY" */
  StatusDetails = "";
  RetryCount = 0;
  JobProcsQueued = 0;
  JobProcsHeld = 0;
]
[
  Type = "StatusEnd";
  EndTime = 1000; /* "{when}" */
  NextUpdate = 1030; /* "{time.ctime(1030)}" */
]
'''
    report = parse_node_status(text, "status")
    assert report.complete and report.nodes["B"].status == NodeStatus.SUBMITTED


def test_node_status_file_of_a_failed_dag_says_why_each_node_failed():
    d = Driver(make("JOB A a\nJOB B b\nJOB C c\nJOB E e\nPARENT A CHILD B\nPARENT B CHILD C\n"))
    d.step()
    d.finish("A", 2)
    d.finish("E")
    d.step()
    text = node_status_text(d.run, 5)
    assert 'DagStatus = 6; /* "STATUS_ERROR (failed)" */' in text
    assert f'StatusDetails = "Job proc ({d.cluster_of["A"]}.0.0) failed with status 2";' in text
    assert text.count('StatusDetails = "Had an ancestor node fail";') == 2
    assert "NodesFutile = 2;\n  NodesFailed = 1;" in text
    assert text.endswith('  NextUpdate = 0; /* "none" */\n]\n')
    report = parse_node_status(text, "status")
    assert report.nodes["A"].status == NodeStatus.ERROR and report.nodes["E"].status == NodeStatus.DONE


def test_node_status_file_when_every_node_is_done():
    d = Driver(make("JOB A a\n"))
    d.step()
    d.finish("A")
    d.step()
    assert 'DagStatus = 5; /* "STATUS_DONE (success)" */' in node_status_text(d.run, 5)
