"""``Schedd.get_claims``: the slots the schedd holds claims on, as HTCondor's schedd answers
QUERY_STARTD_ADS from its match records.  HTCondor has it on the Schedd (htcondor2's
``Schedd.get_claims``); the Startd has no such method, here as there."""

from __future__ import annotations

import pytest

import jobledger as htcondor
import jobledger.v1 as v1
from jobledger.eventcore.errors import ClassAdParseError
from tests.pool.conftest import running_pool, wait_until


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS="3")


def test_get_claims_lists_the_claimed_slots(pool, tmp_path):
    schedd = htcondor.Schedd()
    assert schedd.get_claims() == []
    result = schedd.submit(htcondor.Submit({"executable": "/bin/sleep", "arguments": "600",
                                            "request_cpus": "1", "request_memory": "1",
                                            "initialdir": str(tmp_path)}), count=2)
    cluster = result.cluster()
    try:
        wait_until(lambda: len(schedd.query(f"ClusterId == {cluster} && JobStatus == 2", ["ProcId"])) == 2,
                   120, what="both jobs running")
        jobs = {f"{ad['ClusterId']}.{ad['ProcId']}": ad for ad in
                schedd.query(f"ClusterId == {cluster}", ["ClusterId", "ProcId", "RemoteSlot", "ClaimId"])}
        claims = schedd.get_claims()
        assert len(claims) == 2
        assert {ad["JobId"] for ad in claims} == set(jobs)
        for ad in claims:
            assert ad["State"] == "Claimed" and ad["Activity"] == "Busy" and ad["DynamicSlot"] is True
            assert ad["Name"] == jobs[ad["JobId"]]["RemoteSlot"]
            assert ad["RemoteOwner"]
            # the claim id is a capability: never in the answer
            assert "ClaimId" not in ad
            assert all(jobs[ad["JobId"]]["ClaimId"] not in str(ad.lookup(k)) for k in ad.keys())

        one = f"{cluster}.1"
        only = schedd.get_claims(f'JobId == "{one}"')
        assert [ad["JobId"] for ad in only] == [one]
        expr = htcondor.classad.ExprTree(f'JobId == "{one}"')
        assert [ad["JobId"] for ad in schedd.get_claims(expr)] == [one]
        projected = schedd.get_claims("", ["Name", "JobId"])
        assert len(projected) == 2 and all(set(ad.keys()) == {"Name", "JobId"} for ad in projected)
        assert v1.Schedd().get_claims("State == \"Claimed\"", ["JobId"])  # the v1 spelling reaches it too

        with pytest.raises(ClassAdParseError, match="expected an expression"):   # as query's
            schedd.get_claims("JobId == ")
        with pytest.raises(TypeError):
            schedd.get_claims(5)
        with pytest.raises(TypeError):
            schedd.get_claims(None, "Name")
    finally:
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    wait_until(lambda: schedd.get_claims() == [], 120, what="the claims released")


def test_startd_has_no_get_claims():
    """HTCondor's source (htcondor2/_schedd.py) puts get_claims on the Schedd, not the Startd."""
    assert not hasattr(htcondor.Startd, "get_claims")
    htcondor2 = pytest.importorskip("htcondor2")
    assert hasattr(htcondor2.Schedd, "get_claims") and not hasattr(htcondor2.Startd, "get_claims")
