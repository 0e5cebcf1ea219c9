"""DAG files of 10^5 nodes, drawn at random: parsed right, or refused at the right line.

The shape (layer width, parents per node, children per PARENT line, VARS and
RETRY lines, comments, keyword case, edges before or after the nodes) and at
most one defect (its kind and place) are drawn; the file is written to disk
and read as DAGMan reads it.  A good file must give every node, edge, VARS
and RETRY it holds; a bad one a DagError naming the defect's line.

Bounded, so it cannot flake: 4 examples of exactly 10^5 nodes, no time
asserted.  The parse is linear (a few seconds per example on a loaded
machine); the quadratic one took 80-150 s per example, past the suite's
per-test timeout.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.daemons.dagman.files import read_bytes
from jobledger.eventcore.dagman import parse_dag
from jobledger.eventcore.errors import DagError

N = 100_000
DEFECTS = ("duplicate", "unknown", "cycle", "retry", "self")

shapes = st.fixed_dictionaries({
    "width": st.integers(1, 2_000),          # nodes per layer
    "fan_in": st.integers(1, 3),             # parents per node (from the layer above)
    "group": st.integers(1, 40),             # children per PARENT line
    "vars": st.booleans(),
    "retry": st.booleans(),
    "comments": st.booleans(),
    "edges_first": st.booleans(),            # DAGMan reads the node lines first, wherever they are
    "keyword": st.sampled_from(["JOB", "job", "Node"]),
    "seed": st.integers(0, 2**32 - 1),
})
defects = st.one_of(st.none(), st.tuples(st.sampled_from(DEFECTS), st.integers(0, N - 1)))


def _first_ancestor(parents: dict, node: int) -> int:
    """A node of the first layer that ``node`` descends from (an edge back to it closes a loop)."""
    while node in parents:
        node = parents[node][0]
    return node


def build(shape: dict, defect, n: int = N) -> tuple[str, dict, int | None, str | None]:
    """The DAG text of ``n`` nodes, the expected parents of each, and the expected error's line and text."""
    rng = random.Random(shape["seed"])
    width = shape["width"]
    parents = {}
    for i in range(width, n):
        layer_start = (i // width - 1) * width
        parents[i] = sorted({layer_start + rng.randrange(width) for _ in range(shape["fan_in"])})
    nodes = [f"{shape['keyword']} n{i} job.sub" for i in range(n)]
    extra = []
    if shape["vars"]:
        extra += [f'VARS n{i} index="{i}" tag="t\\"{i % 7}"' for i in range(n)]
    if shape["retry"]:
        extra += [f"RETRY n{i} {i % 5}" for i in range(n)]
    by_parent: dict[int, list[int]] = {}
    for child, ups in parents.items():
        for up in ups:
            by_parent.setdefault(up, []).append(child)
    edges = []
    for up, children in by_parent.items():
        for k in range(0, len(children), shape["group"]):
            edges.append(f"PARENT n{up} CHILD " + " ".join(f"n{c}" for c in children[k:k + shape["group"]]))
    body = (edges + nodes + extra) if shape["edges_first"] else (nodes + edges + extra)
    if shape["comments"]:
        body = [x for line in body for x in ((line, "# a comment", "") if rng.random() < 0.1 else (line,))]
    want_line = want_text = None
    if defect is not None:
        kind, at = defect
        place = at % len(body)
        bad = {"duplicate": f"JOB n{at} again.sub",
               "unknown": f"PARENT n{at} CHILD nowhere{at}",
               "retry": f"RETRY n{at} many",
               "self": f"PARENT n{at} CHILD n{at}",
               "cycle": f"PARENT n{n - 1} CHILD n{_first_ancestor(parents, n - 1)}"}[kind]
        body.insert(place, bad)
        want_text = {"duplicate": "defined twice", "unknown": "unknown node", "retry": "integer",
                     "self": "its own parent", "cycle": "cycle in the DAG"}[kind]
        want_line = place + 1
        if kind == "duplicate":      # reported at the second definition, whichever comes later
            first = body.index(f"{shape['keyword']} n{at} job.sub") + 1
            want_line = max(first, want_line)
    return "\n".join(body) + "\n", parents, want_line, want_text


@pytest.mark.slow
@settings(max_examples=4, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(shape=shapes, defect=defects)
def test_big_dags_parse_linearly_and_right(tmp_path, shape, defect):
    check(tmp_path, shape, defect, N)


@pytest.mark.parametrize("kind", DEFECTS)
@pytest.mark.parametrize("edges_first", [False, True])
def test_each_defect_is_found_at_its_line(tmp_path, kind, edges_first):
    """The fuzz's own expectations, every defect kind at 3,000 nodes."""
    shape = {"width": 30, "fan_in": 2, "group": 3, "vars": True, "retry": True, "comments": True,
             "edges_first": edges_first, "keyword": "Node", "seed": 7}
    check(tmp_path, shape, (kind, 1234), 3_000)


def check(tmp_path, shape: dict, defect, n: int) -> None:
    text, parents, want_line, want_text = build(shape, defect, n)
    path = tmp_path / "big.dag"
    path.write_text(text)
    try:
        dag = parse_dag(str(path), read_bytes)
    except DagError as err:
        assert want_text is not None, f"a good DAG refused: {err}"
        assert want_text in err.message and err.source == str(path)
        if defect[0] != "cycle":      # a cycle is reported at the first line of its loop
            assert err.line == want_line, (str(err), want_line)
        return
    assert want_text is None, f"a bad DAG ({defect}) taken"
    assert len(dag.nodes) == n and list(dag.nodes)[:3] == ["n0", "n1", "n2"]
    for i in range(n):
        node = dag.nodes[f"n{i}"]
        assert sorted(node.parents, key=lambda name: int(name[1:])) == [f"n{p}" for p in parents.get(i, ())]
        if shape["vars"]:
            assert node.vars == [("index", str(i), False), ("tag", f't"{i % 7}', False)]
        assert node.retry == (i % 5 if shape["retry"] else 0)


def test_many_vars_on_one_node(tmp_path):
    """50,000 pairs on one VARS line and 50,000 VARS lines on one node: each read once
    (the pairs' scan copied the rest of the line per pair, the lines' merge rescanned
    the node's list per line: minutes either way)."""
    one_line = "VARS A " + " ".join(f'v{i}="{i}"' for i in range(50_000))
    many = "\n".join(f'VARS B w{i}="{i}"' for i in range(50_000))
    again = 'VARS B w7="seven" w0="zero"'
    path = tmp_path / "vars.dag"
    path.write_text(f"JOB A a.sub\nJOB B b.sub\n{one_line}\n{many}\n{again}\n")
    dag = parse_dag(str(path), read_bytes)
    assert dag.nodes["A"].vars == [(f"v{i}", str(i), False) for i in range(50_000)]
    want = [(f"w{i}", str(i), False) for i in range(1, 50_000) if i != 7]
    assert dag.nodes["B"].vars == want + [("w7", "seven", False), ("w0", "zero", False)]
