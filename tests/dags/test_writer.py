"""write_dag: the DAG file and the files beside it, and the DAGs it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

import jobledger
from jobledger import dags
from jobledger.dags import exceptions
from jobledger.dags.writer import DAGWriter


def lines(dag, **kwargs) -> list[str]:
    return list(DAGWriter(dag, **kwargs).yield_dag_file_lines())


def test_write_dag_writes_every_file_and_returns_the_dag_file(tmp_path):
    dag = dags.DAG(dagman_config={"DAGMAN_MAX_JOBS_IDLE": 3})
    work = dag.layer(name="work", submit_description=jobledger.Submit({"executable": "/bin/true"}),
                     vars=[{}, {}])
    work.child_layer(name="sum", submit_description=jobledger.Submit({"executable": "/bin/echo"}),
                     vars=[{}, {}])
    dag.final(name="fin", submit_description=jobledger.Submit({"executable": "/bin/date"}))
    path = dags.write_dag(dag, tmp_path / "new" / "dir", dag_file_name="my.dag")
    assert path == tmp_path / "new" / "dir" / "my.dag"
    written = sorted(p.name for p in path.parent.iterdir())
    assert written == ["__JOIN__.sub", "dagman.config", "fin.sub", "my.dag", "sum.sub", "work.sub"]
    assert (path.parent / "work.sub").read_text() == "executable = /bin/true\nqueue\n"
    assert (path.parent / "dagman.config").read_text() == "DAGMAN_MAX_JOBS_IDLE = 3"
    assert "JOB __JOIN__:0 __JOIN__.sub NOOP" in path.read_text().splitlines()


def test_default_file_name_and_rewrite_in_place(tmp_path):
    dag = dags.DAG()
    dag.layer(name="a")
    first = dags.write_dag(dag, tmp_path)
    dag.layer(name="b")
    second = dags.write_dag(dag, tmp_path, dag_file_name=None)
    assert first == second == tmp_path / dags.DEFAULT_DAG_FILE_NAME
    assert "JOB b:0 b.sub" in second.read_text()
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_dag_that_cannot_be_written_changes_no_file(tmp_path):
    dag = dags.DAG()
    parent = dag.layer(name="parent", vars=[{}] * 2)
    dags.write_dag(dag, tmp_path)
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}
    parent.child_layer(name="child", vars=[{}] * 3, edge=dags.OneToOne())
    with pytest.raises(exceptions.OneToOneEdgeNeedsSameNumberOfVars, match="'parent' has 2 nodes"):
        dags.write_dag(dag, tmp_path)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before


def test_submit_file_path_is_made_absolute_against_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dag = dags.DAG()
    dag.layer(name="rel", submit_description=Path("sub/job.sub"))
    dag.layer(name="abs", submit_description="/abs/job.sub")
    text = lines(dag)
    assert f"JOB rel:0 {tmp_path.as_posix()}/sub/job.sub" in text
    assert "JOB abs:0 /abs/job.sub" in text
    dags.write_dag(dag, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["dagfile.dag"]


def test_final_node_with_settings_and_a_given_file():
    dag = dags.DAG()
    dag.final(name="fin", submit_description="/x/fin.sub", dir="d", noop=True, retries=1,
              post=dags.Script("/bin/post", ["$RETURN"]))
    assert lines(dag)[-5:] == ["# FINAL NODE", "FINAL fin /x/fin.sub DIR d NOOP", "RETRY fin 1",
                               "SCRIPT POST fin /bin/post $RETURN", "# END FINAL NODE"]


def test_join_numbers_restart_for_each_rendering():
    """One writer rendered twice gives the same text (htcondor2's keeps counting)."""
    dag = dags.DAG()
    dag.layer(name="a", vars=[{}] * 2).child_layer(name="b", vars=[{}] * 2)
    writer = DAGWriter(dag)
    first, second = list(writer.yield_dag_file_lines()), list(writer.yield_dag_file_lines())
    assert first == second
    assert first.count("JOB __JOIN__:0 __JOIN__.sub NOOP") == 1


@pytest.mark.parametrize("parents, children, groups, expected", [
    (6, 4, (3, 2), ["PARENT p:0 p:1 p:2 CHILD __JOIN__:0", "PARENT __JOIN__:0 CHILD c:0 c:1",
                    "PARENT p:3 p:4 p:5 CHILD __JOIN__:1", "PARENT __JOIN__:1 CHILD c:2 c:3"]),
    (2, 2, (1, 1), ["PARENT p:0 CHILD __JOIN__:0", "PARENT __JOIN__:0 CHILD c:0",
                    "PARENT p:1 CHILD __JOIN__:1", "PARENT __JOIN__:1 CHILD c:1"]),
])
def test_grouper(parents, children, groups, expected):
    dag = dags.DAG()
    dag.layer(name="p", vars=[{}] * parents).child_layer(name="c", vars=[{}] * children,
                                                          edge=dags.Grouper(*groups))
    assert [line for line in lines(dag) if line.startswith("PARENT")] == expected


@pytest.mark.parametrize("sizes", [(0, 1), (1, 0), (-2, 1), (1.5, 1)])
def test_grouper_chunk_sizes_must_be_positive_integers(sizes):
    with pytest.raises(exceptions.IncompatibleGrouper, match="positive integer"):
        dags.Grouper(*sizes)


def test_slicer_takes_python_slices_including_negative_ones():
    dag = dags.DAG()
    parent = dag.layer(name="p", vars=[{}] * 5)
    parent.child_layer(name="c", vars=[{}] * 5, edge=dags.Slicer(slice(-2, None), slice(None, 2)))
    assert [line for line in lines(dag) if line.startswith("PARENT")] == ["PARENT p:3 CHILD c:0",
                                                                          "PARENT p:4 CHILD c:1"]


def test_many_to_many_shapes():
    dag = dags.DAG()
    one = dag.layer(name="one")
    many = one.child_layer(name="many", vars=[{}] * 2)
    empty = many.child_layer(name="empty", vars=[])
    one.add_children(empty)
    text = lines(dag)
    assert "PARENT one:0 CHILD many:0 many:1" in text
    assert not [line for line in text if "empty" in line]


def test_vars_values_are_quoted_and_escaped():
    dag = dags.DAG()
    dag.layer(name="v", vars=[{"path": "C:\\dir", "say": 'he said "hi"', "n": 5}])
    assert 'VARS v:0 path="C:\\\\dir" say="he said \\"hi\\"" n="5"' in lines(dag)


@pytest.mark.parametrize("vars", [{"two words": 1}, {"": 1}, {"k=v": 1}, {"k": "line\nbreak"}])
def test_vars_that_would_break_the_dag_file_are_refused(vars):
    dag = dags.DAG()
    dag.layer(name="v", vars=[vars])
    with pytest.raises(exceptions.InvalidDAG, match="'v'"):
        lines(dag)


def test_a_cycle_is_refused_with_its_nodes():
    dag = dags.DAG()
    a = dag.layer(name="a")
    b = a.child_layer(name="b")
    b.add_children(a)
    with pytest.raises(exceptions.InvalidDAG, match="cycle: a -> b -> a"):
        lines(dag)


def test_a_layer_named_like_the_join_nodes_is_refused():
    dag = dags.DAG()
    dag.layer(name="__JOIN__")
    with pytest.raises(exceptions.InvalidDAG, match="__JOIN__"):
        lines(dag)


def test_custom_formatter_names_nodes():
    dag = dags.DAG()
    dag.layer(name="a", vars=[{}] * 2).child_layer(name="b")
    text = lines(dag, node_name_formatter=dags.SimpleFormatter(separator="-", index_format="{:03d}", offset=1))
    assert "PARENT a-001 a-002 CHILD b-001" in text


def test_layer_names_may_not_hold_the_separator():
    dag = dags.DAG()
    dag.layer(name="a:b")
    with pytest.raises(exceptions.LayerNameContainsSeparator):
        lines(dag)


@pytest.mark.parametrize("settings, message", [
    ({"retries": -1}, "RETRY"),
    ({"retries": "3"}, "RETRY"),
    ({"pre_skip_exit_code": 0}, "PRE_SKIP"),
    ({"priority": 1.5}, "PRIORITY"),
    ({"abort": dags.DAGAbortCondition(1, 256)}, "RETURN"),
    ({"category": "two words"}, "category name"),
    ({"pre": dags.Script("/bin/x", retry=True, retry_delay=-1)}, "DEFER time"),
    ({"vars": [{"queue_me": 1}]}, "VARS macro name"),
])
def test_numbers_and_names_dagman_would_refuse(settings, message):
    dag = dags.DAG()
    dag.layer(name="n", **settings)
    with pytest.raises(exceptions.InvalidDAG, match=message):
        lines(dag)


@pytest.mark.parametrize("dag_settings, message", [
    ({"dagman_job_attributes": {"bad name": 1}}, "SET_JOB_ATTR"),
    ({"dagman_job_attributes": {"Empty": ""}}, "SET_JOB_ATTR"),
    ({"max_jobs_by_category": {"c": -1}}, "MAXJOBS"),
])
def test_dag_settings_dagman_would_refuse(dag_settings, message):
    with pytest.raises(exceptions.InvalidDAG, match=message):
        lines(dags.DAG(**dag_settings))


def test_generated_names_that_are_dagman_words_are_refused():
    dag = dags.DAG()
    dag.final(name="PARENT")
    with pytest.raises(exceptions.InvalidDAG, match="reserved"):
        lines(dag)
    plus = dags.DAG()
    plus.layer(name="a+b")
    with pytest.raises(exceptions.InvalidDAG, match="splices"):
        lines(plus)


def test_a_custom_edge_naming_missing_nodes_is_refused():
    class Wrong(dags.BaseEdge):
        def get_edges(self, parent, child, join_factory):
            yield (0, 5), (0,)

    dag = dags.DAG()
    dag.layer(name="p", vars=[{}] * 2).child_layer(name="c", edge=Wrong())
    with pytest.raises(exceptions.InvalidDAG, match=r"indices \(0, 5\) of 'p', which has 2 nodes"):
        lines(dag)


def test_config_lines_and_status_update_time_are_checked():
    with pytest.raises(exceptions.InvalidDAG, match="configuration line"):
        DAGWriter(dags.DAG(dagman_config={"A": "1\nB = 2"})).files()
    with pytest.raises(exceptions.InvalidDAG, match="update time"):
        lines(dags.DAG(node_status_file=dags.NodeStatusFile("s", update_time=-5)))
