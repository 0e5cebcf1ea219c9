"""Imports point inward: façade -> daemons/tracking -> eventcore.

eventcore is pure (stdlib and attrs only); tracking never imports daemons;
nothing but the façade imports the façade.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = {"eventcore", "daemons", "tracking", "jobledger", "schemas"}

ALLOWED = {
    "eventcore": {"eventcore", "attr", "attrs", "regex"},   # regex: bounded ClassAd regexp()
    "tracking": {"eventcore", "tracking", "attr", "attrs", "watchdog", "schemas"},
    # distributed: the optional [dask] extra (daemons/dask_*.py), imported only when configured
    "daemons": {"eventcore", "daemons", "tracking", "schemas", "attr", "attrs", "sqlite_utils", "watchdog",
                "distributed"},
    "schemas": {"schemas"},
}
# I/O and nondeterminism that the pure core must not touch.
FORBIDDEN_IN_CORE = {"sqlite3", "sqlite_utils", "threading", "subprocess", "socket", "random", "multiprocessing"}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def modules(package: str):
    return sorted((ROOT / package).rglob("*.py"))


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
