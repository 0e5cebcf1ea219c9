"""A type checker over everything the wheel installs (``jobledger`` and the folders it maps
under it), as the wheel's names spell it: mypy, its version pinned in the test extra, its
settings in pyproject.toml (``[tool.mypy]``).  Strict where it pays: the claim table, the
interleaving points, the schedd's parts' records.  The modules listed there with
``ignore_errors`` held type errors when the check came in; a module leaves the list once it
checks clean, and a new module is never added to it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"eventcore": "eventcore", "daemons": "daemons", "tracking": "tracking", "schemas": "schemas"}


def _installed_tree(where: Path) -> Path:
    """``where/jobledger``: the package as installed (the folders under it), by symlinks."""
    tree = where / "jobledger"
    tree.mkdir()
    for item in (ROOT / "jobledger").iterdir():
        if item.name != "__pycache__":
            (tree / item.name).symlink_to(item)
    for name, folder in FOLDERS.items():
        (tree / name).symlink_to(ROOT / folder)
    return tree


def test_the_installed_tree_type_checks(tmp_path):
    _installed_tree(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(ROOT / ".mypy_cache"), "--no-color-output", "-p", "jobledger"],
        cwd=tmp_path, capture_output=True, text=True, timeout=540)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_the_unchecked_list_only_shrinks():
    """Every module excused from the check exists, and none of the schedd's parts or
    what they decide with is among them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    excused = [m for o in config["overrides"] if o.get("ignore_errors") for m in o["module"]]
    for module in excused:
        parts = module.split(".")[1:]
        base = ROOT / FOLDERS.get(parts[0], "jobledger/" + parts[0]) if parts[0] in FOLDERS \
            else ROOT / "jobledger" / parts[0]
        path = base.joinpath(*parts[1:])
        assert path.with_suffix(".py").exists() or (path / "__init__.py").exists(), module
    kept = {"jobledger.eventcore.claims", "jobledger.eventcore.interleave",
            "jobledger.daemons.schedd.act", "jobledger.daemons.schedd.policy",
            "jobledger.daemons.schedd.match", "jobledger.daemons.schedd.runs",
            "jobledger.eventcore.decide.actions", "jobledger.eventcore.decide.policy"}
    assert not kept & set(excused)
