"""Node jobs built once and shared within a chunk (``node_cluster``'s ``built``) are the jobs
each node's own build makes: the same ads, attribute for attribute, whatever the node's
name, parents, retry count, priority, VARS, and whether its description names $(JOB),
$(Cluster) or a random choice (those are built on their own)."""

from __future__ import annotations

import os

import pytest

from jobledger.daemons.dagman.node_submit import node_cluster
from jobledger.eventcore.dagman import parse_dag
from jobledger.eventcore.dagman.run import DagRun

SHARED = "executable = /bin/true\narguments = one two\nrequest_memory = 64\nqueue 2\n"
PER_JOB = "executable = /bin/true\noutput = $(JOB).out\nqueue\n"
PER_CLUSTER = "executable = /bin/true\nerror = err.$(Cluster)\nqueue\n"
RANDOM = "executable = /bin/true\nMy.Pick = $RANDOM_INTEGER(1, 1000000)\nqueue\n"
DAG = """JOB A shared.sub
JOB B shared.sub
JOB C.x-1 shared.sub
JOB D shared.sub
JOB E shared.sub
VARS E color="red"
JOB F shared.sub
PRIORITY F 7
JOB G perjob.sub
JOB H perjob.sub
JOB I percluster.sub
JOB K percluster.sub
JOB L random.sub
JOB M random.sub
JOB N shared.sub DIR sub
PARENT A B CHILD C.x-1 D
PARENT D CHILD E F G H I K L M N
RETRY D 3
"""


def _builds(tmp_path, share: bool):
    os.chdir(tmp_path)
    dag = parse_dag("x.dag", lambda path: open(path, "rb").read())
    run = DagRun(dag)
    run.nodes["D"].retry = 2
    texts, built = ({}, {}) if share else (None, None)
    return [node_cluster(dag, run, name, 100 + i, "5.0", "x.dag+5", str(tmp_path / "x.dag.nodes.log"), "me",
                         texts, None, None, built)
            for i, name in enumerate(dag.nodes)], built


@pytest.fixture
def dag_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, text in (("shared.sub", SHARED), ("perjob.sub", PER_JOB), ("percluster.sub", PER_CLUSTER),
                       ("random.sub", RANDOM)):
        (tmp_path / name).write_text(text)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "shared.sub").write_text(SHARED)
    (tmp_path / "x.dag").write_text(DAG)
    return tmp_path


def test_shared_builds_are_the_nodes_own(dag_dir):
    for _ in range(3):     # a second's turn between the two builds changes QDate: try again
        shared, built = _builds(dag_dir, share=True)
        alone, _ = _builds(dag_dir, share=False)
        if [i["cluster_ad"]["QDate"] for i in shared] == [i["cluster_ad"]["QDate"] for i in alone]:
            break
    picks = [ad.pop("Pick", None) for item in shared + alone for ad in [item["cluster_ad"], *item["proc_ads"]]]
    assert shared == alone
    assert len({pick for pick in picks if pick is not None}) > 1     # random: each its own
    ads = {item["cluster_ad"]["DAGNodeName"]: item["cluster_ad"] for item in shared}
    assert ads['"D"']["DAGManNodeRetry"] == "2" and ads['"D"']["DAGParentNodeNames"] == '"A,B"'
    assert ads['"G"']["Out"] != ads['"H"']["Out"]
    # one build shared by the plain nodes of each directory and priority; none for the rest
    keys = sorted((key[1] == str(dag_dir), key[2]) for key in built)
    assert keys == [(False, 0), (True, 0), (True, 7)]


def test_descriptions_naming_per_node_values_are_not_shared(dag_dir):
    _, built = _builds(dag_dir, share=True)
    texts = {key[0] for key in built}
    assert texts == {SHARED}
