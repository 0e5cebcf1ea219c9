"""What write_dag writes, DAGMan's parser (eventcore.dagman) reads back as the
same workflow: nodes, settings, and every dependency (join nodes resolved)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import jobledger
from jobledger.eventcore.dagman import parse_dag
from jobledger import dags


def parse_written(dag, directory: Path):
    path = dags.write_dag(dag, directory)
    return parse_dag(str(path), lambda name: (directory / name).read_bytes() if not Path(name).is_absolute()
                     else Path(name).read_bytes())


def real_edges(parsed) -> set[tuple[str, str]]:
    """parent -> child between non-join nodes, through the NOOP join nodes."""
    edges = set()
    for node in parsed.nodes.values():
        if node.name.startswith("__JOIN__"):
            continue
        for child in node.children:
            if child.startswith("__JOIN__"):
                edges |= {(node.name, grandchild) for grandchild in parsed.nodes[child].children}
            else:
                edges.add((node.name, child))
    return edges


def test_every_setting_reads_back(tmp_path):
    dag = dags.DAG(dagman_config={"DAGMAN_MAX_JOBS_IDLE": 10}, dagman_job_attributes={"Weight": 17},
                   max_jobs_by_category={"heavy": 2}, dot_config=dags.DotConfig("d.dot", update=True),
                   jobstate_log="/tmp/js.log", node_status_file=dags.NodeStatusFile("st", 30, True))
    sub = jobledger.Submit({"executable": "/bin/true"})
    first = dag.layer(name="first", submit_description=sub, vars=[{"x": 'a "q" \\ b'}, {"x": "2"}],
                      retries=3, retry_unless_exit=4, priority=7, category="heavy",
                      pre=dags.Script("/bin/pre", ["1"], retry=True, retry_status=2, retry_delay=5),
                      post=dags.Script("/bin/post"), pre_skip_exit_code=9,
                      abort=dags.DAGAbortCondition(3, 1), dir="w", done={1: True}, noop={0: True})
    first.child_subdag(name="inner", dag_file="inner.dag")
    dag.final(name="fin", submit_description=sub)
    parsed = parse_written(dag, tmp_path)

    node = parsed.nodes["first:0"]
    assert (node.kind, node.submit, node.directory, node.noop, node.done) == ("JOB", "first.sub", "w", True, False)
    assert parsed.nodes["first:1"].done and not parsed.nodes["first:1"].noop
    assert node.vars == [("x", 'a "q" \\ b', False)]
    assert (node.retry, node.retry_unless_exit, node.priority, node.category) == (3, 4, 7, "heavy")
    assert (node.pre_skip, node.abort_on) == (9, (3, 1))
    pre = node.scripts["PRE"]
    assert (pre.executable, pre.arguments, pre.defer_status, pre.defer_time) == ("/bin/pre", ("1",), 2, 5)
    assert node.scripts["POST"].executable == "/bin/post"
    assert parsed.nodes["inner:0"].kind == "SUBDAG" and parsed.final.name == "fin"
    assert parsed.max_jobs == {"heavy": 2} and parsed.set_job_attrs == {"Weight": "17"}
    assert parsed.config.endswith("dagman.config") and parsed.jobstate_log == "/tmp/js.log"
    assert parsed.dot["update"] and parsed.node_status_file["always_update"]
    assert real_edges(parsed) == {("first:0", "inner:0"), ("first:1", "inner:0")}


# A random layered DAG: layer i's parents are earlier layers, each edge of a random kind.
@st.composite
def layered_dags(draw):
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=6))
    plan = []
    for index in range(1, len(sizes)):
        for parent in draw(st.sets(st.integers(0, index - 1), max_size=3)):
            kind = draw(st.sampled_from(["many", "one", "slice", "group"]))
            plan.append((parent, index, kind, draw(st.integers(0, 3)), draw(st.integers(1, 2))))
    return sizes, plan


def build(sizes, plan):
    dag = dags.DAG()
    layers = [dag.layer(name=f"L{i}", vars=[{"i": str(j)} for j in range(n)]) for i, n in enumerate(sizes)]
    expected = set()
    for parent, child, kind, start, step in plan:
        p, c = layers[parent], layers[child]
        if kind == "one" and len(p) != len(c) or kind == "group" and (len(p) % step or len(c) % step
                                                                      or len(p) != len(c)):
            kind = "many"
        if kind == "many":
            edge, pairs = dags.ManyToMany(), [(i, j) for i in range(len(p)) for j in range(len(c))]
        elif kind == "one":
            edge, pairs = dags.OneToOne(), [(i, i) for i in range(len(p))]
        elif kind == "slice":
            edge = dags.Slicer(slice(start, None, step), slice(None, None, step))
            pairs = list(zip(range(len(p))[start::step], range(len(c))[::step]))
        else:
            edge = dags.Grouper(step, step)
            pairs = [(i, j) for i in range(len(p)) for j in range(len(c)) if i // step == j // step]
        p.add_children(c, edge=edge)
        expected |= {(f"L{parent}:{i}", f"L{child}:{j}") for i, j in pairs}
    return dag, expected


@settings(max_examples=60, deadline=None)
@given(layered_dags())
def test_random_layered_dags_parse_to_the_same_dependencies(tmp_path_factory, drawn):
    dag, expected = build(*drawn)
    parsed = parse_written(dag, tmp_path_factory.mktemp("dag"))
    names = {n for n in parsed.nodes if not n.startswith("__JOIN__")}
    assert names == {f"L{i}:{j}" for i, n in enumerate(drawn[0]) for j in range(n)}
    assert real_edges(parsed) == expected
    joins = [n for n in parsed.nodes.values() if n.name.startswith("__JOIN__")]
    assert all(n.noop for n in joins)
    assert all(parsed.nodes[name].vars == [("i", name.split(":")[1], False)] for name in names)
