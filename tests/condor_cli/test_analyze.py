"""condor_q -analyze / -better-analyze against HTCondor's layout (condor_q's jobmatch.cpp and
expr_analyze.cpp at htcondor/htcondor 7491a14: the format strings of each line), then on a
real pool.

HTCondor wins over its manual: the troubleshooting page's example still says "Of 1 machines,"
and "1 are rejected by your job's requirements", and its step table has other dashes; the
source prints "Of N slots on M machines," / "N slots are rejected ..." and the bars below.
HTCondor's own test cmd_q_shows-better-analyze looks for "Run analysis summary." and "The
Requirements expression for your job is:", which condor_q has not printed for years.
"""

from __future__ import annotations

import os
import re

import pytest

from jobledger.condor_cli import act, analyze, queue, submit
from jobledger.condor_cli.args import Usage
from jobledger.eventcore.classad import ClassAd, ExprTree
from jobledger.eventcore.classad import analyze as A
from tests.condor_cli.conftest import run

REQUIREMENTS = ('(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && '
                '(TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)')


def job(requirements: str = REQUIREMENTS, **attrs) -> ClassAd:
    ad = ClassAd({"ClusterId": 781, "ProcId": 7, "DiskUsage": 1, "ImageSize": 1, "JobUniverse": 5,
                  "JobStatus": 1, "Owner": "alice", "User": "alice@example.org"})
    ad["RequestDisk"] = ExprTree("DiskUsage")
    ad["RequestMemory"] = ExprTree("4096")
    ad["Requirements"] = ExprTree(requirements)
    for name, value in attrs.items():
        ad[name] = value
    return ad


def slot(name: str, memory: int, **attrs) -> ClassAd:
    ad = ClassAd({"Name": name, "Machine": name.split("@")[-1], "SlotID": int(name[4]), "Arch": "X86_64",
                  "OpSys": "LINUX", "Disk": 100, "Memory": memory, "HasFileTransfer": True,
                  "Requirements": True})
    for key, value in attrs.items():
        ad[key] = value
    return ad


def test_better_analyze_of_one_machine_is_htcondors_layout():
    text = analyze.analyze_job(job(), analyze.Slots.of([slot("slot1@a", 1000)], "a"), better=True)
    assert text == '''\
The Requirements expression for job 781.007 is

    (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") &&
    (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) &&
    (TARGET.HasFileTransfer)

    [0]    : TARGET.Arch == "X86_64"
    [1]    : TARGET.OpSys == "LINUX"
    [2]    : [0] && [1]
    [3]    : TARGET.Disk >= RequestDisk
    [4]    : [2] && [3]
    [5]    : TARGET.Memory >= RequestMemory
    [6]    : [4] && [5]
    [7]    : TARGET.HasFileTransfer
    [8]    : [6] && [7]

Job 781.007 defines the following attributes:

    DiskUsage = 1
    RequestDisk = DiskUsage (kb)
    RequestMemory = 4096 (mb)

slot1@a has the following attributes:

    TARGET.Arch = "X86_64"
    TARGET.Disk = 100 (kb)
    TARGET.HasFileTransfer = true
    TARGET.Memory = 1000 (mb)
    TARGET.OpSys = "LINUX"

The Requirements expression for job 781.007 reduces to these conditions:

        Slots
Step   Matched  Condition
----- --------- ---------
[0]           1  TARGET.Arch == "X86_64"
[1]           1  TARGET.OpSys == "LINUX"
[3]           1  TARGET.Disk >= RequestDisk
[5]           0  TARGET.Memory >= RequestMemory


781.007:  Run analysis summary ignoring user priority.  Of 1 slots on 1 machines,
      1 slots are rejected by your job's requirements
      0 slots reject your job because of their own requirements
      0 slots match and are willing to run your job

WARNING:  Be advised:
   No machines matched the job's constraints

'''


def test_the_table_counts_each_condition_and_leaves_out_what_does_not_decide():
    # three slots: one too small, one of another OpSys, one that fits
    slots = [slot("slot1@a", 1000), slot("slot2@b", 8000, OpSys="WINDOWS"), slot("slot3@c", 8000)]
    table = A.reduce(job(), "Requirements", [A.Target(s) for s in slots])
    # An && that counts what one side counts is that side, and the other side, which matched
    # more, does not decide: [0], [3] and [7] (true for every slot) are left out, [2] and [4]
    # reduce to [1], [8] to [6], whose left side now reads [1].
    assert table.splitlines()[3:] == ['[1]           2  TARGET.OpSys == "LINUX"',
                                      '[5]           2  TARGET.Memory >= RequestMemory',
                                      '[6]           1  [1] && [5]']


def test_conditions_on_the_job_alone_are_always_or_never():
    ad = job('(TARGET.Memory >= 1) && (RequestCpus > 100) || MY.Tag =?= "x"', RequestCpus=1)
    text = A.reduce(ad, "Requirements", [A.Target(slot("slot1@a", 1000))])
    # [1] and [3] read only the job: constants; [2] is then never, and so is the || of two nevers
    assert text.splitlines()[3:] == ["[1]       never  RequestCpus > 100",
                                     '[3]       never  MY.Tag is "x"',
                                     "[4]       never  [1] || [3]"]
    assert A.numbered(ad).splitlines() == ['    [0]    : TARGET.Memory >= 1', '    [1]    : RequestCpus > 100',
                                           '    [2]    : [0] && [1]', '    [3]    : MY.Tag is "x"',
                                           '    [4]    : [2] || [3]']


def test_a_negation_rewrites_the_step_below_it():
    steps = A.clauses(ExprTree('!(TARGET.Busy) && TARGET.Memory > 2').node)
    assert [s.logic for s in steps] == [1, 0, 3]
    assert A.numbered(job('!(TARGET.Busy) && TARGET.Memory > 2')).splitlines() == [
        "    [0]    :  !(TARGET.Busy)", "    [1]    : TARGET.Memory > 2", "    [2]    : [0] && [1]"]


def test_long_requirements_wrap_after_and_or_as_htcondor_does():
    text = " && ".join(f"(TARGET.Attribute{i} == {i})" for i in range(6))
    lines = A.pretty(text, 4, 80).split("\n")
    assert all(len(line) + (4 if i == 0 else 0) <= 80 for i, line in enumerate(lines))
    assert [line.endswith("&&") for line in lines] == [True] * (len(lines) - 1) + [False]
    assert all(line.startswith("    (") for line in lines[1:])
    assert A.pretty("short", 4, 80) == "short"


def test_analyze_prints_the_requirements_only_when_they_reject_a_slot():
    fits = analyze.analyze_job(job(), analyze.Slots.of([slot("slot1@a", 8000)]), better=False)
    assert fits == ("\n781.007:  Run analysis summary ignoring user priority.  Of 1 slots on 1 machines,\n"
                    "      0 slots are rejected by your job's requirements\n"
                    "      0 slots reject your job because of their own requirements\n"
                    "      1 slots match and are willing to run your job\n\n")
    small = analyze.analyze_job(job(), analyze.Slots.of([slot("slot1@a", 10)]), better=False)
    assert small.startswith("The Requirements expression for job 781.007 is\n")


def test_slots_that_reject_the_job_busy_slots_and_the_job_state():
    slots = [slot("slot1@a", 8000, Requirements=False),
             slot("slot2@a", 8000, RemoteUser="alice@example.org"),
             slot("slot3@b", 8000, RemoteUser="bob@example.org"),
             slot("slot4@b", 8000)]
    held = job(JobStatus=5, HoldReason="via condor_hold (by user alice)", LastRejMatchTime=1000,
               LastRejMatchReason="no match found")
    text = analyze.analyze_job(held, analyze.Slots.of(slots), better=False)
    assert text == (
        "\n781.007:  Run analysis summary ignoring user priority.  Of 4 slots on 2 machines,\n"
        "      0 slots are rejected by your job's requirements\n"
        "      1 slots reject your job because of their own requirements\n"
        "      1 slots match and are already running your jobs\n"
        "      1 slots match but are serving other users\n"
        "      1 slots match and are willing to run your job\n\n\n"
        "781.007:  Job is held.\n\nHold reason: via condor_hold (by user alice)\n\n"
        "No successful match recorded.\n"
        f"Last failed match: {analyze._ctime(1000)}\n"
        "Reason for last match failure: no match found\n")
    everyone = analyze.analyze_job(job(), analyze.Slots.of([slots[0]]), better=False)
    assert "   Job did not match any machines' constraints\n   To see why, pick a machine" in everyone


def test_a_partitionable_slot_too_small_now_is_tried_drained():
    pslot = slot("slot1@a", 1000, PartitionableSlot=True, TotalSlotMemory=8000, TotalSlotCpus=4,
                 TotalSlotDisk=100, Cpus=0)
    pslot["WithinResourceLimits"] = ExprTree("MY.Cpus > 0 && TARGET.RequestMemory <= MY.Memory")
    text = analyze.analyze_job(job(), analyze.Slots.of([pslot]), better=True)
    assert "  Slots      If    \nStep   Matched   Drained  Condition\n----- --------- --------- ---------\n" in text
    assert "[5]           0         1  TARGET.Memory >= RequestMemory" in text
    assert "slot1@a has the following attributes when drained:\n\n" in text
    assert "      1 slots would match if drained\n" in text
    assert "      0 slots match and are willing to run your job\n" in text


def test_scheduler_universe_jobs_are_judged_by_the_schedds_policy():
    dagman = job(JobUniverse=7)
    schedd = ClassAd({"Name": "schedd"})
    schedd["StartSchedulerUniverse"] = ExprTree("TotalSchedulerJobsRunning < 500")
    schedd["TotalSchedulerJobsRunning"] = 1
    text = analyze.analyze_job(dagman, analyze.Slots.of([]), better=False, schedd=schedd)
    assert "781.007:  This schedd's StartSchedulerUniverse evalutes to true for this job.\n" in text
    assert "Of 1 slots on 0 machines" in text
    better = analyze.analyze_job(dagman, analyze.Slots.of([]), better=True, schedd=ClassAd({"Name": "s"}))
    assert "\nWARNING: Analysis is not complete for Scheduler or Local universe jobs.\n" in better
    assert "This schedd's StartSchedulerUniverse policy failed to evalute for this job.\n" in better


def test_summary_is_one_line_per_job():
    text = analyze.summary([job(), job(ProcId=8, AutoClusterId=3), job(ProcId=9, AutoClusterId=3)],
                           analyze.Slots.of([slot("slot1@a", 8000), slot("slot2@a", 10)]))
    lines = text.splitlines()
    assert lines[0] == "Analyzing matches for 2 slots"
    assert lines[2].startswith(" JobId        Members/Idle Requirements Rejects Job  Users Job  Other User Available")
    assert lines[4] == "781.7                                 1           0           0          0         1 "
    assert lines[5] == "781.8         2/2                     1           0           0          0         1 "
    assert len(lines) == 6


def test_slot_query_leaves_dynamic_slots_out_unless_a_slot_is_named():
    assert analyze.slot_constraint(None, None) == "!(DynamicSlot?:false)"
    assert analyze.slot_constraint("slot1_1@host", None) == '(Name=="slot1_1@host" || Machine=="slot1_1@host")'
    assert analyze.slot_constraint(None, "SlotType == \"Dynamic\"") == '(SlotType == "Dynamic")'


def test_bad_analyze_options_are_usage_errors():
    with pytest.raises(Usage, match="'reverse' is not supported"):
        queue.parse(["-better-analyze:reverse"])
    opts = queue.parse(["-analyse:summary", "-machine", "host"])
    assert (opts.analyze, opts.analyze_summary, opts.machine) == ("analyze", True, "host")
    assert queue.parse(["-better-analyse"]).analyze == "better"


def test_a_too_deep_requirements_is_a_clear_error():
    long_chain = " && ".join(f"TARGET.x{i}" for i in range(5000))
    with pytest.raises(A.AnalysisError, match="nested too deeply"):
        A.clauses(ExprTree(long_chain).node)
    text = analyze.analyze_job(job(long_chain), analyze.Slots.of([slot("slot1@a", 10)]), better=True)
    assert text.startswith("ERROR: job 781.7: cannot analyze its Requirements: ") and text.count("\n") == 1


def test_better_analyze_on_a_real_pool(pool, tmp_path):
    os.environ["CONDOR_CONFIG"] = str(pool.config_file)
    sub = tmp_path / "never.sub"
    sub.write_text('executable = /bin/true\nrequirements = (TARGET.Arch == "NOSUCH")\nqueue 1\n')
    ran = run(submit.main, "-terse", str(sub))
    assert ran.status == 0, ran
    cluster = int(ran.out.split(".")[0])
    better = run(queue.main, "-better-analyze", str(cluster))
    assert better.status == 0, better
    out = better.out
    assert re.match(r"\n\n-- Schedd: \S+ : <[^>]*>?\S*\n", out)
    assert f"The Requirements expression for job {cluster}.000 reduces to these conditions:\n\n" in out
    assert re.search(r'\n\[\d+\] +0  TARGET.Arch == "NOSUCH"\n', out)
    summary = re.search(rf"\n{cluster:03d}\.000:  Run analysis summary ignoring user priority\.  "
                        r"Of (\d+) slots on (\d+) machines,\n +(\d+) slots are rejected by your job's requirements\n",
                        out)
    assert summary and summary.group(1) == summary.group(3) and int(summary.group(1)) >= 1
    assert "   No machines matched the job's constraints\n" in out
    plain = run(queue.main, "-analyze", str(cluster))
    assert plain.out.count("reduces to these conditions") == 1
    assert run(queue.main, "-analyze:summary", str(cluster)).out.splitlines()[3].startswith("Analyzing matches for")
    assert run(act.rm, str(cluster)).status == 0
