"""``Ocus``: the schedd's owner claimed units (htcondor2 25.x ``create_ocu``, ``query_ocu``,
``remove_ocu``; the rules are ``eventcore.projections.ocus``').

An OCU is journaled in its owner's User record (the ``ocus`` list, a ``userrec`` edit),
as HTCondor's schedd keeps it.  Its claim lives on the startd that holds it
(``daemons.startd_ocu``: the claim names the OCU and this schedd), not in the journal:
a schedd that starts asks the pool's startds for the OCU claims they hold for it before
it asks the negotiator for any, so a schedd killed and restarted keeps every OCU and
its claim, and the job running on it.  The claim table of an OCU:

=========  ==================================================  =======================
state      what                                                next
=========  ==================================================  =======================
unclaimed  idle demand of its owner's submitter (negotiator)   claiming (a match)
claiming   the startd is asked to hold the slot                idle, or unclaimed
idle       held, no job: never released for being idle         running
running    a job runs on it (the owner's, or a borrower's)     idle (the job's run ended)
=========  ==================================================  =======================

``remove_ocu`` takes it out of the record and releases its claim (the job on it, if
any, is killed by its startd and goes back to idle).  The counters (activations by the
owner and by borrowers, claimed and used seconds) are the schedd's, as HTCondor's, kept
since the schedd started.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

from jobledger.daemons.negotiator import request_of
from jobledger.eventcore import adwire
from jobledger.eventcore.accounting import submitter_of
from jobledger.eventcore.enums import JobAction
from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.ocus import (OCU_PROC, evictions, is_ocu_super, may_run, new_ocu,
                                                  ocus_of, ocus_text, owner_demand, query_ad, request_ad)
from jobledger.eventcore.projections.userrecs import new_ad, user_key
from jobledger.eventcore.records import UserRecord
from jobledger.eventcore.status import JobStatus

__all__ = ["Ocus", "DENIED"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

DENIED = "Permission denied: not an OCU super user"    # HTCondor's words
CANDIDATES = 20     # idle jobs looked at for an idle OCU claim, per pass
CHECK_HELD = 5.0    # seconds between asking the startds whether they still hold the OCU claims


class Ocus:
    """The OCUs of this schedd's User records, their claims and the jobs on them."""

    def __init__(self, store, userrecs, runs, matches, log, startd_call, startds: Callable[[], list],
                 schedd: str, next_id: Callable[[], int], vacate: Callable[[list], object],
                 super_users: Callable[[], str | None], want_cycle: Callable[[], None]):
        self.store, self.userrecs, self.runs, self.matches, self.log = store, userrecs, runs, matches, log
        self.startd_call, self.startds, self.schedd = startd_call, startds, schedd
        self.next_id, self.vacate, self.super_users = next_id, vacate, super_users
        self.want_cycle = want_cycle
        self.lock = threading.Lock()
        self.claims: dict[int, dict] = {}        # OCU id -> {"claim", "startd", "slot", "since"}
        self.claiming: set[int] = set()          # matched: the startd is being asked
        self.running: dict[int, tuple[JobId, str, bool]] = {}   # OCU id -> (job, its claim, borrowed)
        self.stats: dict[int, dict[str, int]] = {}
        self.evicted: set[str] = set()           # borrowers' claims already vacated (once each)
        self.adopted = False                     # the startds' OCU claims looked up once
        self._checked = 0.0                      # when the held claims were last asked about
        self._told = False                       # (the first failed look-up is logged)
        # ((journal head, domain), submitter -> [OCUWanted jobs, those running]) as last counted
        self._wanted: tuple[tuple[int, str], dict[str, list[int]]] = ((-1, ""), {})

    # -- the records -----------------------------------------------------------------
    def ocus(self) -> dict[int, tuple[str, dict]]:
        """OCU id -> (the User record holding it, its ad)."""
        out: dict[int, tuple[str, dict]] = {}
        with self.userrecs.lock:
            records = dict(self.userrecs.fold.records["user"])
        for user, ad in records.items():
            for ocu in ocus_of(ad):
                try:
                    out[int(ocu["OCUId"])] = (user, ocu)
                except (KeyError, ValueError):
                    continue
        return out

    def _write(self, user: str, ocus: list, create: bool, by: str | None) -> None:
        """Journal ``user``'s record with ``ocus`` as its list (made when it has none)."""
        values = {"ocus": ocus_text(ocus)} if ocus else {}
        record = UserRecord("user", user, "add" if create else "edit",
                            {**new_ad("user", user, True), **values} if create else values,
                            () if ocus or create else ("ocus",), by=by)
        with self.userrecs.lock:
            self.store.append([record])
            self.userrecs.fold.apply_record(record)

    # -- the commands ------------------------------------------------------------------
    def create(self, identity: str | None, queue_super: bool, request: dict) -> dict:
        """CREATE_OCU_FOR_USERREC: the result ad (Result 0, OCUId, OCUName; or -1 and
        ErrorString)."""
        if not is_ocu_super(identity, self.super_users(), queue_super):
            return {"Result": "-1", "ErrorString": adwire.quote(DENIED)}
        if not isinstance(request, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in request.items()):
            raise HTCondorException("create_ocu: the request must be a ClassAd")
        try:
            adwire.to_classad(request)      # every attribute a name, every value an expression
        except Exception as exc:  # noqa: BLE001 - the engine's parse errors
            return {"Result": "-1", "ErrorString": adwire.quote(f"invalid OCU request ad: {exc}")}
        if any(not _NAME.match(name) or "\n" in expr for name, expr in request.items()):
            return {"Result": "-1", "ErrorString": adwire.quote("invalid OCU request ad: bad attribute")}
        owner = next((adwire.evaluate(request, k) for k in request if k.lower() == "owner"), None)
        if not isinstance(owner, str) or not owner:
            return {"Result": "-1", "ErrorString": adwire.quote("Missing required attribute: Owner")}
        user = user_key(owner, self.userrecs.domain)
        with self.userrecs.lock:
            record = self.userrecs.fold.records["user"].get(user)
        has_jobs = user in self.userrecs.live()
        if record is None and not has_jobs:
            return {"Result": "-1", "ErrorString": adwire.quote(f"Owner not found: {owner}")}
        with self.lock:
            ocu_id = max([self.next_id(), *[i + 1 for i in self.ocus()]])
            ocu = new_ocu(request, ocu_id)
            self._write(user, ocus_of(record) + [ocu], record is None, identity)
        self.log.info("OCU %s (%s) created for %s", ocu_id, ocu["OCUName"], user)
        self.want_cycle()
        return {"OCUId": str(ocu_id), "Result": "0", "OCUName": ocu["OCUName"]}

    def remove(self, identity: str | None, queue_super: bool, ocu_id) -> dict:
        """REMOVE_OCU_FROM_USERREC: the OCU leaves its record and its claim is released.
        As HTCondor's schedd, Result is 0 whether or not the id named an OCU (OCUId is
        in the answer only when one went)."""
        if not is_ocu_super(identity, self.super_users(), queue_super):
            return {"Result": "-1", "ErrorString": adwire.quote(DENIED)}
        if isinstance(ocu_id, bool) or not isinstance(ocu_id, int):
            raise HTCondorException("remove_ocu needs an OCU id (an integer)")
        found = self.ocus().get(ocu_id)
        if found is None:
            return {"Result": "0"}
        user, _ = found
        with self.lock:
            with self.userrecs.lock:
                record = self.userrecs.fold.records["user"].get(user)
            kept = [o for o in ocus_of(record) if o.get("OCUId") != str(ocu_id)]
            self._write(user, kept, False, identity)
            held = self.claims.pop(ocu_id, None)
            self.running.pop(ocu_id, None)
            self.stats.pop(ocu_id, None)
        if held is not None:
            self._release(held)
        self.log.info("OCU %s removed", ocu_id)
        return {"OCUId": str(ocu_id), "Result": "0"}

    def _release(self, held: dict) -> None:
        try:
            self.startd_call("release_claim", address=held["startd"], claim=held["claim"])
        except HTCondorException as exc:
            self.log.info("OCU claim %s on %s not released: %s", held["claim"], held["startd"], exc)

    def query(self) -> list[dict]:
        """QUERY_OCU_FROM_USERREC: every OCU's ad with its OCUState and counters."""
        out = []
        with self.lock:
            for ocu_id, (_, ocu) in sorted(self.ocus().items()):
                state = ("running" if ocu_id in self.running else "idle") if ocu_id in self.claims \
                    else "unclaimed"
                stats = dict(self.stats.get(ocu_id, {}))
                held = self.claims.get(ocu_id)
                if held is not None and ocu_id not in self.running:
                    stats["OCUClaimedTime"] = stats.get("OCUClaimedTime", 0) + int(time.time() - held["since"])
                out.append(query_ad(ocu, state, stats))
        return out

    # -- the negotiator ------------------------------------------------------------------
    def requests(self, domain: str) -> dict[str, list[dict]]:
        """Submitter -> the requests of its owners' unclaimed OCUs (none until the startds
        were asked for the OCU claims they hold: no OCU is claimed twice)."""
        if not self.adopted:
            return {}
        out: dict[str, list[dict]] = {}
        with self.lock:
            for ocu_id, (user, ocu) in self.ocus().items():
                if ocu_id not in self.claims and ocu_id not in self.claiming:
                    out.setdefault(submitter_of(user.partition("@")[0], None, domain), []).append(request_ad(ocu))
        return out

    def matched(self, matches: list) -> list:
        """The negotiator's matches of OCU requests (``C.-99``): each claim is made on its
        startd in a worker; the others are returned for the jobs' path."""
        jobs = []
        for match in matches:
            cluster, _, proc = str(match.get("job", "")).partition(".")
            if proc != str(OCU_PROC):
                jobs.append(match)
                continue
            ocu_id = int(cluster)
            with self.lock:
                if ocu_id in self.claims or ocu_id in self.claiming:
                    continue
                self.claiming.add(ocu_id)
            self.matches.in_worker(self._claim, ocu_id, match)
        return jobs

    def starting(self, jobs: list) -> list[str]:
        with self.lock:
            return [job for job in jobs if job.endswith(f".{OCU_PROC}") and int(job.partition(".")[0]) in self.claiming]

    def _claim(self, ocu_id: int, match: dict) -> None:
        try:
            found = self.ocus().get(ocu_id)
            if found is None:
                return
            user, ocu = found
            claim = f"ocu-{ocu_id}-{time.time_ns()}"
            made = self.startd_call("hold_claim", address=match["startd"], claim=claim,
                                    request=match["request"], owner=user.partition("@")[0], user=user,
                                    ocu_id=ocu_id, name=adwire.evaluate(ocu, "OCUName"), schedd=self.schedd)
            with self.lock:
                gone = ocu_id not in self.ocus()
                if not gone:
                    self.claims[ocu_id] = {"claim": claim, "startd": match["startd"], "slot": made["slot"],
                                           "since": time.time()}
            if gone:    # removed meanwhile
                self._release({"claim": claim, "startd": match["startd"]})
            else:
                self.log.info("OCU %s claimed %s on %s", ocu_id, made["slot"], match["startd"])
        except Exception as exc:  # noqa: BLE001 - stays unclaimed: the next cycle matches it
            self.log.info("OCU %s: no claim made: %s", ocu_id, exc)
        finally:
            with self.lock:
                self.claiming.discard(ocu_id)

    # -- the claims ------------------------------------------------------------------------
    def adopt(self) -> None:
        """The OCU claims the pool's startds hold for this schedd (after a restart), and the
        jobs running on them; claims of OCUs no longer in any record, or held twice, released."""
        known = self.ocus()
        found: dict[int, dict] = {}
        extra: list[dict] = []
        running: dict[int, tuple[JobId, str, bool]] = {}
        startds = self.startds()
        if not startds:     # the collector knows no startd yet: none was asked, nothing offered
            raise HTCondorException("no startd located yet")
        for startd in startds:
            claims = self.startd_call("claims", address=startd)
            for claim, entry in claims.items():
                ocu = entry.get("ocu") if isinstance(entry, dict) else None
                if not isinstance(ocu, dict) or ocu.get("schedd") != self.schedd:
                    continue
                held = {"claim": claim, "startd": startd, "slot": entry.get("name"), "since": time.time()}
                ocu_id = int(ocu.get("id", -1))
                if ocu_id not in known or ocu_id in found:
                    extra.append(held)
                    continue
                found[ocu_id] = held
                for inner_claim, inner in claims.items():
                    if isinstance(inner, dict) and inner.get("within") == claim and inner.get("job"):
                        job = JobId.parse(inner["job"])
                        borrowed = adwire.string_literal(self.store.job_ad(job) or {}, "Owner") != \
                            entry.get("owner")
                        running[ocu_id] = (job, inner_claim, borrowed)
        with self.lock:
            self.claims.update(found)
            self.running.update(running)
            self.adopted = True
        for held in extra:
            self._release(held)
        if found:
            self.log.info("OCU claims found on the startds: %s", sorted(found))

    def tick(self) -> None:
        """Once a second: adopt the startds' claims (once), follow the jobs on the claims,
        put an idle job on each idle claim, evict borrowers an owner's job is waiting for."""
        if not self.adopted:
            try:
                self.adopt()
            except HTCondorException as exc:
                if not self._told:
                    self._told = True
                    self.log.info("OCU claims not looked up yet: %s", exc)
                return
        ocus = self.ocus()
        if not ocus:
            return
        if time.monotonic() - self._checked >= CHECK_HELD:
            self._checked = time.monotonic()
            self._check_held()
        self._follow()
        with self.lock:
            idle = [(i, dict(self.claims[i])) for i in sorted(self.claims) if i not in self.running and i in ocus]
        for ocu_id, held in idle:
            self._fill(ocu_id, ocus[ocu_id][1], held)
        self._evict(ocus)

    def _check_held(self) -> None:
        """Claims their startd no longer holds (released while it drained, a machine gone)
        leave their OCU unclaimed: its owner's demand again."""
        lost = False
        with self.lock:
            by_startd: dict[str, list[int]] = {}
            for ocu_id, held in self.claims.items():
                by_startd.setdefault(held["startd"], []).append(ocu_id)
        try:
            located = self.startds()
        except HTCondorException:
            located = []
        for startd in sorted(set(by_startd) | set(located)):
            ids = by_startd.get(startd, [])
            try:
                claims = self.startd_call("claims", address=startd)
            except HTCondorException:
                continue        # not answering now: asked again later
            self._release_strays(startd, claims)
            with self.lock:
                for ocu_id in ids:
                    mine = self.claims.get(ocu_id)
                    if mine is not None and mine["startd"] == startd and mine["claim"] not in claims:
                        del self.claims[ocu_id]
                        lost = True
                        self.log.info("OCU %s: its claim is gone from %s: unclaimed", ocu_id, startd)
        if lost:
            self.want_cycle()

    def _release_strays(self, startd: str, claims: dict) -> None:
        """OCU claims a startd holds for this schedd that no OCU has (a second claim made
        for one, one whose OCU was removed meanwhile): released."""
        with self.lock:
            mine = {held["claim"] for held in self.claims.values()}
            claiming = set(self.claiming)
        for claim, entry in claims.items():
            ocu = entry.get("ocu") if isinstance(entry, dict) else None
            if (isinstance(ocu, dict) and ocu.get("schedd") == self.schedd and claim not in mine
                    and ocu.get("id") not in claiming):
                self.log.info("OCU claim %s on %s belongs to no OCU: released", claim, startd)
                self._release({"claim": claim, "startd": startd})

    def _follow(self) -> None:
        """Runs that ended leave their OCU idle (their time counted)."""
        with self.lock:
            running = dict(self.running)
        for ocu_id, (job, claim, borrowed) in running.items():
            if self.runs.is_starting(claim):
                continue
            ad = self.store.job_ad(job)
            if ad is not None and self.runs.is_current(ad, claim):
                continue
            with self.lock:
                if self.running.get(ocu_id, (None, None))[1] != claim:
                    continue
                del self.running[ocu_id]
                self.evicted.discard(claim)
                stats = self.stats.setdefault(ocu_id, {})
                began = stats.get("OCUActivationStartTime", 0)
                if began:
                    used = "OCUBorrowerActivationTime" if borrowed else "OCUOwnerActivationTime"
                    stats[used] = stats.get(used, 0) + max(0, int(time.time()) - began)
                if ocu_id in self.claims:
                    self.claims[ocu_id]["since"] = time.time()

    def _fill(self, ocu_id: int, ocu: dict, held: dict) -> None:
        """An idle OCU claim: its owner's OCUWanted jobs first, then another owner's
        OCUWilling job (HTCondor's FindRunnableJob for an OCU claim)."""
        owner = adwire.string_literal(ocu, "Owner") or ""
        busy = self.runs.busy()
        slot_ad = None
        for borrowers, constraint in (
                (False, f"JobStatus == 1 && OCUWanted =?= true && Owner == {adwire.quote(owner)}"),
                (True, f"JobStatus == 1 && OCUWilling =?= true && OCUWanted =!= true && "
                       f"Owner != {adwire.quote(owner)}")):
            for ad in self.store.query(constraint, None, CANDIDATES + len(busy)):
                job = JobId(int(ad["ClusterId"]), int(ad["ProcId"]))
                if job in busy or not may_run(ad, ocu, borrowers) or not self.matches.may_start(ad):
                    continue
                if slot_ad is None:
                    slot_ad = self._slot_ad(held)
                    if slot_ad is None:
                        return
                if not adwire.symmetric_match(ad, slot_ad):
                    continue
                claim = self.runs.reserve(job)
                if claim is None:
                    continue
                with self.lock:
                    if ocu_id not in self.claims or ocu_id in self.running:
                        self.runs.started(job, claim)
                        return
                    self.running[ocu_id] = (job, claim, borrowers)
                    stats = self.stats.setdefault(ocu_id, {})
                    counter = "OCUBorrowerActivations" if borrowers else "OCUOwnerActivations"
                    stats[counter] = stats.get(counter, 0) + 1
                    stats["OCUActivationStartTime"] = int(time.time())
                    stats["OCUClaimedTime"] = stats.get("OCUClaimedTime", 0) + int(time.time() - held["since"])
                self.log.info("job %s runs on OCU %s (%s)", job, ocu_id, "borrowed" if borrowers else "its owner's")
                self.matches.start_on(job, claim, {"startd": held["startd"], "request": request_of(ad),
                                                   "within": held["claim"]})
                return

    def _slot_ad(self, held: dict) -> dict | None:
        """The OCU claim's slot ad, as its startd shows it (None: the startd did not answer)."""
        try:
            ads = self.startd_call("slots", address=held["startd"])
        except HTCondorException:
            return None
        for ad in ads:
            if isinstance(ad, dict) and ad.get("Name") == held["slot"]:
                return adwire.exprs_of(ad)
        with self.lock:      # the startd no longer holds it: unclaimed again
            for ocu_id, mine in list(self.claims.items()):
                if mine["claim"] == held["claim"]:
                    del self.claims[ocu_id]
                    self.log.info("OCU %s: its claim is gone from %s", ocu_id, held["startd"])
        return None

    def _evict(self, ocus: dict) -> None:
        """Jobs borrowing an owner's OCUs are vacated (fast) while that owner has fewer
        OCUWanted jobs running than idle and running (``owner_demand``: where this differs
        from HTCondor's count_jobs)."""
        with self.lock:
            borrowed: dict[str, list] = {}
            for ocu_id, (job, claim, by_other) in self.running.items():
                if by_other and ocu_id in ocus and claim not in self.evicted:
                    owner = adwire.string_literal(ocus[ocu_id][1], "Owner") or ""
                    borrowed.setdefault(owner, []).append(job)
        if not borrowed:
            return
        owners = " || ".join(f"Owner == {adwire.quote(owner)}" for owner in sorted(borrowed))
        wanted, running = owner_demand(self.store.query(f"OCUWanted =?= true && ({owners})",
                                                        ("Owner", "JobStatus", "OCUWanted")))
        jobs = evictions(wanted, running, borrowed)
        with self.lock:
            self.evicted.update(entry[1] for entry in self.running.values() if entry[0] in jobs)
        if jobs:
            self.log.info("evicting %s from borrowed OCU claims", ", ".join(map(str, jobs)))
            self.vacate([str(job) for job in jobs])

    def held(self) -> list[tuple[str, str, dict[str, str]]]:
        """The OCU claims held: (startd, slot, what the schedd knows of the slot) each."""
        with self.lock:
            claims = dict(self.claims)
        ocus = self.ocus()
        out = []
        for ocu_id, mine in sorted(claims.items()):
            user, ocu = ocus.get(ocu_id, ("", {}))
            out.append((mine["startd"], mine["slot"], {
                "MyType": '"Machine"', "Name": adwire.quote(mine["slot"]), "StartdIpAddr": adwire.quote(mine["startd"]),
                "MyAddress": adwire.quote(mine["startd"]), "State": '"Claimed"', "OCU": "true",
                "OCUName": ocu.get("OCUName", '""'), "RemoteOwner": adwire.quote(user), "RemoteUser": adwire.quote(user)}))
        return out

    def runs_on(self, claim: str) -> bool:
        """Is ``claim`` a job's run on an OCU's claim (whose next job this part chooses)?"""
        with self.lock:
            return any(entry[1] == claim for entry in self.running.values())

    # -- what the Submitter ads say ------------------------------------------------------
    def submitter_counts(self, domain: str) -> dict[str, dict[str, int]]:
        """Submitter -> OCUClaimsClaimed, OCUClaimsBorrowed and the unclaimed OCUs (idle demand),
        OCUWantedJobs (as HTCondor's count_jobs: every OCUWanted job in the queue, whatever its
        status) and OCURunningJobs (those running)."""
        out: dict[str, dict[str, int]] = {}

        def of(name: str) -> dict[str, int]:
            return out.setdefault(name, {"OCUClaimsClaimed": 0, "OCUClaimsBorrowed": 0, "Unclaimed": 0,
                                         "OCUWantedJobs": 0, "OCURunningJobs": 0})
        for name, (wanted, running) in self._wanted_jobs(domain).items():
            counts = of(name)
            counts["OCUWantedJobs"] += wanted
            counts["OCURunningJobs"] += running
        with self.lock:
            for ocu_id, (user, _) in self.ocus().items():
                counts = of(submitter_of(user.partition("@")[0], None, domain))
                if ocu_id in self.claims:
                    counts["OCUClaimsClaimed"] += 1
                    if self.running.get(ocu_id, (None, None, False))[2]:
                        counts["OCUClaimsBorrowed"] += 1
                else:
                    counts["Unclaimed"] += 1
        return out


    def _wanted_jobs(self, domain: str) -> dict[str, list[int]]:
        """Submitter -> [its OCUWanted jobs, those running]: the queue is read again only
        when the journal moved since the last count (a settled queue of 10^6 jobs is not
        read every UPDATE_INTERVAL for the Submitter ads)."""
        head = (self.store.head(), domain)   # read first: a commit during the read is counted next time
        seen, wanted = self._wanted
        if seen == head:
            return wanted
        wanted = {}
        for ad in self.store.query("OCUWanted =?= true", ("Owner", "AccountingGroup", "JobStatus")):
            counts = wanted.setdefault(submitter_of(adwire.string_literal(ad, "Owner") or "",
                                                    adwire.string_literal(ad, "AccountingGroup"),
                                                    domain), [0, 0])
            counts[0] += 1
            if int(ad.get("JobStatus", "1")) == int(JobStatus.RUNNING):
                counts[1] += 1
        self._wanted = (head, wanted)
        return wanted


def vacate_fast(actions) -> Callable[[list], object]:
    """Evicting a borrower: HTCondor's JA_VACATE_FAST_JOBS, by the schedd itself."""
    return lambda ids: actions.act("condor", int(JobAction.VacateFast), ids=ids,
                                   reason="evicted from a borrowed OCU claim")
