"""The pool's commands: jobledger pool / q / rm / hold / release / history."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from click.testing import CliRunner

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.daemons.config_files import reload_config
from jobledger.daemons.client.personal import PersonalPool
from jobledger.cli import main
from tests.pool.conftest import pool_processes, wait_until


@pytest.fixture(autouse=True)
def keep_condor_config(monkeypatch):
    """The commands point this process at a pool; put the configuration back afterwards."""
    monkeypatch.setenv("CONDOR_CONFIG", os.environ.get("CONDOR_CONFIG", ""))
    yield
    monkeypatch.undo()
    reload_config()


def run(*args, ok=True):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_q_act_history(pool, tmp_path):
    where = ["--local-dir", str(pool.local_dir)]
    sub = htcondor.Submit({"executable": "/bin/sleep", "arguments": "60", "hold": "true"})
    cluster = pool.schedd.submit(sub, count=3).cluster()
    out = run("q", *where).output
    assert f"ID: {cluster}" in out and "Total for query:" in out
    out = run("q", "-nobatch", *where, str(cluster)).output
    assert f"{cluster}.2" in out and " H " in out
    out = run("q", "-af", *where, "-constraint", f"ClusterId == {cluster}", "ProcId", "JobStatus").output
    assert out.splitlines() == ["0 5", "1 5", "2 5"]
    # printed as condor_q -af prints them: expressions evaluated, booleans lower case
    out = run("q", "-af", *where, "-constraint", f"ClusterId == {cluster}", "JobStatus == 5", "Missing").output
    assert out.splitlines() == ["true undefined"] * 3
    ads = json.loads(run("q", "-json", *where, f"{cluster}.1").output)
    assert len(ads) == 1 and ads[0]["ProcId"] == 1 and ads[0]["JobStatus"] == 5
    assert "ClusterId = " in run("q", "-long", *where, f"{cluster}.0").output
    assert run("hold", *where, f"{cluster}.0").output.strip() == "1 job(s) held."
    assert run("release", *where, "-constraint", f"ClusterId == {cluster}").output.strip() == \
        "3 job(s) released."
    assert run("rm", *where, str(cluster)).output.strip() == "3 job(s) marked for removal."
    failed = run("rm", *where, str(cluster), ok=False)
    assert failed.exit_code != 0 and "no job" in failed.output
    out = run("history", *where, "-constraint", f"ClusterId == {cluster}").output
    assert out.count(f"{cluster}.") == 3 and " X " in out
    out = run("history", "-af", *where, "-match", "1", "ClusterId").output
    assert out.strip() == str(cluster)
    bad = run("q", *where, "x.y", ok=False)
    assert bad.exit_code != 0


def test_pool_start_status_stop(tmp_path):
    where = ["--local-dir", str(tmp_path / "clipool")]
    try:
        assert "Pool started in " in run("pool", "start", *where).output
        again = run("pool", "start", *where, ok=False)
        assert again.exit_code == 1 and "already running" in again.stderr
        out = run("pool", "status", *where).output
        assert "schedd" in out and "running" in out
    finally:
        run("pool", "stop", *where, ok=False)
    wait_until(lambda: not pool_processes(tmp_path / "clipool"), 15, what="the CLI pool to stop")
    assert run("pool", "status", *where, ok=False).exit_code == 3       # stopped, as LSB's status
    assert run("q", "--local-dir", str(tmp_path / "nothing"), ok=False).exit_code != 0


def test_submit_file(pool, tmp_path):
    where = ["--local-dir", str(pool.local_dir)]
    sub_file = tmp_path / "job.sub"
    sub_file.write_text(f"executable = /bin/echo\narguments = hi $(Process)\n"
                        f"output = {tmp_path}/out.$(Process)\nqueue 2\n")
    out = run("submit", str(sub_file), *where).output.strip()
    assert out.startswith("2 job(s) submitted to cluster ") and out.endswith(".")
    cluster = int(out.split()[-1].rstrip("."))
    wait_until(lambda: len(pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == 2,
               what="the submitted jobs to finish")
    assert (tmp_path / "out.1").read_text() == "hi 1\n"
    bad = tmp_path / "bad.sub"
    bad.write_text("executable = /bin/echo\nqueue 0 x y z\n")
    failed = run("submit", str(bad), *where, ok=False)
    assert failed.exit_code != 0 and "bad.sub" in failed.output


def refused(*args, reported: int = 0):
    """Run a command that must be refused: exit 1 and one line on stderr, no traceback
    (after the ``reported`` lines of a command that names each bad input as it goes)."""
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 1, (args, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == reported + 1 and lines[-1].startswith("Error: "), (args, result.stderr)
    assert "Traceback" not in result.output
    return lines[-1]


def test_every_command_refused_says_one_line_and_exits_1(pool, tmp_path):
    where = ["--local-dir", pool.local_dir]
    nowhere = ["--local-dir", tmp_path / "no-pool"]
    down = tmp_path / "down"   # a pool whose daemons are gone: its collector refuses the connection
    down.mkdir()
    (down / "condor_config").write_text(f"LOCAL_DIR = {down}\n"
                                        f"COLLECTOR_HOST = {ipc.sinful(str(down / 'collector.sock'))}\n")
    held = pool.schedd.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true",
                                               "log": str(tmp_path / "held.log")})).cluster()
    wait_until(lambda: (tmp_path / "held.log").exists(), what="the held job's user log")
    (tmp_path / "bad.sub").write_text("executable = /bin/true\nqueue 0 x y z\n")
    (tmp_path / "garbled.log").write_bytes(b"\xff\xfe not a log\n...\n" * 3)
    for args in (["q", "--local-dir", down],
                 ["history", "--local-dir", down],
                 ["rm", *where, "999999"],          # no such job: nothing done
                 ["hold", *where, "999999.0"],
                 ["release", *where, "-constraint", f"ClusterId == {held} && false"],
                 ["submit", tmp_path / "bad.sub", *where],
                 ["watch", "--json", "--journal", tmp_path / "garbled.log"],   # not a journal
                 ["log", tmp_path / "missing.log"],
                 ["audit", *nowhere],
                 ["replay", *nowhere],
                 ["journal", "export", *nowhere],
                 ["journal", "queue-log", *nowhere],
                 ["pool", "status", *nowhere],
                 ["pool", "stop", *nowhere],
                 ["pool", "start", *where]):
        refused(*args)
    refused("journal", "import", tmp_path / "garbled.log", *nowhere, reported=1)   # this file: ...
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {held}")


def test_a_second_pool_start_in_one_local_dir_touches_nothing(pool):
    local = pool.local_dir
    watched = [local / "condor_config", local / "run" / "master.pid", local / "log" / "MasterLog",
               local / "log" / "master.stderr"]

    def state():
        return [(p.stat().st_mtime_ns, p.read_bytes()) if p.exists() else None for p in watched]

    master = ipc.sinful(str(local / "run" / "master.sock"))
    before, daemons = state(), ipc.call(master, "status")
    line = refused("pool", "start", "--local-dir", local)
    assert "already running" in line and str(local) in line
    # the master itself refuses too, before writing a byte
    second = subprocess.run([sys.executable, "-m", "jobledger.daemons.master"], capture_output=True, text=True,
                            env=dict(os.environ, CONDOR_CONFIG=str(local / "condor_config")),
                            cwd=str(local), timeout=60)
    assert second.returncode == 1 and "already running" in second.stderr
    with pytest.raises(htcondor.HTCondorException, match="already running"):
        PersonalPool(local_dir=local)
    assert state() == before
    assert ipc.call(master, "status") == daemons       # same pids, no restarts
    assert pool.schedd.query("false") == []
