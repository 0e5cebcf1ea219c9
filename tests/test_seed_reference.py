"""The seed API reference (``../shared/seeds/htcondor-api-reference.txt``, v1's htcondor.rst),
counted row by row against ``jobledger.v1``.

A row is one name the reference documents: every ``autoclass``, ``automethod``,
``autofunction``, ``autodata`` and ``autoattribute`` directive (137), the ``:members:`` of
``TokenRequest`` (one row), and for each of the 44 classes a second row for what using the
class needs beyond its name: an enum has members, an exception is an ``HTCondorException``,
any other class can be called (its constructor has a signature).  That makes 182 rows.

A row counts when the name resolves and its code is not a stub (a function whose body only
raises ``NotImplementedError``).  ``KNOWN_MISSING`` is the list of rows that do not count
yet: a name that starts to count must leave it (the test fails until it does), so the list
is always the true one.  ``python tests/test_seed_reference.py`` prints the count and the
missing rows.
"""

from __future__ import annotations

import ast
import enum
import inspect
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT.parent / "shared" / "seeds" / "htcondor-api-reference.txt"
DIRECTIVE = re.compile(r"^(\s*)\.\. auto(class|method|function|data|attribute)::\s*(\S+)")

# The rows that do not count yet.
KNOWN_MISSING: set[str] = set()
TARGET = 172


def rows(text: str) -> list[str]:
    """The reference's rows in order: ``Class``, ``Class()``, ``Class.method``, ``function``."""
    out: list[str] = []
    current = None
    for line in text.splitlines():
        match = DIRECTIVE.match(line)
        if match:
            indent, kind, name = match.groups()
            if kind == "class":
                current = name
                out += [name, f"{name}()"]
            elif kind in ("method", "attribute") and indent and current:
                out.append(f"{current}.{name}")
            else:
                current = None
                out.append(name)
        elif line.strip() == ":members:" and current:
            out.append(f"{current}.*")
    return out


def _is_stub(obj) -> bool:
    """A function (or property) whose body, past its docstring, is only ``raise NotImplementedError``."""
    func = obj.fget if isinstance(obj, property) else obj
    func = getattr(func, "__func__", func)
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return False
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None
            and "NotImplementedError" in ast.unparse(body[0].exc))


def _usable_class(cls) -> bool:
    from jobledger.eventcore.errors import HTCondorException
    if not inspect.isclass(cls):
        return False
    if issubclass(cls, enum.Enum):
        return len(cls) > 0
    if issubclass(cls, BaseException):
        return issubclass(cls, HTCondorException)
    try:
        inspect.signature(cls)
    except (TypeError, ValueError):
        return False
    return not _is_stub(cls.__init__) if "__init__" in vars(cls) else True


def counts(row: str, module) -> bool:
    if row.endswith("()"):
        return hasattr(module, row[:-2]) and _usable_class(getattr(module, row[:-2]))
    obj = module
    parts = row.split(".")
    for part in parts:
        if part == "*":   # the documented members: every public one of the class is real
            members = [inspect.getattr_static(obj, n) for n in vars(obj) if not n.startswith("_")]
            return bool(members) and not any(_is_stub(m) for m in members if callable(m) or isinstance(m, property))
        holder = obj
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
        if holder is not module and _is_stub(inspect.getattr_static(holder, part)):
            return False
    return not _is_stub(obj) if callable(obj) and not inspect.isclass(obj) else True


def missing(module=None) -> tuple[list[str], list[str]]:
    if module is None:
        import jobledger.v1 as module
    every = rows(SEED.read_text())
    return every, [row for row in every if not counts(row, module)]


def test_the_reference_has_182_rows():
    every = rows(SEED.read_text())
    assert len(every) == 182, len(every)
    assert len(set(every)) == 182


def test_the_rows_that_count():
    every, absent = missing()
    assert set(absent) == KNOWN_MISSING, (
        f"now missing but not listed: {sorted(set(absent) - KNOWN_MISSING)}; "
        f"listed but present now (take them off the list): {sorted(KNOWN_MISSING - set(absent))}")
    assert len(every) - len(absent) >= TARGET


def test_a_stub_does_not_count():
    class Fake:
        def real(self):
            return 1

        def stub(self):
            """Documented, but"""
            raise NotImplementedError("later")

    module = type(sys)("fake")
    module.Fake = Fake
    assert counts("Fake.real", module) and not counts("Fake.stub", module)
    assert counts("Fake", module) and counts("Fake()", module) and not counts("Fake.absent", module)


if __name__ == "__main__":
    every, absent = missing()
    print(f"{len(every) - len(absent)} of {len(every)} rows of the seed reference count")
    for row in absent:
        print(f"  missing: {row}")
