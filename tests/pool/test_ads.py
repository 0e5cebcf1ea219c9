"""What the pool's ads and SUBMIT events carry for monitoring tools and workflow managers.

DaemonCore's self-monitoring attributes on every daemon ad, machine facts on
slot ads, Submitter ads from the schedd and Accounting ads from the
negotiator (as the personal-pool tutorial prints them), TotalSubmitProcs on
cluster ads, the shadow's committed-time accounting on finished jobs, and the
notes of SUBMIT events (HTCondor 25's schedd).
"""

from __future__ import annotations

import pytest

import jobledger as htcondor
from tests.pool.conftest import wait_until

DAEMON_CORE = ("RecentDaemonCoreDutyCycle", "DaemonCoreDutyCycle", "DaemonStartTime",
               "MyCurrentTime", "MonitorSelfTime", "MonitorSelfAge", "MonitorSelfCPUUsage",
               "MonitorSelfImageSize", "MonitorSelfResidentSetSize",
               "MonitorSelfRegisteredSocketCount", "UpdateSequenceNumber")
SLOT_FACTS = ("LoadAvg", "TotalLoadAvg", "CondorLoadAvg", "TotalSlots", "TotalCpus", "TotalMemory",
              "Arch", "OpSys", "OpSysAndVer", "OpSysMajorVer", "OpSysName", "Start", "Activity",
              "State", "EnteredCurrentState", "ClockDay", "ClockMin", "SlotWeight")


def test_every_daemon_ad_carries_daemon_core_attributes(pool):
    for ad_type in (htcondor.AdType.Master, htcondor.AdType.Collector, htcondor.AdType.Schedd,
                    htcondor.AdType.Negotiator, htcondor.AdType.Startd):
        ads = pool.collector.query(ad_type)
        assert ads, ad_type
        for ad in ads:
            missing = [name for name in DAEMON_CORE if name not in ad]
            assert not missing, (ad_type, missing)
            assert 0.0 <= ad["RecentDaemonCoreDutyCycle"] <= 1.0
            assert ad["MonitorSelfResidentSetSize"] > 0 and ad["MonitorSelfImageSize"] > 0
            assert ad["MyCurrentTime"] >= ad["DaemonStartTime"]


def test_slot_ads_carry_machine_facts(pool):
    slot = pool.collector.query(htcondor.AdType.Startd, "PartitionableSlot")[0]
    missing = [name for name in SLOT_FACTS if name not in slot]
    assert not missing
    assert isinstance(slot["LoadAvg"], float) and slot["LoadAvg"] >= 0
    assert slot["OpSys"] == "LINUX" and slot["State"] == "Unclaimed" and slot["Activity"] == "Idle"
    assert slot["Start"] is True and slot["TotalSlots"] >= 1
    assert slot["OpSysAndVer"] == f"{slot['OpSysName']}{slot['OpSysMajorVer']}"
    assert 0 <= slot["ClockDay"] <= 6 and 0 <= slot["ClockMin"] < 1440


def test_submitter_and_accounting_ads(pool, tmp_path):
    cluster = pool.schedd.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true",
                                                  "initialdir": str(tmp_path)}), count=2).cluster()
    try:
        submitters = wait_until(lambda: [ad for ad in pool.collector.query(htcondor.AdType.Submitter)
                                         if ad.get("HeldJobs", 0) >= 2], 15, what="a Submitter ad")
        ad = submitters[0]
        assert ad["Name"].startswith(ad["Owner"] + "@")
        assert {"IdleJobs", "RunningJobs", "HeldJobs", "ScheddName", "MyAddress"} <= set(ad.keys())
        accounting = wait_until(lambda: {a["Name"]: a for a in pool.collector.query(
            htcondor.AdType.Accounting) if a["Name"] in ("<none>", ad["Name"])}, 15,
            what="Accounting ads")
        wait_until(lambda: ad["Name"] in {a["Name"] for a in pool.collector.query(
            htcondor.AdType.Accounting)}, 15, what="the submitter's Accounting ad")
        assert accounting["<none>"]["IsAccountingGroup"] is True
        for one in pool.collector.query(htcondor.AdType.Accounting):
            assert one["Priority"] >= 0.5 * one["PriorityFactor"]
    finally:
        pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_cluster_ads_count_their_procs_and_finished_jobs_commit_their_time(pool, tmp_path):
    sub = htcondor.Submit({"executable": "/bin/true", "initialdir": str(tmp_path), "request_cpus": "1"})
    cluster = pool.schedd.submit(sub, count=3).cluster()
    ads = pool.schedd.query(f"ClusterId == {cluster}", ["TotalSubmitProcs"],
                            opts=htcondor.QueryOpt.IncludeClusterAd)
    assert ads and all(ad["TotalSubmitProcs"] == 3 for ad in ads)
    done = wait_until(lambda: len(pool.schedd.history(f"ClusterId == {cluster}", [])) == 3 and
                      pool.schedd.history(f"ClusterId == {cluster}", []), 30, what="the jobs to finish")
    for ad in done:
        assert ad["CommittedTime"] == round(ad["RemoteWallClockTime"])
        assert ad["CommittedSlotTime"] == ad["CumulativeSlotTime"] == ad["RemoteWallClockTime"]
        assert ad["CommittedSuspensionTime"] == 0
        assert ad["TotalSubmitProcs"] == 3


def test_submit_events_carry_log_notes_and_structured_notes(pool, tmp_path):
    log = tmp_path / "notes.log"
    sub = htcondor.Submit({
        "executable": "/bin/true", "hold": "true", "log": str(log), "initialdir": str(tmp_path),
        "submit_event_notes": "DAG Node: B", "submit_event_user_notes": "from the test",
        "batch_name": "diamond.dag+7", "My.DAGNodeName": '"B"', "My.DAGManJobId": "7",
        "submit_event_notes_attrs": "DAGManJobId",
    })
    cluster = pool.schedd.submit(sub).cluster()
    try:
        event = next(iter(htcondor.JobEventLog(str(log)).events(0)))
        assert event.type == htcondor.JobEventType.SUBMIT
        notes = event["StructuredNotes"]
        assert dict(notes) == {"DAGManJobId": 7, "DAGNodeName": "B", "JobBatchName": "diamond.dag+7"}
        # With structured notes the text log shows the ad where the plain notes would be.
        assert event["LogNotes"].startswith("[") and event["UserNotes"] == "from the test"
        htcondor2 = pytest.importorskip("htcondor2")
        theirs = next(iter(htcondor2.JobEventLog(str(log)).events(0)))
        assert dict(theirs["StructuredNotes"]) == dict(notes)
        assert theirs["LogNotes"] == event["LogNotes"] and theirs["UserNotes"] == event["UserNotes"]
    finally:
        pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_plain_submit_event_notes_are_log_notes(pool, tmp_path):
    log = tmp_path / "plain.log"
    sub = htcondor.Submit({"executable": "/bin/true", "hold": "true", "log": str(log),
                           "initialdir": str(tmp_path), "submit_event_notes": "map 3 of 10"})
    cluster = pool.schedd.submit(sub).cluster()
    try:
        event = next(iter(htcondor.JobEventLog(str(log)).events(0)))
        assert event["LogNotes"] == "map 3 of 10" and "StructuredNotes" not in event
    finally:
        pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
