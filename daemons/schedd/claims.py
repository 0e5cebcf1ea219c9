"""``Schedd.get_claims``: the slots this schedd holds claims on, as HTCondor's schedd answers
QUERY_STARTD_ADS with its match records' slot ads.

A claim here is a running job's (its ad's ``ClaimId``, ``RemoteSlot`` and ``StartdIpAddr``,
written with its EXECUTE).  Each startd holding one is asked once for its slot ads; a claim's
ad is its dynamic slot's, which names the job (``JobId``) and its owner (``RemoteOwner``).
The claim id itself is a capability and is never in the answer (HTCondor's match ad does
not carry it either).  A startd that does not answer leaves, for each of its claims, the
ad the schedd knows of it: the slot's name, the startd's address and the job.
"""

from __future__ import annotations

from jobledger.eventcore import adwire
from jobledger.eventcore.errors import HTCondorException

SLOTS_TIMEOUT = 5.0


def held_claims(running: list) -> dict[str, list[tuple[str, dict]]]:
    """startd address -> [(slot name, job ad)] of every running job's claim."""
    out: dict[str, list[tuple[str, dict]]] = {}
    for _job, ad in running:
        startd, slot = adwire.string_literal(ad, "StartdIpAddr"), adwire.string_literal(ad, "RemoteSlot")
        if startd and slot and adwire.string_literal(ad, "ClaimId"):
            out.setdefault(startd, []).append((slot, ad))
    return out


def _known(startd: str, slot: str, ad: dict) -> dict[str, str]:
    """What the schedd itself knows of a claim whose startd did not answer."""
    job = f"{ad['ClusterId']}.{ad['ProcId']}"
    owner = ad.get("User") or ad.get("Owner") or '""'
    return {"MyType": '"Machine"', "Name": adwire.quote(slot), "StartdIpAddr": adwire.quote(startd),
            "MyAddress": adwire.quote(startd), "State": '"Claimed"', "JobId": adwire.quote(job),
            "RemoteOwner": owner, "RemoteUser": owner}


def claimed_slot_ads(running: list, startd_slots, constraint: str | None, projection: list | None,
                     log=None, ocus: list | None = None) -> list[dict[str, str]]:
    """The claimed slots' ads (``startd_slots(address)``: that startd's slot ads), those
    ``constraint`` is true of, cut to ``projection`` (all attributes when empty).  ``ocus``:
    the OCU claims held with no job, ``(startd, slot, ad known of it)`` (a claim is a match
    record in HTCondor's schedd, with or without a job: ``daemons.schedd.ocus``)."""
    if constraint is not None:
        adwire.check_constraint(constraint)
    found: list[dict[str, str]] = []
    held = held_claims(running)
    for startd, slot, known in ocus or []:
        if not any(name == slot for name, _ in held.get(startd, [])):   # (a job on it names it already)
            held.setdefault(startd, []).append((slot, {"_known": known}))
    for startd, claims in sorted(held.items()):
        try:
            slots = {ad["Name"]: adwire.exprs_of(ad) for ad in startd_slots(startd)
                     if isinstance(ad, dict) and isinstance(ad.get("Name"), str)}
        except (HTCondorException, OSError) as exc:
            if log is not None:
                log.info("get_claims: startd %s did not answer: %s", startd, exc)
            slots = {}
        for slot, job_ad in claims:
            found.append(slots.get(slot) or job_ad.get("_known") or _known(startd, slot, job_ad))
    found = [ad for ad in found if adwire.matches(constraint, ad)]
    if projection:
        keep = {name.lower() for name in projection}
        found = [{k: v for k, v in ad.items() if k.lower() in keep} for ad in found]
    return found
