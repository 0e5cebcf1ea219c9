"""Rescue files (which nodes finished) and the node status file, read back."""

from __future__ import annotations

import textwrap

import pytest

from jobledger import dags
from jobledger.dags import exceptions

# As DAGMan 25 writes one (rescue DAG version 2.1.0): a failed node listed in
# the header, DONE lines, a failed node with only weak children marked DONE,
# and the retries left when DAGMAN_RESET_RETRIES_UPON_RESCUE is false.
RESCUE = textwrap.dedent("""\
    # Rescue DAG file, created after running
    #   the /home/u/run/dagfile.dag DAG file
    # Created 3/14/2026 09:26:53 UTC
    # Rescue DAG version: 2.1.0
    #
    # Total number of Nodes: 7
    # Nodes premarked DONE: 0
    # Nodes that failed: 1
    #   work:2,<ENDLIST>

    DONE prep:0
    DONE work:0
    # 2 of 3 retries already performed; 1 remaining
    RETRY work:1 1 UNLESS-EXIT 4
    # Failed node with only weak child dependencies:
    DONE work:3
    DONE __JOIN__:0
    """)


def workflow():
    dag = dags.DAG()
    prep = dag.layer(name="prep")
    work = prep.child_layer(name="work", vars=[{}] * 4, retries=3, done={2: True})
    work.child_layer(name="merge")
    return dag


def test_rescue_marks_exactly_the_done_nodes(tmp_path):
    dag = workflow()
    path = tmp_path / "dagfile.dag.rescue001"
    path.write_text(RESCUE)
    dags.rescue(dag, path)
    done = {node.name: node.done for node in dag.nodes}
    assert done == {"prep": {0: True}, "work": {0: True, 3: True}, "merge": {}}
    text = "\n".join(dags.writer.DAGWriter(dag).yield_dag_file_lines())
    assert "JOB work:0 work.sub DONE" in text and "JOB work:2 work.sub\n" in text


def test_rescue_then_write_resumes_only_unfinished_nodes(tmp_path):
    """The rescue round trip: DONE lines written for the finished nodes only."""
    dag = workflow()
    dags.write_dag(dag, tmp_path)
    (tmp_path / "dagfile.dag.rescue001").write_text("DONE prep:0\nDONE work:1\n")
    dags.rescue(dag, dags.find_rescue_file(tmp_path, "dagfile.dag"))
    rewritten = dags.write_dag(dag, tmp_path).read_text().splitlines()
    assert [line for line in rewritten if line.endswith("DONE")] == ["JOB prep:0 prep.sub DONE",
                                                                     "JOB work:1 work.sub DONE"]


def test_private_text_entry_point_and_other_formatters():
    dag = dags.DAG()
    layer = dag.layer(name="L", vars=[{}] * 3)
    from jobledger.dags.rescue import _rescue
    _rescue(dag, "DONE L-002\n", formatter=dags.SimpleFormatter(separator="-", index_format="{:03d}"))
    assert layer.done == {2: True}


@pytest.mark.parametrize("text, line, message", [
    ("DONE\n", 1, "not a rescue file line"),
    ("# c\nDONE a:0 extra\n", 2, "not a rescue file line"),
    ("\n\nJOB a:0 a.sub\n", 3, "not a rescue file line"),
    ("RETRY a:0 many\n", 1, "retry count"),
    ("DONE nameless\n", 1, "nameless"),
])
def test_bad_rescue_files_name_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "x.rescue001"
    path.write_text(text)
    with pytest.raises(exceptions.DAGFileError, match=message) as caught:
        dags.rescue(workflow(), path)
    assert caught.value.line == line and str(caught.value).startswith(f"{path}:{line}:")


def test_non_utf8_rescue_file_is_a_clear_error(tmp_path):
    path = tmp_path / "x.rescue001"
    path.write_bytes(b"DONE a\xff:0\n")
    with pytest.raises(exceptions.DAGFileError, match="not UTF-8"):
        dags.rescue(workflow(), path)


def test_find_rescue_file_picks_the_highest_number(tmp_path):
    for name in ["dagfile.dag.rescue002", "dagfile.dag.rescue010", "dagfile.dag.rescue011.old",
                 "dagfile.dag.rescue1000", "other.dag.rescue999", "dagfile.dag.rescueXYZ", "dagfile.dag"]:
        (tmp_path / name).touch()
    assert dags.find_rescue_file(tmp_path, "dagfile.dag") == tmp_path / "dagfile.dag.rescue1000"
    assert dags.find_rescue_file(tmp_path, "other.dag").name == "other.dag.rescue999"


def test_no_rescue_file(tmp_path):
    (tmp_path / "dagfile.dag.rescue001.old").touch()
    with pytest.raises(exceptions.NoRescueFileFound, match="dagfile.dag"):
        dags.find_rescue_file(tmp_path)
    with pytest.raises(FileNotFoundError):
        dags.find_rescue_file(tmp_path / "missing")


# The node status file as DAGMan writes it (ClassAds with /* */ notes).
STATUS = textwrap.dedent("""\
    [
      Type = "DagStatus";
      DagFiles = {
        "diamond.dag"
      };
      Timestamp = 1399674138; /* "Fri May  9 17:22:18 2014" */
      DagStatus = 3; /* "STATUS_SUBMITTED ()" */
      NodesTotal = 4;
      NodesDone = 2;
      NodesFailed = 1;
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
      NodeStatus = 6; /* "STATUS_ERROR" */
      StatusDetails = "Job proc (12.0.0) failed with status 1";
      RetryCount = 2;
      JobProcsQueued = 0;
      JobProcsHeld = 0;
    ]
    [
      Type = "NodeStatus";
      Node = "C";
      NodeStatus = 3; /* "STATUS_SUBMITTED" */
      StatusDetails = "idle";
      RetryCount = 0;
      JobProcsQueued = 1;
      JobProcsHeld = 0;
    ]
    [
      Type = "StatusEnd";
      EndTime = 1399674138; /* "Fri May  9 17:22:18 2014" */
      NextUpdate = 1399674141; /* "Fri May  9 17:22:21 2014" */
    ]
    """)


def test_node_status_file(tmp_path):
    path = tmp_path / "dag.status"
    path.write_text(STATUS)
    report = dags.read_node_status(path)
    assert report.status is dags.NodeStatus.SUBMITTED and report.complete
    assert report.dag["NodesTotal"] == 4 and report.dag["DagFiles"] == ["diamond.dag"]
    assert report.nodes["B"] == dags.NodeState("B", dags.NodeStatus.ERROR,
                                               "Job proc (12.0.0) failed with status 1", 2, 0, 0)
    assert report.by_status(dags.NodeStatus.DONE) == ["A"]
    assert report.nodes["C"].job_procs_queued == 1
    assert (report.end_time, report.next_update) == (1399674138, 1399674141)


def test_a_node_status_file_being_written_has_no_end(tmp_path):
    path = tmp_path / "dag.status"
    path.write_text(STATUS.split('[\n  Type = "StatusEnd"')[0])
    assert not dags.read_node_status(path).complete


@pytest.mark.parametrize("text, message", [
    ("", "no DagStatus ad"),
    ("[ Type = \"DagStatus\"; DagStatus = 12; ]", "not a node status"),
    ("[ Type = \"DagStatus\"; DagStatus = 1; ] [ Type = \"NodeStatus\"; NodeStatus = 1; ]", "without a Node"),
    ("[ Type = \"Other\"; ]", "unknown Type"),
    ("[ Type = \"DagStatus\"; DagStatus = 1; ] garbage", "not a node status file"),
])
def test_bad_node_status_files(tmp_path, text, message):
    path = tmp_path / "dag.status"
    path.write_text(text)
    with pytest.raises(exceptions.DAGFileError, match=message) as caught:
        dags.read_node_status(path)
    assert str(caught.value).startswith(str(path))
