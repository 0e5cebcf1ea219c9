"""Building a DAG: layers, sub-DAGs, the FINAL node, edges, selections and walks."""

from __future__ import annotations

import pytest

import jobledger
from jobledger.eventcore.submit.description import Submit as PureSubmit
from jobledger import dags
from jobledger.dags import exceptions


@pytest.fixture
def dag():
    return dags.DAG()


def diamond(dag):
    top = dag.layer(name="top")
    left = top.child_layer(name="left")
    right = top.child_layer(name="right")
    bottom = dags.Nodes(left, right).child_layer(name="bottom")
    return top, left, right, bottom


def test_a_layer_is_one_node_per_vars_entry(dag):
    assert len(dag.layer(name="none")) == 1
    assert len(dag.layer(name="three", vars=[{"i": i} for i in range(3)])) == 3
    assert len(dag.layer(name="empty", vars=[])) == 0
    assert len(dag.subdag(name="sub", dag_file="x.dag")) == 1


def test_a_layer_without_description_gets_an_empty_submit(dag):
    layer = dag.layer(name="a")
    assert isinstance(layer.submit_description, PureSubmit)
    assert str(layer.submit_description) == "queue\n"
    given = jobledger.Submit({"executable": "/bin/true"})
    assert dag.layer(name="b", submit_description=given).submit_description is given


def test_submit_description_must_be_a_submit_or_a_path(dag):
    with pytest.raises(TypeError, match="submit_description"):
        dag.layer(name="a", submit_description={"executable": "/bin/true"})


def test_names_are_unique_across_layers_subdags_and_final(dag):
    dag.layer(name="a")
    dag.final(name="fin")
    for make in (dag.layer, dag.subdag, dag.final):
        with pytest.raises(exceptions.DuplicateNodeName, match="'a'"):
            make(name="a", dag_file="x.dag") if make == dag.subdag else make(name="a")
    with pytest.raises(exceptions.DuplicateNodeName):
        dag.layer(name="fin")


@pytest.mark.parametrize("name", ["", "two words", "tab\there", 'quo"te', "a/b", 7, None])
def test_names_dagman_cannot_use_are_refused(dag, name):
    with pytest.raises(exceptions.InvalidDAG):
        dag.layer(name=name)


def test_equality_is_per_dag_and_name():
    first, second = dags.DAG(), dags.DAG()
    a1, a2 = first.layer(name="a"), second.layer(name="a")
    assert a1 != a2 and a1 == next(iter(first.glob("a")))
    assert a1 in first and a1 not in second and "a" in first
    c, b = second.layer(name="c"), second.layer(name="b")
    assert sorted([c, b]) == [b, c]


def test_edges_and_their_kinds(dag):
    a = dag.layer(name="a", vars=[{}] * 2)
    b = a.child_layer(name="b", vars=[{}] * 2, edge=dags.OneToOne())
    c = b.child_layer(name="c")
    assert (a, b) in dag.edges and (b, c) in dag.edges and (a, c) not in dag.edges
    assert isinstance(dag._edges.get(a, b), dags.OneToOne)
    assert isinstance(dag._edges.get(b, c), dags.ManyToMany)
    assert a.children == dags.Nodes(b) and c.parents == dags.Nodes(b)


def test_add_and_remove_edges(dag):
    a, b, c = (dag.layer(name=n) for n in "abc")
    a.add_children(b, c)
    assert a.children == dags.Nodes(b, c)
    a.remove_children(b)
    assert a.children == dags.Nodes(c) and b.parents == dags.Nodes()
    dags.Nodes(b, c).add_parents(a, type=dags.OneToOne())
    assert isinstance(dag._edges.get(a, b), dags.OneToOne)
    dags.Nodes(b, c).remove_parents(a)
    assert a.children == dags.Nodes() and dag.roots == dags.Nodes(a, b, c)
    c.add_parents(b).remove_parents(b)
    assert list(dag.edges) == []


def test_parent_layers_and_subdags(dag):
    mid = dag.layer(name="mid")
    up = mid.parent_layer(name="up")
    sub = mid.parent_subdag(name="sub", dag_file="s.dag")
    down = mid.child_subdag(name="down", dag_file="d.dag")
    assert mid.parents == dags.Nodes(up, sub) and mid.children == dags.Nodes(down)
    group = dags.Nodes(up, sub)
    assert group.parent_layer(name="root").children == group
    assert group.parent_subdag(name="root2", dag_file="r.dag").children == group
    assert group.child_subdag(name="side", dag_file="x.dag").parents == group


def test_final_node_takes_no_edges(dag):
    a = dag.layer(name="a")
    fin = dag.final(name="fin")
    with pytest.raises(exceptions.InvalidDAG, match="FINAL"):
        a.add_children(fin)
    assert fin not in dag.nodes and dag._final_node is fin


def test_edges_to_nodes_of_another_dag_are_refused(dag):
    stranger = dags.DAG().layer(name="x")
    with pytest.raises(exceptions.InvalidDAG, match="not a node of this DAG"):
        dag.layer(name="a").add_children(stranger)


def test_select_glob_roots_leaves(dag):
    top, left, right, bottom = diamond(dag)
    assert dag.roots == dags.Nodes(top) and dag.leaves == dags.Nodes(bottom)
    assert dag.glob("*t") == dags.Nodes(left, right)
    assert dag.glob("T*") == dags.Nodes()
    assert dag.select(lambda n: len(n.name) == 4) == dags.Nodes(left)
    assert dag.node_to_children[top] == dags.Nodes(left, right)
    assert dag.node_to_parents[bottom] == dags.Nodes(left, right)


def test_walks_follow_creation_order(dag):
    top, left, right, bottom = diamond(dag)
    assert list(dag.walk(dags.WalkOrder.DEPTH_FIRST)) == [top, left, bottom, right]
    assert list(dag.walk(dags.WalkOrder.BREADTH_FIRST)) == [top, left, right, bottom]
    assert list(dag.walk("BREADTH")) == [top, left, right, bottom]
    assert list(bottom.walk_ancestors(dags.WalkOrder.BREADTH_FIRST)) == [left, right, top]
    assert list(top.walk_descendants()) == [left, bottom, right]
    assert set(dags.Nodes(left, right).walk_descendants()) == {bottom}


def test_walk_with_an_unknown_order_fails_even_on_an_empty_dag(dag):
    with pytest.raises(exceptions.UnrecognizedWalkOrder, match="sideways"):
        list(dag.walk("sideways"))


def test_cycles_are_found(dag):
    a = dag.layer(name="a")
    b = a.child_layer(name="b")
    c = b.child_layer(name="c")
    assert dag.cycle() is None
    c.add_children(a)
    assert dag.cycle() == [a, b, c]


def test_noop_and_done_per_node(dag):
    layer = dag.layer(name="l", vars=[{}] * 3, noop={1: True}, done=True)
    assert layer.noop == {1: True} and layer.done == {0: True, 1: True, 2: True}
    assert dag.subdag(name="s", dag_file="s.dag", noop=True).noop == {0: True}
    with pytest.raises(TypeError):
        dag.layer(name="bad", noop="yes")


def test_an_empty_nodes_cannot_make_a_layer():
    with pytest.raises(exceptions.InvalidDAG):
        dags.Nodes().child_layer(name="x")


def test_reprs_name_things(dag):
    top, *_ = diamond(dag)
    assert "top" in repr(top) and "Nodes(" in repr(dag.roots)
    assert "4 nodes" in repr(dag)
    assert "Grouper(parent_chunk_size=3" in repr(dags.Grouper(3, 1))
    assert "top" in dag.describe() and "bottom" in dag.describe()
