"""README.md runs and documents the whole CLI (style.md item 15).

- Every ```python block marked ``<!-- runnable -->`` in README.md runs as it
  is, in an empty directory, as a fresh interpreter (it starts its own pool).
- Every ``jobledger`` command and sub-command has help text, answers
  ``--help``, and is named in README.md; adding a command without documenting
  it fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from jobledger.cli import main
from tests.pool.conftest import pool_processes, wait_until

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
RUNNABLE = re.compile(r"<!-- runnable -->\n```python\n(.*?)\n```", re.DOTALL)


def runnable_blocks() -> list[str]:
    return RUNNABLE.findall(README)


def command_paths(group: click.Group = main, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command below ``group`` as its words after ``jobledger`` (groups included)."""
    paths = []
    for name, command in sorted(group.commands.items()):
        path = prefix + (name,)
        paths.append(path)
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, path))
    return paths


def command_at(path: tuple[str, ...]) -> click.Command:
    command = main
    for name in path:
        command = command.commands[name]
    return command


def test_readme_has_a_runnable_block():
    assert runnable_blocks(), "README.md lost its runnable Python example"


@pytest.mark.parametrize("index", range(len(runnable_blocks())))
def test_readme_python_runs(tmp_path, index):
    source = runnable_blocks()[index]
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", source], cwd=tmp_path, env=env, timeout=180,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # The block's comments say what it prints; hold it to them.
    expected = [m.group(1) for m in re.finditer(r"print\(.*#\s*(.+)$", source, re.MULTILINE)]
    assert done.stdout.splitlines() == expected
    wait_until(lambda: not pool_processes(tmp_path), 15, what="the README's pool to stop")


def test_the_walk_finds_nested_commands():
    paths = command_paths()
    assert ("pool", "start") in paths and ("journal", "export") in paths and ("q",) in paths


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_command_has_help_and_is_in_readme(path):
    command = command_at(path)
    assert (command.help or "").strip(), f"jobledger {' '.join(path)} has no help text"
    assert command.get_short_help_str().strip()
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    first_words = " ".join(command.help.split()[:6])
    assert first_words in " ".join(result.output.split())
    assert f"`jobledger {' '.join(path)}" in README, f"README.md does not name `jobledger {' '.join(path)}`"


def test_the_architecture_page_names_modules_that_exist():
    """docs/architecture.md: the data flow, and an owner table whose paths are real."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "command" in page and "journal" in page and "projections" in page and "readers" in page
    paths = re.findall(r"`((?:eventcore|daemons|tracking|jobledger|schemas)/[\w/.]*)`", page)
    assert len(paths) > 10
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
    assert all((ROOT / "daemons" / "storage" / name).exists()
               for name in re.findall(r"`(\w+\.py)`", page))
