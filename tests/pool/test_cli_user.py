"""The command line as a user meets it: commands run as processes, in a directory of their own.

- ``pool start`` says where the pool is, its daemons and the ``export
  CONDOR_CONFIG=...`` line, and HTCondor's tools work after it;
- every command finds the pool by one rule (``--local-dir``, else LOCAL_DIR of
  $CONDOR_CONFIG, else ~/.condor/personal), and every read-only command works
  on the stopped pool;
- ``replay --as-of`` a whole second never shows a job without its owner and
  command;
- ``... | head`` is quiet; ``--json`` where a user expects it; a bad constraint
  reads the same in every condor_* command; ``condor_config_val JOURNAL`` names
  the journal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pool.conftest import pool_processes, wait_until

BIN = Path(sys.executable).parent
STEP = 120                       # seconds any one command may take (a hang guard)
READ_ONLY = [                    # (argv, what its output must hold), run in each way of finding the pool
    (["jobledger", "history", "-af", "ClusterId", "ProcId"], "1 0\n"),
    (["jobledger", "q", "-af", "ClusterId"], ""),
    (["jobledger", "audit"], "OK: 0 findings"),
    (["jobledger", "replay", "--json"], ""),
    (["jobledger", "journal", "export"], "Job terminated"),
    (["jobledger", "journal", "sql", "SELECT count(*) AS n FROM history"], "1"),
    (["jobledger", "watch", "--json", "1.0"], '"JobStatus": 4'),
]


def user_env(home: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG" and not k.startswith("_CONDOR_")}
    env["HOME"] = str(home)
    env.update(extra)
    return env


def run(argv, cwd, env, ok=True, timeout=STEP) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if ok:
        assert done.returncode == 0, f"{argv}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture
def session(tmp_path):
    """A user's home and working directory; the pool they start is stopped afterwards."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    yield home, work
    where = home / ".condor" / "personal"
    subprocess.run([str(BIN / "jobledger"), "pool", "stop", "--local-dir", str(where)],
                   env=user_env(home), capture_output=True, timeout=STEP)
    wait_until(lambda: not pool_processes(where), 30, what="the user's pool to stop")


def test_a_users_session_finds_one_pool_running_and_stopped(session, tmp_path):
    home, work = session
    personal = home / ".condor" / "personal"
    elsewhere = tmp_path / "elsewhere"          # a home with no pool: only the rule's other ways work
    elsewhere.mkdir()

    started = run(["jobledger", "pool", "start"], work, user_env(home)).stdout
    assert started.startswith(f"Pool started in {personal}\n"), started
    for daemon in ("master", "collector", "schedd", "negotiator", "startd"):
        assert f"  {daemon} " in started, started
    export = [line.strip() for line in started.splitlines() if line.strip().startswith("export ")]
    assert export == [f"export CONDOR_CONFIG={personal / 'condor_config'}"], started
    config = export[0].split("=", 1)[1]
    assert "PersonalPool(" not in started and "READY" not in started

    # the printed line is all HTCondor's tools need (no "COLLECTOR_HOST is not configured")
    tools = user_env(elsewhere, CONDOR_CONFIG=config)
    # a job that outlives the second it was submitted in: the replay below has a second to show it
    (work / "job.sub").write_text("executable = /bin/sleep\narguments = 1\nlog = job.log\nqueue\n")
    assert "1 job(s) submitted to cluster 1." in run(["condor_submit", "job.sub"], work, tools).stdout
    run(["condor_wait", "-wait", "120", "job.log"], work, tools)
    assert run(["condor_q", "-af", "ClusterId"], work, tools).stdout == ""

    ways = {"default": ([], {"HOME": str(home), "CONDOR_CONFIG": None}),
            "CONDOR_CONFIG": ([], {"HOME": str(elsewhere), "CONDOR_CONFIG": config}),
            "--local-dir": (["--local-dir", str(personal)],
                            {"HOME": str(elsewhere), "CONDOR_CONFIG": str(tmp_path / "no-such-config")})}
    running = answers(ways, work)
    assert "schedd" in run(["jobledger", "pool", "status"], work, tools).stdout
    replay_every_second(personal, work, tools)

    stopped = run(["jobledger", "pool", "stop"], work, tools).stdout
    assert stopped.startswith(f"Pool in {personal} stopped"), stopped
    wait_until(lambda: not pool_processes(personal), 30, what="the pool's processes to exit")

    # every read-only command reads the stopped pool's journal, found the same three ways
    assert answers(ways, work) == running
    status = run(["jobledger", "pool", "status"], work, tools, ok=False)
    assert status.returncode == 3 and status.stdout.startswith(f"pool at {personal}: stopped")
    assert json.loads(run(["jobledger", "pool", "status", "--json"], work, tools, ok=False).stdout)[
        "state"] == "stopped"
    assert run(["condor_history", "-af", "ClusterId", "JobStatus"], work, tools).stdout == "1 4\n"
    # condor_q asks the schedd, as HTCondor's does: a stopped pool is an error, in one line
    gone = run(["condor_q"], work, tools, ok=False)
    assert gone.returncode == 1 and gone.stderr.startswith("ERROR: ") and gone.stderr.count("\n") == 1, \
        gone.stderr
    # a CONDOR_CONFIG that names nothing is said, never replaced by the default
    bad = run(["jobledger", "history"], work, user_env(home, CONDOR_CONFIG=str(tmp_path / "nope")), ok=False)
    assert bad.returncode == 1 and "CONDOR_CONFIG names" in bad.stderr and "Traceback" not in bad.stderr


def answers(ways: dict, work: Path) -> dict:
    """Each read-only command's output, the same whichever way found the pool (in this
    process through click's runner, with the way's HOME and CONDOR_CONFIG as the environment:
    the commands read nothing else of a user's; one of them also as its own process)."""
    from click.testing import CliRunner

    from jobledger.daemons.config_files import reload_config
    from jobledger.cli import main
    out = {}
    for argv, expected in READ_ONLY:
        seen = {}
        for way, (extra, env) in ways.items():
            try:
                done = CliRunner().invoke(main, argv[1:] + extra, env=env, catch_exceptions=False)
            finally:
                reload_config()
            assert done.exit_code == 0 and expected in done.stdout, (way, argv, done.output)
            seen[way] = done.stdout
        assert len(set(seen.values())) == 1, (argv, seen)
        out[" ".join(argv)] = seen["default"]
    extra, env = ways["CONDOR_CONFIG"]
    as_process = run(READ_ONLY[0][0], work, user_env(Path(env["HOME"]), CONDOR_CONFIG=env["CONDOR_CONFIG"]))
    assert as_process.stdout == out[" ".join(READ_ONLY[0][0])]
    return out


def replay_every_second(local_dir: Path, work: Path, env: dict) -> None:
    """``replay --as-of S`` for every whole second S the journal spans: a job shown has
    its owner and command (the cut takes the submit with the events of its second)."""
    from jobledger.daemons.storage.store import Store
    store = Store(local_dir, readonly=True)
    try:
        times = [e.time for e in store.entries()]
    finally:
        store.close()
    from click.testing import CliRunner

    from jobledger.cli import main
    shown = 0
    for second in range(int(min(times)) - 1, int(max(times)) + 2):
        done = CliRunner().invoke(main, ["replay", "--local-dir", str(local_dir), "--as-of", str(second),
                                         "--json"], catch_exceptions=False)
        assert done.exit_code == 0, done.output
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        for row in rows:
            assert row.get("Owner") and row.get("Cmd"), (second, row)
        shown += len(rows)
    assert shown > 0
    # and once as a user types it, at the second the job was submitted
    first = run(["jobledger", "replay", "--as-of", str(int(min(times))), "--json"], work, env).stdout
    assert all(json.loads(line).get("Cmd") for line in first.splitlines())


def test_pool_commands_name_the_directory_given_relative(tmp_path):
    """``--local-dir pool`` from a working directory: the messages name the absolute path."""
    env = user_env(tmp_path)
    try:
        started = run(["jobledger", "pool", "start", "--local-dir", "p"], tmp_path, env).stdout
        assert f"export CONDOR_CONFIG={tmp_path / 'p' / 'condor_config'}" in started
        status = json.loads(run(["jobledger", "pool", "status", "--local-dir", "p", "--json"],
                                tmp_path, env).stdout)
        assert status["state"] == "running" and status["local_dir"] == str(tmp_path / "p")
        assert {"collector", "schedd", "negotiator", "startd"} <= set(status["daemons"])
    finally:
        stopped = run(["jobledger", "pool", "stop", "--local-dir", "p"], tmp_path, env, ok=False)
    assert stopped.returncode == 0 and str(tmp_path / "p") in stopped.stdout
    wait_until(lambda: not pool_processes(tmp_path / "p"), 30, what="the pool to stop")


def closed_pipe(argv, cwd, env) -> subprocess.CompletedProcess:
    """``argv | head -0``: the reader is gone before the command writes a byte."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=cwd, env=env, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=STEP)
    finally:
        os.close(write)
    return done


def test_output_into_a_closed_pipe_is_quiet(pool, tmp_path):
    """``jobledger ... | head`` and ``condor_* | head``: no "Broken pipe", no traceback, status 0."""
    env = user_env(tmp_path, CONDOR_CONFIG=str(pool.local_dir / "condor_config"))
    (tmp_path / "job.sub").write_text("executable = /bin/true\nlog = job.log\nqueue 3\n")
    run(["condor_submit", "job.sub"], tmp_path, env)
    run(["condor_wait", "-wait", "120", "job.log"], tmp_path, env)
    for argv in (["jobledger", "log", "--json", "job.log"], ["jobledger", "log", "--to", "text", "job.log"],
                 ["jobledger", "log", "job.log"], ["jobledger", "pool", "status"],
                 ["jobledger", "history"], ["jobledger", "history", "--json"], ["jobledger", "q", "-json"],
                 ["jobledger", "journal", "export"], ["jobledger", "journal", "sql", "SELECT * FROM journal"],
                 ["jobledger", "replay", "--json"], ["jobledger", "audit"],
                 ["condor_q"], ["condor_history"], ["condor_status"]):
        done = closed_pipe(argv, tmp_path, env)
        assert (done.returncode, done.stderr) == (0, ""), (argv, done.returncode, done.stderr)


def test_json_where_a_user_expects_it(pool, tmp_path):
    """--json on history, hold, release, rm, pool status and dag status: one JSON document."""
    env = user_env(tmp_path, CONDOR_CONFIG=str(pool.local_dir / "condor_config"))
    (tmp_path / "job.sub").write_text("executable = /bin/sleep\narguments = 600\nhold = true\nqueue 2\n")
    out = run(["condor_submit", "job.sub"], tmp_path, env).stdout
    cluster = int(out.rsplit("cluster ", 1)[1].rstrip(".\n"))
    released = json.loads(run(["jobledger", "release", "--json", f"{cluster}.0"], tmp_path, env).stdout)
    assert released["TotalSuccess"] == 1 and released["TotalNotFound"] == 0
    held = json.loads(run(["jobledger", "hold", "--json", f"{cluster}.0"], tmp_path, env).stdout)
    assert held["TotalSuccess"] == 1
    again = run(["jobledger", "hold", "--json", f"{cluster}.0"], tmp_path, env, ok=False)
    assert again.returncode == 1 and json.loads(again.stdout)["TotalSuccess"] == 0
    removed = json.loads(run(["jobledger", "rm", "--json", str(cluster)], tmp_path, env).stdout)
    assert removed["TotalSuccess"] == 2
    def both_left():
        ads = json.loads(run(["jobledger", "history", "--json", "-constraint", f"ClusterId == {cluster}"],
                             tmp_path, env).stdout)
        return ads if len(ads) == 2 else None
    ads = wait_until(both_left, 60, interval=0.5, what="both removed jobs in the history")
    assert sorted(ad["ProcId"] for ad in ads) == [0, 1] and {ad["JobStatus"] for ad in ads} == {3}
    status = json.loads(run(["jobledger", "pool", "status", "--json"], tmp_path, env).stdout)
    assert status["state"] == "running" and status["local_dir"] == str(pool.local_dir)
    (tmp_path / "one.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "one.dag").write_text("JOB A one.sub\n")
    dag_out = run(["jobledger", "dag", "submit", "one.dag"], tmp_path, env).stdout
    dag_cluster = int(dag_out.rsplit("cluster ", 1)[1].rstrip(".\n"))
    dag = json.loads(run(["jobledger", "dag", "status", "--json", str(dag_cluster)], tmp_path, env).stdout)
    assert dag["cluster"] == dag_cluster and isinstance(dag["nodes"], list) and dag["status"]


def test_condor_config_val_journal_names_the_journal(pool, tmp_path):
    env = user_env(tmp_path, CONDOR_CONFIG=str(pool.local_dir / "condor_config"))
    journal = run(["condor_config_val", "JOURNAL"], tmp_path, env).stdout.strip()
    assert Path(journal) == pool.local_dir / "journal.sqlite" and Path(journal).is_file()


def test_a_bad_constraint_reads_the_same_in_every_command(pool, tmp_path):
    """Checked before any daemon is asked, said in one form: the tool, the expression, the
    parser's reason and column; exit status 1 (the jobledger commands: click's usage error, 2)."""
    env = user_env(tmp_path, CONDOR_CONFIG=str(pool.local_dir / "condor_config"))
    reason = "expected an expression, found end of text at column 13"
    for tool in ("condor_q", "condor_status", "condor_rm", "condor_hold", "condor_release",
                 "condor_history", "condor_qedit"):
        edit = ["OnExitRemove", "FALSE"] if tool == "condor_qedit" else []
        done = run([tool, "-constraint", "JobStatus ==", *edit], tmp_path, env, ok=False)
        assert (done.returncode, done.stdout) == (1, ""), (tool, done)
        assert done.stderr == f"Error: {tool}: invalid constraint (JobStatus ==): {reason}\n", done.stderr
    for command in ("q", "history", "rm"):
        done = run(["jobledger", command, "-constraint", "JobStatus =="], tmp_path, env, ok=False)
        assert done.returncode == 2 and f"not a ClassAd expression: {reason}" in done.stderr, done.stderr
