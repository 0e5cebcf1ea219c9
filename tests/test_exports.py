"""The façade's public names, pinned against the real bindings (style.md item 14).

``import jobledger as htcondor`` claims htcondor2's names and
``import jobledger.classad as classad`` claims classad2's.  This file holds
the single list of what we claim (shared/spec/python-api.md, rows marked E,
plus the N names we implement), what we add on purpose, and checks both
against htcondor2/classad2 from the venv.  The façade modules only
re-export: no function or class is defined in them.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import jobledger
import jobledger.classad
import jobledger.personal
import jobledger.tracking

htcondor2 = pytest.importorskip("htcondor2")
classad2 = pytest.importorskip("classad2")
import htcondor2.personal  # noqa: E402

pytestmark = pytest.mark.oracle

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT.parent / "shared" / "spec" / "python-api.md"

# python-api.md, priority E: the module-level names (§1), the classes of §2-5
# and htcondor2.personal (§6).
ESSENTIAL = {
    "classad", "param", "reload_config", "version", "HTCondorException",
    "JobAction", "JobStatus", "QueryOpt", "TransactionFlag", "AdType", "DaemonType", "JobEventType",
    "Schedd", "SubmitResult", "Submit", "Collector", "JobEventLog", "JobEvent",
}
ESSENTIAL_PERSONAL = {"PersonalPool", "PersonalPoolState"}
# Names of priority N we implement too (the same names as htcondor2).
NICE = {
    "enable_debug", "disable_debug", "enable_log", "log", "platform", "set_subsystem", "send_command",
    "SubmitMethod", "DaemonCommand", "LogLevel", "SubsystemType", "DrainType", "CompletionType",
    "VacateType", "CommonFilesEventType", "FileTransferEventType", "DAGMan", "Negotiator", "ping", "SecurityContext",
    "RemoteParam", "HistorySrc", "send_alive", "set_ready_state", "Startd", "Credd", "CredCheck", "CredType", "CredTypes",
    # v1 plural enum names (htcondor2 keeps them as aliases)
    "AdTypes", "DaemonTypes", "QueryOpts", "TransactionFlags", "DrainTypes", "DaemonCommands",
}
# Ours on purpose, absent from htcondor2: v1's exception classes (spec §7:
# "harmless and helps old code"), our error root and the version string.
OURS_ONLY = {
    "HTCondorEnumError", "HTCondorInternalError", "HTCondorIOError", "HTCondorLocateError",
    "HTCondorReplyError", "HTCondorTypeError", "HTCondorValueError", "JobledgerError", "__version__",
    # v1's streaming queries, which htcondor2 dropped (the seed API reference has them)
    "BlockingMode", "BulkQueryIterator", "HistoryIterator", "QueryIterator", "poll",
    "Transaction", "VacateTypes", "QueueItemsIterator",
}


def public(module) -> set[str]:
    # "@py_builtins"/"@pytest_ar": pytest rewrites the asserts of the package its plugin comes from
    return {name for name in dir(module) if not name.startswith(("_", "@"))}


def test_all_is_exactly_what_we_claim():
    assert set(jobledger.__all__) == ESSENTIAL | NICE | OURS_ONLY
    assert len(jobledger.__all__) == len(set(jobledger.__all__))


def test_every_claimed_name_is_htcondor2s():
    missing = (ESSENTIAL | NICE) - public(htcondor2)
    assert not missing, f"we claim names htcondor2 does not have: {sorted(missing)}"


def test_ours_only_names_really_are_not_htcondor2s():
    assert not OURS_ONLY & public(htcondor2)


def test_module_holds_exactly_all():
    """Nothing public leaks (a helper imported for use) beyond __all__ and the façade's submodules."""
    submodules = {"aliases", "cli", "condor_cli", "dags", "personal", "tracking", "v1", "web", "eventcore",
                  "daemons", "schemas", "pytest_plugin"}
    assert public(jobledger) - submodules - {"classad"} <= set(jobledger.__all__)
    assert all(hasattr(jobledger, name) for name in jobledger.__all__)


def test_essential_names_of_the_spec_are_claimed():
    """python-api.md §1's E rows are all in ESSENTIAL (a spec change shows up here)."""
    if not SPEC.is_file():
        pytest.fail(f"the spec is missing: {SPEC} (../shared must sit beside the project)")
    text = SPEC.read_text()
    section = text.split("## 1. Module-level names", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    marked = {re.match(r"\| `(\w+)`", row).group(1) for row in rows if re.search(r"\| E\b[^|]*\|\s*$", row)}
    assert marked and marked <= ESSENTIAL, sorted(marked - ESSENTIAL)


@pytest.mark.parametrize("name", sorted(ESSENTIAL | NICE))
def test_same_kind_as_htcondor2(name):
    ours, theirs = getattr(jobledger, name), getattr(htcondor2, name)
    if inspect.ismodule(theirs):
        assert inspect.ismodule(ours)
    elif inspect.isclass(theirs):
        assert inspect.isclass(ours)
        if issubclass(theirs, BaseException):
            assert issubclass(ours, Exception)
    elif callable(theirs):
        assert callable(ours)


@pytest.mark.parametrize("name", sorted(n for n in ESSENTIAL | NICE
                                        if n.endswith(("Type", "Types", "Action", "Status", "Opt", "Opts",
                                                       "Flag", "Flags", "Command", "Commands", "Level"))
                                        and n not in {"JobEventType", "CommonFilesEventType",
                                                      "FileTransferEventType"}))
def test_enum_members_match(name):
    ours, theirs = getattr(jobledger, name), getattr(htcondor2, name)
    assert {m.name: int(m) for m in ours} == {m.name: int(m) for m in theirs}


def test_job_event_types_cover_htcondor2s():
    ours = {m.name: int(m) for m in jobledger.JobEventType}
    theirs = {m.name: int(m) for m in htcondor2.JobEventType}
    assert ours.items() >= theirs.items()


# htcondor2 25.x's Schedd methods where ours differ on purpose: submit also takes v1's ad_results
SCHEDD_SHAPES_OURS = {"submit"}


@pytest.mark.parametrize("name", sorted(n for n in dir(htcondor2.Schedd) if not n.startswith("_")))
def test_every_htcondor2_schedd_method_is_ours_with_its_parameters(name):
    """The 25.x wheel's Schedd, method by method (the OCU methods create_ocu, query_ocu,
    remove_ocu among them): ours has each, taking the same parameters in the same order."""
    theirs = getattr(htcondor2.Schedd, name)
    assert hasattr(jobledger.Schedd, name), f"htcondor2.Schedd.{name} is missing"
    ours = getattr(jobledger.Schedd, name)
    if not callable(theirs) or name in SCHEDD_SHAPES_OURS:
        return
    assert ([p.name for p in inspect.signature(ours).parameters.values()]
            == [p.name for p in inspect.signature(theirs).parameters.values()])


def test_the_ocu_methods_are_htcondor2s():
    assert {"create_ocu", "query_ocu", "remove_ocu"} <= public(htcondor2.Schedd)
    assert all(callable(getattr(jobledger.Schedd, n)) for n in ("create_ocu", "query_ocu", "remove_ocu"))


def test_personal_names():
    assert set(jobledger.personal.__all__) == ESSENTIAL_PERSONAL | {"SetCondorConfig"}
    assert set(jobledger.personal.__all__) <= public(htcondor2.personal)


def test_classad_names_are_classad2s():
    assert set(jobledger.classad.__all__) == public(classad2) - {"classad2_impl"}
    assert public(jobledger.classad) == set(jobledger.classad.__all__)


# jobledger.tracking is the tracking/ folder itself (it installs as jobledger.tracking)
FACADES = ["jobledger/__init__.py", "jobledger/classad.py", "jobledger/personal.py", "tracking/__init__.py"]


def _lazy_reexport(node) -> bool:
    """jobledger/__init__.py and tracking/__init__.py re-export on first use (PEP 562): a table
    of names, the import of importlib, and the module's __getattr__/__dir__ that read that table."""
    if isinstance(node, ast.Import):
        return True
    if isinstance(node, ast.Assign):
        return [ast.unparse(t) for t in node.targets] in (["_REEXPORTS"], ["_ORIGIN"])
    return isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__")


@pytest.mark.parametrize("filename", FACADES)
def test_facade_only_reexports(filename):
    """Imports, __all__/__version__ and (classad.py) the one configure() call; no definitions."""
    tree = ast.parse((ROOT / filename).read_text())
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] in (["__all__"], ["__version__"]):
            continue
        if filename in ("jobledger/__init__.py", "tracking/__init__.py") and _lazy_reexport(node):
            continue
        if (filename == "jobledger/classad.py" and isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func) == "_configure"):
            continue
        pytest.fail(f"{filename}:{node.lineno}: {ast.unparse(node)[:60]!r} is not a re-export")
