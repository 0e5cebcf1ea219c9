"""``htcondor.set_ready_state`` and ``htcondor.send_alive`` from a daemon the master started
(a program of DAEMON_LIST, as HTCondor's non-DaemonCore daemons are): the state shows in
condor_who's ready ad as ``<NAME>_State``; a daemon that promised a keep-alive and sent none
in time is killed and started again."""

from __future__ import annotations

import os
import sys

import pytest

import jobledger as htcondor
import jobledger.v1 as v1
from jobledger.daemons import ipc
from jobledger.classad import ClassAd
from tests.pool.test_master_who import start_master, stop_master, tool, who_ad

# First start: Ready, and a keep-alive promised for 2 s that never comes.  Second start
# (the master killed the first as hung): "Restarted", with no promise.
DAEMON = """#!{python}
import os, sys, time
import jobledger as htcondor
marker = {marker!r}
if os.path.exists(marker):
    htcondor.set_ready_state("Restarted")
else:
    open(marker, "w").write(str(os.getpid()))
    htcondor.set_ready_state()
    htcondor.send_alive(timeout=2)
while True:
    time.sleep(1)
"""


def test_ready_state_in_condor_who_and_a_hung_daemon_restarted(tmp_path):
    program = tmp_path / "foo_daemon"
    marker = tmp_path / "first.pid"
    program.write_text(DAEMON.format(python=sys.executable, marker=str(marker)))
    program.chmod(0o755)
    config, local, proc = start_master(tmp_path, "MASTER SCHEDD FOO", f"FOO = {program}\n")
    try:
        ready = tool(config, "condor_who", "-wait:90", 'FOO_State =?= "Ready" || FOO_State =?= "Restarted"')
        assert ready.returncode == 0, (ready.stdout, ready.stderr)
        restarted = tool(config, "condor_who", "-wait:90", 'FOO_State =?= "Restarted"')
        assert restarted.returncode == 0, (restarted.stdout, restarted.stderr)
        ad = who_ad(restarted.stdout)
        first = int(marker.read_text())
        assert int(ad["FOO_PID"]) != first and ad["FOO"] == '"Alive"'
        log = (local / "log" / "MasterLog").read_text()
        assert f"foo (pid {first}) is Ready" in log
        assert f"foo (pid {first}) sent no keep-alive in time; killing it" in log
        assert "SCHEDD_State" not in ad      # only a daemon that told its state has one

        # a pid the master did not start is refused, naming it
        location = ClassAd({"MyAddress": ipc.sinful(str(local / "run" / "master.sock"))})
        with pytest.raises(Exception, match=f"pid {os.getpid()} is not a daemon this master started"):
            htcondor.send_alive(location, timeout=5)
    finally:
        stop_master(local, proc)


def test_outside_a_master_the_calls_say_what_is_missing(monkeypatch):
    monkeypatch.delenv("CONDOR_INHERIT", raising=False)
    with pytest.raises(htcondor.HTCondorException, match="CONDOR_INHERIT not in environment"):
        htcondor.set_ready_state()
    with pytest.raises(ValueError, match="No location specified and CONDOR_INHERIT not in environment"):
        htcondor.send_alive()
    monkeypatch.setenv("CONDOR_INHERIT", "123")
    with pytest.raises(htcondor.HTCondorException, match="malformed"):
        htcondor.set_ready_state("Ready")
    with pytest.raises(ValueError, match="malformed"):
        v1.send_alive()
    with pytest.raises(TypeError):
        htcondor.send_alive(pid="1")
    with pytest.raises(TypeError):
        htcondor.send_alive(ClassAd(), timeout="5")
    with pytest.raises(ValueError, match="Address not available"):
        htcondor.send_alive(ClassAd(), timeout=5)
    with pytest.raises(TypeError):
        htcondor.set_ready_state(3)


def test_same_errors_as_htcondor2(monkeypatch):
    htcondor2 = pytest.importorskip("htcondor2")
    monkeypatch.delenv("CONDOR_INHERIT", raising=False)
    for ours, theirs in ((htcondor.set_ready_state, htcondor2.set_ready_state),
                         (htcondor.send_alive, htcondor2.send_alive)):
        kinds = []
        for fn in (ours, theirs):
            try:
                fn()
            except Exception as exc:   # noqa: BLE001 - the kind is what is compared
                kinds.append((isinstance(exc, ValueError), str(exc)))
        assert kinds[0] == kinds[1]
