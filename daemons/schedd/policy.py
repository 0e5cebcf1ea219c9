"""The periodic job policy's walk (schedd.md section 5).

Every PERIODIC_EXPR_INTERVAL seconds the schedd walks the queue.  Ads whose
policy attributes are all absent or literally false are skipped without
evaluating anything, so a big queue of plain jobs costs little; the walk's
interval stretches (up to MAX_PERIODIC_EXPR_INTERVAL) when it takes more
than 1% of the time, as HTCondor's does.  What the policy decides (durations,
PeriodicVacate/Hold/Release/Remove, TimerRemove, the SYSTEM_PERIODIC_*
expressions) is ``eventcore.decide.policy``.
"""

from __future__ import annotations

import time

from jobledger.daemons.schedd.act import DECIDE_AGAIN
from jobledger.eventcore import adwire, interleave
from jobledger.eventcore.decide.policy import (  # noqa: F401 - SYSTEM_EXPRS: the schedd's config
    POLICY_ATTRS, QUIET, SYSTEM_EXPRS, periodic_verdict, verdict_records)
from jobledger.eventcore.errors import InvalidTransition, StaleDecision
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import Assumed
from jobledger.daemons.storage.interfaces import PolicyLedger


class Policy:
    """The periodic walk of one schedd over ``store``; changes of runs under ``runs.lock``,
    starters told through ``runs.tell``, ``poke`` after a release.

    ``max_releases`` is SYSTEM_MAX_RELEASES, ``interval`` and ``ceiling`` are
    PERIODIC_EXPR_INTERVAL and MAX_PERIODIC_EXPR_INTERVAL, ``system`` the pool's
    SYSTEM_PERIODIC_* expressions by name (text).
    """

    def __init__(self, store: PolicyLedger, runs, log, poke, *, max_releases: int = -1, interval: float = 60,
                 ceiling: float = 1200, system: dict | None = None):
        self.store = store
        self.runs = runs
        self.log = log
        self.poke = poke
        self.max_releases = max_releases
        self.base = interval
        self.ceiling = ceiling
        self.next_walk = 0.0
        self.system = {k: v for k, v in (system or {}).items() if v.strip()}

    def at_exit(self, job: JobId, ad: dict, now: float) -> list | None:
        """The records of a periodic hold or remove that fires for a job as it exits (``ad``
        holds its exit), or None: HTCondor's shadow checks the periodic policy before the
        exit policy (UserPolicy PERIODIC_THEN_EXIT), so a job whose PeriodicRemove became true
        while it ran is removed, not completed, even when it ends before the next walk."""
        if not self.system and all(ad.get(name) in QUIET for name in POLICY_ATTRS):
            return None
        verdict = periodic_verdict(ad, now, self.max_releases, self.system)
        if verdict is None or verdict[0] not in ("hold", "remove"):
            return None
        self.log.info("job %s: %s at its exit: %s", job, verdict[0], verdict[1])
        return verdict_records(job, ad, verdict, None, now)

    def run(self) -> None:
        now = time.time()
        if now < self.next_walk:
            return
        began = time.monotonic()
        verdicts = []          # the walk holds one chunk of ads at a time, not the queue
        for ad in self.store.each():
            if not self.system and all(ad.get(name) in QUIET for name in POLICY_ATTRS):
                continue
            verdict = periodic_verdict(ad, now, self.max_releases, self.system)
            if verdict is not None:
                verdicts.append((JobId(int(ad["ClusterId"]), int(ad["ProcId"])), verdict))
        for job, verdict in verdicts:
            self.apply(job, verdict)
        spent = time.monotonic() - began
        self.next_walk = now + min(self.ceiling, max(self.base, spent * 100))

    def apply(self, job: JobId, verdict: tuple) -> None:
        """Carry out ``verdict`` (as ``periodic_verdict`` returns it) on ``job`` now.  The
        records name the state they were decided on; if the job moved meanwhile (its run
        started) the verdict is taken again on what the queue holds now."""
        for _ in range(DECIDE_AGAIN):
            with self.runs.lock:
                ad = self.store.job_ad(job)
                interleave.point("policy.chosen")
                if ad is None:
                    return
                now = time.time()
                status = int(adwire.literal(ad.get("JobStatus", "1")))
                claim = adwire.evaluate(ad, "ClaimId") if status in (2, 6, 7) else None
                records = [Assumed.of(job, ad), *verdict_records(job, ad, verdict, claim, now)]
                interleave.point("policy.append")
                try:
                    self.store.append(records)
                    break
                except StaleDecision:
                    again = periodic_verdict(self.store.job_ad(job) or {"JobStatus": "3"}, time.time(),
                                             self.max_releases, self.system)
                    if again is None:
                        return
                    verdict = again
                    continue
                except InvalidTransition as exc:
                    self.log.info("policy on %s: %s", job, exc)
                    return
        else:
            self.log.info("policy on %s: the job kept changing; left for the next walk", job)
            return
        kind = verdict[0]
        if claim:
            self.runs.tell(claim, "vacate" if kind == "vacate" else "kill", ad)
        if kind == "release":
            self.poke()
