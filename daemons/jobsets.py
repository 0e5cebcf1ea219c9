"""Job sets (``USE_JOBSETS = true``): jobs that name a ``JobSetName`` belong to their
owner's set of that name; the schedd gives each set a ``JobSetId`` and keeps a JobSet
ad for it while any of its jobs is in the queue (HTCondor's schedd does the same; the
``htcondor jobset`` commands read them with ``QueryOpt.IncludeJobsetAds``).

A set's id is the cluster id of the first cluster submitted into it while none of
its jobs was queued; its ad counts the set's jobs by status, scheduler-universe
jobs (DAGMan) apart, as HTCondor's JobSet ads do.
"""

from __future__ import annotations

from jobledger.eventcore import adwire
from jobledger.eventcore.status import STATUS_NAMES

SCHEDULER_UNIVERSE = 7


def jobset_id(store, owner: str, name: str, cluster: int) -> int:
    """The id of ``owner``'s set ``name``: that of its queued jobs, else ``cluster``."""
    found = store.query(f"JobSetName == {adwire.quote(name)} && Owner == {adwire.quote(owner)} "
                        f"&& JobSetId isnt undefined", ["JobSetId"], 1)
    if found:
        value = adwire.evaluate(found[0], "JobSetId")
        if isinstance(value, int):
            return value
    return cluster


def jobset_ads(store) -> list[dict]:
    """One JobSet ad (expression text) per set with jobs in the queue."""
    sets: dict[int, dict] = {}
    for ad in store.query("JobSetId isnt undefined",
                          ["JobSetId", "JobSetName", "Owner", "User", "JobStatus", "JobUniverse"]):
        number = adwire.evaluate(ad, "JobSetId")
        if not isinstance(number, int):
            continue
        one = sets.setdefault(number, {"ad": ad, "counts": {}})
        scheduler = adwire.evaluate(ad, "JobUniverse") == SCHEDULER_UNIVERSE
        status = STATUS_NAMES.get(adwire.evaluate(ad, "JobStatus"), "Idle")
        key = "Scheduler" if scheduler else ""
        for name in (f"Num{key}Jobs", f"Num{key}{status}"):
            one["counts"][name] = one["counts"].get(name, 0) + 1
    out = []
    for number, one in sorted(sets.items()):
        first = one["ad"]
        ad = {"MyType": '"JobSet"', "TargetType": '""', "JobSetId": str(number),
              "JobSetName": first.get("JobSetName", '""'), "Owner": first.get("Owner", '""')}
        if "User" in first:
            ad["User"] = first["User"]
        for status in list(STATUS_NAMES.values()) + ["Jobs"]:
            for key in ("", "Scheduler"):
                ad[f"Num{key}{status}"] = str(one["counts"].get(f"Num{key}{status}", 0))
        out.append(ad)
    return out
