"""condor_status, condor_config_val and condor_version against a real pool."""

from __future__ import annotations

import json
import os

from jobledger.condor_cli import config, status
from tests.condor_cli.conftest import run


def test_status_lists_slots_daemons_and_ads(pool):
    os.environ["CONDOR_CONFIG"] = str(pool.config_file)
    ran = run(status.main)
    assert ran.status == 0
    lines = ran.out.split("\n")
    assert lines[0] == "" and lines[1].startswith("Name               OpSys      Arch   State")
    assert any(line.startswith("slot1@") for line in lines)
    assert "                   Total " in ran.out
    names = run(status.main, "-af", "Name", "State").out.splitlines()
    assert names and all(n.startswith("slot") for n in names)
    schedd = run(status.main, "-schedd")
    assert "RunningJobs   IdleJobs   HeldJobs" in schedd.out
    kinds = {line.split()[0] for line in run(status.main, "-any").out.splitlines()[2:] if line}
    assert {"Collector", "DaemonMaster", "Machine", "Negotiator", "Scheduler"} <= kinds
    ads = json.loads(run(status.main, "-collector", "-json").out)
    assert ads[0]["MyType"] == "Collector"
    assert run(status.main, "-total").out.lstrip("\n").startswith(" " * 25 + "Machines")
    assert run(status.main, "-bogus").status == 1


def test_config_val_and_version(pool):
    os.environ["CONDOR_CONFIG"] = str(pool.config_file)
    ran = run(config.config_val_main, "LOCAL_DIR", "SPOOL")
    assert ran.out == f"{pool.local_dir}\n{pool.local_dir}/spool\n"
    ran = run(config.config_val_main, "NO_SUCH_KNOB")
    assert ran.status == 1 and ran.err == "Not defined: NO_SUCH_KNOB\n"
    assert run(config.config_val_main, "-raw", "SPOOL").out == "$(LOCAL_DIR)/spool\n"
    verbose = run(config.config_val_main, "-v", "SPOOL").out
    assert verbose.startswith(f"SPOOL = {pool.local_dir}/spool\n # at: {pool.config_file}, line ")
    dumped = run(config.config_val_main, "-dump", "NEGOTIATOR_INTERVAL").out
    assert dumped.splitlines()[1:] == ["NEGOTIATOR_INTERVAL = 2"]
    # a daemon flag asks that daemon (HTCondor's tool does): the running schedd's answer, and
    # HTCondor's words for a schedd named x that the collector does not know
    assert run(config.config_val_main, "-schedd", "LOCAL_DIR").out == f"{pool.local_dir}\n"
    missing = run(config.config_val_main, "-schedd", "-name", "x", "LOCAL_DIR")
    assert missing.status == 1 and missing.err.startswith("Can't find address for schedd 'x' in local pool")
    assert run(config.config_val_main).status == 1
    version = run(config.version_main).out.splitlines()
    assert version[0].startswith("$CondorVersion: 25.") and version[1].startswith("$CondorPlatform: ")
