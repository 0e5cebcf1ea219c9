"""htcondor2/v1 API semantics scripts rely on: act's counts, advertise without a Name,
attach().stop(), send_command to any daemon, v1 exception classes, xquery's keywords."""

from __future__ import annotations

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.classad import ClassAd
from jobledger.personal import PersonalPool
from tests.pool.conftest import pool_processes, wait_until


def test_act_counts_as_htcondors_schedd(pool, tmp_path):
    """TotalJobAds is the number of jobs in the whole queue (HTCondor's schedd assigns
    getJobsTotalAds(); the tutorial slides show 1 with one job queued); holding a job
    the user already held is TotalAlreadyDone."""
    schedd = pool.schedd
    cluster = schedd.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true",
                                             "initialdir": str(tmp_path)}), count=3).cluster()
    try:
        queued = len(schedd.query("true", ["ProcId"]))
        first = schedd.act(htcondor.JobAction.Hold, [f"{cluster}.0"])  # held at submit: code 15 -> 1
        assert (first["TotalSuccess"], first["TotalJobAds"]) == (1, queued)
        result = schedd.act(htcondor.JobAction.Hold, [f"{cluster}.0"])
        assert result["TotalJobAds"] == queued
        assert (result["TotalAlreadyDone"], result["TotalSuccess"], result["TotalChangedAds"]) == (1, 0, 0)
        removed = schedd.act(htcondor.JobAction.Remove, [f"{cluster}.1"])
        assert (removed["TotalSuccess"], removed["TotalChangedAds"]) == (1, 1)
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_advertise_drops_an_ad_without_a_name(pool):
    collector = pool.collector
    collector.advertise([ClassAd({"MyType": "NoNameDemo", "foo": 1}),
                         ClassAd({"MyType": "NoNameDemo", "foo": 2, "Name": "kept"})])
    found = collector.query(htcondor.AdType.Any, 'MyType == "NoNameDemo"')
    assert [(ad["Name"], ad["foo"]) for ad in found] == [("kept", 2)]


def test_xquery_takes_v1_keywords(pool, tmp_path):
    schedd = pool.schedd
    cluster = schedd.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true",
                                             "initialdir": str(tmp_path)}), count=2).cluster()
    try:
        ads = list(schedd.xquery(requirements=f"ClusterId == {cluster}", projection=["ProcId"],
                                 limit=1, opts=htcondor.QueryOpt.Default))
        assert len(ads) == 1 and set(ads[0].keys()) >= {"ProcId"}
        assert len(list(schedd.xquery(f"ClusterId == {cluster}", ["ProcId"]))) == 2
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")


def test_v1_exception_classes_where_v1_raised_them(pool, tmp_path):
    with pytest.raises(htcondor.HTCondorLocateError) as located:
        pool.collector.locate(htcondor.DaemonType.Credd)
    assert isinstance(located.value, htcondor.HTCondorException)
    gone = htcondor.Schedd(ClassAd({"MyAddress": f"<127.0.0.1:0?sock={tmp_path}/none.sock>",
                                    "CondorVersion": "x", "MyType": "Scheduler"}))
    with pytest.raises(htcondor.HTCondorIOError) as unreachable:
        gone.query()
    assert isinstance(unreachable.value, htcondor.HTCondorException)
    for bad in ("not ) an expression", ["1.x"]):
        with pytest.raises(htcondor.HTCondorValueError) as value:
            pool.schedd.act(htcondor.JobAction.Hold, bad)
        assert isinstance(value.value, ValueError) and isinstance(value.value, htcondor.HTCondorException)
    with pytest.raises(htcondor.HTCondorValueError):
        htcondor.send_command(ClassAd({"MyType": "Scheduler"}), htcondor.DaemonCommand.Reconfig)
    with pytest.raises(ValueError):   # htcondor2's class for the same mistake
        htcondor.send_command(ClassAd({"MyType": "Scheduler"}), htcondor.DaemonCommand.Reconfig)


def test_send_command_to_any_daemon_and_attach_stop(fresh_pool):
    master = fresh_pool.collector.locate(htcondor.DaemonType.Master)
    status = lambda: ipc.call(master["MyAddress"], "status")  # noqa: E731
    for kind in (htcondor.DaemonType.Schedd, htcondor.DaemonType.Negotiator,
                 htcondor.DaemonType.Collector, htcondor.DaemonType.Startd):
        htcondor.send_command(fresh_pool.collector.locate(kind), htcondor.DaemonCommand.Reconfig)
    name = "negotiator"
    htcondor.send_command(fresh_pool.collector.locate(htcondor.DaemonType.Negotiator),
                          htcondor.DaemonCommand.OffGraceful)
    wait_until(lambda: status()[name]["restarts"] >= 1 and status()[name]["running"], 30,
               what="the master to start the negotiator again")
    attached = PersonalPool.attach(fresh_pool.local_dir)
    assert attached.state.name == "READY"
    attached.stop()
    assert attached.state.name == "STOPPED"
    wait_until(lambda: not pool_processes(fresh_pool.local_dir), 30, what="the pool to stop")
    fresh_pool._detached = True  # already gone: nothing left for the fixture to stop
