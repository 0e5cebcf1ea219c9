"""Matchmaking (daemons/negotiator.plan_matches): requirements both ways, rank, resources."""

from __future__ import annotations

from jobledger.eventcore.adwire import exprs_of
from jobledger.daemons.negotiator import plan_matches, request_of


def slot(name: str, cpus: int, memory: int = 1000, start: str = "true", **extra) -> tuple[str, dict]:
    ad = {"Name": name, "Cpus": cpus, "Memory": memory, "Disk": 10**6, "Arch": "X86_64",
          "Start": {"expr": start},
          "Requirements": {"expr": "START && TARGET.RequestCpus <= MY.Cpus && "
                                   "TARGET.RequestMemory <= MY.Memory"}}
    ad.update(extra)
    return (f"<addr-{name}>", exprs_of(ad))


def job(proc: int, cpus: int = 1, memory: int = 100, requirements: str = "true", rank: str = "0",
        cluster: int = 1) -> dict:
    return exprs_of({"ClusterId": cluster, "ProcId": proc, "RequestCpus": cpus, "RequestMemory": memory,
                     "RequestDisk": 10, "Requirements": {"expr": requirements}, "Rank": {"expr": rank},
                     "Owner": "u"})


def test_resources_are_counted_across_a_cycle():
    matches = plan_matches([job(p) for p in range(5)], [slot("a", 2)])
    assert [m["job"] for m in matches] == ["1.0", "1.1"]
    assert all(m["request"] == {"Cpus": 1, "Memory": 100, "Disk": 10} for m in matches)


def test_requirements_both_ways():
    slots = [slot("a", 4, start="TARGET.Owner == \"someone-else\""), slot("b", 4, Arch="ARM")]
    assert plan_matches([job(0)], slots[:1]) == []          # the slot's START refuses the job
    assert [m["slot"] for m in plan_matches([job(0, requirements='TARGET.Arch == "ARM"')],
                                            slots[1:])] == ["b"]
    assert plan_matches([job(0, requirements='TARGET.Arch == "X86_64"')], slots[1:]) == []


def test_rank_picks_the_preferred_slot():
    slots = [slot("small", 2, memory=500), slot("big", 2, memory=4000)]
    best = plan_matches([job(0, rank="TARGET.Memory")], slots)
    assert best[0]["slot"] == "big" and best[0]["startd"] == "<addr-big>"
    worst = plan_matches([job(0, rank="-TARGET.Memory")], slots)
    assert worst[0]["slot"] == "small"


def test_too_big_a_request_never_matches():
    assert plan_matches([job(0, cpus=3), job(1, memory=5000)], [slot("a", 2)]) == []


def test_request_of_defaults_and_rounding():
    assert request_of({"RequestCpus": "2", "RequestMemory": "10.2"}) == {"Cpus": 2, "Memory": 11, "Disk": 0}
    assert request_of({}) == {"Cpus": 1, "Memory": 0, "Disk": 0}
