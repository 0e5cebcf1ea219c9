"""A starter whose job runs on a Dask worker instead of on this machine.

``DaskStarter`` is the local starter of one job matched to a Dask worker
(``daemons.dask_startd``).  It keeps everything a local starter owns --
its own process (so the schedd's reconnect and "starter gone" checks work
unchanged), the sandbox, the input and output transfer of
``daemons.transfer``, ``outcome.json`` and the report to the schedd -- and
only moves the run: the staged sandbox goes to the worker as tar bytes
(``daemons.dask_task.run_job``), the job runs there in a sandbox of the
worker's own, and the sandbox comes back with the exit status and usage,
after which the outputs are sent as for a local run.  No file system is
shared with the worker.

Stopping: hold/remove/vacate (SIGTERM/SIGQUIT to this starter) and the
startd's death set the job's Dask ``Event``; the task kills the job.  A
worker that leaves while the job runs makes the run *evicted*
(``reason: worker_lost``): the schedd requeues the job.
"""

from __future__ import annotations

import os
import traceback
import time

from daemons.dask_task import pack, run_job, unpack
from daemons.starter import HOLD_SPAWN, STOPPING, Starter, job_arguments, job_environment

WORKER_CHECK = 1.0   # seconds between looks at whether the job's worker is still there


class DaskStarter(Starter):
    """One job's starter, running the job on ``job["_DaskWorker"]`` (see the module docstring)."""

    process_name = "dask_starter"

    def __init__(self, job: dict, *args, **kwargs):
        job = dict(job)
        self.worker = job.pop("_DaskWorker")
        self.scheduler = job.pop("_DaskScheduler")
        self.security = job.pop("_DaskSecurity", None)
        super().__init__(job, *args, **kwargs)
        self.sandboxed = True    # nothing is shared with the worker
        self.client = None
        self.future = None
        self.kill_event = f"jobledger-kill-{self.claim}"

    def _spawn(self):
        from distributed import Client
        from daemons.dask_security import security_from
        spec = {"argv": [self.inputs.command, *job_arguments(self.job)],
                "env": job_environment(self.job, "."),
                "stdin": self.inputs.stdin, "stdout": None, "stderr": None}
        spec["stdin"], spec["stdout"], spec["stderr"] = self._sandbox_streams()
        try:
            self.client = Client(self.scheduler, timeout=10, set_as_default=True,  # wait() uses it
                                 security=security_from(self.security))
        except Exception:  # noqa: BLE001 - the cluster, not the job, failed: run it again later
            traceback.print_exc()
            return None
        self.future = self.client.submit(run_job, spec, pack(self.scratch), self.kill_event,
                                         key=f"jobledger-{self.claim}", workers=[self.worker],
                                         allow_other_workers=False, pure=False, retries=0)
        return self.future

    def _wait(self, start: float) -> dict:
        from distributed import Event
        from distributed import wait as wait_for
        killed_by = None
        next_check = time.monotonic() + WORKER_CHECK
        if self.future is None:   # the scheduler could not be reached
            return self._lost(start)
        try:
            while not self.future.done():
                if self.pending and self.pending[-1] in STOPPING and killed_by is None:
                    killed_by = self.pending[-1]
                if self.lifeline_fd is not None and self._select([self.lifeline_fd], 0) \
                        and not os.read(self.lifeline_fd, 1):
                    self.lifeline_fd = None
                    killed_by = killed_by or "startd_gone"
                if killed_by:
                    Event(self.kill_event, client=self.client).set()
                    try:
                        wait_for(self.future, timeout=10)
                    except TimeoutError:
                        pass
                    break
                if time.monotonic() >= next_check:
                    if not self._worker_present():
                        return self._lost(start)
                    next_check = time.monotonic() + WORKER_CHECK
                try:
                    wait_for(self.future, timeout=0.2)
                except TimeoutError:
                    pass
            if not self.future.done() or self.future.status != "finished":
                return self._lost(start, killed_by)
            result = self.future.result()
        finally:
            self._close()
        unpack(result.pop("sandbox", b""), self.scratch)
        result.pop("host", None)
        if killed_by:
            result.update(kind="evicted", reason=killed_by)
        elif result.get("kind") == "spawn_failed":
            result["hold_code"] = HOLD_SPAWN
        return result

    def _worker_present(self) -> bool:
        """Is the job's worker still in the cluster?  Not when the scheduler is gone."""
        if self.client.status != "running":
            return False
        try:
            return self.worker in self.client.scheduler_info(n_workers=-1)["workers"]
        except Exception:  # noqa: BLE001 - a scheduler we cannot ask has lost the job
            return False

    def _lost(self, start: float, reason: str | None = None) -> dict:
        if self.future is not None:
            self.future.cancel()
        return {"kind": "evicted", "reason": reason or "worker_lost", "start": start, "end": time.time(),
                "usage": {}}

    def _close(self) -> None:
        if self.client is not None:
            try:
                self.client.close(timeout=5)
            except Exception:  # noqa: BLE001 - the outcome is what matters now
                pass
            self.client = None

    def _signal_job(self, sig: int) -> None:
        """The job is not a local process: stops go through ``_wait`` and the kill event."""

    def run(self) -> int:
        try:
            return super().run()
        except Exception:
            traceback.print_exc()   # into the startd's stderr file: the launcher exits silently
            raise
