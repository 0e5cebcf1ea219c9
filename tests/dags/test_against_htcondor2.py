"""The files jobledger.dags writes are the files htcondor2.dags writes for
the same DAG (the real wheel, offline), but for the fixes we made on purpose.

htcondor2 walks sibling nodes in set order, so for branching DAGs its line
order and join-node numbers vary from run to run; those DAGs are compared
after resolving join nodes into the edges they stand for.  Chains are
compared byte for byte.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest

import jobledger
import jobledger.dags as ours

htcondor2 = pytest.importorskip("htcondor2")
theirs = pytest.importorskip("htcondor2.dags")

pytestmark = pytest.mark.oracle

SUBMIT = {"executable": "/bin/echo", "arguments": "hi $(x)", "request_memory": "16MB", "log": "nodes.log"}


def chain(dags, submit_class, helper_file: Path):
    """A chain using every per-node and DAG-wide setting (one child each, so
    htcondor2's order is fixed)."""
    dag = dags.DAG(dagman_config={"DAGMAN_MAX_JOBS_IDLE": 10, "DAGMAN_USE_STRICT": 1},
                   dagman_job_attributes={"Owner2": '"me"', "Weight": 17},
                   dot_config=dags.DotConfig(Path("dag.dot"), update=True, overwrite=False,
                                             include_file=Path("extra.dot")),
                   jobstate_log=Path("/tmp/jobstate.log"),
                   node_status_file=dags.NodeStatusFile(Path("status.txt"), update_time=30, always_update=True))
    first = dag.layer(name="first", submit_description=submit_class(SUBMIT),
                      vars=[{"x": 'quote " and back \\ slash', "y": 3}], retries=4, retry_unless_exit=9,
                      pre=dags.Script("/bin/pre", arguments=["a", 1], retry=True, retry_status=3, retry_delay=7),
                      post=dags.Script(Path("post.sh")), pre_skip_exit_code=2, priority=-5, category="heavy",
                      abort=dags.DAGAbortCondition(node_exit_value=3, dag_return_value=10))
    second = first.child_layer(name="second", submit_description=helper_file, dir="work", noop=True)
    third = second.child_subdag(name="inner", dag_file="inner.dag", done=True,
                                abort=dags.DAGAbortCondition(node_exit_value=1))
    third.child_layer(name="fourth", submit_description=submit_class(SUBMIT), vars=[{"x": "a"}, {"x": "b"}],
                      done={1: True}, noop={0: True}, retries=1)
    dag.final(name="cleanup", submit_description=submit_class(SUBMIT), retries=2)
    return dag


def fan(dags, submit_class):
    """Branches and every edge kind (joins included)."""
    dag = dags.DAG()
    sub = submit_class(SUBMIT)
    top = dag.layer(name="top", submit_description=sub, vars=[{"x": str(i)} for i in range(6)])
    top.child_layer(name="grouped", submit_description=sub, vars=[{}] * 4, edge=dags.Grouper(3, 2))
    top.child_layer(name="sliced", submit_description=sub, vars=[{}] * 4,
                    edge=dags.Slicer(parent_slice=slice(None, None, 2), child_slice=slice(1, None, 2)))
    pairs = top.child_layer(name="pairs", submit_description=sub, vars=[{}] * 6, edge=dags.OneToOne())
    dense = pairs.child_layer(name="dense", submit_description=sub, vars=[{}] * 3)
    single = dags.Nodes(dense, pairs).child_layer(name="single", submit_description=sub)
    single.child_subdag(name="after", dag_file="after.dag")
    other = dag.layer(name="other", submit_description=sub, vars=[{}] * 2)
    single.add_parents(other)
    return dag


def files_in(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.iterdir())}


def write_both(tmp_path, build):
    helper = tmp_path / "given.sub"
    helper.write_text("executable = /bin/true\nqueue\n")
    our_dir, their_dir = tmp_path / "ours", tmp_path / "theirs"
    ours.write_dag(build(ours, jobledger.Submit, helper) if build is chain else build(ours, jobledger.Submit),
                   our_dir)
    theirs.write_dag(build(theirs, htcondor2.Submit, helper) if build is chain
                     else build(theirs, htcondor2.Submit), their_dir)
    return files_in(our_dir), files_in(their_dir)


def test_chain_files_are_htcondor2s_byte_for_byte(tmp_path):
    our_files, their_files = write_both(tmp_path, chain)
    # htcondor2 names cleanup.sub in its FINAL line but never writes it; we do.
    assert set(our_files) == set(their_files) | {"cleanup.sub"}
    assert our_files["cleanup.sub"] == our_files["first.sub"]
    for name in their_files:
        if name != "dagfile.dag":
            assert our_files[name] == their_files[name], name
    assert our_files["dagfile.dag"] == their_files["dagfile.dag"]


JOIN = re.compile(r"__JOIN__:\d+")


def resolved(text: str) -> tuple[list[str], set[tuple[str, str]]]:
    """(sorted non-edge lines without join nodes, every parent->child edge with joins resolved)."""
    lines, edges = [], set()
    into, out_of = collections.defaultdict(set), collections.defaultdict(set)
    for line in text.splitlines():
        if line.startswith("PARENT "):
            parents, children = line[len("PARENT "):].split(" CHILD ")
            for p in parents.split():
                for c in children.split():
                    if JOIN.fullmatch(c):
                        into[c].add(p)
                    elif JOIN.fullmatch(p):
                        out_of[p].add(c)
                    else:
                        edges.add((p, c))
        elif not JOIN.search(line):
            lines.append(line)
    assert set(into) == set(out_of), "every join node has parents and children"
    for join in into:
        edges |= {(p, c) for p in into[join] for c in out_of[join]}
    return sorted(lines), edges


def test_branching_dag_means_what_htcondor2s_means(tmp_path):
    our_files, their_files = write_both(tmp_path, fan)
    assert set(our_files) == set(their_files)
    for name in their_files:
        if name != "dagfile.dag":
            assert our_files[name] == their_files[name], name
    our_text, their_text = our_files["dagfile.dag"], their_files["dagfile.dag"]
    assert resolved(our_text) == resolved(their_text)
    assert len(JOIN.findall(our_text)) == len(JOIN.findall(their_text))


def test_our_line_order_is_fixed_parents_before_children(tmp_path):
    first = ours.write_dag(fan(ours, jobledger.Submit), tmp_path / "a").read_text()
    second = ours.write_dag(fan(ours, jobledger.Submit), tmp_path / "b").read_text()
    assert first == second
    jobs = [line.split()[1] for line in first.splitlines() if line.startswith("JOB ")]
    assert jobs.index("top:5") < jobs.index("grouped:0") < jobs.index("single:0")
