"""The master backs off restarting a daemon that does not stay up, as HTCondor's does
(MASTER_BACKOFF_CONSTANT/FACTOR/CEILING, MASTER_RECOVER_FACTOR), `jobledger pool status`
says so, and `jobledger pool start` fails naming a daemon of DAEMON_LIST that cannot run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from jobledger.daemons import ipc
from jobledger.daemons.master_backoff import Backoff, backoff_for
from tests.pool.conftest import pool_processes, wait_until

JOBLEDGER = str(Path(sys.executable).parent / "jobledger")


# -- the policy (HTCondor's daemon::NextStart and its knobs) ---------------------------------

def test_delays_follow_htcondors_formula_and_ceiling():
    """constant + ceil(factor ** n), n the failures before this one, at most the ceiling:
    the manual's 10, 11, 13, ... 41, ... 265 s with the defaults, then 3600 s."""
    backoff = Backoff()
    delays = [backoff.failed() for _ in range(14)]
    assert delays[:6] == [10, 11, 13, 17, 25, 41] and delays[8] == 265
    assert delays[12:] == [3600, 3600]
    assert Backoff(constant=1, factor=1.5).delay() == 2
    huge = Backoff(failures=100_000)
    assert huge.delay() == 3600            # factor ** n overflows: the ceiling


def test_recovery_resets_the_count():
    backoff = Backoff(recover=300)
    backoff.failed(), backoff.failed()
    assert not backoff.recovered(299.9) and backoff.failures == 2
    assert backoff.recovered(300) and backoff.failures == 0 and backoff.delay() == 10


def test_knobs_per_daemon_first_and_htcondors_lower_bounds():
    config = {"MASTER_BACKOFF_CONSTANT": "0", "MASTER_BACKOFF_FACTOR": "3",
              "MASTER_SCHEDD_BACKOFF_CONSTANT": "5", "MASTER_SCHEDD_BACKOFF_FACTOR": "-1",
              "MASTER_BACKOFF_CEILING": "0", "MASTER_NEGOTIATOR_RECOVER_FACTOR": "7"}.get
    schedd, negotiator = backoff_for(config, "schedd"), backoff_for(config, "negotiator")
    assert (schedd.constant, schedd.factor, schedd.ceiling, schedd.recover) == (5, 3.0, 1, 300)
    assert (negotiator.constant, negotiator.recover) == (1, 7)   # 0 is below param_integer's 1
    assert backoff_for({"MASTER_BACKOFF_FACTOR": "0"}.get, "startd").factor == 2.0


# -- a real pool ------------------------------------------------------------------------------

# Makes the negotiator fail at import while the file BREAK exists, as a broken installation
# would (the file is made after the pool started, and removed to mend it).
BREAKS_WHILE_FILE = """
import os, sys
with open("/proc/self/cmdline", "rb") as handle:
    ARGS = handle.read().split(b"\\0")
class Broken:
    def find_spec(self, name, path=None, target=None):
        if name == "jobledger.daemons.negotiator" and os.path.exists(BREAK):
            raise ImportError("cannot import name 'Accountant' from 'jobledger.daemons.accounting'")
if b"jobledger.daemons.negotiator" in ARGS:
    sys.meta_path.insert(0, Broken())
"""


def cli(*args, env):
    return subprocess.run([JOBLEDGER, *args], env=env, capture_output=True, text=True, timeout=180)


def user_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    env.update(extra)
    return env


def started_lines(local: Path, name: str) -> list[float]:
    """When the master started ``name``, from its log (seconds, in order)."""
    times = []
    for line in (local / "log" / "MasterLog").read_text().splitlines():
        if f" started {name}, pid " in line:
            times.append(datetime.strptime(line[:21], "%m/%d/%y %H:%M:%S.%f").timestamp())
    return times


def test_a_daemon_that_cannot_start_is_backed_off_said_in_pool_status_and_recovers(tmp_path):
    """The negotiator breaks after the pool started: the master waits 2, 3, 5 s between its
    starts (MASTER_BACKOFF_CONSTANT 1 of the personal pool, factor 2), not 0.5 s forever;
    `pool status` names the failure and the next start; mended, it stays up and, after
    MASTER_RECOVER_FACTOR seconds, its count of failures is back to 0."""
    breaker = tmp_path / "break"
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(BREAKS_WHILE_FILE.replace("BREAK", repr(str(breaker))))
    env = user_env(tmp_path, PYTHONPATH=str(inject), _CONDOR_MASTER_RECOVER_FACTOR="3")
    local = tmp_path / "pool"
    where = ["--local-dir", str(local)]
    master = ipc.sinful(str(local / "run" / "master.sock"))
    status = lambda: ipc.call(master, "status")["negotiator"]   # noqa: E731
    try:
        started = cli("pool", "start", *where, env=env)
        assert started.returncode == 0, started.stderr
        breaker.touch()
        os.kill(status()["pid"], signal.SIGKILL)
        wait_until(lambda: status()["failures"] >= 3, 60, what="three failed starts")
        info = status()
        assert not info["running"] and info["state"] == "Dead" and info["exit"] == 1
        assert info["restart_in"] is not None and info["restart_in"] <= 5
        shown = cli("pool", "status", *where, env=env)
        line = next(line for line in shown.stdout.splitlines() if line.strip().startswith("negotiator"))
        said = re.search(r"down .*exited with status 1; next start in [\d.]+ s "
                         r"\(back-off after (\d+) failures in a row\)", line)
        assert said and int(said.group(1)) >= 3, shown.stdout
        log = (local / "log" / "MasterLog").read_text()
        assert [int(s) for s in re.findall(r"restarting negotiator in (\d+) seconds", log)][:3] == [2, 3, 5]
        starts = started_lines(local, "negotiator")
        gaps = [b - a for a, b in zip(starts[1:], starts[2:])]   # after the second start: 3 s
        assert gaps and gaps[0] >= 2.99, gaps
        breaker.unlink()
        wait_until(lambda: status()["running"] and status()["failures"] == 0, 60,
                   what="the mended negotiator to start and recover")
        assert "negotiator recovered" in (local / "log" / "MasterLog").read_text()
        assert "back-off" not in cli("pool", "status", *where, env=env).stdout
    finally:
        cli("pool", "stop", *where, env=env)
    wait_until(lambda: not pool_processes(local), 30, what="the pool's processes to exit")


@pytest.mark.parametrize("listed, said", [
    ("KBDD", "Error: the kbdd daemon of DAEMON_LIST cannot start: {sbin}/condor_kbdd: Cannot execute "
             "(No such file or directory)"),
    ("MYDAEMON", "MYDAEMON is in the DAEMON_LIST parameter, but there is no executable path for "
                 "it defined in the config files!"),
])
def test_pool_start_fails_naming_a_daemon_of_daemon_list_that_cannot_run(tmp_path, listed, said):
    env = user_env(tmp_path, _CONDOR_DAEMON_LIST=f"MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD {listed}",
                   _CONDOR_SBIN=str(tmp_path / "sbin"))
    local = tmp_path / "pool"
    started = cli("pool", "start", "--local-dir", str(local), env=env)
    assert started.returncode == 1, started.stdout
    assert said.format(sbin=tmp_path / "sbin") in started.stderr, started.stderr
    assert started.stderr.count("\n") == 1
    wait_until(lambda: not pool_processes(local), 30, what="nothing left running")


def test_a_daemon_of_daemon_list_is_any_executable_its_knob_names(tmp_path):
    """As HTCondor's master runs a non-DaemonCore daemon: started, shown, stopped with the pool."""
    program = tmp_path / "mydaemon"
    program.write_text("#!/bin/sh\nexec sleep 600\n")
    program.chmod(0o755)
    env = user_env(tmp_path, _CONDOR_DAEMON_LIST="MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD MYDAEMON",
                   _CONDOR_MYDAEMON=str(program))
    local = tmp_path / "pool"
    where = ["--local-dir", str(local)]
    try:
        started = cli("pool", "start", *where, env=env)
        assert started.returncode == 0, started.stderr
        line = next(line for line in cli("pool", "status", *where, env=env).stdout.splitlines()
                    if "mydaemon" in line)
        assert "running" in line
        pid = int(line.split()[2])
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"600"]
    finally:
        cli("pool", "stop", *where, env=env)
    wait_until(lambda: not pool_processes(local), 30, what="the pool's processes to exit")
