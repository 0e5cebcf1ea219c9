"""The pool's commands: jobledger pool / q / rm / hold / release / history."""

from __future__ import annotations

import json
import os

import pytest

from click.testing import CliRunner

import jobledger as htcondor
from daemons.config_files import reload_config
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
        assert "READY" in run("pool", "start", *where).output
        assert "already running" in run("pool", "start", *where).output
        out = run("pool", "status", *where).output
        assert "schedd" in out and "running" in out
    finally:
        run("pool", "stop", *where, ok=False)
    wait_until(lambda: not pool_processes(tmp_path / "clipool"), 15, what="the CLI pool to stop")
    assert run("pool", "status", *where, ok=False).exit_code != 0
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
