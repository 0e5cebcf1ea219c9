"""Every command that reads a file a user names reads it the one bounded way
(``daemons.input_files``): an endless device, a FIFO nobody writes or random
bytes give a one-line error naming the file, under a memory limit the old
whole-file reads ran out of (``condor_submit /dev/zero`` and
``condor_history -file /dev/zero`` took all memory in 9-12 s).

The installed console scripts run as real processes, address space capped
at 1.5 GiB; no pool is needed (each file is read before a pool is asked).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
LIMIT = 1536 << 20


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.fixture
def fifo(tmp_path) -> str:
    path = tmp_path / "nobody-writes"
    os.mkfifo(path)
    return str(path)


COMMANDS = {
    "condor_submit": ["condor_submit", "{}"],
    "condor_submit -dry-run": ["condor_submit", "-dry-run", "-", "{}"],
    "condor_history -file": ["condor_history", "-file", "{}"],
    "condor_submit_dag": ["condor_submit_dag", "-no_submit", "{}"],
    "classad_eval -file": [sys.executable, "-c",
                           "import sys; from jobledger.condor_cli.classad_eval import main; "
                           "sys.argv[0] = 'classad_eval'; main()", "-file", "{}", "1"],
    "jobledger submit": ["jobledger", "submit", "{}", "--local-dir", "{pool}"],
    "jobledger dag submit": ["jobledger", "dag", "submit", "{}", "--no-submit"],
}


def run(words: list[str], path: str, pool: str, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    argv = [w.replace("{}", path).replace("{pool}", pool) for w in words]
    if not os.path.isabs(argv[0]):
        argv[0] = str(BIN / argv[0])
    return subprocess.run(argv, stdin=stdin, capture_output=True, text=True, errors="replace",
                          preexec_fn=_cap, timeout=300, cwd=pool)


def refused(done: subprocess.CompletedProcess, path: str) -> str:
    text = done.stdout + done.stderr
    assert done.returncode != 0, text
    assert "Traceback" not in text and "MemoryError" not in text, text
    lines = [line for line in text.splitlines() if path in line]
    assert lines, text
    return lines[0]


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("device, why", [("/dev/zero", ("NUL", "larger than")),
                                         ("/dev/urandom", ("not UTF-8", "larger than", "not text", "NUL")),
                                         ("fifo", ("not a regular file",))])
def test_endless_and_blocking_files_are_refused(tmp_path, fifo, command, device, why):
    path = fifo if device == "fifo" else device
    line = refused(run(COMMANDS[command], path, str(tmp_path)), path)
    assert any(word in line for word in why), line


@pytest.mark.parametrize("command", ["condor_submit", "jobledger submit"])
def test_endless_standard_input_is_refused(tmp_path, command):
    words = ["condor_submit", "-"] if command == "condor_submit" else ["jobledger", "submit", "-",
                                                                        "--local-dir", "{pool}"]
    with open("/dev/zero", "rb") as zero:
        done = run(words, "-", str(tmp_path), stdin=zero)
    text = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in text, text
    assert "stdin" in text and "NUL" in text, text


def test_a_good_file_still_reads(tmp_path):
    sub = tmp_path / "job.sub"
    sub.write_text("executable = /bin/true\narguments = é\nqueue 2\n")
    done = run(["condor_submit", "-dry-run", "-", "{}"], str(sub), str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('Cmd = "/bin/true"') == 2 and "é" in done.stdout
