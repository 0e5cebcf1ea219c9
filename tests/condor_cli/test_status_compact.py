"""condor_status -compact against HTCondor's startdCompact print format (condor_status's
prettyPrint.cpp and status.cpp at htcondor/htcondor 7491a14), then on a real pool.

HTCondor wins over its man page here: the page's example predates the current columns
(no padding of TotalGb to two decimals, "Machines" in the totals heading); the source's
totals heading is " Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle".
"""

from __future__ import annotations

import re

from jobledger.condor_cli import act, queue, status, status_compact, submit
from jobledger.eventcore.classad import ClassAd
from jobledger.daemons.client.personal import PersonalPool
from tests.condor_cli.conftest import run, stop_and_check, wait_until

HEAD = "Slots Cpus Gpus  TotalGb FreCpu  FreeGb  CpuLoad ST Jobs/Min MaxSlotGb"


def pslot(machine="exec01.cs.wisc.edu", children=("Claimed", "Claimed"), **attrs) -> ClassAd:
    base = {"Name": f"slot1@{machine}", "Machine": machine, "SlotType": "Partitionable",
            "PartitionableSlot": True, "State": "Unclaimed", "Activity": "Idle", "Arch": "X86_64",
            "OpSys": "LINUX", "OpSysAndVer": "AlmaLinux9", "NumDynamicSlots": len(children),
            "TotalSlotCpus": 8, "TotalSlotMemory": 16384, "Cpus": 6, "Memory": 12288, "TotalCpus": 8,
            "TotalLoadAvg": 2.0, "RecentJobStarts": 5, "ChildState": list(children),
            "ChildActivity": ["Busy"] * len(children), "ChildMemory": [2048, 1024][:len(children)]}
    base.update(attrs)
    return ClassAd(base)


def static(n: int, state: str, activity: str, machine="exec02.cs.wisc.edu") -> ClassAd:
    return ClassAd({"Name": f"slot{n}@{machine}", "Machine": machine, "SlotType": "Static", "SlotTypeID": 1,
                    "State": state, "Activity": activity, "Arch": "X86_64", "OpSys": "WINDOWS",
                    "OpSysShortName": "Win10", "OpSysAndVer": "WINDOWS1000", "TotalSlotCpus": 1,
                    "TotalSlotMemory": 4096, "Cpus": 1, "Memory": 4096, "TotalCpus": 2, "TotalLoadAvg": 1.0})


def test_one_line_per_machine_in_htcondors_columns():
    ads = [pslot(), static(1, "Claimed", "Busy"), static(2, "Unclaimed", "Idle")]
    text = status_compact.table(ads)
    assert text == (
        "\nMachine            Platform       " + HEAD + "\n\n"
        "exec01.cs.wisc.edu x64/AlmaLinux9    2     8         16.00      6    12.00    0.25 **     0.25      2.00\n"
        "exec02.cs.wisc.edu x64/Win10         2S    1          4.00      1     4.00    0.50 **        _      4.00\n")
    # the static slots of exec02 fold into one line: the busy one's cpus and memory are not free,
    # their states differ (Cb, Ui: **); the partitionable slot is Ui, its children Cb: **


def test_the_partitionable_slot_speaks_for_children_in_one_state():
    # exhausted and idle: the children's state; all children alike: no star
    row = status_compact.rows([pslot(Cpus=0, Memory=0)])[0]
    assert row.code == "Cb"
    assert status_compact.rows([pslot(children=())])[0].code == "Ui"
    assert status_compact.rows([pslot(children=("Claimed", "Preempting"))])[0].code[0] == "P"


def test_totals_roll_partitionable_slots_up_into_their_children():
    ads = [pslot(), pslot(machine="exec03", Cpus=0), static(1, "Claimed", "Busy"), static(2, "Owner", "Idle")]
    assert status_compact.totals(ads).splitlines() == [
        "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle",
        "",
        "x64/AlmaLinux9     5     0       4         1       0          0      0        0      0",
        "     x64/Win10     2     1       1         0       0          0      0        0      0",
        "",
        "         Total     7     1       5         1       0          0      0        0      0"]


def test_compact_on_a_real_pool(tmp_path, monkeypatch):
    """A pool of its own: the package's shared pool may hold other tests' jobs, whose
    slots would change this machine's row (and a failure here would leave its job
    holding a core there)."""
    pool = PersonalPool(local_dir=tmp_path / "pool").start()
    try:
        monkeypatch.setenv("CONDOR_CONFIG", str(pool.config_file))
        sub = tmp_path / "sleep.sub"
        sub.write_text("executable = /bin/sleep\narguments = 600\nrequest_memory = 100\nqueue 1\n")
        cluster = run(submit.main, "-terse", str(sub)).out.split(".")[0]
        wait_until(lambda: run(queue.main, cluster, "-af", "JobStatus").out.strip() == "2", timeout=60)
        wait_until(lambda: " 1 " in run(status.main, "-compact").out.splitlines()[3][:60], timeout=60)
        lines = run(status.main, "-compact").out.splitlines()
        assert lines[0] == "" and lines[1].endswith(HEAD) and lines[1].startswith("Machine ") and lines[2] == ""
        row = re.match(r"(\S+) +x64/\S+ +1  +(\d+)  +([\d.]+) +(\d+) +([\d.]+) +[\d.]+ (\S\S) +(\S+) +0\.10$",
                       lines[3])
        assert row, lines[3]        # one dynamic slot of 100 MB carved out: MaxSlotGb 0.10
        assert row.group(6) == "**"  # the slot Unclaimed/Idle, its child Claimed/Busy
        assert row.group(7) == "0.05"   # Jobs/Min: RecentJobStarts (1 in 20 minutes) / 20
        assert " Total Owner Claimed Unclaimed" in "\n".join(lines[4:])
        assert run(act.rm, cluster).status == 0
    finally:
        stop_and_check(pool)
