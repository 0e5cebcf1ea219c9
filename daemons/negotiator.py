"""condor_negotiator's job: match idle jobs to machine resources, fairly among submitters.

A cycle runs at once when poked (``reschedule``: after a submit, a release,
a freed slot) and otherwise every NEGOTIATOR_INTERVAL seconds.  One cycle:

1. ask the startds (found through the collector) for their slots: the
   partitionable slots with the resources free *now*, and the claimed dynamic
   slots, which tell the accountant (``daemons.accounting``) what each submitter
   holds; the accountant ages its records (priorities decay, usage accrues);
2. ask the schedds for idle jobs per submitter (at most as many as free cores
   could take);
3. spin the pie (``spin_the_pie``): each submitter, best effective priority
   first, may claim its share of the pool (``eventcore.accounting``) less what it
   holds, never past its ceiling; what is left goes round again;
4. within a submitter, group jobs by their matching attributes (an auto-cluster),
   test each group once against every partitionable slot -- Requirements of both
   sides (the slot's ``START && WithinResourceLimits`` sees the job's requests) --
   order the matching slots by the job's Rank, then the slot's, and give each job
   the best slot that still has its RequestCpus, RequestMemory, RequestDisk free
   (the cycle's own bookkeeping); the matches go to the schedds, which claim and
   start them.
"""

from __future__ import annotations

import os
import threading
import time

from jobledger.eventcore import adwire
from jobledger.daemons import ipc
from jobledger.daemons.accounting import Accountant
from jobledger.daemons.custom_resources import whole_units
from jobledger.eventcore.accounting import (DEFAULT_PRIO_FACTOR, NICE_USER_PRIO_FACTOR, first_limits,
                                            later_limits, order, submitter_of, whole)
from jobledger.daemons.daemon import Daemon, main_for
from jobledger.eventcore.enums import AdType
from jobledger.eventcore.errors import HTCondorException

GROUP_ATTRS = ("Requirements", "Rank", "RequestCpus", "RequestMemory", "RequestDisk", "RequestGPUs", "Owner",
               "JobUniverse")
RESOURCES = (("Cpus", "RequestCpus"), ("Memory", "RequestMemory"), ("Disk", "RequestDisk"))
BUILTIN = frozenset({"Cpus", "Memory", "Disk", "Swap"})
MAX_SPINS = 8       # rounds of the pie in one cycle
MATCH_PENDING = 10.0  # seconds a match counts as held before its claimed slot shows up


def request_of(job: dict) -> dict:
    """The job's resource requests as numbers (Cpus 1, Memory/Disk 0 when not numbers)."""
    out = {}
    for slot_attr, job_attr in RESOURCES:
        value = adwire.evaluate(job, job_attr) if job_attr in job else None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            value = 1 if slot_attr == "Cpus" else 0
        out[slot_attr] = whole_units(value)
    return out



def plan_matches(jobs: list[dict], slots: list[tuple[str, dict]], free: list[dict] | None = None,
                 cap: int | None = None) -> list[dict]:
    """Matches of ``jobs`` (expr-text ads) to partitionable ``slots`` ((startd address, ad)).

    ``free``: what each slot has left (``free_of(slots)``), used up by the matches made
    (shared by the calls of one cycle); ``cap``: at most this many cores matched."""
    free = free_of(slots) if free is None else free
    groups: dict[tuple, list[dict]] = {}
    for job in jobs:
        groups.setdefault(tuple(job.get(a) for a in GROUP_ATTRS), []).append(job)
    ordered = sorted(groups.values(), key=lambda g: (-_prio(g[0]), _job_key(g[0])))
    matches: list[dict] = []
    taken = 0
    custom = {tag for slot in free for tag in slot if tag not in BUILTIN}   # GPUs ... some slot offers
    for group in ordered:
        request = request_of(group[0])
        need = {**request, **_custom_request(group[0], custom)}
        if cap is not None and taken + request["Cpus"] > cap:
            continue
        candidates = _candidates(group[0], request, slots, free)
        for job in sorted(group, key=_job_key):
            if cap is not None and taken + request["Cpus"] > cap:
                break
            for index in candidates:
                if all(free[index].get(name, 0) >= amount for name, amount in need.items()):
                    for name, amount in need.items():
                        free[index][name] -= amount
                    taken += request["Cpus"]
                    matches.append({"job": f"{job['ClusterId']}.{job['ProcId']}",
                                    "startd": slots[index][0], "request": request,
                                    "slot": adwire.literal(slots[index][1].get("Name", '""'))})
                    break
    return matches


def free_of(slots: list[tuple[str, dict]]) -> list[dict]:
    """What each slot has free: its Cpus, Memory, Disk, and the count of each custom
    resource its MachineResources names (GPUs ...)."""
    out = []
    for _, ad in slots:
        free = {name: adwire.literal(ad.get(name, "0")) for name, _ in RESOURCES}
        names = _literal(ad.get("MachineResources"))
        for tag in names.split() if isinstance(names, str) else ():
            count = _literal(ad.get(tag))
            if tag not in BUILTIN and isinstance(count, int) and not isinstance(count, bool):
                free[tag] = count
        out.append(free)
    return out


def _literal(text: str | None):
    try:
        return adwire.literal(text) if text is not None else None
    except Exception:  # noqa: BLE001 - an expression: not a count we can use up
        return None


def _custom_request(job: dict, tags: set[str]) -> dict:
    """How much of each custom resource of ``tags`` the job asks for (``Request<tag>`` as
    a number; an expression or nothing asks for none)."""
    out = {}
    for tag in tags:
        value = _literal(job.get(f"Request{tag}"))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            out[tag] = whole_units(value)
    return out


def _candidates(job: dict, request: dict, slots: list[tuple[str, dict]], free: list[dict]) -> list[int]:
    """The slots the kind of ``job`` matches, best first: the job's Rank of the slot,
    then the slot's Rank of the job (tested as if each had room: room is counted apart)."""
    probe = dict(job)
    for slot_attr, job_attr in RESOURCES:
        probe[job_attr] = str(request[slot_attr])
    offered = []
    for index, (_, slot) in enumerate(slots):
        offer = dict(slot)
        offer.update({name: str(max(free[index][name], request[name])) for name, _ in RESOURCES})
        offered.append(offer)
    ranked = adwire.match_ranked(probe, offered)
    return [index for index, _, _ in sorted(ranked, key=lambda r: (-r[1], -r[2], r[0]))]


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
        self._accounting = threading.Lock()   # the accountant: cycles, ads and commands
        self.cycles = 0
        # matches not yet seen as claimed slots: job id -> (submitter, cores, until, schedd)
        # -- the accountant counts them as held (HTCondor's AddMatch), so the next cycle
        # does not give the same share again before the slots show up
        self._matched: dict[str, tuple[str, int, float, str]] = {}
        self._sending: set[str] = set()     # matched jobs whose schedd has not answered yet
        self._matched_lock = threading.Lock()
        self.accountant = Accountant(
            self.host, self.spool_dir, self.config_float("DEFAULT_PRIO_FACTOR", DEFAULT_PRIO_FACTOR),
            self.config_float("PRIORITY_HALFLIFE", 86400.0),
            self.config_float("NICE_USER_PRIO_FACTOR", NICE_USER_PRIO_FACTOR), self.log)

    def handlers(self) -> dict:
        handlers = super().handlers()
        handlers["reschedule"] = lambda peer: self._wake.set()
        handlers["cycles"] = lambda peer: self.cycles
        handlers["accountant"] = self._command
        handlers["priorities"] = lambda peer: self._read(self.accountant.priorities)
        handlers["accounting_ads"] = lambda peer: self._read(self.accountant.ads)
        handlers["resources"] = lambda peer, user: self._read(lambda: self.accountant.resources(user))
        return handlers

    def _read(self, what):
        with self._accounting:
            return what()

    def _command(self, peer, what: str, user: str | None = None, value=None) -> bool:
        """An administrator's change to the accountant; the Accounting ads go out at once."""
        if peer.get("uid") not in (0, os.getuid()):
            raise HTCondorException("only the pool's administrator may change user priorities")
        with self._accounting:
            self.accountant.command(what, user, value)
        self.log.info("accountant: %s %s %s", what, user or "", "" if value is None else value)
        threading.Thread(target=self.advertise, name="advertise-now", daemon=True).start()
        return True

    def started(self) -> None:
        super().started()
        self.every(self.config_float("NEGOTIATOR_INTERVAL", 60), self.cycle, name="negotiate",
                   wake=self._wake)

    def teardown(self) -> None:
        with self._accounting:
            self.accountant.save()

    def ads(self) -> list[dict]:
        ad = self.common_ad("Negotiator")
        ad["NegotiatorIpAddr"] = ad["MyAddress"]
        _, held = self._pool()
        try:   # every submitter the schedds announce has a record, whatever its jobs do
            submitters = ipc.call(self.collector_address, "query", timeout=5,
                                  ad_type=int(AdType.Submitter), projection=["Name"])
        except HTCondorException:
            submitters = []
        with self._accounting:
            for submitter in submitters:
                name = adwire.literal(submitter.get("Name", '""'))
                if isinstance(name, str) and "@" in name:
                    self.accountant.customer(name)
            self.accountant.update(held, time.time())
            return [ad] + self.accountant.ads()

    def _pool(self) -> tuple[list[tuple[str, dict]], dict[str, list[dict]]]:
        """The partitionable slots of every startd, and who holds its dynamic slots
        (submitter -> ``{"Name", "Weight", "StartTime"}``, the accountant's view)."""
        slots: list[tuple[str, dict]] = []
        held: dict[str, list[dict]] = {}
        seen: set[str] = set()
        asked, starting = self._still_starting()     # asked before the startds: see there
        for startd in self.located(AdType.Startd):
            try:
                ads = ipc.call(startd, "slots", timeout=5)
            except HTCondorException:
                continue
            for ad in ads:
                if ad.get("PartitionableSlot"):
                    slots.append((startd, adwire.exprs_of(ad)))
                elif ad.get("DynamicSlot") and ad.get("State") == "Claimed":
                    user = ad.get("AccountingGroup") or ad.get("RemoteUser") or ""
                    who = submitter_of(user, None, str(ad.get("UidDomain") or self.host))
                    held.setdefault(who, []).append({"Name": ad.get("Name"), "Weight": ad.get("Cpus", 1),
                                                     "StartTime": ad.get("EnteredCurrentState", 0)})
                    seen.add(str(ad.get("JobId")))
        now = time.monotonic()
        with self._matched_lock:
            for job, (who, cores, until, _) in list(self._matched.items()):
                if job in seen or until < now or (job in asked and job not in starting):
                    del self._matched[job]      # claimed (counted above), or never started
                else:
                    held.setdefault(who, []).append({"Name": f"<matched {job}>", "Weight": cores,
                                                     "StartTime": int(time.time()), "Pending": True})
        return slots, held

    def _still_starting(self) -> tuple[set[str], set[str]]:
        """The matched jobs asked about, and those their schedds are still starting
        (``starting``; a match made meanwhile, or still on its way to its schedd, is
        not asked about: the schedd would not know it yet).  A job no
        longer starting has its claim on a startd, which the startds, read after this,
        show -- under its id, or under the next job's if the claim was reused since (a
        short job): so a match is not counted twice, or until MATCH_PENDING, whatever
        became of its job.  A schedd that does not answer keeps its matches pending."""
        with self._matched_lock:
            by_schedd: dict[str, list[str]] = {}
            for job, (_, _, _, schedd) in self._matched.items():
                if job not in self._sending:
                    by_schedd.setdefault(schedd, []).append(job)
        asked: set[str] = set()
        out: set[str] = set()
        for schedd, jobs in by_schedd.items():
            asked.update(jobs)
            try:
                out.update(ipc.call(schedd, "starting", timeout=10, jobs=jobs))
            except HTCondorException:
                out.update(jobs)
        return asked, out

    def cycle(self) -> None:
        self.cycles += 1
        slots, held = self._pool()
        with self._accounting:
            self.accountant.update(held, time.time())
        if not slots:
            return
        free = free_of(slots)
        free_cpus = sum(f["Cpus"] for f in free)
        if free_cpus <= 0:
            return
        wanting: dict[str, list[tuple[str, list]]] = {}
        for schedd in self.located(AdType.Schedd):
            try:
                by_submitter = ipc.call(schedd, "idle_by_submitter", timeout=10, limit=max(free_cpus, 1) * 4)
            except HTCondorException as exc:
                self.log.info("negotiation with %s failed: %s", schedd, exc)
                continue
            for name, jobs in by_submitter.items():
                if jobs:
                    wanting.setdefault(name, []).append((schedd, jobs))
        if not wanting:
            return
        pool = sum(_number(ad.get("TotalSlotCpus", ad.get("Cpus", "0"))) for _, ad in slots)
        with self._accounting:
            for name in wanting:
                self.accountant.customer(name)
            customers = dict(self.accountant.customers)
        self._send(spin_the_pie(customers, wanting, slots, free, pool))

    def _send(self, matches: dict[str, list[dict]]) -> None:
        until = time.monotonic() + MATCH_PENDING
        for schedd, found in matches.items():
            jobs = {match["job"] for match in found}
            with self._matched_lock:
                for match in found:
                    self._matched[match["job"]] = (match["submitter"], match["request"]["Cpus"], until, schedd)
                self._sending |= jobs
            if found:
                try:
                    ipc.call(schedd, "matches", timeout=10, matches=found)
                except HTCondorException as exc:
                    self.log.info("negotiation with %s failed: %s", schedd, exc)
                finally:
                    with self._matched_lock:
                        self._sending -= jobs


def spin_the_pie(customers: dict, wanting: dict[str, list[tuple[str, list]]],
                 slots: list[tuple[str, dict]], free: list[dict], pool: float,
                 spins: int = MAX_SPINS) -> dict[str, list[dict]]:
    """One cycle's matches by schedd: the pool shared among the submitters ``wanting``
    (submitter -> [(schedd, its idle jobs)]) by their priorities (``eventcore.accounting``),
    best priority first; what a spin leaves goes round again to those that got their limit."""
    out: dict[str, list[dict]] = {}
    taken: dict[str, float] = {}
    left = dict(wanting)
    limits = first_limits(pool, customers, left)
    for spin in range(spins):
        progress = False
        for name in order(customers, left):
            cap = whole(limits.get(name, 0.0))
            if cap <= 0:
                continue
            got_all = True
            for index, (schedd, jobs) in enumerate(left[name]):
                found = plan_matches(jobs, slots, free, cap) if cap > 0 else []
                for match in found:
                    match["submitter"] = name
                cpus = sum(m["request"]["Cpus"] for m in found)
                cap -= cpus
                taken[name] = taken.get(name, 0.0) + cpus
                out.setdefault(schedd, []).extend(found)
                matched = {m["job"] for m in found}
                rest = [j for j in jobs if f"{j['ClusterId']}.{j['ProcId']}" not in matched]
                left[name][index] = (schedd, rest)
                progress = progress or bool(found)
                got_all = got_all and cap > 0
            if got_all:     # under its limit: nothing more of it matches this cycle
                left[name] = []
        left = {n: [(s, j) for s, j in v if j] for n, v in left.items()}
        left = {n: v for n, v in left.items() if v}
        room = sum(f["Cpus"] for f in free)
        if (not progress and spin > 0) or not left or room <= 0:
            break     # (the first spin may give nothing: those at their share get what is left)
        limits = later_limits(room, customers, left, taken)
        allowed = [n for n in order(customers, left) if limits[n] > 0]
        if allowed and all(whole(limits[n]) <= 0 for n in allowed):
            limits[allowed[0]] = 1.0     # fractions of a core each: the best gets one
    return out


def _number(text) -> float:
    value = adwire.literal(text) if isinstance(text, str) else text
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


if __name__ == "__main__":
    main_for(Negotiator)
