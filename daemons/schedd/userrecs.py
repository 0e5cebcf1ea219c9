"""``UserRecs``: the schedd's User and Project records (HTCondor's ``condor_qusers``,
``Schedd.queryUserAds``, ``addUserRec`` ...): commands -> ``userrec`` records -> journal,
folded in memory (``eventcore.projections.userrecs``) from the journal at start.

HTCondor's schedd registers every change (ENABLE_USERREC -- add is an enable that
creates --, DISABLE_USERREC, EDIT_USERREC, DELETE_USERREC) at ADMINISTRATOR and the
query (QUERY_USERREC_ADS) at READ (``daemons.authz``).  A disabled user's submit is
refused with HTCondor's words (``submit_refusal``); with ALLOW_SUBMIT_FROM_KNOWN_USERS_ONLY
so is a user with no record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from jobledger.daemons.storage.userrecs import userrec_payloads
from jobledger.eventcore import adwire
from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.projections.userrecs import (OPS, Command, UserRecFold, decide, new_ad, record_ad,
                                                      user_key)
from jobledger.eventcore.records import UserRecord
from jobledger.eventcore.status import JobStatus
from jobledger.daemons.storage.interfaces import UserRecLedger
from jobledger.daemons.schedd.usage import UsageStats

__all__ = ["UserRecs"]

_LIVE = {int(JobStatus.IDLE): "NumIdle", int(JobStatus.RUNNING): "NumRunning", int(JobStatus.HELD): "NumHeld",
         int(JobStatus.REMOVED): "NumRemoved", int(JobStatus.COMPLETED): "NumCompleted",
         int(JobStatus.SUSPENDED): "NumSuspended"}
MAX_TARGETS = 1_000_000     # HTCondor's schedd refuses a command naming more


class UserRecs:
    """The records, their commands, and the submit check."""

    def __init__(self, store: UserRecLedger, domain: str, known_only: bool = False):
        self.store = store
        self.domain = domain
        self.known_only = known_only
        self.lock = threading.Lock()
        self.fold = UserRecFold()
        self.usage: UsageStats | None = None    # the hourly and daily counters (daemons.schedd.usage)
        for payload in userrec_payloads(store):
            self.fold.apply(payload)

    # -- reading -------------------------------------------------------------------
    def live(self) -> dict[str, dict[str, int]]:
        """User -> the live job counts of the users with jobs in the queue."""
        return self._live()

    def _live(self) -> dict[str, dict[str, int]]:
        """User -> the live job counts of the users with jobs in the queue."""
        out: dict[str, dict[str, int]] = {}
        for (owner, status), number in self.store.owner_status_counts().items():
            if not owner:
                continue
            counts = out.setdefault(user_key(owner, self.domain), dict.fromkeys((*_LIVE.values(), "NumJobs"), 0))
            name = _LIVE.get(int(status))
            if name:
                counts[name] += number
            counts["NumJobs"] += number
        return out

    def _project_counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for ad in self.store.query("ProjectName isnt undefined", ("ProjectName", "JobStatus")):
            name = adwire.string_literal(ad, "ProjectName")
            if not name:
                continue
            counts = out.setdefault(name, dict.fromkeys((*_LIVE.values(), "NumJobs"), 0))
            key = _LIVE.get(int(ad.get("JobStatus", "1")))
            if key:
                counts[key] += 1
            counts["NumJobs"] += 1
        return out

    def query(self, constraint=None, projection=None, limit: int = -1, projects: bool = False) -> list[dict]:
        """The records (with their live counts) ``constraint`` is true of, as wire ads."""
        text = str(constraint).strip() if constraint is not None else ""
        _check_constraint(text)
        kind = "project" if projects else "user"
        live = self._project_counts() if projects else self._live()
        with self.lock:
            ads = self.fold.ads(kind, live)
        zero = dict.fromkeys((*_LIVE.values(), "NumJobs"), 0)
        stats = self._usage(kind)
        wanted = [p for p in (projection or []) if p]
        out: list[dict] = []
        for name, ad in sorted(ads.items()):
            if 0 <= limit <= len(out):
                break
            full = record_ad(ad, live.get(name, zero))
            full.update(stats.get("", {}))     # before the constraint: it may test them (as HTCondor)
            full.update(stats.get(name, {}))
            if text and not adwire.matches(text, full):
                continue
            if wanted:
                low = {p.lower() for p in wanted}
                full = {k: v for k, v in full.items() if k.lower() in low}
            out.append(full)
        return out

    def _usage(self, kind: str) -> dict[str, dict[str, str]]:
        """Record name -> its hourly and daily counters; "" -> what every record carries."""
        if self.usage is None:
            return {}
        out: dict[str, dict[str, str]] = {}
        for (of, name), attrs in self.usage.attributes().items():
            if of == kind:
                out[user_key(name, self.domain) if kind == "user" and name else name] = attrs
        return out

    # -- changing ------------------------------------------------------------------
    def act(self, op: str, peer_identity: str | None, projects: bool = False, names=None, ads=None,
            constraint=None, reason=None, create: bool = False) -> dict:
        """One command (HTCondor's ENABLE/DISABLE/EDIT/DELETE_USERREC): the result ad."""
        if op not in OPS:
            raise HTCondorException(f"unknown user record command {op!r}")
        names = _strings(names, "names")
        ads = _ads(ads)
        if constraint is not None:
            _check_constraint(str(constraint))
        if len(names) + len(ads) + (constraint is not None) == 0:
            raise HTCondorException("no users or projects named: don't know which records to act on")
        if reason is not None and not isinstance(reason, str):
            raise TypeError("reason must be a string")
        cmd = Command(op, "project" if projects else "user", tuple(names), tuple(ads), constraint,
                      reason, create or op == "add", peer_identity)
        with self.lock:
            live = self._live()
            project_jobs = self._project_counts() if projects and op == "remove" else {}
            implicit = set(live) - set(self.fold.records["user"])

            def in_use(kind: str, name: str) -> bool:
                return name in (project_jobs if kind == "project" else live)

            outcome = decide(self.fold, cmd, self.domain, implicit, in_use)
            if outcome.records:
                self.store.append(outcome.records)
                for record in outcome.records:
                    self.fold.apply_record(record)
        return outcome.result

    def submit_refusal(self, user: str) -> str | None:
        """HTCondor's words refusing ``user``'s submit, or None when they may submit."""
        with self.lock:
            reason = self.fold.disabled_reason(user)
            known = user in self.fold.records["user"]
        if reason is not None:
            return f"User {user} is disabled : {reason}" if reason else f"User {user} is disabled"
        if self.known_only and not known:
            return f"Unknown User {user}. Use condor_qusers to add user before submitting jobs."
        return None

    def project_refusal(self, cluster_ad: dict) -> str | None:
        """HTCondor's words refusing a job of a disabled (suspended) project, or None."""
        key = next((name for name in cluster_ad if name.lower() == "projectname"), None)
        project = adwire.string_literal(cluster_ad, key) if key else None
        if not project:
            return None
        with self.lock:
            reason = self.fold.disabled_reason(project, "project")
        if reason is None:
            return None
        return f"Project {project} is suspended : {reason}" if reason else f"Project {project} is suspended"

    def running_limits(self) -> dict[tuple[str, str], int]:
        """("user", Owner) or ("project", ProjectName) -> the MaxJobsRunning of that User or
        Project record, for those that set one (HTCondor's ``Runnable``: a job whose owner, or
        whose project, runs that many, suspended ones counted, waits)."""
        out: dict[tuple[str, str], int] = {}
        with self.lock:
            for kind, key in (("user", "Owner"), ("project", "Name")):
                for ad in self.fold.records[kind].values():
                    value = _max_running(ad)
                    name = adwire.string_literal(ad, key)
                    if name and value is not None:
                        out[(kind, name)] = value
        return out

    def admitter(self, starting: frozenset, limits: dict[tuple[str, str], int] | None = None
                 ) -> Callable[[dict], bool] | None:
        """A test for idle jobs taken in order: false for one whose owner or project is at its
        MaxJobsRunning, counting running and suspended jobs, those being started and those
        it admitted before. None when no record sets a limit."""
        limits = self.running_limits() if limits is None else limits
        if not limits:
            return None
        used = self.running_counts(starting, limits)

        def admit(ad: dict) -> bool:
            keys = [key for key in _limit_keys(ad) if key in limits]
            if any(used.get(key, 0) >= limits[key] for key in keys):
                return False
            for key in keys:
                used[key] = used.get(key, 0) + 1
            return True
        return admit

    def running_counts(self, starting: frozenset,
                       limits: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
        """("user", Owner) and ("project", ProjectName) -> running and suspended jobs, and jobs
        being started (projects only when ``limits`` names one: counting them reads the queue)."""
        used: dict[tuple[str, str], int] = {}
        for (owner, status), number in self.store.owner_status_counts().items():
            if int(status) in _RUNNING:
                used[("user", owner)] = used.get(("user", owner), 0) + number
        if any(kind == "project" for kind, _ in limits):
            running = " || ".join(f"JobStatus == {status}" for status in _RUNNING)
            for ad in self.store.query(f"({running}) && ProjectName isnt undefined", ("ProjectName",)):
                name = adwire.string_literal(ad, "ProjectName")
                if name:
                    used[("project", name)] = used.get(("project", name), 0) + 1
        for job in starting:
            for key in _limit_keys(self.store.job_ad(job) or {}):
                used[key] = used.get(key, 0) + 1
        return used

    def may_start(self, ad: dict, starting: Callable[[], frozenset]) -> bool:
        """May the job ``ad`` start now (its owner and project under their MaxJobsRunning)?
        ``starting`` gives the jobs being started; it is asked only when a limit applies."""
        limits = self.running_limits()
        if not any(key in limits for key in _limit_keys(ad)):
            return True
        admit = self.admitter(starting(), limits)
        return admit is None or admit(ad)

    def submit_records(self, user: str) -> list:
        """The record a user's first submit journals with it (none once they have one)."""
        with self.lock:
            if user in self.fold.records["user"]:
                return []
        return [UserRecord("user", user, "add", new_ad("user", user, True), by=user)]

    def committed(self, records: list) -> None:
        """``submit_records``' records are in the journal: fold them."""
        with self.lock:
            for record in records:
                if record.name not in self.fold.records["user"]:
                    self.fold.apply_record(record)

    def handlers(self, identity_of) -> dict:
        """The schedd's commands, named as HTCondor's."""
        def acting(op):
            return lambda peer, **a: self.act(op, identity_of(peer), **a)
        return {
            "query_userrec_ads": lambda peer, **a: self.query(**a),
            "enable_userrec": acting("enable"),
            "add_userrec": acting("add"),
            "disable_userrec": acting("disable"),
            "edit_userrec": acting("edit"),
            "delete_userrec": acting("remove"),
        }


_RUNNING = (int(JobStatus.RUNNING), int(JobStatus.SUSPENDED))


def _max_running(ad: dict) -> int | None:
    """A record's MaxJobsRunning as a count, or None (unset, or not a whole number >= 0)."""
    if "MaxJobsRunning" not in ad:
        return None
    try:
        value = adwire.evaluate(ad, "MaxJobsRunning")
    except Exception:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _limit_keys(ad: dict) -> list[tuple[str, str]]:
    """The records whose MaxJobsRunning a job counts against: its owner's, and its project's."""
    keys = []
    owner = adwire.string_literal(ad, "Owner")
    if owner:
        keys.append(("user", owner))
    project = adwire.string_literal(ad, "ProjectName") if "ProjectName" in ad else None
    if project:
        keys.append(("project", project))
    return keys


def _check_constraint(text: str) -> None:
    try:
        adwire.check_constraint(text)
    except Exception as exc:
        raise HTCondorException(f"Parse error in constraint: {text!r}: {exc}") from None


def _strings(values, what: str) -> list[str]:
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise HTCondorException(f"{what} must be a list of non-empty strings")
    if len(values) > MAX_TARGETS:
        raise HTCondorException(f"at most {MAX_TARGETS} {what} in one command")
    return values


def _ads(values) -> list[dict]:
    if values is None:
        return []
    if not isinstance(values, list) or len(values) > MAX_TARGETS or not all(
            isinstance(ad, dict) and all(isinstance(k, str) and k and isinstance(v, str) and "\n" not in v
                                         for k, v in ad.items()) for ad in values):
        raise HTCondorException("ads must be a list of ClassAds (attribute -> expression text)")
    return values
