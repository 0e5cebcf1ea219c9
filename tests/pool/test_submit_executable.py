"""condor_submit refuses a job whose executable cannot run, before anything is queued,
with HTCondor's messages (condor_submit.V6/submit.cpp, check_sub_file): the file must
exist, not be empty, and not be a script with CRLF line endings; only when it is to be
transferred; ``skip_filechecks = warn`` and ``-allow-crlf-script`` make warnings.
HTCondor's Python bindings check none of this (their make_job_ad gets no file check):
the htcondor2 API submits such a job and the starter holds it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from tests.pool.conftest import wait_until

SUBMIT = str(Path(sys.executable).parent / "condor_submit")
QUEUE = str(Path(sys.executable).parent / "condor_q")


def submit(pool, where: Path, text: str, *options: str) -> subprocess.CompletedProcess:
    (where / "job.sub").write_text(text)
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    return subprocess.run([SUBMIT, *options, "job.sub"], cwd=where, env=env, capture_output=True,
                          text=True, timeout=120)


def cluster_of(done: subprocess.CompletedProcess) -> int:
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().rsplit(" ", 1)[1].rstrip("."))


def queued(pool) -> str:
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    return subprocess.run([QUEUE, "-af", "ClusterId", "ProcId", "Cmd"], env=env, capture_output=True,
                          text=True, timeout=120).stdout


@pytest.fixture
def where(tmp_path):
    (tmp_path / "empty.sh").write_text("")
    (tmp_path / "dos.sh").write_bytes(b"#!/bin/sh\r\nexit 0\r\n")
    (tmp_path / "good.sh").write_text("#!/bin/sh\nexit 0\n")
    for name in ("empty.sh", "dos.sh", "good.sh"):
        (tmp_path / name).chmod(0o755)
    return tmp_path


@pytest.mark.parametrize("text, error", [
    ("executable = nope\nqueue\n",
     "\nERROR: Can't access executable file nope: No such file or directory\n"),
    ("executable = {where}/missing/prog\nqueue 3\n",
     "\nERROR: Can't access executable file {where}/missing/prog: No such file or directory\n"),
    ("executable = $(prog)\nqueue prog in (/bin/true, /bin/no-such-program)\n",
     "\nERROR: Can't access executable file /bin/no-such-program: No such file or directory\n"),
    ("executable = empty.sh\nqueue\n", "\nERROR: Executable file empty.sh has zero length\n"),
    ("executable = dos.sh\nqueue\n",
     "\nERROR: Executable file dos.sh is a script with CRLF (DOS/Windows) line endings.\n"
     "This generally doesn't work, and you should probably run 'dos2unix dos.sh' -- or a similar "
     "tool -- before you resubmit.\n"),
])
def test_condor_submit_refuses_an_executable_that_cannot_run(pool, where, text, error):
    before = queued(pool)
    done = submit(pool, where, text.format(where=where))
    assert (done.returncode, done.stdout, done.stderr) == (1, "Submitting job(s)", error.format(where=where))
    assert queued(pool) == before
    # nothing was reserved either: the next cluster follows the last one
    last = cluster_of(submit(pool, where, "executable = good.sh\nhold = true\nqueue\n"))
    after = cluster_of(submit(pool, where, "executable = good.sh\nhold = true\nqueue\n"))
    assert after == last + 1
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {last} || ClusterId == {after}")


def test_dry_run_checks_too(pool, where):
    (where / "job.sub").write_text("executable = nope\nqueue\n")
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    done = subprocess.run([SUBMIT, "-dry-run", "-", "job.sub"], cwd=where, env=env, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout) == (1, "Dry-Run job(s)")
    assert done.stderr == "\nERROR: Can't access executable file nope: No such file or directory\n"


@pytest.mark.parametrize("text, options, warning", [
    # not transferred: it may be on the execute machine only (HTCondor checks nothing)
    ("executable = /opt/elsewhere/prog\ntransfer_executable = false\nhold = true\nqueue\n", (), ""),
    ("executable = nope\nskip_filechecks = warn\nhold = true\nqueue\n", (),
     "\nWARNING: Can't access executable file nope: No such file or directory\n"),
    ("executable = dos.sh\nhold = true\nqueue\n", ("-allow-crlf-script",),
     "\nWARNING: Executable file dos.sh is a script with CRLF (DOS/Windows) line endings.\n"),
])
def test_what_condor_submit_lets_through(pool, where, text, options, warning):
    done = submit(pool, where, text, *options)
    cluster = cluster_of(done)
    assert done.stderr == warning
    assert done.stdout == f"Submitting job(s).\n1 job(s) submitted to cluster {cluster}.\n"
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_the_python_api_does_not_check_and_the_job_is_held(pool, where):
    """As htcondor2's Schedd.submit: accepted, then held by the starter (code 6, errno 2)."""
    cluster = pool.schedd.submit(htcondor.Submit({"executable": str(where / "nope")})).cluster()
    wait_until(lambda: pool.schedd.query(f"ClusterId == {cluster} && JobStatus == 5", ["HoldReasonCode"]),
               60, what="the hold")
    ad = pool.schedd.query(f"ClusterId == {cluster}", ["HoldReasonCode", "HoldReasonSubCode"])[0]
    assert (ad["HoldReasonCode"], ad["HoldReasonSubCode"]) == (6, 2)
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
