"""A running personal pool through the htcondor2 API: jobs run, act, edit, query, history, collector."""

from __future__ import annotations

import os

import pytest

import jobledger as htcondor
from jobledger.classad import ClassAd
from jobledger.personal import PersonalPool, PersonalPoolState
from tests.pool.conftest import wait_until
from jobledger.tracking.jobeventlog import JobEventLog


def raw_job(tmp_path, **extra) -> ClassAd:
    ad = {"Cmd": "/bin/sleep", "Arguments": "0", "Iwd": str(tmp_path)}
    ad.update(extra)
    return ClassAd(ad)


def statuses(schedd, cluster):
    return [ad["JobStatus"] for ad in schedd.query(f"ClusterId == {cluster}", ["JobStatus"])]


def wait_gone(schedd, cluster, timeout=30):
    wait_until(lambda: not schedd.query(f"ClusterId == {cluster}", ["ProcId"]), timeout,
               what=f"cluster {cluster} to leave the queue")


def test_state_repr_and_config(pool):
    assert "READY" in repr(pool)
    assert pool.get_config_val("LOCAL_DIR") == str(pool.local_dir)
    assert pool.get_config_val("NOT_A_KNOB", "dflt") == "dflt"
    with pytest.raises(KeyError):
        pool.get_config_val("NOT_A_KNOB")
    assert htcondor.param["LOCAL_DIR"] == str(pool.local_dir)


def test_jobs_run_to_completion_and_are_logged(pool, tmp_path):
    log = str(tmp_path / "job.log")
    cluster = pool.schedd.submit(raw_job(tmp_path, Cmd="/bin/sh", Arguments="-c 'echo out $0; exit 3' x",
                                         Out="out.txt", UserLog=log), 3)
    wait_gone(pool.schedd, cluster)
    history = pool.schedd.history(f"ClusterId == {cluster}", ["ProcId", "ExitCode", "JobStatus"])
    assert sorted(ad["ProcId"] for ad in history) == [0, 1, 2]
    assert all(ad["ExitCode"] == 3 and ad["JobStatus"] == 4 for ad in history)
    assert (tmp_path / "out.txt").read_text() == "out x\n"
    wait_until(lambda: open(log).read().count("005 (") == 3, 10, what="the terminated events")
    events = list(JobEventLog(log).events(0))
    kinds = [(e.proc, int(e.type)) for e in events]
    for proc in range(3):
        mine = [t for p, t in kinds if p == proc]
        assert mine == [0, 1, 5]
    terminated = [e for e in events if e.type == htcondor.JobEventType.JOB_TERMINATED] \
        if hasattr(htcondor, "JobEventType") else [e for e in events if int(e.type) == 5]
    assert all(e["ReturnValue"] == 3 and e["TerminatedNormally"] for e in terminated)


def test_query_projection_servertime_limit_and_summary(pool, tmp_path):
    cluster = pool.schedd.submit(raw_job(tmp_path, JobStatus=5, HoldReasonCode=15,
                                         HoldReason="submitted on hold at user's request"), 4)
    ads = pool.schedd.query(f"ClusterId == {cluster}", ["ClusterId", "ProcId", "JobStatus"])
    assert [ad["ProcId"] for ad in ads] == [0, 1, 2, 3]
    assert all(set(ad.keys()) == {"ClusterId", "ProcId", "JobStatus", "ServerTime"} for ad in ads)
    assert len(pool.schedd.query(f"ClusterId == {cluster}", [], limit=2)) == 2
    summary = pool.schedd.query(f"ClusterId == {cluster}", opts=htcondor.QueryOpt.SummaryOnly)
    assert summary[0]["MyType"] == "Summary" and summary[0]["Held"] == 4 and summary[0]["Jobs"] == 4
    procs = pool.schedd.query(f"ClusterId == {cluster}", ["ProcId"],
                              callback=lambda ad: ad["ProcId"] if ad["ProcId"] % 2 else None)
    assert procs == [1, 3]
    with pytest.raises(htcondor.HTCondorException):
        pool.schedd.query("ClusterId ==")
    with pytest.raises(TypeError):
        pool.schedd.query("true", "ClusterId")
    pool.schedd.act(htcondor.JobAction.Remove, cluster)


def test_act_result_ads_follow_the_worked_example(pool, tmp_path):
    schedd = pool.schedd
    cluster = schedd.submit(raw_job(tmp_path, JobStatus=5, HoldReasonCode=15), 3)
    first = schedd.act(htcondor.JobAction.Hold, [f"{cluster}.0"])
    assert (first["TotalSuccess"], first["TotalAlreadyDone"], first["TotalChangedAds"]) == (1, 0, 1)
    again = schedd.act(htcondor.JobAction.Hold, [f"{cluster}.0"])
    assert (again["TotalSuccess"], again["TotalAlreadyDone"], again["TotalChangedAds"]) == (0, 1, 0)
    assert set(again.keys()) == {"TotalError", "TotalSuccess", "TotalNotFound", "TotalBadStatus",
                                 "TotalAlreadyDone", "TotalPermissionDenied", "TotalJobAds",
                                 "TotalChangedAds"}
    bad = schedd.act(htcondor.JobAction.Release, [f"{cluster}.1", f"{cluster}.7"])
    assert (bad["TotalSuccess"], bad["TotalNotFound"]) == (1, 1)
    released = schedd.act(htcondor.JobAction.Release, f"ClusterId == {cluster}")
    assert released["TotalSuccess"] == 2
    wait_gone(schedd, cluster)
    history = schedd.history(f"ClusterId == {cluster}", ["ProcId", "ExitCode", "LastHoldReasonCode"])
    assert len(history) == 3 and all(ad["ExitCode"] == 0 for ad in history)
    with pytest.raises(TypeError):
        schedd.act(3, [f"{cluster}.0"])
    with pytest.raises(ValueError):
        schedd.act(htcondor.JobAction.Hold, "this is ) not an expression")


def test_hold_release_remove_a_running_job(pool, tmp_path):
    schedd = pool.schedd
    log = str(tmp_path / "run.log")
    cluster = schedd.submit(raw_job(tmp_path, Arguments="60", UserLog=log), 1)
    wait_until(lambda: statuses(schedd, cluster) == [2], what="the job to run")
    held = schedd.act(htcondor.JobAction.Hold, f"{cluster}.0", reason="testing")
    assert held["TotalSuccess"] == 1
    ad = schedd.query(f"ClusterId == {cluster}", ["JobStatus", "HoldReason", "HoldReasonCode"])[0]
    assert (ad["JobStatus"], ad["HoldReasonCode"]) == (5, 1)
    assert ad["HoldReason"] == "testing (by user %s)" % __import__("pwd").getpwuid(os.getuid()).pw_name
    schedd.act(htcondor.JobAction.Release, f"{cluster}.0")
    wait_until(lambda: statuses(schedd, cluster) == [2], what="the released job to run again")
    assert schedd.act(htcondor.JobAction.Suspend, f"{cluster}.0")["TotalSuccess"] == 1
    assert statuses(schedd, cluster) == [7]
    assert schedd.act(htcondor.JobAction.Continue, f"{cluster}.0")["TotalSuccess"] == 1
    removed = schedd.act(htcondor.JobAction.Remove, [f"{cluster}.0"])
    assert removed["TotalSuccess"] == 1
    assert schedd.query(f"ClusterId == {cluster}") == []
    wait_until(lambda: open(log).read().count("009 (") == 1, 10, what="the abort event")
    kinds = [int(e.type) for e in JobEventLog(log).events(0)]
    assert kinds == [0, 1, 12, 13, 1, 10, 11, 9]


def test_vacate_requeues_and_reruns(pool, tmp_path):
    schedd = pool.schedd
    log = str(tmp_path / "vac.log")
    cluster = schedd.submit(raw_job(tmp_path, Arguments="60", UserLog=log), 1)
    wait_until(lambda: statuses(schedd, cluster) == [2], what="the job to run")
    assert schedd.act(htcondor.JobAction.VacateFast, f"{cluster}.0")["TotalSuccess"] == 1
    wait_until(lambda: open(log).read().count("004 (") == 1, 10, what="the eviction")
    wait_until(lambda: open(log).read().count("001 (") == 2, 10, what="the second execution")
    assert schedd.act(htcondor.JobAction.Vacate, f"{cluster}.9")["TotalNotFound"] == 1
    schedd.act(htcondor.JobAction.Remove, cluster)


def test_edit(pool, tmp_path):
    schedd = pool.schedd
    cluster = schedd.submit(raw_job(tmp_path, JobStatus=5, HoldReasonCode=15), 2)
    assert schedd.edit(f"ClusterId =?= {cluster}", "foo", '"bar"') == 2
    assert {ad["foo"] for ad in schedd.query(f"ClusterId == {cluster}", ["foo"])} == {"bar"}
    assert schedd.edit([f"{cluster}.1"], "foo", 42) == 1
    assert schedd.query(f"ClusterId == {cluster} && ProcId == 1", ["foo"])[0]["foo"] == 42
    assert schedd.edit(f"{cluster}.0", "expr", htcondor.classad.ExprTree("ProcId + 41")) == 1
    edited = schedd.query(f"ClusterId == {cluster} && ProcId == 0", ["expr", "ProcId"])[0]
    assert str(edited.lookup("expr")) == "ProcId + 41" and edited.eval("expr") == 41
    for protected in ("Owner", "ClusterId", "ProcId", "JobStatus", "ScratchDir", "ClaimId"):
        with pytest.raises(htcondor.HTCondorException):
            schedd.edit(f"{cluster}.0", protected, "1")
    with pytest.raises(htcondor.HTCondorException):
        schedd.edit("ClusterId == 999999", "foo", "1")
    with pytest.raises(htcondor.HTCondorException):
        schedd.edit(f"{cluster}.0", "foo", "(((")
    with pytest.raises(TypeError):
        schedd.edit(f"{cluster}.0", "foo", "1", flags=1)
    # A refused edit changed nothing.
    assert schedd.query(f"ClusterId == {cluster} && ProcId == 0", ["Owner"])[0]["Owner"] != "1"
    schedd.act(htcondor.JobAction.Remove, cluster)


def test_history_match_and_since(pool, tmp_path):
    schedd = pool.schedd
    clusters = []
    for _ in range(3):
        # One at a time: history is newest-first by when a job left the queue, and
        # jobs running side by side on two slots may finish in either order.
        clusters.append(schedd.submit(raw_job(tmp_path), 1))
        wait_gone(schedd, clusters[-1])
    newest = schedd.history(None, ["ClusterId"], match=2)
    assert [ad["ClusterId"] for ad in newest] == [clusters[2], clusters[1]]
    since = schedd.history(None, ["ClusterId"], since=clusters[0])
    assert [ad["ClusterId"] for ad in since][:2] == [clusters[2], clusters[1]]
    assert clusters[0] not in [ad["ClusterId"] for ad in since]


def test_periodic_remove_and_on_exit_policy(pool, tmp_path):
    schedd = pool.schedd
    cluster = schedd.submit(raw_job(tmp_path, Arguments="60",
                                    PeriodicRemove=htcondor.classad.ExprTree("JobStatus == 2")), 1)
    wait_gone(schedd, cluster)
    reason = schedd.history(f"ClusterId == {cluster}", ["RemoveReason"])[0]["RemoveReason"]
    assert "PeriodicRemove" in reason
    held = schedd.submit(raw_job(tmp_path, OnExitHold=htcondor.classad.ExprTree("ExitCode == 0")), 1)
    wait_until(lambda: statuses(schedd, held) == [5], what="the exit hold")
    assert schedd.query(f"ClusterId == {held}", ["HoldReasonCode"])[0]["HoldReasonCode"] == 3
    schedd.act(htcondor.JobAction.Remove, held)
    retry = schedd.submit(raw_job(tmp_path, OnExitRemove=htcondor.classad.ExprTree("NumJobCompletions >= 2")), 1)
    wait_gone(schedd, retry)
    assert schedd.history(f"ClusterId == {retry}", ["NumJobCompletions"])[0]["NumJobCompletions"] == 2


def test_collector_query_locate_advertise(pool):
    collector = pool.collector
    types = {ad["MyType"] for ad in collector.query()}
    assert {"Collector", "Scheduler", "Negotiator", "Machine", "DaemonMaster"} <= types
    slots = collector.query(htcondor.AdType.Startd, "true", ["Name", "Cpus", "Memory"])
    assert slots and all({"Name", "Cpus", "Memory"} <= set(ad.keys()) for ad in slots)
    # a private ad per slot that is not dynamic, answered to its own ad type only (as HTCondor's)
    private = collector.query(htcondor.AdType.StartdPrivate)
    assert private and {ad["MyType"] for ad in private} == {"MachinePrivate"} and "MachinePrivate" not in types
    located = {ad["Name"] for ad in collector.locateAll(htcondor.DaemonType.Startd)}
    assert {ad["Name"] for ad in private} <= located
    assert slots[0]["Cpus"] >= 0
    located = collector.locate(htcondor.DaemonType.Schedd)
    assert located["MyAddress"].startswith("<") and "CondorVersion" in located
    assert len(collector.locateAll(htcondor.DaemonType.Schedd)) == 1
    assert collector.locate(htcondor.DaemonType.Schedd, "no-such-schedd") is None
    collector.advertise([ClassAd({"MyType": "Demo", "foo": 1, "Name": "DemoAd"})])
    demo = collector.query(htcondor.AdType.Any, 'MyType =?= "Demo"')
    assert len(demo) == 1 and demo[0]["foo"] == 1 and demo[0]["Name"] == "DemoAd"
    assert [ad["Name"] for ad in collector.query(htcondor.AdType.Generic, 'MyType =?= "Demo"')] == ["DemoAd"]
    assert collector.query(htcondor.AdType.Generic, 'MyType == "Scheduler"') == []
    collector.advertise([ClassAd({"MyType": "Demo", "foo": 2, "Name": "DemoAd"})])
    assert [ad["foo"] for ad in collector.query(htcondor.AdType.Any, 'MyType =?= "Demo"')] == [2]
    with pytest.raises(TypeError):
        collector.query("Startd")
    schedd = htcondor.Schedd(located)
    assert isinstance(schedd.query("false"), list)
    with pytest.raises(TypeError):
        htcondor.Schedd("not an ad")


def test_context_manager_and_stop_on_collect(tmp_path):
    from tests.pool.conftest import pool_processes
    with PersonalPool(local_dir=tmp_path / "ctx") as ctx:
        assert ctx.get_config_val("LOCAL_DIR") == str(tmp_path / "ctx")
        assert "READY" in repr(ctx)
    assert "STOPPED" in repr(ctx)
    wait_until(lambda: not pool_processes(tmp_path / "ctx"), 15, what="the context pool to exit")
    gone = PersonalPool(local_dir=tmp_path / "gc").start()
    gone._config_setter.unset()
    del gone
    import gc
    gc.collect()
    wait_until(lambda: not pool_processes(tmp_path / "gc"), 30, what="a collected pool to stop")


def test_missing_executable_is_held_with_code_6(pool, tmp_path):
    cluster = pool.schedd.submit(raw_job(tmp_path, Cmd=str(tmp_path / "no-such-program")), 1)
    wait_until(lambda: statuses(pool.schedd, cluster) == [5], what="the spawn failure hold")
    ad = pool.schedd.query(f"ClusterId == {cluster}", ["HoldReasonCode", "HoldReasonSubCode", "HoldReason"])[0]
    assert ad["HoldReasonCode"] == 6 and ad["HoldReasonSubCode"] == 2  # ENOENT
    assert "no-such-program" in ad["HoldReason"]
    pool.schedd.act(htcondor.JobAction.Remove, cluster)


def test_periodic_hold_then_periodic_release(pool, tmp_path):
    sub = htcondor.Submit({"executable": "/bin/sleep", "arguments": "60",
                           "periodic_hold": "JobStatus == 2",
                           "periodic_hold_reason": '"held by policy"',
                           "periodic_release": "NumHolds < 2"})
    cluster = pool.schedd.submit(sub).cluster()
    wait_until(lambda: (pool.schedd.query(f"ClusterId == {cluster}", ["NumHolds"]) or [{}])[0]
               .get("NumHolds") == 2 and statuses(pool.schedd, cluster) == [5], 30,
               what="two policy holds")
    ad = pool.schedd.query(f"ClusterId == {cluster}", ["HoldReasonCode", "HoldReason", "NumHoldsByReason"])[0]
    assert (ad["HoldReasonCode"], ad["HoldReason"]) == (3, "held by policy")
    assert dict(ad["NumHoldsByReason"]) == {"JobPolicy": 2}     # by hold code name, as HTCondor's schedd
    pool.schedd.act(htcondor.JobAction.Remove, cluster)


def test_grouped_queries(pool, tmp_path):
    schedd = pool.schedd
    cluster = schedd.submit(raw_job(tmp_path, JobStatus=5, HoldReasonCode=15), 3)
    groups = schedd.query(f"ClusterId == {cluster}", ["ClusterId", "Cmd"], opts=htcondor.QueryOpt.GroupBy)
    assert len(groups) == 1 and groups[0]["JobCount"] == 3
    assert groups[0]["JobIds"] == f"{cluster}.0 {cluster}.1 {cluster}.2"
    # As HTCondor's schedd: GroupBy tests the constraint on each job and again on each
    # group ad, which holds only the grouped attributes (names are case-insensitive).
    assert schedd.query(f"ClusterId == {cluster}", ["Cmd"], opts=htcondor.QueryOpt.GroupBy) == []
    folded = schedd.query(f"ClusterId == {cluster}", ["clusterid", "cmd"], opts=htcondor.QueryOpt.GroupBy)
    assert len(folded) == 1 and folded[0]["clusterid"] == cluster and folded[0]["JobCount"] == 3
    # AutoCluster tests the constraint on the autocluster ads only.
    auto = schedd.query(f'stringListMember("{cluster}.1", JobIds, " ")', opts=htcondor.QueryOpt.AutoCluster)
    assert len(auto) == 1 and "AutoClusterId" in auto[0]
    assert f"{cluster}.0 {cluster}.1 {cluster}.2" in auto[0]["JobIds"]
    assert schedd.query(f"ClusterId == {cluster}", opts=htcondor.QueryOpt.AutoCluster) == []
    with_cluster = schedd.query(f"ClusterId == {cluster}", ["ClusterId", "ProcId"],
                                opts=htcondor.QueryOpt.IncludeClusterAd)
    assert len(with_cluster) == 4 and sum("ProcId" not in ad for ad in with_cluster) == 1
    assert schedd.query(f"ClusterId == {cluster}",
                        opts=htcondor.QueryOpt.SummaryOnly | htcondor.QueryOpt.AutoCluster) == []
    schedd.act(htcondor.JobAction.Remove, cluster)


def test_v1_spool_flow_of_the_slides(pool, tmp_path):
    """The tutorial slides: submit(ad, 1, True, ad_results), spool(ad_results), retrieve."""
    schedd = pool.schedd
    ad_results = []
    cluster = schedd.submit(ClassAd({"Cmd": "/bin/sh", "Arguments": "-c 'echo Hello world'",
                                     "Out": str(tmp_path / "test.out"), "Iwd": str(tmp_path)}),
                            1, True, ad_results)
    assert ad_results[0]["ProcId"] == 0
    ad = schedd.query(f"ClusterID =?= {cluster}", ["ClusterID", "ProcID", "JobStatus", "HoldReasonCode"])[0]
    assert (ad["JobStatus"], ad["HoldReasonCode"]) == (5, 16)
    schedd.spool(ad_results)
    # LeaveJobInQueue: the completed job waits in the queue for its output to be retrieved
    wait_until(lambda: statuses(schedd, cluster) == [4], 30, what="the job to complete")
    assert not (tmp_path / "test.out").exists()
    schedd.retrieve(f"ClusterId =?= {cluster}")
    assert (tmp_path / "test.out").read_text() == "Hello world\n"
    assert statuses(schedd, cluster) == [4]   # still there, as the slides show
    result = schedd.act(htcondor.JobAction.Remove, [f"{cluster}.0"])
    assert (result["TotalSuccess"], result["TotalNotFound"]) == (1, 0)
    wait_gone(schedd, cluster)


def test_launcher_death_restarts_the_startd(fresh_pool, tmp_path):
    import signal
    import subprocess
    from jobledger.daemons import ipc
    master = ipc.sinful(str(fresh_pool.local_dir / "run" / "master.sock"))
    startd = ipc.call(master, "status")["startd"]["pid"]
    launcher = int(subprocess.check_output(["pgrep", "-P", str(startd)]).split()[0])
    os.kill(launcher, signal.SIGKILL)
    wait_until(lambda: ipc.call(master, "status")["startd"]["restarts"] == 1, 30,
               what="the master to restart the startd")
    cluster = fresh_pool.schedd.submit(raw_job(tmp_path), 2)
    wait_gone(fresh_pool.schedd, cluster)


def test_send_command_to_the_master(fresh_pool, tmp_path):
    from jobledger.daemons import ipc
    from tests.pool.conftest import pool_processes
    master_ad = fresh_pool.collector.locate(htcondor.DaemonType.Master)
    status = lambda: ipc.call(master_ad["MyAddress"], "status")  # noqa: E731
    htcondor.send_command(master_ad, htcondor.DaemonCommands.DaemonOff, "negotiator")
    wait_until(lambda: not status()["negotiator"]["running"], 15, what="the negotiator to stop")
    htcondor.send_command(master_ad, htcondor.DaemonCommands.DaemonOn, "negotiator")
    wait_until(lambda: status()["negotiator"]["running"], 15, what="the negotiator to come back")
    htcondor.send_command(master_ad, htcondor.DaemonCommands.Restart)
    wait_until(lambda: status()["schedd"]["restarts"] >= 1, 15, what="the restart")
    with pytest.raises(TypeError):
        htcondor.send_command(master_ad, 454)
    htcondor.send_command(master_ad, htcondor.DaemonCommands.DaemonsOff)
    wait_until(lambda: not pool_processes(fresh_pool.local_dir), 30, what="the pool to go")
    fresh_pool._detached = True  # already gone: nothing left for the fixture to stop


def test_image_size_events_while_running(pool, tmp_path):
    log = str(tmp_path / "size.log")
    cluster = pool.schedd.submit(raw_job(tmp_path, Arguments="2", UserLog=log), 1)
    wait_gone(pool.schedd, cluster)
    wait_until(lambda: "005 (" in open(log).read(), 10, what="the terminated event")
    kinds = [int(e.type) for e in JobEventLog(log).events(0)]
    assert kinds[:2] == [0, 1] and kinds[-1] == 5 and 6 in kinds
    size = [e for e in JobEventLog(log).events(0) if int(e.type) == 6][0]
    assert size["Size"] > 0 and size["ResidentSetSize"] > 0
    ad = pool.schedd.history(f"ClusterId == {cluster}", ["ImageSize", "MemoryUsage"])[0]
    assert ad["ImageSize"] > 0 and ad["MemoryUsage"] >= 1


def test_submit_count_itemdata_queue(pool, tmp_path):
    schedd = pool.schedd
    sub = htcondor.Submit({"executable": "/bin/echo", "arguments": "$(Item)", "hold": "true",
                           "output": f"{tmp_path}/o.$(Process)"})
    by_items = schedd.submit(sub, itemdata=iter(["a", "b", "c"]))
    assert by_items.num_procs() == 3 and by_items.first_proc() == 0
    args = [ad.get("Args", ad.get("Arguments"))
            for ad in schedd.query(f"ClusterId == {by_items.cluster()}", ["Args", "Arguments"])]
    assert args == ["a", "b", "c"]
    by_dicts = schedd.submit(htcondor.Submit({"executable": "/bin/echo", "arguments": "$(x) $(y)",
                                              "hold": "true"}),
                             itemdata=iter([{"x": "1", "y": "2"}, {"x": "3", "y": "4"}]))
    args = [ad.get("Args", ad.get("Arguments"))
            for ad in schedd.query(f"ClusterId == {by_dicts.cluster()}", ["Args", "Arguments"])]
    assert args == ["1 2", "3 4"]
    by_queue = schedd.submit(sub, queue="Item in (x, y)")
    assert by_queue.num_procs() == 2
    counted = schedd.submit(htcondor.Submit("executable = /bin/true\nhold = true\nqueue 4"))
    assert counted.num_procs() == 4
    assert schedd.submit(htcondor.Submit("executable = /bin/true\nhold = true\nqueue 4"), count=2).num_procs() == 2
    with pytest.raises(ValueError):
        schedd.submit(sub, count=2, queue="3")
    with pytest.raises(TypeError):
        schedd.submit({"executable": "/bin/true"})
    assert isinstance(by_items.clusterad(), htcondor.classad.ClassAd) and int(by_items) == by_items.cluster()
    ids = " || ".join(f"ClusterId == {r.cluster()}" for r in (by_items, by_dicts, by_queue, counted))
    schedd.act(htcondor.JobAction.Remove, ids)


def test_edit_should_log_writes_attribute_update(pool, tmp_path):
    log = str(tmp_path / "edit.log")
    cluster = pool.schedd.submit(raw_job(tmp_path, UserLog=log, JobStatus=5, HoldReasonCode=15), 1)
    pool.schedd.edit(f"{cluster}.0", "Color", '"blue"', htcondor.TransactionFlag.ShouldLog)
    wait_until(lambda: "033 (" in open(log).read(), 10, what="the attribute update event")
    assert 'Setting job attribute Color to "blue"' in open(log).read()
    assert [int(e.type) for e in JobEventLog(log).events(0)] == [0, 33]
    pool.schedd.act(htcondor.JobAction.Remove, cluster)


@pytest.mark.parametrize("extra, code", [
    ({"Out": "/nonexistent-dir/out"}, 7),
    ({"In": "no-such-input"}, 8),
    ({"Iwd": "/nonexistent-dir"}, 14),
])
def test_start_failures_hold_with_htcondor_codes(pool, tmp_path, extra, code):
    cluster = pool.schedd.submit(raw_job(tmp_path, **extra), 1)
    wait_until(lambda: statuses(pool.schedd, cluster) == [5], what="the hold")
    ad = pool.schedd.query(f"ClusterId == {cluster}", ["HoldReasonCode", "HoldReasonSubCode"])[0]
    assert (ad["HoldReasonCode"], ad["HoldReasonSubCode"]) == (code, 2)
    pool.schedd.act(htcondor.JobAction.Remove, cluster)


def test_collector_ads_expire_and_can_be_invalidated(pool):
    collector = pool.collector
    collector.advertise([ClassAd({"MyType": "Demo", "Name": "Short", "ClassAdLifetime": 1})])
    collector.advertise([ClassAd({"MyType": "Demo", "Name": "Kept"})])
    names = lambda: sorted(ad["Name"] for ad in collector.query(htcondor.AdType.Any, 'MyType == "Demo"'))  # noqa: E731
    assert "Short" in names()
    wait_until(lambda: "Short" not in names(), 10, what="the short-lived ad to expire")
    collector.advertise([ClassAd({"MyType": "Demo", "Name": "Kept"})], "INVALIDATE_ADS_GENERIC")
    assert "Kept" not in names()
    with pytest.raises(TypeError):
        collector.advertise(ClassAd({"MyType": "Demo"}))


def test_v1_transaction_commits_together_or_not_at_all(pool, tmp_path):
    schedd = pool.schedd
    sub = htcondor.Submit({"executable": "/bin/true", "hold": "true"})
    with schedd.transaction() as txn:
        first = sub.queue(txn, 2)
        second = sub.queue_with_itemdata(txn, 1, iter(["a", "b"]))
        assert schedd.query(f"ClusterId == {first}") == []        # not yet committed
    assert len(schedd.query(f"ClusterId == {first}", ["ProcId"])) == 2
    assert second.num_procs() == 2
    assert len(schedd.query(f"ClusterId == {second.cluster()}", ["ProcId"])) == 2
    with pytest.raises(RuntimeError):
        with schedd.transaction() as txn:
            dropped = sub.queue(txn, 3)
            raise RuntimeError("changed my mind")
    assert schedd.query(f"ClusterId == {dropped}") == []
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {first} || ClusterId == {second.cluster()}")


def test_start_reports_a_daemon_that_exits_at_once(tmp_path):
    from tests.pool.conftest import pool_processes
    broken = PersonalPool(local_dir=tmp_path / "broken", config={"JOURNAL_DURABILITY": "bogus"})
    try:
        with pytest.raises(htcondor.HTCondorException, match="the schedd daemon exited as the pool "
                                                             r"started \(status 1\): ") as info:
            broken.start()
        assert "durability" in str(info.value) and "\n" not in str(info.value)
        assert broken.state is PersonalPoolState.STOPPED
        assert not pool_processes(tmp_path / "broken")       # stopped before start() raised
    finally:
        broken.stop()
        broken._config_setter.unset()


# Makes one daemon's module fail to import, as a broken installation would: a
# sitecustomize on PYTHONPATH that only the process running that module acts on.
BROKEN_IMPORT = """
import sys
with open("/proc/self/cmdline", "rb") as handle:
    ARGS = handle.read().split(b"\\0")
class Broken:
    def find_spec(self, name, path=None, target=None):
        if name == "jobledger.daemons.NAME":
            raise ImportError("cannot import name 'Accountant' from 'jobledger.daemons.accounting'")
if b"jobledger.daemons.NAME" in ARGS:
    sys.meta_path.insert(0, Broken())
"""


def pool_start_with(tmp_path, monkeypatch, sitecustomize: str):
    """``jobledger pool start`` in ``tmp_path/pool`` with ``sitecustomize`` run by every
    process it starts; (the CliRunner result, the pool's directory)."""
    from click.testing import CliRunner
    from jobledger.cli import main
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(sitecustomize)
    monkeypatch.setenv("PYTHONPATH", str(inject))
    monkeypatch.delenv("CONDOR_CONFIG", raising=False)     # restored after: start sets it
    local = tmp_path / "pool"
    return CliRunner().invoke(main, ["pool", "start", "--local-dir", str(local)]), local


@pytest.mark.parametrize("name", ["negotiator", "startd"])
def test_pool_start_names_a_daemon_that_cannot_start_and_leaves_nothing(tmp_path, monkeypatch, name):
    from tests.pool.conftest import pool_processes
    result, local = pool_start_with(tmp_path, monkeypatch, BROKEN_IMPORT.replace("NAME", name))
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"Error: the {name} daemon exited as the pool started (status 1): ")
    assert "ImportError: cannot import name 'Accountant' from 'jobledger.daemons.accounting'" in result.output
    assert f"(see {local}/log/{name}.stderr)" in result.output
    assert not pool_processes(local)


# Makes one daemon exit a few milliseconds after its first ad reached the collector (the
# collector acknowledged it), as one crashing right after it advertised would.
DIES_AFTER_ADVERTISING = """
import sys
with open("/proc/self/cmdline", "rb") as handle:
    ARGS = handle.read().split(b"\\0")
if b"jobledger.daemons.NAME" in ARGS:
    import os, time
    from jobledger.daemons import daemon
    advertise = daemon.Daemon.advertise
    def dies_after(self, ads=None):
        advertise(self, ads)
        print("NAME: gone right after its ad reached the collector", file=sys.stderr, flush=True)
        time.sleep(0.05)
        os._exit(3)
    daemon.Daemon.advertise = dies_after
"""


@pytest.mark.parametrize("name", ["negotiator", "schedd"])
def test_pool_start_names_a_daemon_that_dies_right_after_advertising(tmp_path, monkeypatch, name):
    """Its ad is in the collector and it was alive then: still not READY, as it did not
    stay up; the start fails in one line naming it, and leaves nothing running."""
    from jobledger.daemons.daemon import process_start_time
    from jobledger.daemons.client.personal import _stop_master
    from tests.pool.conftest import pool_processes
    local = tmp_path / "pool"
    try:
        result, _ = pool_start_with(tmp_path, monkeypatch, DIES_AFTER_ADVERTISING.replace("NAME", name))
        assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
        assert result.output.startswith(f"Error: the {name} daemon exited as the pool started (status 3): "
                                         f"{name}: gone right after its ad reached the collector"), result.output
        assert not pool_processes(local)
    finally:
        if pool_processes(local):   # reported READY and left running: stop it
            pid = int((local / "run" / "master.pid").read_text())
            _stop_master(pid, process_start_time(pid), local / "run", 60)


def test_allowed_job_duration_holds_with_code_46(pool, tmp_path):
    cluster = pool.schedd.submit(raw_job(tmp_path, Arguments="60", AllowedJobDuration=1), 1)
    wait_until(lambda: statuses(pool.schedd, cluster) == [5], 30, what="the duration hold")
    ad = pool.schedd.query(f"ClusterId == {cluster}", ["HoldReasonCode", "HoldReason"])[0]
    assert ad["HoldReasonCode"] == 46 and "allowed job duration of 0:00:01" in ad["HoldReason"]
    pool.schedd.act(htcondor.JobAction.Remove, cluster)


def test_periodic_vacate_requeues_a_running_job(pool, tmp_path):
    log = str(tmp_path / "pv.log")
    cluster = pool.schedd.submit(raw_job(tmp_path, Arguments="60", UserLog=log,
                                         PeriodicVacate=htcondor.classad.ExprTree("NumJobStarts < 2")), 1)
    wait_until(lambda: open(log).read().count("001 (") >= 2, 30, what="a vacate and a second start")
    assert "004 (" in open(log).read()
    pool.schedd.act(htcondor.JobAction.Remove, cluster)


def test_system_periodic_hold(tmp_path):
    from tests.pool.conftest import stop_and_check
    strict = PersonalPool(local_dir=tmp_path / "strict",
                          config={"SYSTEM_PERIODIC_HOLD": "JobStatus == 2 && Cmd == \"/bin/sleep\""})
    strict.start()
    try:
        cluster = strict.schedd.submit(raw_job(tmp_path, Arguments="60"), 1)
        wait_until(lambda: statuses(strict.schedd, cluster) == [5], 30, what="the system hold")
        ad = strict.schedd.query(f"ClusterId == {cluster}", ["HoldReasonCode", "HoldReason"])[0]
        assert ad["HoldReasonCode"] == 26 and "SYSTEM_PERIODIC_HOLD" in ad["HoldReason"]
    finally:
        stop_and_check(strict)


def test_my_jobs_only(pool, tmp_path):
    import pwd
    me = pwd.getpwuid(os.getuid()).pw_name
    cluster = pool.schedd.submit(raw_job(tmp_path, JobStatus=5, HoldReasonCode=15), 2)
    mine = pool.schedd.query(f"ClusterId == {cluster}", ["Owner"], opts=htcondor.QueryOpt.DefaultMyJobsOnly)
    assert [ad["Owner"] for ad in mine] == [me, me]
    pool.schedd.act(htcondor.JobAction.Remove, cluster)
