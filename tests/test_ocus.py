"""The pure rules of owner claimed units (``eventcore.projections.ocus``), as HTCondor's
schedd has them (qmgmt.h ``addOCU``, qmgmt.cpp ``FindRunnableJob``, schedd.cpp
``count_jobs`` and ``isOCUSuperUser``, schedd_negotiate.cpp)."""

from __future__ import annotations

from jobledger.eventcore import adwire
from jobledger.eventcore.projections.ocus import (evictions, is_ocu_super, may_run, new_ocu, ocus_of, ocus_text,
                                                  owner_demand, query_ad, request_ad)

REQUEST = {"Owner": '"alice"', "RequestCpus": "2", "RequestMemory": "64"}


def test_a_new_ocu_has_its_id_a_name_and_the_holder_flags():
    ocu = new_ocu(REQUEST, 12)
    assert ocu == {**REQUEST, "OCUId": "12", "OCUName": '"OCU-12"', "OCUClaim": "true", "IsOCUHolder": "true"}
    named = new_ocu({**REQUEST, "OCUName": '"gpu-box"', "OCUId": "999"}, 13)
    assert named["OCUName"] == '"gpu-box"' and named["OCUId"] == "13"   # the schedd numbers it


def test_the_user_records_list_round_trips():
    both = [new_ocu(REQUEST, 1), new_ocu({"Owner": '"alice"', "Requirements": 'Machine == "x"'}, 2)]
    text = ocus_text(both)
    assert text.startswith("{ [") and text.endswith("] }")
    assert ocus_of({"ocus": text}) == both
    assert ocus_of({"Owner": '"alice"'}) == [] and ocus_of(None) == []


def test_the_negotiators_request_keeps_off_draining_slots():
    plain = request_ad(new_ocu(REQUEST, 5))
    assert plain["ClusterId"] == "5" and plain["ProcId"] == "-99" and plain["ResourceRequestCount"] == "1"
    assert plain["Requirements"] == "Draining =!= true"
    given = request_ad(new_ocu({**REQUEST, "Requirements": "TARGET.Memory > 100"}, 6))
    assert given["Requirements"] == "(TARGET.Memory > 100) && (Draining =!= true)"
    assert adwire.symmetric_match(given, {"Memory": "200", "Requirements": "true", "Draining": "false"})
    assert not adwire.symmetric_match(given, {"Memory": "200", "Requirements": "true", "Draining": "true"})


def test_who_runs_on_an_ocu():
    ocu = new_ocu(REQUEST, 1)
    wanted = {"Owner": '"alice"', "OCUWanted": "true"}
    plain_own = {"Owner": '"alice"'}
    willing = {"Owner": '"bob"', "OCUWilling": "true"}
    plain_other = {"Owner": '"bob"'}
    # the owner's pass: its OCUWanted jobs only
    assert may_run(wanted, ocu, False) and not may_run(plain_own, ocu, False)
    assert not may_run(willing, ocu, False)
    # the borrowers' pass: other owners' OCUWilling jobs only; the owner's never borrow their own
    assert may_run(willing, ocu, True) and not may_run(plain_other, ocu, True)
    assert not may_run(wanted, ocu, True) and not may_run({"Owner": '"bob"', "OCUWanted": "true"}, ocu, True)
    # a job of the OCU's project counts as the owner's (HTCondor: remoteProject)
    project = new_ocu({**REQUEST, "ProjectName": '"p"'}, 2)
    assert may_run({"Owner": '"carol"', "ProjectName": '"p"', "OCUWanted": "true"}, project, False)


def test_borrowers_are_evicted_while_the_owner_waits():
    borrowed = {"alice": ["7.0"], "bob": ["8.0"]}
    # alice has 2 OCUWanted jobs, 1 running: hers go; bob's wanted all run: his stay
    assert evictions({"alice": 2, "bob": 1}, {"alice": 1, "bob": 1}, borrowed) == ["7.0"]
    assert evictions({}, {}, borrowed) == []


def test_who_may_create_and_remove():
    assert is_ocu_super(None, "", False)                         # the pool's own user
    assert is_ocu_super("condor@pool", "", True)                 # a queue super user
    assert is_ocu_super("carol@pool", "alice, carol", False)     # OCU_SUPER_USERS, by user part
    assert is_ocu_super("carol@pool", "carol@pool", False)
    assert not is_ocu_super("carol@pool", "carol@other", False)
    assert not is_ocu_super("alice@pool", "", False)


def test_a_query_answer_says_the_state_letter():
    ad = query_ad(new_ocu(REQUEST, 3), "idle", {"OCUOwnerActivations": 2})
    assert ad["OCUState"] == '"I"' and ad["OCUOwnerActivations"] == "2"
    assert query_ad(new_ocu(REQUEST, 3), "unclaimed", {})["OCUState"] == '"U"'
    assert query_ad(new_ocu(REQUEST, 3), "running", {})["OCUState"] == '"R"'


def test_only_an_owners_jobs_that_could_run_take_its_claims_back():
    """HTCondor's count_jobs counts every OCUWanted job in the queue (a held or completed one
    too, so that it would evict borrowers for as long as it stays); here a held or completed
    job does not, an idle one does: a deviation, on purpose."""
    jobs = [{"Owner": '"alice"', "JobStatus": "1", "OCUWanted": "true"},
            {"Owner": '"alice"', "JobStatus": "2", "OCUWanted": "true"},
            {"Owner": '"alice"', "JobStatus": "5", "OCUWanted": "true"},
            {"Owner": '"alice"', "JobStatus": "4", "OCUWanted": "true"},
            {"Owner": '"bob"', "JobStatus": "5", "OCUWanted": "true"},
            {"Owner": '"bob"', "JobStatus": "1"}]
    wanted, running = owner_demand(jobs)
    assert wanted == {"alice": 2} and running == {"alice": 1}
    assert evictions(wanted, running, {"alice": ["7.0"], "bob": ["8.0"]}) == ["7.0"]
