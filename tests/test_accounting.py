"""User priorities without a pool: decay, shares, the accountant's file, condor_userprio's table."""

from __future__ import annotations

import pytest

from jobledger.condor_cli.userprio import format_time, number, pad, render
from jobledger.daemons.accounting import Accountant
from jobledger.daemons.negotiator import spin_the_pie
from jobledger.eventcore.accounting import Customer, first_limits, later_limits, submitter_of
from jobledger.eventcore.adwire import exprs_of
from jobledger.eventcore.errors import HTCondorException, HTCondorValueError


def test_real_priority_decays_towards_usage_with_the_half_life():
    c = Customer("a@h", 1000.0)
    c.weighted_used = c.used = 8
    c.age(100.0, 100.0, 1000)             # one half-life at 8 cores: half way from 0.5 to 8
    assert c.real == pytest.approx(4.25)
    assert c.effective == pytest.approx(4250.0)
    assert c.usage == 800 and c.weighted_usage == 800 and c.begin == c.last == 1000
    c.weighted_used = c.used = 0
    c.age(200.0, 100.0, 1200)             # two half-lives idle: a quarter of it, not below 0.5
    assert c.real == pytest.approx(4.25 / 4)
    c.age(10_000.0, 100.0, 11_200)
    assert c.real == 0.5 and c.last == 1000


def test_shares_are_inverse_to_effective_priority_and_capped_by_ceilings():
    a, b, c = Customer("a@h", 1000.0), Customer("b@h", 2000.0), Customer("c@h", 1000.0)
    customers = {"a@h": a, "b@h": b}
    assert first_limits(12, customers, ["a@h", "b@h"]) == {"a@h": 8.0, "b@h": 4.0}
    a.weighted_used = 6                    # holds 6 of its 8
    assert first_limits(12, customers, ["a@h", "b@h"])["a@h"] == pytest.approx(2.0)
    b.ceiling = 3
    assert first_limits(12, customers, ["b@h"])["b@h"] == 3
    assert later_limits(4, {"b@h": b, "c@h": c}, ["b@h", "c@h"], {"b@h": 3})["b@h"] == 0
    assert submitter_of("me", None, "h") == "me@h"
    assert submitter_of("me", "physics.me", "h") == "physics.me@h"


def _slot(cpus: int) -> tuple[str, dict]:
    return ("<startd>", exprs_of({"Name": "slot1@h", "Cpus": cpus, "Memory": 10**6, "Disk": 10**9,
                                  "TotalSlotCpus": cpus, "Requirements": {"expr": "true"}}))


def _jobs(cluster: int, n: int) -> list[dict]:
    return [exprs_of({"ClusterId": cluster, "ProcId": p, "RequestCpus": 1, "RequestMemory": 1,
                      "RequestDisk": 1, "Requirements": {"expr": "true"}, "Owner": "me"}) for p in range(n)]


def test_the_pie_gives_each_submitter_its_share_and_spins_again_for_what_is_left():
    slots = [_slot(12)]
    customers = {"a@h": Customer("a@h", 1000.0), "b@h": Customer("b@h", 2000.0)}
    free = [{"Cpus": 12, "Memory": 10**6, "Disk": 10**9}]
    out = spin_the_pie(customers, {"a@h": [("s", _jobs(1, 50))], "b@h": [("s", _jobs(2, 50))]},
                       slots, free, 12)
    jobs = [m["job"].split(".")[0] for m in out["s"]]
    assert jobs.count("1") == 8 and jobs.count("2") == 4
    # b wants only 1: a gets the rest in the next spin
    free = [{"Cpus": 12, "Memory": 10**6, "Disk": 10**9}]
    out = spin_the_pie(customers, {"a@h": [("s", _jobs(1, 50))], "b@h": [("s", _jobs(2, 1))]},
                       slots, free, 12)
    jobs = [m["job"].split(".")[0] for m in out["s"]]
    assert jobs.count("1") == 11 and jobs.count("2") == 1


def test_the_accountant_keeps_its_records_in_its_file(tmp_path):
    acct = Accountant("neg", tmp_path)
    acct.update({"a@h": [{"Name": "slot1_1@h", "Weight": 2, "StartTime": 5}]}, 1000.0)
    acct.command("setFactor", "a@h", 3000.0, now=1000.0)
    acct.command("setCeiling", "b@h", 4, now=1000.0)
    acct.command("setUsage", "b@h", 7200.0, now=1000.0)
    text = (tmp_path / "Accountantnew.log").read_text()
    assert "103 Customer.a@h PriorityFactor 3000.0" in text
    again = Accountant("neg", tmp_path)
    assert again.customers["a@h"].factor == 3000.0
    assert again.customers["b@h"].ceiling == 4 and again.customers["b@h"].usage == 7200.0
    assert again.last == 1000.0
    with pytest.raises(HTCondorValueError):
        again.command("setFactor", "a@h", 0.5)
    with pytest.raises(HTCondorValueError):
        again.command("setPriority", "nobody", 1.0)
    again.command("deleteUser", "a@h")
    assert "a@h" not in Accountant("neg", tmp_path).customers
    (tmp_path / "Accountantnew.log").write_bytes(b"103 Customer.x@h Priority \xff\xfe\ngarbage line\n")
    assert Accountant("neg", tmp_path).customers["x@h"].real == 0.5     # damaged value skipped


def test_priorities_and_resources_are_numbered_ads():
    acct = Accountant("neg")
    acct.update({"a@h": [{"Name": "slot1_1@h", "Weight": 1, "StartTime": 50}]}, 100.0)
    numbered = acct.priorities()
    assert numbered["NumSubmittors"] == 2 and numbered["Name1"] == "<none>" and numbered["Name2"] == "a@h"
    assert numbered["Priority2"] == 500.0 and numbered["ResourcesUsed2"] == 1
    assert acct.resources("a@h") == {"Name1": "slot1_1@h", "StartTime1": 50}


def test_condor_userprio_table_is_htcondors():
    now = 1_764_318_600
    ads = [{"Name": "<none>", "IsAccountingGroup": True, "Priority": 500.0, "PriorityFactor": 1000.0,
            "LastUsageTime": now, "LastUpdate": now},
           {"Name": "b.me@host", "Priority": 1000.5, "PriorityFactor": 2000.0, "ResourcesUsed": 4,
            "WeightedResourcesUsed": 4.0, "WeightedAccumulatedUsage": 360.0, "BeginUsageTime": now - 100,
            "LastUsageTime": now - 4000, "Ceiling": 6, "Floor": 0, "LastUpdate": now},
           {"Name": "a.me@host", "Priority": 501.25, "PriorityFactor": 1000.0, "ResourcesUsed": 8,
            "WeightedResourcesUsed": 8.0, "WeightedAccumulatedUsage": 7200.0, "BeginUsageTime": now - 100,
            "LastUsageTime": now, "Ceiling": -1, "Floor": 0, "LastUpdate": now},
           {"Name": "idle.me@host", "Priority": 500.0, "PriorityFactor": 1000.0, "LastUsageTime": 0,
            "LastUpdate": now}]
    lines = render(ads, now=now).splitlines()
    assert lines[1] == ("                    Effective   Priority  Wghted Total Usage  Time Since "
                        "Submitter Submitter")
    assert lines[2] == ("User Name            Priority    Factor   In Use (wghted-hrs) Last Usage   "
                        "Floor    Ceiling ")
    assert lines[3] == "-" * 18 + " " + " ".join("-" * w for w in (12, 9, 6, 12, 10, 9, 9))
    # best priority first; the group and a user idle for over a day are not shown
    assert lines[4] == "a.me@host" + " " * 9 + "       501.25   1000.00      8         2.00      <now>" + " " * 20
    assert lines[5].startswith("b.me@host") and lines[5].endswith("   0+01:06                6.00")
    assert lines[7].startswith("Number of users: 2") and "    12         2.10    1+00:00" in lines[7]
    assert pad("ab", 5, how="center") == " ab  " and number(6, 0, 12.4) == "    12"
    assert format_time(90061) == "  1+01:01:01" and format_time(-1) == "[?????]"
    assert len(render(ads, min_last=-1, now=now).splitlines()) == 9     # -allusers: idle one too


def test_a_ceiling_holds_in_every_spin_of_the_pie():
    slots = [_slot(12)]
    capped = Customer("b@h", 1000.0)
    capped.ceiling = 2
    customers = {"b@h": capped}
    free = [{"Cpus": 12, "Memory": 10**6, "Disk": 10**9}]
    out = spin_the_pie(customers, {"b@h": [("s", _jobs(2, 50))]}, slots, free, 12)
    assert len(out["s"]) == 2
    capped.weighted_used = 2
    free = [{"Cpus": 10, "Memory": 10**6, "Disk": 10**9}]
    assert spin_the_pie(customers, {"b@h": [("s", _jobs(2, 50))]}, slots, free, 12) == {}


def test_a_lone_submitter_over_its_share_still_gets_the_idle_cores():
    """Whatever the accountant thinks it holds (a match not yet seen as a slot), cores
    nobody else wants go to it in the next spin: fair share never leaves a pool idle."""
    slots = [_slot(4)]
    busy = Customer("a@h", 1000.0)
    busy.weighted_used = 6
    free = [{"Cpus": 4, "Memory": 10**6, "Disk": 10**9}]
    out = spin_the_pie({"a@h": busy}, {"a@h": [("s", _jobs(1, 10))]}, slots, free, 4)
    assert len(out["s"]) == 4


def test_a_network_user_reaches_only_its_own_credentials():
    from jobledger.daemons.credd import whose
    from jobledger.daemons.authz import command_level
    assert whose({"uid": 0, "user": "alice@pool"}, None, "h") == "alice@pool"
    assert whose({"uid": 0, "user": "alice@pool"}, "alice@h", "h") == "alice@h"
    with pytest.raises(HTCondorException, match="may not reach"):
        whose({"uid": 0, "user": "alice@pool"}, "bob@h", "h")
    assert whose({"uid": 0, "user": "root@pool", "super": True}, "bob@h", "h") == "bob@h"
    assert command_level("negotiator", "accountant") == "ADMINISTRATOR"
    assert command_level("negotiator", "priorities") == "READ"
    assert command_level("startd", "drain") == "ADMINISTRATOR"
    assert command_level("credd", "store_cred") == "WRITE"
