"""Progress bars on long CLI work: drawn on a terminal's stderr, never in pipes or files,
never under --quiet.  The terminal is a real pseudo-terminal; the command a real process."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

import pytest
from click.testing import CliRunner

from jobledger.cli import main as cli

JOBLEDGER = [sys.executable, "-m", "jobledger"]
EVENTS = (6, 10)          # events in evicted_variants.log, lifecycle_basic.log


def run_on_terminal(args, cwd) -> tuple[str, str]:
    """``args`` with stderr on a pseudo-terminal and stdout on a pipe: (stdout, terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))   # a terminal has a size
    proc = subprocess.Popen(JOBLEDGER + args, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            cwd=cwd, env=dict(os.environ, COLUMNS="100"))
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:         # the terminal's other end closed: the process is gone
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    out = proc.stdout.read().decode()
    assert proc.wait(60) == 0, seen.decode(errors="replace")
    return out, seen.decode(errors="replace")


@pytest.fixture
def logs(oracle_dir, tmp_path):
    return [str(oracle_dir / "userlog" / name) for name in ("evicted_variants.log", "lifecycle_basic.log")]


def test_import_draws_a_bar_on_a_terminal_only(logs, tmp_path):
    out, terminal = run_on_terminal(["journal", "import", *logs, "--local-dir", str(tmp_path / "a")], tmp_path)
    assert "importing" in terminal and "log" in terminal and "\r" in terminal
    assert [line.split(": ", 1)[1] for line in out.splitlines()] == ["%d events, %d new" % (n, n) for n in EVENTS]
    assert "importing" not in out and "\r" not in out
    out_quiet, quiet_terminal = run_on_terminal(["journal", "import", *logs, "--quiet", "--local-dir",
                                                 str(tmp_path / "b")], tmp_path)
    assert "importing" not in quiet_terminal and out_quiet.replace("/b", "/a") == out.replace("/b", "/a")
    piped = CliRunner().invoke(cli, ["journal", "import", *logs, "--local-dir", str(tmp_path / "c")])
    assert piped.exit_code == 0 and "importing" not in piped.output and "\r" not in piped.output
    assert [line.split(": ", 1)[1] for line in piped.output.splitlines()] == \
        [line.split(": ", 1)[1] for line in out.splitlines()]


def test_converting_to_a_pipe_draws_a_bar_on_the_terminal(logs, tmp_path):
    out, terminal = run_on_terminal(["log", logs[0], "--to", "json"], tmp_path)
    assert "converting" in terminal and "B/s" in terminal
    assert out.count('"EventTypeNumber"') == EVENTS[0]
    _, quiet = run_on_terminal(["log", logs[0], "--to", "json", "--quiet"], tmp_path)
    assert "converting" not in quiet
    plain = CliRunner().invoke(cli, ["log", logs[1], "--to", "text"])
    assert plain.exit_code == 0 and "converting" not in plain.output and plain.output.startswith("000 (")


def test_audit_draws_its_stages_on_a_terminal_only(logs, tmp_path):
    pool = str(tmp_path / "a")
    assert CliRunner().invoke(cli, ["journal", "import", *logs, "--local-dir", pool]).exit_code == 0
    out, terminal = run_on_terminal(["audit", "--local-dir", pool], tmp_path)
    assert "auditing" in terminal and "/8" in terminal and "stage" in terminal
    assert "\nOK: 0 findings" in out and "auditing" not in out and "\r" not in out
    quiet_out, quiet = run_on_terminal(["audit", "--quiet", "--local-dir", pool], tmp_path)
    assert "auditing" not in quiet and quiet_out == out


def test_a_big_submit_draws_the_procs_sent_on_a_terminal_only(tmp_path):
    """2,001 held jobs go in two chunks: the bar counts them; --quiet and pipes stay plain."""
    from jobledger.daemons.client.personal import PersonalPool
    from tests.pool.conftest import stop_and_check
    (tmp_path / "big.sub").write_text("executable = /bin/true\nhold = true\nqueue 2001\n")
    pool = PersonalPool(local_dir=tmp_path / "pool")
    pool.start()
    try:
        where = ["--local-dir", str(tmp_path / "pool")]
        out, terminal = run_on_terminal(["submit", "big.sub", *where], tmp_path)
        assert out == "2001 job(s) submitted to cluster 1.\n"
        assert "submitting" in terminal and "/2.00k" in terminal
        out, quiet = run_on_terminal(["submit", "big.sub", "--quiet", *where], tmp_path)
        assert out == "2001 job(s) submitted to cluster 2.\n" and "submitting" not in quiet
        (tmp_path / "small.sub").write_text("executable = /bin/true\nhold = true\nqueue 3\n")
        out, small = run_on_terminal(["submit", "small.sub", *where], tmp_path)
        assert out == "3 job(s) submitted to cluster 3.\n" and "submitting" not in small   # one message
        counts = {c: len(pool.schedd.query(f"ClusterId == {c}", ["ProcId"])) for c in (1, 2, 3)}
        assert counts == {1: 2001, 2: 2001, 3: 3}
    finally:
        stop_and_check(pool)


def test_dag_submit_draws_its_steps_on_a_terminal_only(tmp_path):
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "big.dag").write_text("".join(f"JOB n{i} a.sub\n" for i in range(2000))
                                      + "".join(f"PARENT n{i} CHILD n{i + 1}\n" for i in range(1999)))
    out, terminal = run_on_terminal(["dag", "submit", "big.dag", "--no-submit"], tmp_path)
    assert "DAG submit" in terminal and "step" in terminal
    assert out.startswith("File for submitting this DAG to HTCondor") and "\r" not in out
    out_quiet, quiet = run_on_terminal(["dag", "submit", "big.dag", "--no-submit", "--force", "--quiet"], tmp_path)
    assert "DAG submit" not in quiet and out_quiet == out
    assert (tmp_path / "big.dag.condor.sub").read_text().count("big.dag") >= 1
