"""jobledger.dags claims htcondor2.dags' names (and adds the node status file's)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import jobledger.dags
import jobledger.dags.exceptions
import jobledger.dags.rescue
import jobledger.dags.writer

htcondor2_dags = pytest.importorskip("htcondor2.dags")

pytestmark = pytest.mark.oracle

ROOT = Path(__file__).resolve().parents[2]
# htcondor2.dags' submodules: the ones scripts import names from, which we
# mirror, and its private helpers (utils), which we do not.
SUBMODULES = {"dag", "edges", "formatter", "node", "walk_order", "writer", "rescue"}
THEIR_SUBMODULES = SUBMODULES - {"rescue"} | {"utils"}
OURS_ONLY = {"NodeStatus", "NodeState", "DAGStatusReport", "read_node_status"}
OUR_EXCEPTIONS_ONLY = {"InvalidDAG", "DAGFileError"}


def public(module) -> set[str]:
    # "@py_builtins"/"@pytest_ar": pytest rewrites the asserts of the package its plugin comes from
    return {name for name in dir(module) if not name.startswith(("_", "@"))}


def test_names_are_htcondor2_dags_plus_ours():
    theirs = public(htcondor2_dags) - THEIR_SUBMODULES
    assert set(jobledger.dags.__all__) == theirs | OURS_ONLY
    assert not OURS_ONLY & public(htcondor2_dags)
    assert public(jobledger.dags) - SUBMODULES <= set(jobledger.dags.__all__)


@pytest.mark.parametrize("submodule", sorted(SUBMODULES - {"rescue"}))
def test_submodules_hold_htcondor2s_public_classes(submodule):
    """``from htcondor2.dags.node import NodeLayer`` and the like keep working."""
    ours = importlib.import_module(f"jobledger.dags.{submodule}")
    theirs = importlib.import_module(f"htcondor2.dags.{submodule}")
    wanted = {name for name, value in vars(theirs).items()
              if not name.startswith("_") and getattr(value, "__module__", None) == theirs.__name__}
    wanted.discard("NodeStore")   # htcondor2's internal name-to-node store (ours is a dict)
    assert wanted
    assert wanted <= set(ours.__all__)


def test_exception_names_and_kinds():
    theirs = htcondor2_dags.exceptions
    assert set(jobledger.dags.exceptions.__all__) == public(theirs) | OUR_EXCEPTIONS_ONLY
    for name in public(theirs):
        assert issubclass(getattr(jobledger.dags.exceptions, name), jobledger.dags.exceptions.DAGsException)


def test_writer_and_rescue_modules_have_the_names_scripts_import():
    assert callable(jobledger.dags.writer.DAGWriter(jobledger.dags.DAG()).yield_dag_file_lines)
    rescue_module = importlib.import_module("jobledger.dags.rescue")  # the package's ``rescue`` is the function
    assert callable(rescue_module._rescue)
    assert rescue_module.find_rescue_file is jobledger.dags.find_rescue_file


@pytest.mark.parametrize("name", sorted(public(htcondor2_dags) - THEIR_SUBMODULES - {"exceptions"}))
def test_same_kind_as_htcondor2(name):
    ours, theirs = getattr(jobledger.dags, name), getattr(htcondor2_dags, name)
    if isinstance(theirs, type):
        assert isinstance(ours, type)
    elif callable(theirs):
        assert callable(ours)
    else:
        assert ours == theirs


@pytest.mark.parametrize("filename", sorted(p.name for p in (ROOT / "jobledger" / "dags").glob("*.py")))
def test_facade_only_reexports(filename):
    tree = ast.parse((ROOT / "jobledger" / "dags" / filename).read_text())
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]:
            continue
        pytest.fail(f"jobledger/dags/{filename}:{node.lineno}: {ast.unparse(node)[:60]!r} is not a re-export")
