"""Bad input to commands, run as real processes on real files: a clear error, never a
traceback, never taken silently.

- ``jobledger journal sql`` with bytes that are not UTF-8 in its argument (the shell passes
  them through; Python keeps them as lone surrogates, which SQLite cannot take);
- ``condor_userlog`` on a file that is not a user log: HTCondor's condor_userlog prints
  "Error: unable to read log file." and exits 0 (its read_log calls exit(0)); we do the same,
  and print no totals;
- ``$EVAL(1 +)`` in a submit file: HTCondor 25 refuses an argument that is not a ClassAd
  expression (htcondor2 25.14.1's expand raises; tests/submit/test_htcondor2.py holds it
  beside the wheel); condor_submit says so in the ``$FUNC() error:`` form of its other macros.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jobledger.daemons.storage.store import Store

BIN = Path(sys.executable).parent


def run(*argv, cwd=None) -> subprocess.CompletedProcess:
    words = [str(BIN / argv[0]), *argv[1:]]
    return subprocess.run(words, capture_output=True, cwd=cwd, timeout=300)


@pytest.fixture
def journal_dir(tmp_path) -> Path:
    Store(tmp_path).close()
    assert (tmp_path / "journal.sqlite").is_file()
    return tmp_path


@pytest.mark.parametrize("statement, shown", [
    (b"select 1 -- \xff", "byte 0xff at character 13"),
    (b"select '\xc3\x28'", "byte 0xc3 at character 9"),
    (b"\xfe", "byte 0xfe at character 1"),
])
def test_journal_sql_refuses_bytes_that_are_not_utf8(journal_dir, statement, shown):
    done = run("jobledger", "journal", "sql", "--local-dir", str(journal_dir), statement)
    err = done.stderr.decode()
    assert done.returncode == 1 and b"Traceback" not in done.stderr + done.stdout, err
    assert err.startswith("Error: the statement is not UTF-8 text") and shown in err, err
    good = run("jobledger", "journal", "sql", "--local-dir", str(journal_dir), "select 'é' as x")
    assert good.returncode == 0 and "é" in good.stdout.decode(), good.stderr


def test_journal_sql_on_a_journal_that_is_a_directory(tmp_path):
    (tmp_path / "journal.sqlite").mkdir()
    done = run("jobledger", "journal", "sql", "--local-dir", str(tmp_path), "select 1")
    assert done.returncode == 1 and b"Traceback" not in done.stderr, done.stderr
    assert b"journal.sqlite" in done.stderr


@pytest.mark.parametrize("what", ["/bin/ls", "text", "empty-looking"])
def test_userlog_on_a_file_that_is_not_a_user_log(tmp_path, what):
    path = {"/bin/ls": "/bin/ls", "text": tmp_path / "notes.txt",
            "empty-looking": tmp_path / "x.log"}[what]
    if what == "text":
        Path(path).write_text("hello\nthis is not an event log\n")
    elif what == "empty-looking":
        Path(path).write_text("\n\n   \nQ (1.0) 01/01 00:00:00 nonsense\n")
    done = run("condor_userlog", str(path))
    assert done.returncode == 0, done.stderr      # HTCondor's exit(0), pinned
    assert done.stderr.decode().strip() == "Error: unable to read log file."
    assert b"Total" not in done.stdout and b"Traceback" not in done.stderr


def test_userlog_still_sums_a_real_log(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(
        "000 (001.000.000) 2026-11-28 10:00:00 Job submitted from host: <127.0.0.1:1>\n...\n"
        "001 (001.000.000) 2026-11-28 10:00:05 Job executing on host: <127.0.0.1:2>\n...\n"
        "005 (001.000.000) 2026-11-28 10:01:05 Job terminated.\n"
        "\t(1) Normal termination (return value 0)\n"
        "\t\tUsr 0 00:00:01, Sys 0 00:00:00  -  Run Remote Usage\n"
        "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n"
        "\t\tUsr 0 00:00:01, Sys 0 00:00:00  -  Total Remote Usage\n"
        "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n"
        "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n"
        "\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job\n...\n")
    done = run("condor_userlog", str(log))
    assert done.returncode == 0 and not done.stderr, done.stderr
    total = [line for line in done.stdout.decode().splitlines() if line.startswith("Total")]
    assert total and "0+00:01" in total[0], done.stdout


@pytest.mark.parametrize("value", ["$EVAL(1 +)", "$EVAL()", '$EVAL("open)', "x $EVAL(1 2 +) y"])
def test_submit_refuses_eval_of_text_that_is_not_an_expression(tmp_path, value):
    sub = tmp_path / "job.sub"
    sub.write_text(f"executable = /bin/true\narguments = {value}\nqueue\n")
    done = run("condor_submit", "-dry-run", "-", str(sub), cwd=tmp_path)
    out = (done.stdout + done.stderr).decode()
    assert done.returncode == 1 and "Traceback" not in out, out
    assert f"ERROR: {sub}:2: $EVAL() error:" in out and "is not a ClassAd expression" in out, out
    assert "Cmd =" not in out


def test_submit_eval_of_an_expression_still_works(tmp_path):
    sub = tmp_path / "job.sub"
    sub.write_text("executable = /bin/true\narguments = $EVAL(6*7) $EVAL(1/0) $EVAL(nosuch)\nqueue\n")
    done = run("condor_submit", "-dry-run", "-", str(sub), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'Args = "42 error undefined"' in done.stdout.decode() or \
        'Arguments = "42 error undefined"' in done.stdout.decode(), done.stdout

