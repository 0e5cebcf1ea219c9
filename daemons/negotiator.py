"""condor_negotiator's job: match idle jobs to machine resources.

A cycle runs at once when poked (``reschedule``: after a submit, a release,
a freed slot) and otherwise every NEGOTIATOR_INTERVAL seconds.  One cycle:

1. ask the startds (found through the collector) for their slots with the
   resources free *now*, and the schedds for idle jobs (at most as many as
   free cores could take);
2. group jobs by their matching attributes (an auto-cluster), test each
   group once against every partitionable slot -- Requirements of both sides
   (the slot's ``START && WithinResourceLimits`` sees the job's requests) --
   and order the matching slots by the job's Rank, then the slot's;
3. give each job of a group the best slot that still has its RequestCpus,
   RequestMemory, RequestDisk free (the cycle's own bookkeeping), and hand
   the matches to the schedd, which claims and starts them.
"""

from __future__ import annotations

import threading
import time

from jobledger.daemons import adwire, ipc
from jobledger.daemons.accounting import Accountant
from jobledger.daemons.daemon import Daemon, main_for
from jobledger.eventcore.enums import AdType
from jobledger.eventcore.errors import HTCondorException

GROUP_ATTRS = ("Requirements", "Rank", "RequestCpus", "RequestMemory", "RequestDisk", "Owner",
               "JobUniverse")
RESOURCES = (("Cpus", "RequestCpus"), ("Memory", "RequestMemory"), ("Disk", "RequestDisk"))
LOCATE_CACHE = 5.0  # seconds a located startd/schedd address is reused


def request_of(job: dict) -> dict:
    """The job's resource requests as numbers (Cpus 1, Memory/Disk 0 when not numbers)."""
    out = {}
    for slot_attr, job_attr in RESOURCES:
        value = adwire.evaluate(job, job_attr) if job_attr in job else None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            value = 1 if slot_attr == "Cpus" else 0
        out[slot_attr] = int(value + 0.999999) if isinstance(value, float) else int(value)
    return out


def plan_matches(jobs: list[dict], slots: list[tuple[str, dict]]) -> list[dict]:
    """Matches of ``jobs`` (expr-text ads) to partitionable ``slots`` ((startd address, ad))."""
    free = [{name: adwire.literal(ad.get(name, "0")) for name, _ in RESOURCES} for _, ad in slots]
    groups: dict[tuple, list[dict]] = {}
    for job in jobs:
        groups.setdefault(tuple(job.get(a) for a in GROUP_ATTRS), []).append(job)
    ordered = sorted(groups.values(), key=lambda g: (-_prio(g[0]), _job_key(g[0])))
    matches = []
    for group in ordered:
        request = request_of(group[0])
        probe = dict(group[0])
        for slot_attr, job_attr in RESOURCES:
            probe[job_attr] = str(request[slot_attr])
        offered = []
        for index, (_, slot) in enumerate(slots):
            # Test the kind of job against the slot as if it had room (the room is counted below).
            offer = dict(slot)
            offer.update({name: str(max(free[index][name], request[name])) for name, _ in RESOURCES})
            offered.append(offer)
        ranked = adwire.match_ranked(probe, offered)
        if not ranked:
            continue
        # Best first: the job's Rank of the slot, then the slot's Rank of the job.
        candidates = [index for index, _, _ in sorted(ranked, key=lambda r: (-r[1], -r[2], r[0]))]
        for job in sorted(group, key=_job_key):
            for index in candidates:
                if all(free[index][name] >= request[name] for name, _ in RESOURCES):
                    for name, _ in RESOURCES:
                        free[index][name] -= request[name]
                    matches.append({"job": f"{job['ClusterId']}.{job['ProcId']}",
                                    "startd": slots[index][0], "request": request,
                                    "slot": adwire.literal(slots[index][1].get("Name", '""'))})
                    break
    return matches


def _prio(job: dict) -> int:
    value = adwire.evaluate(job, "JobPrio") if "JobPrio" in job else 0
    return value if isinstance(value, int) else 0


def _job_key(job: dict) -> tuple:
    return (int(job.get("ClusterId", 0)), int(job.get("ProcId", 0)))


class Negotiator(Daemon):
    name = "negotiator"
    log_name = "NegotiatorLog"

    def __init__(self, config_file: str | None = None):
        super().__init__(config_file)
        self._wake = threading.Event()
        self._where: dict = {}
        self.cycles = 0
        self.accountant = Accountant(f"{self.host}", self.config_float("DEFAULT_PRIO_FACTOR", 1000.0),
                                     self.config_float("PRIORITY_HALFLIFE", 86400.0))

    def handlers(self) -> dict:
        handlers = super().handlers()
        handlers["reschedule"] = lambda peer: self._wake.set()
        handlers["cycles"] = lambda peer: self.cycles
        return handlers

    def started(self) -> None:
        super().started()
        self.every(self.config_float("NEGOTIATOR_INTERVAL", 60), self.cycle, name="negotiate",
                   wake=self._wake)

    def ads(self) -> list[dict]:
        ad = self.common_ad("Negotiator")
        ad["NegotiatorIpAddr"] = ad["MyAddress"]
        try:
            submitters = ipc.call(self.collector_address, "query", timeout=5,
                                  ad_type=int(AdType.Submitter),
                                  projection=["Name", "RunningJobs", "WeightedRunningJobs"])
        except HTCondorException:
            submitters = None
        if submitters is not None:
            self.accountant.update([{k: adwire.evaluate(s, k) for k in s}
                                    for s in submitters], time.time())
        return [ad] + self.accountant.ads()

    def _located(self, ad_type: AdType) -> list[dict]:
        """Daemons of a type, from the collector; remembered for LOCATE_CACHE seconds."""
        now = time.monotonic()
        cached = self._where.get(ad_type)
        if cached is not None and now - cached[0] < LOCATE_CACHE:
            return cached[1]
        try:
            found = ipc.call(self.collector_address, "query", timeout=5, ad_type=int(ad_type),
                             projection=["MyAddress", "Name", "SlotType"])
        except HTCondorException:
            return []
        if found:
            self._where[ad_type] = (now, found)
        return found

    def cycle(self) -> None:
        self.cycles += 1
        slots = []
        for startd in {adwire.literal(ad["MyAddress"]) for ad in self._located(AdType.Startd)}:
            try:
                ads = ipc.call(startd, "slots", timeout=5)
            except HTCondorException:
                continue
            slots += [(startd, adwire.exprs_of(ad)) for ad in ads if ad.get("PartitionableSlot")]
        if not slots:
            return
        free_cpus = sum(adwire.literal(ad.get("Cpus", "0")) for _, ad in slots)
        if free_cpus <= 0:
            return
        for schedd in {adwire.literal(ad["MyAddress"]) for ad in self._located(AdType.Schedd)}:
            try:
                jobs = ipc.call(schedd, "idle_jobs", timeout=10, limit=max(free_cpus, 1) * 4)
                matches = plan_matches(jobs, slots)
                if matches:
                    ipc.call(schedd, "matches", timeout=10, matches=matches)
            except HTCondorException as exc:
                self.log.info("negotiation with %s failed: %s", schedd, exc)


if __name__ == "__main__":
    main_for(Negotiator)
