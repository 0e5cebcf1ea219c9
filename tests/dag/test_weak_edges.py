"""WEAK PARENT ... CHILD ...: the child waits for its parent to end, not to succeed (HTCondor's
DAGMan, HTCONDOR-2690): a failed parent lets its weak children run, a futile one (it never
ran) still makes them futile, a PARENT line for the same pair makes the edge strong, and a
failed node whose children are all weak is DONE in the rescue DAG."""

from __future__ import annotations

import pytest

from jobledger.eventcore.dagman.report import rescue_text
from jobledger.eventcore.dagman.run import DONE, FAILED, FUTILE
from jobledger.eventcore.errors import DagError
from tests.dag.test_run import Driver, make


def run_all(text: str, failing: set) -> Driver:
    d = Driver(make(text))
    for _ in range(20):
        started = d.submitted_nodes(d.step())
        for node in started:
            d.finish(node, 1 if node in failing else 0)
        if d.run.exit_code is not None:
            break
    return d


def statuses(d: Driver) -> dict:
    return {name: run.status for name, run in d.run.nodes.items()}


def test_a_failed_parent_lets_its_weak_children_run():
    d = run_all("JOB A a\nJOB B b\nJOB C c\nWEAK PARENT A CHILD B\nWEAK PARENT B CHILD C\n", {"A"})
    assert statuses(d) == {"A": FAILED, "B": DONE, "C": DONE}
    assert d.run.exit_code == 1                       # the DAG still failed


def test_a_futile_node_makes_its_weak_children_futile():
    d = run_all("JOB A a\nJOB B b\nJOB C c\nPARENT A CHILD B\nWEAK PARENT B CHILD C\n", {"A"})
    assert statuses(d) == {"A": FAILED, "B": FUTILE, "C": FUTILE}


@pytest.mark.parametrize("edges", ["WEAK PARENT A CHILD B\nPARENT A CHILD B\n",
                                   "PARENT A CHILD B\nweak parent A child B\n"])
def test_the_strong_declaration_wins(edges):
    d = run_all("JOB A a\nJOB B b\n" + edges, {"A"})
    assert statuses(d) == {"A": FAILED, "B": FUTILE}
    assert d.run.dag.weak == set()


def test_a_child_with_a_weak_and_a_strong_parent():
    text = "JOB A1 a\nJOB A2 a\nJOB C c\nWEAK PARENT A1 CHILD C\nPARENT A2 CHILD C\n"
    assert statuses(run_all(text, {"A1"}))["C"] == DONE
    assert statuses(run_all(text, {"A2"}))["C"] == FUTILE
    d = Driver(make(text))
    d.step()
    d.finish("A1", 1)
    assert d.submitted_nodes(d.step()) == []          # C still waits for A2
    d.finish("A2")
    assert d.submitted_nodes(d.step()) == ["C"]


def test_a_failed_node_with_only_weak_children_is_done_in_the_rescue_dag():
    d = run_all("JOB A a\nJOB B b\nJOB D d\nJOB E e\nJOB F f\nJOB H h\n"
                "WEAK PARENT A CHILD B\nWEAK PARENT D CHILD E F\nPARENT D CHILD H\n", {"A", "D"})
    text = rescue_text(d.run, "t.dag", "now")
    assert "# Failed node with only weak child dependencies:\nDONE A\n" in text
    assert "DONE D" not in text                       # H depends on D strongly
    assert "DONE B" in text and "DONE E" in text


def test_weak_needs_parent():
    with pytest.raises(DagError, match="expected WEAK PARENT node ... CHILD node"):
        make("JOB A a\nJOB B b\nWEAK A CHILD B\n")
