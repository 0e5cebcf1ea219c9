"""The startd's side of an owner claimed unit (OCU, ``eventcore.projections.ocus``).

HTCondor's startd marks a claim made for a request with ``IsOCUHolder`` as an OCU claim:
its slot says ``OCU = true`` and ``OCUName``.  Here such a claim (``hold_claim``) is a
dynamic slot with its resources and no starter: Claimed/Idle, kept however long it stays
idle, kept across a startd restart (the state file), until ``release_claim``.  A job put
on it (``activate`` with ``within``) runs in that slot under a claim of its own with no
resources (they stay the OCU's): the slot is Claimed/Busy with the job's id while it
runs, and Idle again once its starter is gone.  Releasing an OCU's claim kills the job
on it, as HTCondor's startd does when the schedd releases a claim.  A draining machine
releases its idle OCU claims (a job on one leaves when the drain says); the schedd
sees the claim gone and asks for another, which a draining slot does not match.
"""

from __future__ import annotations

import os
import time

from jobledger.daemons.starter import SIGNALS
from jobledger.eventcore.errors import HTCondorException

__all__ = ["hold_claim", "release_claim", "release_idle_ocus", "within_ocu", "ocu_slot_attrs"]


def _resources(request: dict) -> dict:
    return {"Cpus": int(request.get("Cpus", 1)), "Memory": int(request.get("Memory", 0)),
            "Disk": int(request.get("Disk", 0))}


def _may_add(startd, claim: str) -> None:
    """Refuse a new ``claim`` while the startd stops, or when it is active already (under its lock)."""
    if startd.stopping.is_set():
        raise HTCondorException("the startd is shutting down")
    if claim in startd.claims:
        raise HTCondorException(f"claim {claim} is already active")


def hold_claim(startd, claim: str, request: dict, owner: str, user: str, ocu_id: int, name: str,
               schedd: str) -> dict:
    """Claim a dynamic slot of ``request``'s size for the OCU ``ocu_id`` of ``owner``
    (held by ``schedd``), with no job: ``{"slot"}``."""
    wanted = _resources(request)
    with startd._lock:
        _may_add(startd, claim)
        if startd.drain is not None:
            raise HTCondorException(f"{startd.slot_name} is draining: OCU claim {claim} not made")
        free = startd.free()
        short = [key for key, amount in wanted.items() if amount > free[key]]
        if short:
            raise HTCondorException(f"not enough {', '.join(short)} left for OCU claim {claim}")
        number = next(startd._numbers)
        slot = {"name": f"slot1_{number}@{startd.host}", "resources": wanted, "job": None,
                "owner": owner, "group": None, "user": user, "retirement": None, "pid": 0,
                "start": None, "since": int(time.time()), "claim": claim,
                "ocu": {"id": int(ocu_id), "name": str(name), "schedd": str(schedd)}}
        startd.claims[claim] = slot
        startd._save_state()
    startd.log.info("OCU %s (%s) of %s: claim %s holds %s", ocu_id, name, owner, claim, slot["name"])
    startd._changed.set()
    return {"slot": slot["name"]}


def release_claim(startd, claim: str) -> bool:
    """Release an OCU's claim: the job on it (if any) is killed and the slot freed.
    False when no such OCU claim is held."""
    with startd._lock:
        slot = startd.claims.get(claim)
        if slot is None or not slot.get("ocu"):
            return False
        jobs = [s for s in startd.claims.values() if s.get("within") == claim]
        del startd.claims[claim]
        startd._save_state()
    for job in jobs:
        if job.get("pid"):
            try:
                os.kill(job["pid"], SIGNALS["kill"])
            except ProcessLookupError:
                pass
    startd.log.info("OCU claim %s released (%s)", claim, slot["ocu"].get("name"))
    startd._slot_freed()
    return True


def release_idle_ocus(startd) -> int:
    """While the machine drains: the OCU claims with no job on them are released (a job
    on one leaves as the drain says, and its claim goes once it is idle).  How many."""
    with startd._lock:
        idle = [claim for claim, slot in startd.claims.items() if slot.get("ocu")
                and not any(s.get("within") == claim for s in startd.claims.values())]
    return sum(release_claim(startd, claim) for claim in idle)


def within_ocu(startd, claim: str, job: dict, request: dict, ocu_claim: str) -> dict:
    """The claim entry of ``job`` run on the OCU claim ``ocu_claim`` (the caller launches
    its starter): refused when the OCU is not held here, already runs a job, or is too
    small for the job's request."""
    wanted = _resources(request)
    with startd._lock:
        _may_add(startd, claim)
        ocu = startd.claims.get(ocu_claim)
        if ocu is None or not ocu.get("ocu"):
            raise HTCondorException(f"no OCU claim {ocu_claim} here")
        if any(s.get("within") == ocu_claim for s in startd.claims.values()):
            raise HTCondorException(f"OCU claim {ocu_claim} already runs a job")
        short = [key for key, amount in wanted.items() if amount > ocu["resources"].get(key, 0)]
        if short:
            raise HTCondorException(f"the OCU's slot has not enough {', '.join(short)} for claim {claim}")
        slot = {"name": ocu["name"], "resources": {key: 0 for key in ocu["resources"]},
                "job": f"{job.get('ClusterId')}.{job.get('ProcId')}", "owner": job.get("Owner"),
                "group": job.get("AccountingGroup"), "user": job.get("User") or job.get("Owner"),
                "retirement": job.get("MaxJobRetirementTime"), "pid": 0, "start": None,
                "since": int(time.time()), "within": ocu_claim}
        startd.job_starts.add(time.time())
        startd.claims[claim] = slot
    return slot


def ocu_slot_attrs(slot: dict, running: dict | None) -> dict:
    """An OCU claim's slot attributes: ``OCU``, ``OCUName``, and Busy with the job on it
    (Idle, no ``JobId``, when none runs)."""
    attrs = {"OCU": True, "OCUName": slot["ocu"].get("name", "")}
    if running is None:
        attrs.update(Activity="Idle", JobId=None)     # (None: left out of the ad)
    else:
        attrs.update(Activity="Busy", JobId=running["job"], EnteredCurrentActivity=running["since"])
    return attrs
