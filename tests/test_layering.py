"""Imports point inward: façade -> client -> daemons -> tracking -> storage -> eventcore.

The folders are the owner's (eventcore/, daemons/, tracking/, schemas/); inside daemons/ two
packages are layers of their own: daemons/storage/ (the journal's SQLite: below the daemons and
below tracking, which reads through it) and daemons/client/ (the client library: above the
daemons, which never import it, but DAGMan, itself a client of the schedd).  eventcore is pure
(stdlib and attrs only); nothing but the façade imports the façade.  Only daemons/storage/
holds SQL on the journal.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The folders of the repository and the names they install as: eventcore/ is jobledger.eventcore, ...
LAYERS = ("eventcore", "daemons", "tracking", "schemas")

ALLOWED = {
    "eventcore": {"eventcore", "attr", "attrs", "regex"},   # regex: bounded ClassAd regexp()
    "storage": {"eventcore", "storage", "schemas", "attr", "attrs", "sqlite_utils"},
    "tracking": {"eventcore", "storage", "tracking", "attr", "attrs", "watchdog", "schemas"},
    # distributed: the optional [dask] extra (daemons/dask_*.py), imported only when configured
    # jwt, cryptography: IDTOKENS and the pool's TLS (daemons/idtokens.py, daemons/pool_ssl.py)
    "daemons": {"eventcore", "storage", "daemons", "tracking", "schemas", "attr", "attrs", "sqlite_utils",
                "watchdog", "distributed", "jwt", "cryptography"},
    "client": {"eventcore", "storage", "daemons", "tracking", "client", "schemas", "attr", "attrs"},
    "schemas": {"schemas"},
}
# I/O and nondeterminism that the pure core must not touch.
FORBIDDEN_IN_CORE = {"sqlite3", "sqlite_utils", "threading", "subprocess", "socket", "random", "multiprocessing"}


# the layers that are packages inside daemons/: module prefix -> layer, and their folders
SUBLAYERS = {"jobledger.daemons.storage": "storage", "jobledger.daemons.client": "client"}
FOLDERS = {"storage": "daemons/storage", "client": "daemons/client"}
# a part of a layer that may import a layer above it: DAGMan is a client of the schedd
EXCEPTIONS = {"daemons/dagman": {"client"}}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def layer_of(module: str) -> str:
    """The layer a module name belongs to: jobledger.daemons.x -> daemons, jobledger.cli -> jobledger
    (the façade), attr -> attr."""
    for prefix, layer in SUBLAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return layer
    parts = module.split(".")
    if parts[0] == "jobledger" and len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return parts[0]


def imported_roots(path: Path) -> set[str]:
    rel = path.relative_to(ROOT).as_posix()
    allowed = set().union(*(extra for folder, extra in EXCEPTIONS.items() if rel.startswith(folder + "/")))
    return {layer_of(name) for name in imported_modules(path)} - allowed


def modules(package: str):
    """The Python files of a layer (daemons/ without its sub-layers' folders)."""
    folder = ROOT / FOLDERS.get(package, package)
    inner = [ROOT / sub for layer, sub in FOLDERS.items() if layer != package]
    return sorted(path for path in folder.rglob("*.py")
                  if not any(path.is_relative_to(sub) for sub in inner))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_inward(package):
    stdlib = set(sys.stdlib_module_names)
    bad = {}
    for path in modules(package):
        roots = imported_roots(path) - stdlib - {"__future__"}
        wrong = roots - ALLOWED[package]
        if wrong:
            bad[str(path.relative_to(ROOT))] = sorted(wrong)
    assert not bad, f"{package} imports outside its layer: {bad}"


def test_eventcore_is_pure():
    bad = {}
    for path in modules("eventcore"):
        wrong = imported_roots(path) & FORBIDDEN_IN_CORE
        if wrong:
            bad[str(path.relative_to(ROOT))] = sorted(wrong)
    assert not bad, f"eventcore must not do I/O or draw randomness: {bad}"


def test_the_sub_layers_are_found():
    """The folder split above sees every module once: a sub-layer's file is not a daemon's."""
    everything = {p for layer in ("daemons", "storage", "client") for p in modules(layer)}
    assert everything == set((ROOT / "daemons").rglob("*.py"))
    assert sum(len(modules(layer)) for layer in ("daemons", "storage", "client")) == len(everything)
    assert modules("storage") and modules("client")
    assert layer_of("jobledger.daemons.storage.reader") == "storage"
    assert layer_of("jobledger.daemons.client") == "client"
    assert layer_of("jobledger.daemons.schedd.daemon") == "daemons"


# SQL on the journal's tables, in a string literal
_JOURNAL_TABLES = ("journal", "meta", "projection", "queue_jobs", "queue_clusters", "history",
                   "log_files", "log_jobs", "log_failures")
_SQL = re.compile(r"\b(SELECT\b.*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|"
                  r"DELETE\s+FROM|CREATE\s+(TABLE|INDEX)|DROP\s+TABLE|PRAGMA)\b", re.S)
# their own SQLite files, not the journal
OTHER_DATABASES = {"tracking/checkpoint.py", "tracking/jobtable.py", "daemons/queuelog_state.py"}
# the storage layer's own benchmark: it writes journals of millions of rows
# directly (faster than appends) and times sqlite3's insert beside sqlite-utils'
STORAGE_BENCHMARKS = {"bench/bench_journal.py"}


def test_only_the_storage_package_holds_sql_on_the_journal():
    """The benchmarks too read the journal through daemons/storage, as the pool does."""
    bad = []
    for package in ("eventcore", "daemons", "tracking", "jobledger", "bench"):
        for path in modules(package):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("daemons/storage/") or rel in OTHER_DATABASES | STORAGE_BENCHMARKS:
                continue
            text = path.read_text("utf-8")
            if "import sqlite3" in text:
                bad.append(f"{rel}: imports sqlite3")
            for node in ast.walk(ast.parse(text, rel)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and _SQL.search(node.value) and any(
                            re.search(rf"\b{t}\b", node.value) for t in _JOURNAL_TABLES):
                    bad.append(f"{rel}:{node.lineno}: {node.value[:60]!r}")
    assert not bad, "SQL on the journal outside daemons/storage/:\n" + "\n".join(bad)


# Every Python file of the repository: the installed packages, their tests, benchmarks and examples.
def project_files():
    for folder in ("eventcore", "daemons", "tracking", "schemas", "jobledger", "tests", "bench", "examples"):
        yield from modules(folder)


def test_nothing_imports_the_folders_by_their_old_top_level_names():
    """eventcore/, daemons/, tracking/ and schemas/ install under jobledger's namespace; a top-level
    `import daemons` would find another distribution's package (PyPI has `daemons`, `schemas`,
    `eventcore`) or, in a checkout, a second copy of our modules."""
    bad = []
    for path in project_files():
        for name in imported_modules(path):
            if name.split(".")[0] in LAYERS:
                bad.append(f"{path.relative_to(ROOT)}: import {name}")
    assert not bad, "old top-level names:\n" + "\n".join(bad)


def _packages_in_tree() -> set[str]:
    found = set()
    for folder in ("jobledger", *LAYERS):
        base = "jobledger" if folder == "jobledger" else f"jobledger.{folder}"
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            # a package only below packages (jobledger/aliases/v1/htcondor is an alias folder:
            # package data, put on PYTHONPATH, not a module of jobledger)
            if all((ROOT / folder / Path(*rel[:i]) / "__init__.py").is_file() for i in range(len(rel))):
                found.add(".".join((base, *rel)))
    return found


def test_the_wheel_installs_every_package_and_only_under_jobledger():
    """pyproject.toml lists the packages by hand (a package-dir mapping cannot be found
    automatically): a package added to the tree and not listed would be missing from the wheel."""
    import tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    listed = set(config["packages"])
    assert listed == _packages_in_tree()
    assert {name.split(".")[0] for name in listed} == {"jobledger"}
    assert config["package-dir"] == {"jobledger": "jobledger", **{f"jobledger.{f}": f for f in LAYERS}}
