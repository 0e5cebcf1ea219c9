"""Where jobledger.dags writes other text than htcondor2.dags, on purpose
(each case also runs htcondor2's writer, offline, to show the difference)."""

from __future__ import annotations

import pytest

import jobledger.dags as ours

theirs = pytest.importorskip("htcondor2.dags")

pytestmark = pytest.mark.oracle


def test_category_throttles_are_maxjobs_where_htcondor2_writes_category():
    """htcondor2 writes ``CATEGORY foo 5`` for a throttle, which DAGMan reads as
    "node foo joins category 5" and rejects (no node foo).  We write MAXJOBS."""
    limits = {"foo": 5, "bar": 10}
    our_lines = list(ours.writer.DAGWriter(ours.DAG(max_jobs_by_category=limits)).yield_dag_file_lines())
    their_lines = list(theirs.writer.DAGWriter(theirs.DAG(max_jobs_by_category=limits)).yield_dag_file_lines())
    assert [line.replace("MAXJOBS", "CATEGORY") for line in our_lines] == their_lines
    assert "MAXJOBS foo 5" in our_lines and "MAXJOBS bar 10" in our_lines


def test_noop_true_marks_every_node_of_a_layer():
    """htcondor2 turns ``noop=True`` into {0: True}: only the first node of a
    layer.  True means the whole layer here."""
    our_dag, their_dag = ours.DAG(), theirs.DAG()
    our_dag.layer(name="skip", vars=[{}] * 3, noop=True, done=True)
    their_dag.layer(name="skip", vars=[{}] * 3, noop=True, done=True)
    our_jobs = [line for line in ours.writer.DAGWriter(our_dag).yield_dag_file_lines() if line.startswith("JOB")]
    their_jobs = [line for line in theirs.writer.DAGWriter(their_dag).yield_dag_file_lines()
                  if line.startswith("JOB")]
    assert our_jobs == [f"JOB skip:{i} skip.sub NOOP DONE" for i in range(3)]
    assert their_jobs == ["JOB skip:0 skip.sub NOOP DONE", "JOB skip:1 skip.sub", "JOB skip:2 skip.sub"]


def test_a_final_node_given_a_submit_file_names_that_file():
    """htcondor2 writes ``FINAL fin fin.sub`` whatever the description, and
    never writes fin.sub; we name the given file (and write fin.sub for a Submit)."""
    our_dag, their_dag = ours.DAG(), theirs.DAG()
    our_dag.final(name="fin", submit_description="/data/fin.sub")
    their_dag.final(name="fin", submit_description="/data/fin.sub")
    assert "FINAL fin /data/fin.sub" in list(ours.writer.DAGWriter(our_dag).yield_dag_file_lines())
    assert "FINAL fin fin.sub" in list(theirs.writer.DAGWriter(their_dag).yield_dag_file_lines())
