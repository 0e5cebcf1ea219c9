"""A starter whose job runs on a Dask worker instead of on this machine.

``DaskStarter`` is the local starter of a claim matched to a Dask worker
(``daemons.dask_startd``).  It keeps everything a local starter owns --
its own process (so the schedd's reconnect and "starter gone" checks work
unchanged), the sandbox, the input and output transfer of
``daemons.transfer``, ``outcome.json``, the report to the schedd and claim
reuse (the claim's next job, handed over in the answer to the report, runs
in the same starter on the same worker: no process is forked and no
negotiation waited for per job) -- and only moves the run: ``dask_run``
asks the Dask startd to submit ``daemons.dask_task.run_job`` to the job's
worker over its one connection to the scheduler, with the sandbox staged
here (the startd reads it from the scratch directory; no bytes pass through
this starter's connection).  The job runs there in a sandbox of the
worker's own; what it made or changed comes back into the scratch directory
with the exit status and usage (in the answer to a ``dask_result``
long-poll, or to ``dask_run`` itself when there was no input transfer to
report meanwhile and the job ends within ``POLL``), after which the outputs
are sent as for a local run.  No file system is shared
with the worker, and no starter opens a Dask connection of its own.

Instructions (SIGTERM vacate, SIGQUIT kill, SIGUSR1/SIGUSR2 suspend and
continue) are handled as by a local starter, except that the signals go to
the job's process group on the worker (``dask_signal``).  A worker that
leaves, or a scheduler that goes away, while the job runs makes the run
*evicted* (``reason: worker_lost``): the schedd requeues the job.  The
startd dying (the lifeline reads EOF) takes its connection with it: the
task is released and the worker kills the job.
"""

from __future__ import annotations

import signal
import time
import traceback

from jobledger.daemons import ipc
from jobledger.daemons.starter import HOLD_SPAWN, STOPPING, Starter, job_arguments, job_environment
from jobledger.eventcore.errors import HTCondorException

POLL = 0.5   # seconds the Dask startd holds a dask_result call while the task runs


class DaskStarter(Starter):
    """A claim's starter, running its jobs through the Dask startd ``job["_DaskStartd"]``."""

    process_name = "dask_starter"

    def __init__(self, job: dict, *args, **kwargs):
        job = dict(job)
        self.startd = job.pop("_DaskStartd")
        super().__init__(job, *args, **kwargs)

    def _take(self, job: dict, claim: str, scratch: str) -> None:
        super()._take(job, claim, scratch)
        self.sandboxed = True    # nothing is shared with the worker
        self.submitted = False
        self.reply: dict = {"state": "lost"}
        self.deferred: list = []   # reports to the schedd held until the job is on its way

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
        """Hand the job to the Dask startd, which submits it with the sandbox staged here;
        a job that ends within ``POLL`` comes back in the same answer."""
        spec = {"argv": [self.inputs.command, *job_arguments(self.job)],
                "env": job_environment(self.job, ".")}
        spec["stdin"], spec["stdout"], spec["stderr"] = self._sandbox_streams()
        try:
            self.reply = self._ask("dask_run", timeout=POLL + 30, spec=spec, scratch=self.scratch,
                                   wait=0 if self.deferred else POLL)
            self.submitted = True
        except Exception:  # noqa: BLE001 - the startd, not the job, failed: the job runs again later
            traceback.print_exc()
        for cmd, args in self.deferred:
            super()._tell(cmd, **args)
        self.deferred = []
        return None

    def _wait(self, start: float) -> dict:
        killed_by = None
        deadline = None
        reply = self.reply
        while self.submitted and reply.get("state") == "running":
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
