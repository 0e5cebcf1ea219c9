"""A starter's report of runs on one claim that ended one after the other: one commit.

A starter whose jobs wait in a queue where they run (a Dask worker:
``daemons.dask_starter``) often finds, when it reports its job's end, that the
jobs queued behind it have exited too.  It reports them with it (``chain``: each
one's claim, job and outcome, in queue order) and the schedd records them all in
one commit, in the order one report at a time would have:

    end of the reported run, then per chained job: its start (run attributes and
    EXECUTE; its claim moved to it on the startd first, as a handover does) and
    its end; then the start of the job after the last (the usual handover)

Each chained job's end is decided inside the commit, on the job as its start left
it there (``Store.append_each`` with batch functions), so the journal holds what
the one-by-one reports would have written, with one fsync for them all; each start
is journaled before its end, and the starter is answered after the commit.

A chained job is taken only while each is the job queued behind the one before it
(``Matches.lookahead`` reserved it) and exited; the first that is not ends the chain
and the starter runs it as usual.  Once a step is refused in the commit (a job held
or removed meanwhile: its start is refused) the steps after it are refused too (their
jobs stay idle and run again later), the answer says how many chained ends were
recorded (``chained``) and no next job: the starter leaves.  A retried report finds
the first run recorded and gets the next job as a retried handover does; the chained
jobs are then reported one by one and found recorded.
"""

from __future__ import annotations

import time
from concurrent.futures import Future

from jobledger.daemons.joint_commit import JointCommit
from jobledger.daemons.schedd.match import _settle, execute_records
from jobledger.eventcore import adwire
from jobledger.eventcore.claims import ClaimEvent
from jobledger.eventcore.decide.runs import startd_address
from jobledger.eventcore.errors import HTCondorException, StaleDecision
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.status import JobStatus

CHAIN_MAX = 16      # chained runs taken from one report


def chain_steps(chain) -> list[tuple[str, JobId, dict]]:
    """``chain`` as (claim, job, outcome) while well formed and exited; [] for none."""
    steps = []
    for item in chain[:CHAIN_MAX] if isinstance(chain, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("claim"), str) \
                or not isinstance(item.get("outcome"), dict) or item["outcome"].get("kind") != "exit":
            break
        try:
            job = JobId.parse(str(item.get("job")))
        except (ValueError, TypeError):
            break
        steps.append((item["claim"], job, item["outcome"]))
    return steps


class _Gate:
    """The chain's steps as batch functions: each refuses once one before it was refused."""

    def __init__(self, runs):
        self.runs = runs
        self.open = True

    def _refuse(self, job: JobId, claim: str, found) -> None:
        self.open = False
        raise StaleDecision(job, (JobStatus.RUNNING, claim), found)

    def started(self, before: tuple[JobId, str] | None, records: list | None, job: JobId):
        """The start of ``job`` (``records``; None: not idle when read), once the run
        ``before`` it in the chain ended in this commit (None: the first step, which does
        not wait on the reported end, as a handover does not)."""
        def decide(job_ad):
            if before is not None:
                if not self.open:
                    self._refuse(job, "", "an earlier step refused")
                ad = job_ad(before[0])
                if ad is not None and self.runs.is_current(ad, before[1]):
                    self._refuse(before[0], before[1], "still running")
            if records is None:
                self._refuse(job, "", "not idle")
            return records
        return decide

    def ended(self, job: JobId, claim: str, outcome: dict, now: float):
        """The end of ``job``'s run under ``claim``, decided on its ad as the commit left it."""
        def decide(job_ad):
            ad = job_ad(job) if self.open else None
            if ad is None or not self.runs.is_current(ad, claim):
                self._refuse(job, claim, None if ad is None else ad.get("JobStatus"))
            return self.runs.end_records(job, ad, outcome, now)
        return decide


class Chains:
    """Chained reports (see the module docstring), over the schedd's ``store``, ``runs``
    and ``matches``."""

    def __init__(self, store, runs, matches, log):
        self.store, self.runs, self.matches, self.log = store, runs, matches, log

    def record(self, job: JobId, claim: str, outcome: dict, chain, ahead) -> tuple | None:
        """Record the end of ``job`` under ``claim`` and the ``chain`` after it in one commit:
        (result, the handover's future, how many chained ends were recorded), or None when
        the chain does not apply (the report is recorded as usual).  ``ahead(handover)`` is
        called once the handover after the chain is under way."""
        steps = chain_steps(chain)
        if not steps or outcome.get("kind") != "exit" or not self.matches.reuse_claims \
                or self.matches.on_ocu(claim):
            return None
        self.runs.wait_started(claim)
        decided = self.runs.outcome_records(job, claim, outcome)
        if decided is None:
            return None                 # a stale or retried report: as usual
        ad, end = decided
        address = startd_address(ad)
        if not address:
            return None                 # no startd to move the claim on: as usual
        taken = self.matches.take_queued(claim, [(c, j) for c, j, _ in steps])
        promoted = self._promote(taken, address)
        if not promoted:
            return None
        outcomes = {c: o for c, _, o in steps}
        now = time.time()
        gate, batches, before = _Gate(self.runs), [end], None
        for step, started in promoted:
            idle = step["idle"] = self.store.job_ad(step["job"])
            records = execute_records(step["job"], idle, step["claim"], started, address, now) \
                if idle is not None and adwire.evaluate(idle, "JobStatus") == JobStatus.IDLE else None
            batches += [gate.started(before, records, step["job"]),
                        gate.ended(step["job"], step["claim"], outcomes[step["claim"]], now)]
            before = (step["job"], step["claim"])
        return self._commit(job, ad, outcome, batches, promoted, gate, ahead, address)

    def _promote(self, taken: list[dict], address: str | None) -> list[tuple[dict, dict]]:
        """Move the claim along ``taken`` on the startd (one call): the steps moved, with
        the startd's answers; those from the first it refused are queued again."""
        if not taken:
            return []
        try:
            started = self.matches.promote(taken, address)
        except HTCondorException as exc:
            self.log.info("job %s: not chained: %s", taken[0]["job"], exc)
            started = []
        self.matches.put_back(taken[len(started):])
        return list(zip(taken, started))

    def _commit(self, job: JobId, ad: dict, outcome: dict, batches: list, promoted: list, gate: _Gate,
                ahead, address: str) -> tuple:
        last = promoted[-1][0]
        joint = JointCommit(self.store)
        handed: Future = Future()
        try:
            self.matches.reuse_in_worker(last["claim"], ad, handed, joint)
        except RuntimeError:           # stopping: no next job
            joint.withdraw()
            _settle(handed, None)
        ahead(handed)
        results = None
        joint.take()
        try:
            results = joint.commit_each(batches, gate=lambda offered: gate.started(
                (last["job"], last["claim"]), offered, last["job"]))
        finally:
            joint.release()
            if results is None:         # the commit failed: nothing of the chain is recorded
                self.matches.forget_continued([step["ahead"] for step, _ in promoted])
                for step, _ in promoted:
                    self.runs.started(step["job"], step["claim"], ClaimEvent.FAILED)
        return self._settled(job, ad, outcome, results, promoted, handed, address)

    def _settled(self, job: JobId, ad: dict, outcome: dict, results: list, promoted: list, handed: Future,
                 address: str) -> tuple:
        """After the commit: each step's claim settled as its start went, the ends recorded."""
        result = "stale" if isinstance(results[0], BaseException) else "recorded"
        if result == "recorded":   # (a starter that saved its outcome nowhere removes its scratch)
            self.runs.ended(job, ad, True, True, cleans=outcome.get("saved") is not True)
        chained, whole = 0, True
        for n, (step, _) in enumerate(promoted):
            began, end = results[1 + 2 * n], results[2 + 2 * n]
            how = ClaimEvent.REFUSED if isinstance(began, BaseException) else ClaimEvent.EXECUTED
            if how is ClaimEvent.REFUSED:
                try:
                    self.runs.startd_call("signal", address=address, claim=step["claim"], what="kill")
                except HTCondorException:
                    pass
            self.runs.started(step["job"], step["claim"], how)
            whole = whole and how is ClaimEvent.EXECUTED and not isinstance(end, BaseException)
            if whole:
                chained += 1
                self.runs.ended(step["job"], step["idle"] or {}, True, True, cleans=True)
        if not whole:
            self.log.info("job %s: the chain after it stopped after %d of %d", job, chained, len(promoted))
            broken: Future = Future()
            broken.set_result(None)     # no next job: the starter leaves
            return result, broken, chained
        return result, handed, chained
