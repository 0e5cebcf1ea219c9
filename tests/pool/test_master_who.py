"""condor_master -f, condor_who, condor_restart and condor_off as HTCondor's tools and
test harnesses drive a pool: a configuration written as HTCondor's are (DAEMON_LIST,
COLLECTOR_HOST = $(CONDOR_HOST):0, a self-referencing macro), the master in the
foreground, readiness read from condor_who, daemon logs in HTCondor's line format at
the *_LOG paths, STARTD_ADDRESS_FILE."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pool.conftest import pool_processes, wait_until

BIN = Path(sys.executable).parent
LOG_LINE = re.compile(r"^\d{2}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}\.\d{3} \(pid:\d+\) ")


def tool(config: Path | None, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    if config is not None:
        env["CONDOR_CONFIG"] = str(config)
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=env,
                          timeout=timeout)


def who_ad(text: str) -> dict:
    return dict(line.split(" = ", 1) for line in text.splitlines())


def start_master(tmp_path, daemons: str, extra: str = ""):
    local = tmp_path / "condor"
    for sub in ("execute", "lock", "log", "run", "spool"):
        (local / sub).mkdir(parents=True)
    config = local / "condor_config"
    written = tool(None, "condor_config_val", "-write:up", str(config))   # the base configuration
    assert written.returncode == 0, written.stderr
    with config.open("a") as f:
        f.write(f"\nDAEMON_LIST = {daemons}\n{extra}"
                f"LOCAL_DIR = {local}\nRUN = $(LOCAL_DIR)/run\nLOCK = $(LOCAL_DIR)/lock\n"
                "COLLECTOR_HOST = $(CONDOR_HOST):0\nUPDATE_INTERVAL = 2\nNEGOTIATOR_INTERVAL = 2\n"
                "MASTER_BACKOFF_CONSTANT = 1\nNUM_CPUS = 1\n")
    proc = subprocess.Popen([str(BIN / "condor_master"), "-f"], env=dict(os.environ, CONDOR_CONFIG=str(config)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return config, local, proc


def stop_master(local, proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    wait_until(lambda: not pool_processes(local), 30, what="the pool's processes to exit")


@pytest.fixture
def master(tmp_path):
    config, local, proc = start_master(
        tmp_path, "MASTER COLLECTOR NEGOTIATOR STARTD SCHEDD",
        "STARTD_ADDRESS_FILE = $(LOG)/.startd_address\nSCHEDD_LOG = $(LOG)/SchedLog.custom\n")
    try:
        yield config, local, proc
    finally:
        stop_master(local, proc)


def test_a_pool_without_a_collector_finds_its_schedd_through_the_address_file(tmp_path):
    """DAEMON_LIST = MASTER SCHEDD: no collector to ask; the schedd is found, as HTCondor's
    tools find it, through SCHEDD_ADDRESS_FILE (its address, version and platform lines)."""
    config, local, proc = start_master(tmp_path, "SCHEDD MASTER")
    try:
        done = tool(config, "condor_who", "-wait:90", "IsReady")
        assert done.returncode == 0, (done.stdout, done.stderr)
        assert "STARTD" not in who_ad(done.stdout) and "COLLECTOR" not in who_ad(done.stdout)
        lines = (local / "spool" / ".schedd_address").read_text().splitlines()
        assert "schedd.sock" in lines[0] and lines[1].startswith("$CondorVersion: ")
        assert lines[2].startswith("$CondorPlatform: ")
        sub = tmp_path / "job.sub"
        sub.write_text("executable = /bin/true\nuniverse = scheduler\nqueue\n")
        submitted = tool(config, "condor_submit", str(sub))
        assert submitted.returncode == 0 and "submitted to cluster 1." in submitted.stdout, submitted.stderr
        code = ("import jobledger; s = jobledger.Schedd(); "
                "print(len(s.query('true', ['ClusterId'])) + len(s.history('true', ['ClusterId'])))")
        env = dict(os.environ, CONDOR_CONFIG=str(config))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0 and int(out.stdout) >= 1, out.stderr
    finally:
        stop_master(local, proc)


def test_master_in_the_foreground_who_restart_and_off(master):
    config, local, proc = master
    done = tool(config, "condor_who", "-wait:90", 'IsReady && STARTD_State =?= "Ready"')
    assert done.returncode == 0, (done.stdout, done.stderr)
    ad = who_ad(done.stdout)
    assert ad["IsReady"] == "true" and ad["STARTD_State"] == '"Ready"'
    for name in ("MASTER", "COLLECTOR", "NEGOTIATOR", "STARTD", "SCHEDD"):
        assert ad[name] == '"Alive"', ad
    assert int(ad["MASTER_PID"]) == proc.pid          # -f: the process started is the master
    # the daemon logs, where *_LOG says, in HTCondor's line format
    for log in ("MasterLog", "CollectorLog", "NegotiatorLog", "StartLog", "SchedLog.custom"):
        lines = (local / "log" / log).read_text().splitlines()
        assert lines and all(LOG_LINE.match(line) for line in lines), (log, lines[:3])
    assert not (local / "log" / "SchedLog").exists()
    address = (local / "log" / ".startd_address").read_text().splitlines()[0]
    assert address.startswith("<") and "startd.sock" in address

    table = tool(config, "condor_who", "-daemons").stdout.splitlines()
    rows = {line.split()[0].lower(): line.split() for line in table[2:]}
    assert set(rows) == {"master", "collector", "negotiator", "startd", "schedd"}
    assert rows["schedd"][1] == "yes" and int(rows["schedd"][2]) == int(ad["SCHEDD_PID"])
    assert int(rows["schedd"][3]) == proc.pid

    restarted = tool(config, "condor_restart", "-fast", "-daemon", "schedd")
    assert restarted.returncode == 0, restarted.stderr

    def new_schedd():
        quick = tool(config, "condor_who", "-quick")
        now = who_ad(quick.stdout) if quick.returncode == 0 else {}
        return now.get("SCHEDD_PID") not in (None, ad["SCHEDD_PID"]) and now.get("SCHEDD") == '"Alive"'
    wait_until(new_schedd, 60, interval=0.2, what="a new schedd")
    assert tool(config, "condor_who", "-wait:60", "IsReady").returncode == 0
    assert int(who_ad(tool(config, "condor_who", "-quick").stdout)["COLLECTOR_PID"]) == int(ad["COLLECTOR_PID"])

    off = tool(config, "condor_off", "-fast", "-daemon", "master")
    assert off.returncode == 0, off.stderr
    assert proc.wait(60) == 0
    gone = tool(config, "condor_who", "-quick")
    assert gone.returncode == 1 and gone.stdout == "" and "not running" in gone.stderr


def test_who_wait_gives_up_with_status_1_and_still_prints(tmp_path):
    config = tmp_path / "condor_config"
    config.write_text(f"LOCAL_DIR = {tmp_path}\nRUN = $(LOCAL_DIR)/run\n")
    done = tool(config, "condor_who", "-wait:1", "IsReady")
    assert done.returncode == 1 and "not running" in done.stderr
    bad = tool(config, "condor_who", "-wait:1", "IsReady &&")
    assert bad.returncode == 1 and "not an expression" in bad.stderr and "Traceback" not in bad.stderr


def test_master_needs_a_configuration(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    done = subprocess.run([str(BIN / "condor_master"), "-f"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1 and "CONDOR_CONFIG" in done.stderr
