"""A DAG in the form LSST BPS's HTCondor plugin writes (ctrl_bps_htcondor's HTCDag.write, read at
lsst/ctrl_bps_htcondor 793c5bc): CONFIG, quoted submit files under jobs/<label>/, RETRY ...
UNLESS-EXIT, DOT, NODE_STATUS_FILE, SET_JOB_ATTR bps_*= "...", FINAL; submit files with
+bps_* attributes.  Run on a real pool; the files BPS's report reads are pinned here in
HTCondor's layout (the node status file as condor_dagman's dag.cpp writes it).

HTCondor wins over BPS here: BPS ties a nodes-log job to its node by the SUBMIT event's
"DAG Node: NAME" notes line, which HTCondor 25's schedd (condor_event.cpp) writes as the
structured notes ad ``[ DAGNodeName = "NAME"; JobBatchName = "..." ]`` instead; BPS's reader
then gives those nodes placeholder ids, on HTCondor 25 as here.
"""

from __future__ import annotations

import json
import re

from jobledger.v1 import classad
from tests.dag.test_dagman import run_dag, script, write

SUBMIT = """universe = vanilla
executable = {run}
arguments = {code}
output = {name}.$(Cluster).out
error = {name}.$(Cluster).err
log = {name}.$(Cluster).log
request_memory = 64
+bps_job_name = "{name}"
+bps_job_label = "{label}"
+bps_job_quanta = "{label}:1"
queue
"""

JOBS = [("pipetaskInit", "pipetaskInit", 0), ("cal_ok", "calibrate", 0), ("cal_bad", "calibrate", 3),
        ("finalJob", "finalJob", 0)]


def bps_dag(directory) -> str:
    run = script(directory / "run.sh", "exit $1\n")
    for name, label, code in JOBS:
        (directory / "jobs" / label).mkdir(parents=True, exist_ok=True)
        write(directory / "jobs" / label / f"{name}.sub", SUBMIT.format(run=run, code=code, name=name, label=label))
    write(directory / "bps.dag.config", "DAGMAN_MAX_JOBS_IDLE = 100\n")
    return ('CONFIG bps.dag.config\n'
            'JOB pipetaskInit "jobs/pipetaskInit/pipetaskInit.sub"\n'
            'JOB cal_ok "jobs/calibrate/cal_ok.sub"\n'
            'JOB cal_bad "jobs/calibrate/cal_bad.sub"\n'
            'RETRY cal_bad 1 UNLESS-EXIT 2\n'
            'PARENT pipetaskInit CHILD cal_ok\nPARENT pipetaskInit CHILD cal_bad\n'
            'DOT u_run1.dot\nNODE_STATUS_FILE u_run1.node_status\n'
            'SET_JOB_ATTR bps_run= "u_run1"\nSET_JOB_ATTR bps_isjob= "True"\n'
            'SET_JOB_ATTR bps_job_summary= "pipetaskInit:1;calibrate:2;finalJob:1"\n'
            'FINAL finalJob "jobs/finalJob/finalJob.sub"\n')


def test_bps_style_dag_leaves_the_files_bps_reads(pool, tmp_path):
    cluster, ad = run_dag(pool, tmp_path, bps_dag(tmp_path), name="u_run1.dag")
    assert ad["ExitCode"] == 0           # the FINAL node decides the DAG's exit code

    # NODE_STATUS_FILE: parseAds reads it; HTCondor's attributes, in its order
    with open(tmp_path / "u_run1.node_status") as fh:
        ads = list(classad.parseAds(fh))
    assert [a["Type"] for a in ads] == ["DagStatus"] + ["NodeStatus"] * 4 + ["StatusEnd"]
    text = (tmp_path / "u_run1.node_status").read_text()
    blocks = [re.findall(r"^  (\w+) = ", block, re.M) for block in text.split("\n]\n")[:-1]]
    assert blocks[0] == ["Type", "DagFiles", "Timestamp", "DagStatus", "NodesTotal", "NodesDone",
                                   "NodesPre", "NodesQueued", "NodesPost", "NodesReady", "NodesUnready",
                                   "NodesFutile", "NodesFailed", "JobProcsHeld", "JobProcsIdle"]
    # the FINAL node succeeded after cal_bad failed: HTCondor's DAGMan calls that a success in the
    # node status file (dag.cpp DumpNodeStatus -> DoneSuccess(true); its job_dagman_final-L test)
    assert (ads[0]["DagStatus"], ads[0]["NodesDone"], ads[0]["NodesFailed"], ads[0]["NodesTotal"]) == (5, 3, 1, 4)
    nodes = {a["Node"]: a for a in ads[1:-1]}
    assert list(nodes) == ["pipetaskInit", "cal_ok", "cal_bad", "finalJob"]
    assert all(names == ["Type", "Node", "NodeStatus", "StatusDetails", "RetryCount", "JobProcsQueued",
                         "JobProcsHeld"] for names in blocks[1:-1])
    assert blocks[-1] == ["Type", "EndTime", "NextUpdate"]
    assert (nodes["cal_bad"]["NodeStatus"], nodes["cal_bad"]["RetryCount"]) == (6, 1)
    assert re.fullmatch(r"Job proc \(\d+\.0\.0\) failed with status 3", nodes["cal_bad"]["StatusDetails"])
    assert ads[-1]["NextUpdate"] == 0
    assert re.search(r'\n  DagStatus = 5; /\* "STATUS_DONE \(success\)" \*/\n', text)
    assert re.search(r'\n  Timestamp = \d+; /\* "\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}" \*/\n', text)

    # the nodes log: every node's SUBMIT event names it (HTCondor 25's structured notes)
    log = (tmp_path / "u_run1.dag.nodes.log").read_text()
    for name, _, _ in JOBS:
        assert re.search(rf'\) \S+ \S+ Job submitted from host: <[^>]+>\n    \[ DAGNodeName = "{name}"; '
                         rf'JobBatchName = "u_run1\.dag\+{cluster}" \]\n', log), name

    # SET_JOB_ATTR goes into the DAGMan job's own ad (where BPS's report finds bps_run and the
    # job summary); the submit files' +bps_* attributes into the node jobs'
    dagman = pool.schedd.history(f"ClusterId == {cluster}", ["bps_run", "bps_isjob", "bps_job_summary",
                                                               "DAG_Status", "DAG_NodesFailed", "DAG_NodesDone"])[0]
    assert (dagman["bps_run"], dagman["bps_isjob"], dagman["bps_job_summary"]) == (
        "u_run1", "True", "pipetaskInit:1;calibrate:2;finalJob:1")
    # ... and DAG_Status stays 2 (NODE_FAILED) beside ExitCode 0, as HTCondor's DAGMan leaves it
    # (main_shutdown_rescue forces it before FINAL runs, nothing resets it): BPS's report by id
    # reads DAG_Status and says FAILED, by path it reads the exit code and says SUCCEEDED
    assert (dagman["DAG_Status"], dagman["DAG_NodesFailed"], dagman["DAG_NodesDone"]) == (2, 1, 3)
    jobs = pool.schedd.history(f"DAGManJobId == {cluster}", ["DAGNodeName", "bps_job_label", "bps_job_name"])
    assert {(j["DAGNodeName"], j["bps_job_label"]) for j in jobs} >= {
        ("pipetaskInit", "pipetaskInit"), ("cal_ok", "calibrate"), ("cal_bad", "calibrate"), ("finalJob", "finalJob")}

    # the DAGMan job runs condor_dagman: BPS's report finds it by regexp("dagman$", Cmd)
    found = pool.schedd.history(f'regexp("dagman$", Cmd) && ClusterId == {cluster}', ["ClusterId", "Cmd"])
    assert [j["ClusterId"] for j in found] == [cluster] and found[0]["Cmd"].endswith("/condor_dagman")

    # the rescue DAG names the done nodes; the metrics count the jobs
    rescue = (tmp_path / "u_run1.dag.rescue001").read_text()
    assert "# Nodes that failed: 1\n#   cal_bad,<ENDLIST>\n" in rescue
    assert {line for line in rescue.splitlines() if line.startswith("DONE ")} == {"DONE pipetaskInit", "DONE cal_ok"}
    data = json.loads((tmp_path / "u_run1.dag.metrics").read_text())
    assert (data["nodes"], data["nodes_failed"], data["nodes_succeeded"], data["dagman_id"]) == (4, 1, 3, str(cluster))
    assert (data["exitcode"], data["DagStatus"], data["jobs_submitted"], data["jobs_succeeded"]) == (0, 2, 5, 5)


def test_bps_style_service_and_subdag_nodes_leave_htcondors_files(pool, tmp_path):
    """BPS's other node kinds (ctrl_bps_htcondor's HTCDag.write): a SERVICE node (its provisioning
    job), a SUBDAG EXTERNAL node under subdags/<name>/ with its own NODE_STATUS_FILE (where BPS's
    read_node_status and read_dag_status look: subdags/*/*.node_status), and FINAL.  As HTCondor's
    DAGMan (dag.cpp Dag::Add, RemoveServiceNodes; dagman_metrics.cpp V2): the SERVICE node is in no
    node count nor the node status file -- BPS finds it in the nodes log -- it is removed once the
    rest is done and counts as a succeeded service node in the metrics; the SUBDAG counts as a
    dag node; the run succeeds with DAG_Status 0."""
    run = script(tmp_path / "run.sh", "exit 0\n")
    (tmp_path / "jobs" / "x").mkdir(parents=True)
    write(tmp_path / "jobs" / "x" / "job.sub", f"executable = {run}\nqueue\n")
    write(tmp_path / "jobs" / "x" / "service.sub", "executable = /bin/sleep\narguments = 300\nqueue\n")
    inner = tmp_path / "subdags" / "wms_group_calibrate"
    inner.mkdir(parents=True)
    write(inner / "job.sub", f"executable = {run}\nqueue\n")
    write(inner / "group1.dag", "JOB a job.sub\nJOB b job.sub\nPARENT a CHILD b\n"
                                "NODE_STATUS_FILE group1.node_status\n")
    cluster, ad = run_dag(pool, tmp_path, (
        'JOB pipetaskInit "jobs/x/job.sub"\n'
        'SERVICE provisioningJob "jobs/x/service.sub"\n'
        'SUBDAG EXTERNAL wms_group_calibrate group1.dag DIR subdags/wms_group_calibrate\n'
        'PARENT pipetaskInit CHILD wms_group_calibrate\n'
        'NODE_STATUS_FILE u_run2.node_status\n'
        'FINAL finalJob "jobs/x/job.sub"\n'), name="u_run2.dag")
    assert ad["ExitCode"] == 0

    with open(tmp_path / "u_run2.node_status") as fh:
        ads = list(classad.parseAds(fh))
    nodes = {a["Node"]: a["NodeStatus"] for a in ads if a["Type"] == "NodeStatus"}
    assert nodes == {"pipetaskInit": 5, "wms_group_calibrate": 5, "finalJob": 5}      # no SERVICE node
    assert (ads[0]["DagStatus"], ads[0]["NodesTotal"], ads[0]["NodesDone"]) == (5, 3, 3)
    with open(inner / "group1.node_status") as fh:
        sub = list(classad.parseAds(fh))
    assert (sub[0]["DagStatus"], sub[0]["NodesTotal"], sub[0]["NodesDone"]) == (5, 2, 2)

    dagman = pool.schedd.history(f"ClusterId == {cluster}", ["DAG_Status", "DAG_NodesTotal", "DAG_NodesDone"])[0]
    assert (dagman["DAG_Status"], dagman["DAG_NodesTotal"], dagman["DAG_NodesDone"]) == (0, 3, 3)
    service = pool.schedd.history(f'DAGManJobId == {cluster} && DAGNodeName == "provisioningJob"', ["JobStatus"])
    assert [j["JobStatus"] for j in service] == [3]                          # removed at the end
    log = (tmp_path / "u_run2.dag.nodes.log").read_text()
    assert 'DAGNodeName = "provisioningJob"' in log                          # where BPS finds it

    data = json.loads((tmp_path / "u_run2.dag.metrics").read_text())
    assert (data["nodes"], data["nodes_succeeded"], data["dag_nodes"], data["dag_nodes_succeeded"],
            data["service_nodes"], data["service_nodes_succeeded"], data["total_nodes"], data["DagStatus"]) == (
        2, 2, 1, 1, 1, 1, 4, 0)
    assert not list(tmp_path.glob("u_run2.dag.rescue*"))
