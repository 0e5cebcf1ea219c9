"""condor_reconfig: the master and its daemons read their configuration again.

As HTCondor's tool: without a daemon flag the master reads it and passes the command
to every daemon it runs; ``-schedd`` (or ``-daemon NAME``) names one.  A value added to
the configuration files is then what the daemon answers for it (``RemoteParam``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from tests.pool.conftest import running_pool


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory)


def reconfig(pool, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CONDOR_CONFIG=str(Path(pool.local_dir) / "condor_config"))
    return subprocess.run([str(Path(sys.executable).parent / "condor_reconfig"), *argv],
                          capture_output=True, text=True, timeout=60, env=env)


def daemon_value(kind, name: str):
    return htcondor.RemoteParam(htcondor.Collector().locate(kind)).get(name)


def test_reconfig_of_one_daemon_and_of_the_whole_pool(pool):
    config = Path(pool.local_dir) / "condor_config"
    with open(config, "a") as out:
        out.write("\nJOBLEDGER_TEST_KNOB = first\n")
    assert daemon_value(htcondor.DaemonType.Schedd, "JOBLEDGER_TEST_KNOB") is None
    done = reconfig(pool, "-schedd")
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'Sent "Reconfig" command to local schedd\n'
    assert daemon_value(htcondor.DaemonType.Schedd, "JOBLEDGER_TEST_KNOB") == "first"
    assert daemon_value(htcondor.DaemonType.Startd, "JOBLEDGER_TEST_KNOB") is None   # only the one named

    with open(config, "a") as out:
        out.write("JOBLEDGER_TEST_KNOB = second\n")
    done = reconfig(pool)
    assert done.returncode == 0 and done.stdout == 'Sent "Reconfig" command to local master\n'
    for kind in (htcondor.DaemonType.Schedd, htcondor.DaemonType.Startd, htcondor.DaemonType.Master):
        assert daemon_value(kind, "JOBLEDGER_TEST_KNOB") == "second", kind
    assert pool.schedd.query(limit=1) == []      # the schedd still answers
