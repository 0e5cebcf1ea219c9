"""Owner claimed units (htcondor2 25.x ``Schedd.create_ocu``, ``query_ocu``, ``remove_ocu``)
against a real pool of two owners: the pool's own user, and alice, a network user with
a token (her jobs have Owner "alice").

What HTCondor's schedd does with an OCU, followed here (its source: schedd.cpp, qmgmt.cpp,
schedd_negotiate.cpp; its test test_ocu_basic.py): the OCU is idle demand until the
negotiator matches it; its claim is then held with no job and never released for being
idle; its owner's OCUWanted jobs run on it (and on OCU claims only); another owner's
OCUWilling job borrows it when it is idle, and is evicted once the owner has OCUWanted
jobs waiting; remove_ocu releases the claim.  A schedd killed with kill -9 comes back
with its OCUs (journaled in the User record) and their claims (held by the startd)."""

from __future__ import annotations

import os
import signal

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.daemons.client.api import _user
from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import stop_and_check, wait_until
from tests.pool.test_crash import daemon_pid
from tests.security.test_network_pool import client, free_port, make_token


@pytest.fixture(scope="module")
def net_pool(tmp_path_factory):
    port = free_port()
    pool = PersonalPool(local_dir=tmp_path_factory.mktemp("ocupool"), config={
        "COLLECTOR_HOST": f"127.0.0.1:{port}", "TRUST_DOMAIN": "test.pool", "ALLOW_WRITE": "*@test.pool",
        "NUM_CPUS": "2", "NEGOTIATOR_INTERVAL": "1", "OCU_SUPER_USERS": "carol",
    })
    pool.start()
    pool.port = port
    yield pool
    stop_and_check(pool)


def ocus(schedd) -> list:
    return schedd.query_ocu(htcondor.classad.ClassAd())


def one_ocu(schedd, state: str):
    found = ocus(schedd)
    return found[0] if len(found) == 1 and found[0]["OCUState"] == state else None


def startd_slots(pool) -> list[dict]:
    return ipc.call(ipc.sinful(str(pool.local_dir / "run" / "startd.sock")), "slots", timeout=10)


def ocu_slots(pool) -> list[dict]:
    return [ad for ad in startd_slots(pool) if ad.get("OCU") is True]


def cycles(pool) -> int:
    return ipc.call(ipc.sinful(str(pool.local_dir / "run" / "negotiator.sock")), "cycles", timeout=10)


def job(schedd, cluster: int) -> dict | None:
    ads = schedd.query(f"ClusterId == {cluster}", ["JobStatus", "RemoteSlot", "NumJobStarts", "Owner"])
    return ads[0] if ads else None


def running_on(schedd, cluster: int, slot: str | None = None):
    ad = job(schedd, cluster)
    if ad is None or ad["JobStatus"] != 2 or (slot is not None and ad.get("RemoteSlot") != slot):
        return None
    return ad


def submit(schedd, tmp_path, seconds: int, **extra) -> int:
    desc = {"executable": "/bin/sleep", "arguments": str(seconds), "request_cpus": "1",
            "request_memory": "1", "request_disk": "1", "initialdir": str(tmp_path)}
    desc.update(extra)
    return schedd.submit(htcondor.Submit(desc)).cluster()


ALICE_SUBMIT = """
schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
result = schedd.submit(htcondor.Submit({{"executable": "/bin/sleep", "arguments": "600", "request_cpus": "1",
                                        "request_memory": "1", "request_disk": "1", {extra}}}))
report({{"cluster": result.cluster()}})
"""


def test_an_ocu_is_held_idle_used_lent_taken_back_survives_a_schedd_kill_and_is_released(net_pool, tmp_path):
    schedd, me = net_pool.schedd, _user()
    request = htcondor.classad.ClassAd({"Owner": me, "OCUName": "mine", "RequestCpus": 1, "RequestMemory": 64,
                                        "RequestDisk": 1024})
    # HTCondor's schedd makes OCUs only for owners it knows (a User record, or jobs queued)
    stranger = htcondor.classad.ClassAd({"Owner": "nobody-known", "RequestCpus": 1})
    refused = schedd.create_ocu(stranger)
    assert refused["Result"] == -1 and refused["ErrorString"] == "Owner not found: nobody-known"
    schedd.addUserRec(me)
    made = schedd.create_ocu(request)
    assert made["Result"] == 0 and made["OCUName"] == "mine" and isinstance(made["OCUId"], int)
    ocu_id = made["OCUId"]

    # matched through the negotiator as its owner's idle demand; the claim is held with no job
    held = wait_until(lambda: one_ocu(schedd, "I"), 60, what="the OCU claimed")
    assert held["OCUId"] == ocu_id and held["Owner"] == me and held["IsOCUHolder"] is True
    slot = wait_until(lambda: ocu_slots(net_pool), 30, what="the OCU's slot")
    assert len(slot) == 1
    slot = slot[0]
    assert slot["OCUName"] == "mine" and slot["State"] == "Claimed" and slot["Activity"] == "Idle"
    assert slot["Cpus"] == 1 and slot["Memory"] == 64 and "JobId" not in slot
    name = slot["Name"]
    # a claim with no job is among the schedd's claims (HTCondor's match records)
    claims = schedd.get_claims("OCU =?= true")
    assert [ad["Name"] for ad in claims] == [name] and claims[0]["Activity"] == "Idle"

    # a job that neither wants nor is willing runs elsewhere, never on the OCU's claim
    other = submit(schedd, tmp_path, 600)
    ran = wait_until(lambda: running_on(schedd, other), 60, what="a plain job running")
    assert ran["RemoteSlot"] != name
    # idle through negotiation cycles: still held, the same slot, no second claim
    seen = cycles(net_pool)
    wait_until(lambda: cycles(net_pool) >= seen + 5, 60, what="five negotiation cycles")
    assert one_ocu(schedd, "I") is not None
    assert [ad["Name"] for ad in ocu_slots(net_pool)] == [name]

    # its owner's job that wants an OCU runs on it, and the claim stays when it ends
    wanted = submit(schedd, tmp_path, 1, **{"+OCUWanted": "true", "leave_in_queue": "true"})
    wait_until(lambda: (job(schedd, wanted) or {}).get("JobStatus") == 4, 60, what="the owner's job done")
    after = wait_until(lambda: one_ocu(schedd, "I"), 30, what="the OCU idle again")
    assert after["OCUOwnerActivations"] == 1 and [ad["Name"] for ad in ocu_slots(net_pool)] == [name]

    # another owner's willing job borrows it (the only free slot)
    alice = {"alice": make_token(net_pool, "alice@test.pool")}
    borrower = client(tmp_path, net_pool, ALICE_SUBMIT.format(extra='"+OCUWilling": "true"'), alice)["cluster"]
    ad = wait_until(lambda: running_on(schedd, borrower, name), 60, what="alice's job on the OCU")
    assert ad["Owner"] == "alice"
    lent = wait_until(lambda: one_ocu(schedd, "R"), 30, what="the OCU running")
    assert lent["OCUBorrowerActivations"] == 1

    # the owner's job arrives: the borrower is evicted, the owner's job takes the claim
    mine = submit(schedd, tmp_path, 600, **{"+OCUWanted": "true"})
    wait_until(lambda: running_on(schedd, mine, name), 90, what="the owner's job on its OCU")
    back = job(schedd, borrower)
    assert back["JobStatus"] == 1 and back["NumJobStarts"] == 1   # evicted, idle again
    assert ocus(schedd)[0]["OCUOwnerActivations"] == 2
    claims = schedd.get_claims(f'Name == "{name}"')
    assert len(claims) == 1 and claims[0]["JobId"] == f"{mine}.0" and claims[0]["Activity"] == "Busy"

    # kill -9 of the schedd loses nothing: the OCU, its claim, the job on it
    pid = daemon_pid(net_pool, "schedd")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: daemon_pid(net_pool, "schedd") != pid, 30, what="a new schedd")
    restarted = wait_until(lambda: _answer(lambda: one_ocu(schedd, "R")), 60, what="the OCU after the restart")
    assert restarted["OCUId"] == ocu_id and restarted["OCUName"] == "mine"
    assert running_on(schedd, mine, name) is not None
    assert [ad["Name"] for ad in ocu_slots(net_pool)] == [name]
    seen = cycles(net_pool)
    wait_until(lambda: cycles(net_pool) >= seen + 3, 60, what="three negotiation cycles")
    assert len(ocu_slots(net_pool)) == 1 and job(schedd, borrower)["JobStatus"] == 1   # not claimed twice

    # remove_ocu: gone from the record, its claim released, the job on it back to idle
    gone = schedd.remove_ocu(ocu_id)
    assert gone["Result"] == 0 and gone["OCUId"] == ocu_id
    assert ocus(schedd) == []
    wait_until(lambda: not ocu_slots(net_pool), 30, what="the OCU's claim released")
    wait_until(lambda: (job(schedd, mine) or {}).get("JobStatus") == 1, 60, what="the owner's job requeued")
    user = schedd.queryUserAds(f'Owner == "{me}"')[0]
    assert "ocus" not in user
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {other} || ClusterId == {mine} || ClusterId == {borrower}")


def _answer(read):
    try:
        return read()
    except htcondor.HTCondorException:
        return None     # the new schedd is not listening yet


def test_who_may_create_and_remove_ocus(net_pool, tmp_path):
    """CREATE and REMOVE need a queue super user or one OCU_SUPER_USERS names; anyone who
    may read may query (HTCondor's isOCUSuperUser and its READ registration)."""
    schedd = net_pool.schedd
    alice = {"alice": make_token(net_pool, "alice@test.pool")}
    carol = {"carol": make_token(net_pool, "carol@test.pool")}
    client(tmp_path, net_pool, ALICE_SUBMIT.format(extra='"hold": "true"'), alice, name="alice0")
    body = """
        schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
        made = schedd.create_ocu(htcondor.classad.ClassAd({"Owner": "alice", "RequestCpus": 1}))
        report({"Result": made["Result"], "ErrorString": made.get("ErrorString"), "OCUId": made.get("OCUId"),
                "seen": len(schedd.query_ocu(htcondor.classad.ClassAd()))})
    """
    denied = client(tmp_path, net_pool, body, alice, name="alice1")
    assert denied == {"Result": -1, "ErrorString": "Permission denied: not an OCU super user", "OCUId": None,
                      "seen": 0}
    allowed = client(tmp_path, net_pool, body, carol, name="carol")
    assert allowed["Result"] == 0 and allowed["seen"] == 1
    removal = f"""
        schedd = htcondor.Schedd(htcondor.Collector(ADDRESS).locate(htcondor.DaemonType.Schedd))
        gone = schedd.remove_ocu({allowed['OCUId']})
        report({{"Result": gone["Result"], "ErrorString": gone.get("ErrorString")}})
    """
    assert client(tmp_path, net_pool, removal, alice, name="alice2")["Result"] == -1
    assert [ad["OCUId"] for ad in ocus(schedd)] == [allowed["OCUId"]]
    # as HTCondor's schedd: Result 0 for an id that names no OCU, OCUId only when one went
    assert dict(schedd.remove_ocu(allowed["OCUId"] + 1000)) == {"Result": 0}
    assert schedd.remove_ocu(htcondor.classad.ClassAd({"OCUId": allowed["OCUId"]}))["OCUId"] == allowed["OCUId"]
    assert ocus(schedd) == []
    with pytest.raises(TypeError):
        schedd.remove_ocu("1")
    with pytest.raises(TypeError):
        schedd.create_ocu({"Owner": "alice"})
    missing = schedd.create_ocu(htcondor.classad.ClassAd({"RequestCpus": 1}))
    assert missing["Result"] == -1 and missing["ErrorString"] == "Missing required attribute: Owner"
    # a request that is no ClassAd (sent raw) is refused whole, and the schedd goes on
    raw = ipc.sinful(str(net_pool.local_dir / "run" / "schedd.sock"))
    bad = ipc.call(raw, "create_ocu", timeout=10, request={"Owner": '"alice"', "RequestCpus": "(("})
    assert bad["Result"] == "-1" and "invalid OCU request ad" in bad["ErrorString"]
    with pytest.raises(htcondor.HTCondorException, match="must be a ClassAd"):
        ipc.call(raw, "create_ocu", timeout=10, request=["Owner"])
    assert ocus(schedd) == []
    schedd.act(htcondor.JobAction.Remove, 'Owner == "alice"')


def test_a_draining_machine_releases_an_idle_ocu_claim_and_none_is_made_there_until_it_ends(net_pool):
    """An OCU's request keeps off draining slots (HTCondor's schedd_negotiate adds
    ``Draining =!= true``); the draining startd lets its idle OCU claim go, the schedd sees it
    gone and asks again, and is matched once the drain is cancelled."""
    schedd, startd, me = net_pool.schedd, htcondor.Startd(), _user()
    schedd.addUserRec(me)
    made = schedd.create_ocu(htcondor.classad.ClassAd({"Owner": me, "RequestCpus": 1, "RequestMemory": 16}))
    assert made["Result"] == 0
    try:
        wait_until(lambda: one_ocu(schedd, "I"), 60, what="the OCU claimed")
        request = startd.drainJobs(htcondor.DrainType.Graceful, reason="OCU test")
        wait_until(lambda: not ocu_slots(net_pool), 30, what="the idle OCU claim released")
        wait_until(lambda: one_ocu(schedd, "U"), 30, what="the OCU unclaimed")
        seen = cycles(net_pool)
        wait_until(lambda: cycles(net_pool) >= seen + 3, 60, what="three negotiation cycles")
        assert one_ocu(schedd, "U") is not None and not ocu_slots(net_pool)
        startd.cancelDrainJobs(request)
        wait_until(lambda: one_ocu(schedd, "I"), 60, what="the OCU claimed again")
        assert len(ocu_slots(net_pool)) == 1
    finally:
        schedd.remove_ocu(made["OCUId"])
    wait_until(lambda: not ocu_slots(net_pool), 30, what="the claim released")
