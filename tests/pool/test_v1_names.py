"""Names of the seed API reference that htcondor2 dropped or added late, with a pool behind
them: ``Schedd.submitMany``, ``Transaction``, ``QueueItemsIterator``, ``VacateTypes``,
``HistorySrc`` (members as the htcondor2 wheel has them)."""

from __future__ import annotations

import pytest

import jobledger as htcondor
import jobledger.v1 as v1
from jobledger.classad import ClassAd


def test_submit_many_makes_one_cluster_of_the_procs_given(pool, tmp_path):
    schedd = v1.Schedd()
    results: list = []
    cluster = schedd.submitMany(
        ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "JobStatus": 5, "Color": "blue"}),
        [(ClassAd({"Arguments": "a"}), 2), (ClassAd({"Arguments": "b", "Color": "red"}), 1)],
        ad_results=results)
    try:
        assert isinstance(cluster, int)
        ads = schedd.query(f"ClusterId == {cluster}", ["ProcId", "Arguments", "Color", "JobStatus"])
        assert [(ad["ProcId"], ad["Arguments"], ad["Color"], ad["JobStatus"]) for ad in ads] == \
            [(0, "a", "blue", 5), (1, "a", "blue", 5), (2, "b", "red", 5)]
        assert [(ad["ProcId"], ad["Arguments"]) for ad in results] == [(0, "a"), (1, "a"), (2, "b")]
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    for bad in ([ClassAd()], [(ClassAd(), "2")], "x"):
        with pytest.raises(TypeError):
            schedd.submitMany(ClassAd({"Cmd": "/bin/true"}), bad)
    with pytest.raises(htcondor.HTCondorValueError):
        schedd.submitMany(ClassAd({"Cmd": "/bin/true"}), [(ClassAd(), 0)])


def test_submit_of_a_classad_with_a_count_is_v1s(pool, tmp_path):
    """v1's Schedd.submit(description, count=1, spool=False, ad_results=None, itemdata=None) with a
    raw job ClassAd (its deprecated form; schedd.cpp Schedd::submit of the v1 bindings): one cluster
    of ``count`` procs (0 taken as 1), the cluster id returned as an int, ``ad_results`` -- fourth
    in v1's order -- filled with each proc's ad; itemdata with a ClassAd is an HTCondorValueError."""
    schedd = v1.Schedd()
    ad = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "JobStatus": 5, "Color": "blue"})
    results: list = []
    cluster = schedd.submit(ad, 3, False, results)             # positionally, as v1 programs call it
    one = schedd.submit(ad, count=0)
    try:
        assert isinstance(cluster, int) and isinstance(one, int) and one > cluster
        ads = schedd.query(f"ClusterId == {cluster}", ["ProcId", "Color", "JobStatus", "Cmd"])
        assert [(a["ProcId"], a["Color"], a["JobStatus"], a["Cmd"]) for a in ads] == \
            [(p, "blue", 5, "/bin/true") for p in range(3)]
        assert [(a["ClusterId"], a["ProcId"], a["Color"]) for a in results] == [(cluster, p, "blue") for p in range(3)]
        assert [a["ProcId"] for a in schedd.query(f"ClusterId == {one}", ["ProcId"])] == [0]
        spooled = schedd.submit(ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path)}), 2, True)
        assert [(a["JobStatus"], a["HoldReasonCode"]) for a in
                schedd.query(f"ClusterId == {spooled}", ["JobStatus", "HoldReasonCode"])] == [(5, 16)] * 2
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId >= {cluster}")
    with pytest.raises(htcondor.HTCondorValueError, match="itemdata cannot be used when submitting raw ClassAds"):
        schedd.submit(ad, 1, itemdata=iter([{"x": "1"}]))
    with pytest.raises(htcondor.HTCondorValueError, match="count"):
        schedd.submit(ad, -2)
    with pytest.raises(TypeError):
        schedd.submit(ad, "2")


def test_transaction_and_queue_items(pool, tmp_path):
    schedd = v1.Schedd()
    sub = v1.Submit({"executable": "/bin/true", "hold": "true", "initialdir": str(tmp_path)})
    with schedd.transaction() as txn:
        assert isinstance(txn, htcondor.Transaction) and htcondor.Transaction is v1.Transaction
        cluster = sub.queue(txn, 2)
    try:
        assert len(schedd.query(f"ClusterId == {cluster}", ["ProcId"])) == 2
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    items = htcondor.Submit("executable = /bin/true\nqueue x, y from (\n1 2\n3 4\n)").itemdata()
    assert isinstance(items, htcondor.QueueItemsIterator) and iter(items) is items
    assert items.next() == {"x": "1", "y": "2"} and list(items) == [{"x": "3", "y": "4"}]


def test_enums_of_the_reference():
    htcondor2 = pytest.importorskip("htcondor2")
    assert {m.name: int(m) for m in htcondor.HistorySrc} == {m.name: int(m) for m in htcondor2.HistorySrc}
    assert htcondor.VacateTypes is v1.VacateTypes


def test_v1_exception_classes_where_v1_raised_them(pool):
    """collector.cpp: an unknown advertise command is HTCondorEnumError (a ValueError, what
    htcondor2 raises), as is locating a daemon of no kind; Submit.update of something
    that is not a mapping is HTCondorTypeError (a TypeError, htcondor2's class)."""
    for collector in (htcondor.Collector(), v1.Collector()):
        with pytest.raises(htcondor.HTCondorEnumError) as bad:
            collector.advertise([ClassAd({"MyType": "Demo", "Name": "x"})], "UPDATE_NO_SUCH_AD")
        assert isinstance(bad.value, ValueError)
    v1.Collector().advertise([ClassAd({"MyType": "Demo", "Name": "cased"})], "update_ad_generic")
    for kind in (v1.DaemonTypes.Any, v1.DaemonTypes.__members__["None"]):
        with pytest.raises(htcondor.HTCondorEnumError, match="Unknown daemon type"):
            v1.Collector().locateAll(kind)
    assert v1.Collector().locate(v1.DaemonTypes.Schedd)["MyAddress"]
    with pytest.raises(htcondor.HTCondorTypeError) as typed:
        htcondor.Submit().update(5)
    assert isinstance(typed.value, TypeError)
    sub = htcondor.Submit()
    sub.update({"executable": "/bin/true"}, arguments="1")
    sub.update([("output", "out")])
    assert (sub["executable"], sub["arguments"], sub["output"]) == ("/bin/true", "1", "out")


def test_a_description_that_makes_no_job_ad_is_v1s_internal_error(pool, tmp_path):
    """schedd.cpp: make_job_ad failing was HTCondorInternalError in v1 ("Failed to create job
    ad, errmsg=..."; htcondor2 raises HTCondorException with the same text): v1's Schedd
    and its transactions raise it, and it is still the SubmitError it is."""
    from jobledger.eventcore.errors import SubmitError
    bad = v1.Submit({"executable": "/bin/true", "universe": "bogus", "initialdir": str(tmp_path)})
    schedd = v1.Schedd()
    with pytest.raises(htcondor.HTCondorInternalError, match="^Failed to create job ad, errmsg=.*'bogus' universe"):
        schedd.submit(bad)
    with pytest.raises(SubmitError):
        schedd.submit(bad)
    with pytest.raises(htcondor.HTCondorInternalError, match="Failed to create job ad"):
        with schedd.transaction() as txn:
            bad.queue(txn)
    # htcondor2's Schedd keeps the SubmitError it raised before
    with pytest.raises(SubmitError) as caught:
        htcondor.Schedd().submit(htcondor.Submit({"executable": "/bin/true", "universe": "bogus"}))
    assert not isinstance(caught.value, htcondor.HTCondorInternalError)
