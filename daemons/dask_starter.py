"""A starter whose job runs on a Dask worker instead of on this machine.

``DaskStarter`` is the local starter of a claim matched to a Dask worker
(``daemons.dask_startd``).  It keeps everything a local starter owns --
its own process (so the schedd's reconnect and "starter gone" checks work
unchanged), the sandbox, the input and output transfer of
``daemons.transfer``, ``outcome.json``, the report to the schedd and claim
reuse (the claim's next job, handed over in the answer to the report, runs
in the same starter on the same worker: no process is forked and no
negotiation waited for per job) -- and only moves the run: ``dask_run``
asks the Dask startd to run the job on its worker (``daemons.dask_task.JobRunner``,
called over the startd's one Dask client), with the sandbox staged here (the
startd reads it from the scratch directory; no bytes pass through this
starter's connection).  The job runs there in a sandbox of the
worker's own; what it made or changed comes back into the scratch directory
with the exit status and usage (in the answer to a ``dask_result``
long-poll, or to ``dask_run`` itself when there was no input transfer to
report meanwhile and the job ends within ``POLL``), after which the outputs
are sent as for a local run.  No file system is shared
with the worker, and no starter opens a Dask connection of its own.

Queued behind: once its job is submitted, the starter asks the schedd for the
claim's next job (``starter_lookahead``), stages it and submits it too, queued on
the same worker behind the running one (``run_job``'s ``behind``: it runs once that
job exited on its own, never after a stop), so that the worker never waits for the
round trips between two jobs.  Nothing of it is recorded until the handover at the
current job's end names it as the next job (its EXECUTE and then its input
transfer's events); a handover that names another, or none, or a stop, cancels it
(``dask_cancel``).  A job's end is reported with those queued behind it that ended too
(``chain``): before reporting, the starter waits a little (``CHAIN_WAIT`` at most) for
those that will end before the rest of the queue would run out while the report goes
round (``_keep``), so that a report carries several jobs even when many workers share
the machine and each worker's jobs end far apart.

Instructions (SIGTERM vacate, SIGQUIT kill, SIGUSR1/SIGUSR2 suspend and
continue) are handled as by a local starter, except that the signals go to
the job's process group on the worker (``dask_signal``).  A worker that
leaves, or a scheduler that goes away, while the job runs makes the run
*evicted* (``reason: worker_lost``): the schedd requeues the job.  The
startd dying (the lifeline reads EOF) takes its connection with it: the
worker's runner is released and the worker kills the job.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import time
import traceback

from jobledger.daemons import ipc, transfer
from jobledger.daemons.starter import HOLD_SPAWN, STOPPING, Starter, job_arguments, job_environment
from jobledger.eventcore import transfer as plan
from jobledger.eventcore.errors import HTCondorException

POLL = 0.5   # seconds the Dask startd holds a dask_result call while the task runs
# What makes one job's run here (``_take``): saved and restored around the queued one.
PER_JOB = ("job", "claim", "scratch", "sandboxed", "inputs", "before", "child", "reported_size",
           "suspended_at", "suspended_total", "submitted", "reply", "deferred", "outcome")
CHAIN_MAX = 16   # queued jobs that ended reported with the current one (daemons.schedd.chain)
CHAIN_WAIT = 0.2   # seconds a report waits at most for jobs queued behind to end too (``_gather_chain``)
FIRST_WAIT = 0.05   # ... while the time between two jobs' ends and a report's round trip are unknown


class DaskStarter(Starter):
    """A claim's starter, running its jobs through the Dask startd ``job["_DaskStartd"]``."""

    process_name = "dask_starter"

    def __init__(self, job: dict, *args, **kwargs):
        job = dict(job)
        self.startd = job.pop("_DaskStartd")
        # jobs queued behind the running one at most (the startd's answers bring it up to date)
        self.depth = int(job.pop("_DaskQueueDepth", 0))
        self.queued: list[dict] = []      # the next jobs, queued behind this one: their claims, their runs
        self.promoted = False             # this run was queued behind the last one
        self.offers: list[dict] = []      # jobs to queue behind our last, from the answer to a report
        self.chain: list[dict] = []       # queued jobs that ended, reported with the current one
        self.chained = 0                  # how many of them the schedd recorded
        self.spacing: float | None = None      # seconds between two ends of queued jobs on the worker
        self.round_trip: float | None = None   # seconds a report took, from its sending to its answer
        super().__init__(job, *args, **kwargs)

    def _take(self, job: dict, claim: str, scratch: str) -> None:
        if self.queued and self.queued[0]["claim"] == claim:
            self._restore(self.queued.pop(0)["run"])    # submitted already, behind the last job
            self.promoted = True
            return
        super()._take(job, claim, scratch)
        self.sandboxed = True    # nothing is shared with the worker
        self.submitted = False
        self.reply: dict = {"state": "lost"}
        self.deferred: list = []   # reports to the schedd held until the job is on its way (or current)
        self.outcome: dict | None = None   # known before it became the claim's job (``_chain_of``)

    def _restore(self, run: dict) -> None:
        for name, value in run.items():
            setattr(self, name, value)

    def _run_one(self) -> dict:
        if not self.promoted:
            return super()._run_one()
        # Queued behind the last job, it runs already (or ran); a stop that came meanwhile
        # is for it.  Its input transfer is reported at the first answer saying it still
        # runs (``_wait``); a job that ended before has it sent with its outcome (``_finish``).
        self.promoted = False
        self._look_ahead()
        if self.outcome is not None:      # over, its outputs sent: chained, not taken then
            return self.outcome
        outcome = self._wait(time.time())
        self._send_output(outcome)
        return outcome

    def _finish(self, outcome: dict) -> dict | None:
        # A job that had ended by the time it became the claim's job has its input
        # transfer reported with its outcome: one report and one commit, not two.
        for cmd, args in self.deferred:
            if cmd == "starter_transfer":
                outcome["inputs"] = {"events": args["events"], "input_bytes": args["input_bytes"]}
            else:
                super()._tell(cmd, **args)
        self.deferred = []
        if outcome.get("kind") != "exit" or not self.startd_alive() \
                or any(what in STOPPING for what in self.pending):
            self._cancel_queued()     # no next job will be asked for: they never run here
            self._drop_offered()
        chaining = self.continues and self.depth and self.queued and outcome.get("kind") == "exit"
        if chaining:
            self._gather_chain()
            self._refresh_queued()
        self.chain = self._chain_of() if chaining else []
        self._learn_spacing(outcome)
        self.chained = 0
        following = super()._finish(outcome)
        recorded, self.queued = self.queued[:self.chained], self.queued[self.chained:]
        for queued in recorded:      # their ends are in the journal with this one's
            shutil.rmtree(queued["run"]["scratch"], ignore_errors=True)
        self.chain, self.chained = [], 0
        if following is None or (self.queued and following["claim"] != self.queued[0]["claim"]):
            self._cancel_queued()
            self._drop_offered()
        return following

    def _chain_of(self) -> list[dict]:
        """The queued jobs at the head of the queue that are over (exited, nothing to send
        back): reported with the current job, so that one commit records them all."""
        chain = []
        for queued in self.queued[:CHAIN_MAX]:
            run = queued["run"]
            if run["outcome"] is None:
                if not run["submitted"] or run["reply"].get("state") != "done":
                    break
                outcome = self._outcome_of(queued)
                run = queued["run"]
                run["outcome"] = outcome
            if run["outcome"] is None or run["outcome"].get("kind") != "exit":
                break
            chain.append({"claim": queued["claim"], "job": run["outcome"]["job"], "outcome": run["outcome"]})
        return chain

    def _gather_chain(self) -> None:
        """Before the current job's end is reported: wait for the jobs queued behind it that
        end before the rest of the queue would run out while the report goes round (all
        but ``_keep``), CHAIN_WAIT at most, so that one report (and one commit, one
        handover) carries several jobs.  Each report costs about the same however few jobs
        it carries, and with many workers sharing the machine each worker's jobs end further
        apart, so a starter reporting every end at once carries one job a report; the jobs
        kept queued keep the worker busy meanwhile.  Only jobs expected to end within
        CHAIN_WAIT are waited for (long jobs are not); until the time between two ends is
        known, half of the queue, FIRST_WAIT at most.  Not while an instruction waits."""
        ahead = []
        for queued in self.queued[:min(CHAIN_MAX, len(self.queued) - self._keep())]:
            if not queued["run"]["submitted"]:
                break
            ahead.append(queued)
        if self.spacing:
            ahead = ahead[:int(CHAIN_WAIT / self.spacing)]
        waiting = [queued for queued in ahead if queued["run"]["reply"].get("state") == "running"]
        if not waiting or self.pending:
            return
        wait = FIRST_WAIT if not self.spacing else min(CHAIN_WAIT, 2 * len(waiting) * self.spacing)
        try:    # (they run one after the other: the answer comes once the last of them ended)
            found = ipc.call(self.startd, "dask_results", timeout=30, claims=[q["claim"] for q in waiting],
                             wait=wait)
        except HTCondorException:
            return      # (each is asked about again in its turn)
        self._learn(waiting, found)

    def _keep(self) -> int:
        """How many of the queued jobs to leave running on the worker while a report goes
        round: as many as run in a report's round trip, at least one; half of the queue
        while either is unknown."""
        if not self.spacing or self.round_trip is None:
            return (len(self.queued) + 1) // 2
        return max(1, math.ceil(self.round_trip / self.spacing))

    def _learn_spacing(self, outcome: dict) -> None:
        """The time between two ends on the worker, from a chain: the jobs in it ran one
        after the other, right behind the current one (the worker's own clock: ``end``)."""
        last = self.chain[-1]["outcome"].get("end") if self.chain else None
        first = outcome.get("end")
        if isinstance(last, (int, float)) and isinstance(first, (int, float)) and last > first:
            self.spacing = _averaged(self.spacing, (last - first) / len(self.chain))

    def _unknown(self) -> list[dict]:
        """The queued jobs (the first CHAIN_MAX) submitted and not known to be over."""
        return [queued for queued in self.queued[:CHAIN_MAX]
                if queued["run"]["submitted"] and queued["run"]["reply"].get("state") == "running"]

    def _learn(self, waiting: list[dict], found) -> None:
        """The startd's answers (claim -> ``dask_result``) about the ``waiting`` queued jobs."""
        for queued in waiting:
            reply = found.get(queued["claim"]) if isinstance(found, dict) else None
            if isinstance(reply, dict) and reply.get("state") in ("running", "done", "lost"):
                queued["run"]["reply"] = reply

    def _refresh_queued(self, always: bool = False) -> None:
        """Ask the startd, in one call, how the queued jobs not known to be over are doing
        (the worker runs them one after the other, faster than they are reported): unless
        ``always``, only when the first is not known to be over (the others ended after it:
        those known over make the chain, the rest are learnt of with the next call)."""
        waiting = self._unknown()
        if not waiting or not always and all(queued is not self.queued[0] for queued in waiting):
            return
        try:
            found = ipc.call(self.startd, "dask_results", timeout=30, claims=[q["claim"] for q in waiting])
        except HTCondorException:
            return      # (each is asked about again in its turn)
        self._learn(waiting, found)

    def _outcome_of(self, queued: dict) -> dict | None:
        """The outcome of a queued job that is over, as its turn would make it (its input
        transfer's report in it), or None when it made or changed files: those are sent
        back in its turn, after its start is recorded."""
        current = {name: getattr(self, name) for name in PER_JOB}
        try:
            self._restore(queued["run"])
            if plan.changed_files(self.before, transfer.snapshot(self.scratch)):
                return None
            outcome = self._wait(time.time())
            self._send_output(outcome)
            for cmd, args in self.deferred:
                if cmd == "starter_transfer":
                    outcome["inputs"] = {"events": args["events"], "input_bytes": args["input_bytes"]}
            self.deferred = []
            outcome.update(claim=self.claim, job=self.job_id)
            queued["run"] = {name: getattr(self, name) for name in PER_JOB}
            return outcome
        finally:
            self._restore(current)

    def _offer(self) -> dict:
        """The report offering to run the claim's next job asks for one more to queue
        behind the last we hold (behind the next job itself when we hold none): the
        schedd's answer carries it (``queued``) beside the next job, one call instead of
        a ``starter_lookahead`` after it.  ``expect``: the next job we hold queued."""
        offer = super()._offer()
        offer.pop("direct", None)     # (its claims move on the Dask startd, with their queues)
        if self.depth:
            # (offered jobs not queued yet are, before the answer comes: ``_overlap``)
            skip = len(self.chain)      # the next job is the first queued after the chain
            last = self.offers[-1] if self.offers else \
                self.queued[-1]["run"] if len(self.queued) > skip else None
            first = self.queued[skip]["claim"] if len(self.queued) > skip else \
                self.offers[0]["claim"] if self.offers else None
            count = max(1, self.depth - (len(self.queued) - skip) - len(self.offers))
            offer["lookahead"] = {"count": count} if last is None else {
                "expect": first, "claim": last["claim"], "count": count,
                "job": f"{last['job'].get('ClusterId')}.{last['job'].get('ProcId')}"}
        if self.chain:
            offer["chain"] = self.chain
        return offer

    def _report(self, outcome: dict, more: bool = False) -> tuple[bool, object]:
        """As a local starter's, but the startd is asked what it would be asked next while
        the schedd commits the outcome (``_overlap``): the report is sent, then read."""
        began = time.monotonic()
        answered, answer = self._send_report(outcome, more)
        if answered:
            self.round_trip = _averaged(self.round_trip, time.monotonic() - began)
        return answered, answer

    def _send_report(self, outcome: dict, more: bool) -> tuple[bool, object]:
        answered, answer = False, None
        if more and (self.offers or self._head_waiting()):
            try:
                pending = ipc.call_later(self.schedd_address, "starter_outcome", timeout=30, claim=self.claim,
                                         job=self.job_id, outcome=outcome, **self._offer())
            except HTCondorException:
                pending = None
            if pending is not None:
                self._overlap()
                try:
                    answered, answer = True, pending()
                except HTCondorException:
                    answered = False     # tried again below (a retried report gets the same answer)
        if not answered:
            answered, answer = super()._report(outcome, more)
        if answered and isinstance(answer, dict):
            given = answer.get("queued")
            self.offers += [q for q in (given if isinstance(given, list) else [given]) if isinstance(q, dict)]
            chained = answer.get("chained")
            self.chained = min(chained, len(self.chain)) if isinstance(chained, int) else 0
        return answered, answer

    def _head_waiting(self) -> bool:
        """The first job queued behind this one (and the chain) was submitted and not
        known to be over."""
        skip = len(self.chain)
        head = self.queued[skip]["run"] if len(self.queued) > skip else None
        return head is not None and head["submitted"] and head["reply"].get("state") == "running"

    def _overlap(self) -> None:
        """While the schedd commits this job's end: the jobs its last answer offered are
        queued (``_queue_next``), and the state of the first queued job after the chain --
        likely the next one -- comes back with the first (or alone), so that once the
        answer names it, it is over already (or running) without another round trip."""
        skip = len(self.chain)
        head = self.queued[skip] if len(self.queued) > skip else None
        try:
            if self.offers and len(self.queued) - skip <= self.depth:
                self._queue_offers(self.depth + 1 - (len(self.queued) - skip),
                                   head["run"] if self._head_waiting() else None)
            elif self._head_waiting():
                self._refresh_queued(always=True)
        except Exception:  # noqa: BLE001 - asked again once the job is the claim's
            traceback.print_exc()

    def _drop_offered(self) -> None:
        """The jobs the schedd queued behind ours that we will not run: their claims on the
        startd go (the schedd's reservations go when the run before them ends)."""
        given, self.offers = self.offers, []
        for offered in given:
            try:
                ipc.call(self.startd, "dask_cancel", timeout=10, claim=offered["claim"])
            except HTCondorException:
                pass   # a startd we cannot reach holds no claims of ours

    def _look_ahead(self) -> None:
        """Ask for the claim's next jobs and queue them on the worker behind this one,
        up to ``depth`` of them: first those the schedd's last answer gave, then, while
        this job runs, the rest asked for at once."""
        if not self.continues:
            return
        self._queue_offers(self.depth - len(self.queued))
        if self.reply.get("state") != "running":
            return
        while len(self.queued) < self.depth and self._queue_next(self.depth - len(self.queued)):
            pass

    def _queue_next(self, count: int) -> bool:
        """Up to ``count`` more jobs asked of the schedd (in one call: it may give fewer than
        asked, and at most 16) and queued behind the last one; False when it had none, or
        one could not be queued (or on a stop)."""
        if any(what in STOPPING for what in self.pending) or not self.startd_alive():
            self._drop_offered()
            return False
        last = self.queued[-1]["run"] if self.queued else {"claim": self.claim, "job": self.job}
        try:
            given = ipc.call(self.schedd_address, "starter_lookahead", timeout=30, claim=last["claim"],
                             job=f"{last['job'].get('ClusterId')}.{last['job'].get('ProcId')}", count=count)
        except HTCondorException:
            return False
        given = [offered for offered in given if isinstance(offered, dict)] if isinstance(given, list) else []
        if not given:
            return False
        self.offers += given
        before = len(self.queued)
        self._queue_offers(len(given))
        return len(self.queued) == before + len(given) and self.queued[-1]["run"]["submitted"]

    def _queue_offers(self, room: int, ahead: dict | None = None) -> None:
        """Queue up to ``room`` of the jobs the schedd offered behind our last: each staged
        here, all submitted to the worker in one call to the startd, whose answer brings
        the state of the current job (or of the queued run ``ahead``) too."""
        if any(what in STOPPING for what in self.pending) or not self.startd_alive():
            self._drop_offered()
            return
        staged: list[tuple[dict, dict | None]] = []   # (queued entry, its spec; None: not staged)
        while self.offers and len(staged) < room and (not staged or staged[-1][1] is not None):
            staged.append(self._staged(self.offers.pop(0)))
        if not staged:
            return
        watched = ahead if ahead is not None else {"claim": self.claim, "submitted": self.submitted,
                                                   "reply": self.reply}
        items = [{"claim": queued["claim"], "spec": spec, "scratch": queued["run"]["scratch"]}
                 for queued, spec in staged if spec is not None]
        waiting = [queued for queued in self._unknown() if queued["run"] is not ahead]
        answer = {}
        if items:
            try:
                answer = ipc.call(self.startd, "dask_run_many", timeout=30, items=items,
                                  then=watched["claim"] if watched["submitted"]
                                  and watched["reply"].get("state") == "running" else None,
                                  also=[queued["claim"] for queued in waiting])
            except Exception:  # noqa: BLE001 - not queued: the handover gives them as next jobs then
                traceback.print_exc()
        if isinstance(answer, dict):
            self._learn(waiting, answer.get("also"))
            self._take_depth(answer)
        replies = answer.get("replies") if isinstance(answer, dict) else None
        then = answer.get("then") if isinstance(answer, dict) else None
        if isinstance(then, dict) and then.get("state") in ("running", "done", "lost"):
            if ahead is None:
                self.reply = then
            else:
                ahead["reply"] = then
        refused = None
        for queued, _ in staged:
            run = queued["run"]
            reply = replies.get(queued["claim"]) if isinstance(replies, dict) else None
            if isinstance(reply, dict):
                run["reply"] = reply
            run["submitted"] = run["reply"].get("state") == "running"
            self.queued.append(queued)
            if refused is None and not run["submitted"]:
                refused = len(self.queued) - 1
        if refused is not None:      # (those behind it would wait for it on the worker)
            self._cancel_queued(refused)
            self._drop_offered()

    def _take_depth(self, answer) -> None:
        """The queue's depth the startd's ``answer`` brings (a share of the jobs queued on
        all its workers: it changes as workers come and go); none turned off stays off."""
        depth = answer.get("depth") if isinstance(answer, dict) else None
        if self.depth and isinstance(depth, int) and not isinstance(depth, bool) and depth >= 1:
            self.depth = depth

    def _staged(self, given: dict) -> tuple[dict, dict | None]:
        """The offered job ``given`` as a queued run here, its inputs staged: (its queued
        entry, the spec to run it by; None when it could not be staged)."""
        current = {name: getattr(self, name) for name in PER_JOB}
        spec = None
        try:
            super()._take(given["job"], given["claim"], given["scratch"])
            self.sandboxed, self.submitted, self.reply, self.deferred = True, False, {"state": "lost"}, []
            self.outcome = None
            os.makedirs(self.scratch, mode=0o700, exist_ok=True)
            if self._stage_input(time.time()) is None:
                spec = self._spec()
        except Exception:  # noqa: BLE001 - not queued: the handover gives it as a next job then
            traceback.print_exc()
        finally:
            queued = {"claim": self.claim, "run": {name: getattr(self, name) for name in PER_JOB}}
            self._restore(current)
        return queued, spec

    def _cancel_queued(self, first: int = 0) -> None:
        """The jobs queued behind this one (from the ``first``) are not to run here: their
        jobs are cancelled (killed if one started), and their sandboxes go."""
        cancelled, self.queued = self.queued[first:], self.queued[:first]
        for queued in cancelled:
            try:
                ipc.call(self.startd, "dask_cancel", timeout=10, claim=queued["claim"])
            except HTCondorException:
                pass   # a startd we cannot reach has lost the task
            shutil.rmtree(queued["run"]["scratch"], ignore_errors=True)

    def _tell(self, cmd: str, **args) -> None:
        """The input transfer's report (its events carry their own times) goes to the
        schedd once the job is submitted: its commit overlaps the run on the worker
        instead of delaying it."""
        if cmd == "starter_transfer" and not self.submitted:
            self.deferred.append((cmd, args))
        else:
            super()._tell(cmd, **args)

    def _ask(self, cmd: str, timeout: float = 30, **args):
        return ipc.call(self.startd, cmd, timeout=timeout, claim=self.claim, **args)

    def _spawn(self):
        """Hand the job to the Dask startd, which submits it with the sandbox staged here
        (and queue the next ones behind it); without input transfer events to report or
        jobs to queue, a job that ends within ``POLL`` comes back in the same answer."""
        try:
            self.reply = self._ask("dask_run", timeout=POLL + 30, spec=self._spec(), scratch=self.scratch,
                                   wait=0 if self.deferred or self.depth else POLL)
            self.submitted = True
            self._take_depth(self.reply)
        except Exception:  # noqa: BLE001 - the startd, not the job, failed: the job runs again later
            traceback.print_exc()
        self._flush_deferred()
        self._look_ahead()
        return None

    def _flush_deferred(self) -> None:
        for cmd, args in self.deferred:
            super()._tell(cmd, **args)
        self.deferred = []

    def _spec(self) -> dict:
        """How the worker runs the current job (``daemons.dask_task.run_job``)."""
        spec = {"argv": [self.inputs.command, *job_arguments(self.job)],
                "env": job_environment(self.job, ".")}
        spec["stdin"], spec["stdout"], spec["stderr"] = self._sandbox_streams()
        return spec

    def _wait(self, start: float) -> dict:
        killed_by = None
        deadline = None
        reply = self.reply
        while self.submitted and reply.get("state") == "running":
            if self.queued and any(what in STOPPING for what in self.pending):
                self._cancel_queued()    # before the stop reaches the job, so it never starts
            self._handle_instructions()
            if self.pending and self.pending[-1] in STOPPING and killed_by is None:
                killed_by = self.pending[-1]
                deadline = time.monotonic() + (self.kill_timeout if killed_by == "vacate" else 0)
            if not self.startd_alive():
                return self._lost(start, "startd_gone")   # its connection, and the task, went with it
            if deadline is not None and time.monotonic() >= deadline:
                self._signal_job(signal.SIGKILL)
                deadline = None
            try:
                reply = self._ask("dask_result", timeout=POLL + 30, wait=POLL)
            except Exception:  # noqa: BLE001 - a startd that cannot answer has lost the task
                traceback.print_exc()
                reply = {"state": "lost"}
            if reply.get("state") == "running":
                self._flush_deferred()
        if reply.get("state") != "done":
            return self._lost(start, killed_by)
        result = reply["result"]
        result.pop("host", None)
        result["suspended"] = self.suspended_total
        if killed_by:
            result.update(kind="evicted", reason=killed_by)
        elif result.get("kind") == "spawn_failed":
            result["hold_code"] = HOLD_SPAWN
        return result

    def _lost(self, start: float, reason: str | None = None) -> dict:
        return {"kind": "evicted", "reason": reason or "worker_lost", "start": start, "end": time.time(),
                "usage": {}}

    def _signal_job(self, sig: int) -> None:
        """The job's process group is on the worker: the Dask startd signals it there."""
        if not self.submitted:
            return
        try:
            self._ask("dask_signal", timeout=10, signum=int(sig))
        except HTCondorException:
            pass   # a startd we cannot reach has lost the task: the result says so


def _averaged(old: float | None, sample: float) -> float:
    """A running average that follows changes within a few samples."""
    return sample if old is None else (3 * old + sample) / 4
