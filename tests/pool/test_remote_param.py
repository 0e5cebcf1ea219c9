"""A daemon's configuration from outside, against real pools: ``RemoteParam`` (+ refresh)
and ``condor_config_val -schedd/-name/-set/-rset/-unset/-runset``; a setting needs
ENABLE_RUNTIME_CONFIG (or ENABLE_PERSISTENT_CONFIG) and a SETTABLE_ATTRS list naming
it, and takes effect on the daemon's next reconfig; persistent ones survive a restart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from tests.pool.conftest import running_pool, wait_until


@pytest.fixture(scope="module")
def settable(tmp_path_factory):
    persist = tmp_path_factory.mktemp("persistent")
    yield from running_pool(tmp_path_factory, ENABLE_RUNTIME_CONFIG="true", ENABLE_PERSISTENT_CONFIG="true",
                            PERSISTENT_CONFIG_DIR=str(persist),
                            SETTABLE_ATTRS_CONFIG="SCHEDD_DEBUG, JOBLEDGER_TEST_*")


def _schedd_ad(pool):
    return pool.collector.locate(htcondor.DaemonType.Schedd)


def _reconfig(pool) -> None:
    htcondor.send_command(_schedd_ad(pool), htcondor.DaemonCommand.Reconfig)


def _config_val(pool, *args, ok: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([str(Path(sys.executable).parent / "condor_config_val"), *args],
                          env=dict(os.environ, CONDOR_CONFIG=str(pool.config_file)),
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode == 0) == ok, (args, done.stdout, done.stderr)
    return done


def test_remote_param_reads_and_sets_at_runtime(settable):
    remote = htcondor.RemoteParam(_schedd_ad(settable))
    assert remote["LOCAL_DIR"] == str(settable.local_dir) == remote["local_dir"]
    assert "LOCAL_DIR" in list(remote) and len(remote) == len(list(remote))
    with pytest.raises(KeyError):
        remote["JOBLEDGER_TEST_NEVER_SET"]
    with pytest.raises(TypeError):
        remote[3]
    with pytest.raises(TypeError):
        remote["JOBLEDGER_TEST_KNOB"] = 42

    remote["JOBLEDGER_TEST_KNOB"] = "42"
    assert remote["JOBLEDGER_TEST_KNOB"] == "42"          # seen here at once
    remote.refresh()
    assert "JOBLEDGER_TEST_KNOB" not in remote            # the daemon has not been reconfigured
    _reconfig(settable)
    remote.refresh()
    assert remote["JOBLEDGER_TEST_KNOB"] == "42"
    del remote["JOBLEDGER_TEST_KNOB"]
    _reconfig(settable)
    remote.refresh()
    assert "JOBLEDGER_TEST_KNOB" not in remote

    with pytest.raises(htcondor.HTCondorException):       # in no SETTABLE_ATTRS list
        remote["START"] = "false"
    with pytest.raises(TypeError):
        htcondor.RemoteParam("not an ad")
    with pytest.raises(htcondor.HTCondorValueError):
        htcondor.RemoteParam(htcondor.classad.ClassAd({"Name": "x"}))


def test_runtime_config_needs_enable_runtime_config(pool):
    remote = htcondor.RemoteParam(_schedd_ad(pool))
    with pytest.raises(htcondor.HTCondorException):
        remote["SCHEDD_DEBUG"] = "D_FULLDEBUG"
    out = _config_val(pool, "-schedd", "-rset", "SCHEDD_DEBUG = D_FULLDEBUG", ok=False)
    assert out.stderr.startswith('Attempt to set configuration "SCHEDD_DEBUG = D_FULLDEBUG" on schedd ')
    assert out.stderr.rstrip().endswith("failed.")


def test_condor_config_val_set_rset_unset(settable):
    ad = _schedd_ad(settable)
    out = _config_val(settable, "-schedd", "-rset", "JOBLEDGER_TEST_RUNTIME = 5")
    assert out.stdout.startswith('Successfully set configuration "JOBLEDGER_TEST_RUNTIME = 5" on schedd ')
    assert out.stdout.rstrip().endswith("The change will take effect on the next condor_reconfig.")
    _config_val(settable, "-schedd", "-set", "JOBLEDGER_TEST_PERSISTENT = 7")
    assert "Not defined: JOBLEDGER_TEST_RUNTIME" in _config_val(
        settable, "-schedd", "JOBLEDGER_TEST_RUNTIME", ok=False).stderr
    _reconfig(settable)
    assert _config_val(settable, "-schedd", "JOBLEDGER_TEST_RUNTIME", "JOBLEDGER_TEST_PERSISTENT").stdout \
        == "5\n7\n"
    assert _config_val(settable, "-name", ad["Name"], "-schedd", "JOBLEDGER_TEST_PERSISTENT").stdout == "7\n"
    assert _config_val(settable, "-address", ad["MyAddress"], "JOBLEDGER_TEST_PERSISTENT").stdout == "7\n"
    # the local configuration files know nothing of either
    assert _config_val(settable, "JOBLEDGER_TEST_PERSISTENT", ok=False).stderr.startswith("Not defined")

    # a restart keeps the persistent setting and forgets the runtime one
    master = ipc.sinful(str(settable.local_dir / "run" / "master.sock"))
    before = ipc.call(master, "status")["schedd"]["pid"]
    htcondor.send_command(ad, htcondor.DaemonCommand.Restart)
    wait_until(lambda: ipc.call(master, "status")["schedd"]["pid"] != before, 60,
               what="the master to start the schedd again")
    wait_until(lambda: _answers(settable), 60, what="the restarted schedd to answer")
    out = _config_val(settable, "-schedd", "JOBLEDGER_TEST_PERSISTENT", "JOBLEDGER_TEST_RUNTIME", ok=False)
    assert out.stdout == "7\n" and "Not defined: JOBLEDGER_TEST_RUNTIME" in out.stderr

    _config_val(settable, "-schedd", "-unset", "JOBLEDGER_TEST_PERSISTENT")
    _reconfig(settable)
    _config_val(settable, "-schedd", "JOBLEDGER_TEST_PERSISTENT", ok=False)
    bad = _config_val(settable, "-schedd", "-rset", "no assignment here", ok=False)
    assert "You must specify" in bad.stderr
    assert "To unset, you only specify" in _config_val(settable, "-schedd", "-runset", "A = 1", ok=False).stderr


def _answers(pool) -> bool:
    try:
        htcondor.RemoteParam(_schedd_ad(pool))
        return True
    except htcondor.HTCondorException:
        return False
