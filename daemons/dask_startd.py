"""A startd whose machines are the workers of a Dask cluster.

Started by the master beside (or, without STARTD in DAEMON_LIST, instead
of) the local startd when the pool's ``DASK_SCHEDULER_ADDRESS`` names a
Dask scheduler.  It speaks the startd's commands (``slots``, ``activate``,
``signal``, ``claims``) so the negotiator and the schedd need nothing new.

Every Dask worker is one partitionable slot ``slot1@dask-<worker name>@<host>``
with the worker's own resources: Cpus (its declared ``Cpus`` resource, else
its threads), Memory (its memory limit, MB), Disk (free KB under its local
directory), Machine/Arch/OpSys as the worker reports them, and a
FileSystemDomain of its own (nothing is shared with it), and GPUs when it
declares a ``GPU`` resource (ids and the job's environment: ``daemons.gpus``).  The worker list is
looked at every second: a worker that joins is advertised and a negotiation
asked for, one that leaves is withdrawn from the collector.

A job matched to a worker runs through ``daemons.dask_starter.DaskStarter``,
forked by the same launcher as local starters.  The starters share this
daemon's one Dask client: a starter hands its staged sandbox to ``dask_run``,
asks ``dask_result`` until the job is done (or lost: its worker left, the
scheduler went away), and passes signals on with ``dask_signal``.  This daemon
makes one ``daemons.dask_task.JobRunner`` actor on each worker with claims
(one task, once) and calls it directly over the client's connection to that
worker, one call per job, whose answer is the job's outcome: no task per job
for the scheduler to schedule and the worker to track, no result to fetch
apart.  A claim whose starter is gone has its job cancelled, and a worker
left without claims has its runner released (Dask retires no worker holding
an actor).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import os
import signal
import socket
import tarfile
import threading
import time
import uuid

from jobledger.eventcore import adwire
from jobledger.daemons import gpus, ipc
from jobledger.daemons.daemon import main_for
from jobledger.daemons.dask_adapt import IDLE_LIMIT, adapt_bounds, cluster_factory, pool_adaptive, workers_wanted
from jobledger.daemons.dask_security import security_from, security_settings
from jobledger.daemons.dask_starter import DaskStarter
from jobledger.daemons.dask_task import HANDLER, JobRunner, pack, unpack, wire_safe
from jobledger.daemons.startd import Startd
from jobledger.eventcore.enums import AdType
from jobledger.eventcore.errors import HTCondorException

RESOURCES = ("Cpus", "Memory", "Disk")
QUEUE_DEPTH = 16        # DASK_QUEUE_DEPTH's default: jobs queued behind the running one, on one worker
QUEUE_JOBS = 48         # DASK_QUEUE_JOBS's default: jobs queued on all the workers together
RUNNER_TIMEOUT = 30.0   # seconds for a worker to make its job runner
SIGNAL_TIMEOUT = 10.0   # seconds for a worker to signal a job


def scheduler_problem(address: str, timeout: float = 5.0) -> str | None:
    """Why the Dask scheduler at ``address`` cannot be reached, in one line, or None.

    Only ``tcp://`` and ``tls://`` addresses (and ``host:port``, which Dask reads as
    tcp) are tried, with a plain TCP connection; other protocols are left to Dask."""
    text = address.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    if scheme not in ("tcp", "tls"):
        return None
    host, colon, port = rest.rstrip("/").rpartition(":")
    if not colon:
        host, port = rest.rstrip("/"), "8786"
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"{address!r} is not a Dask scheduler address (like tcp://host:8786)"
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        return f"cannot reach the Dask scheduler at {text}: {exc.strerror or exc}"
    return None


def queue_share(bound: int, jobs: int, workers: int) -> int:
    """Jobs queued behind the running one on each of ``workers``: an even share of ``jobs``,
    at least one, at most ``bound`` (0: no queue)."""
    return min(bound, max(1, jobs // max(1, workers))) if bound > 0 else 0


def worker_sinful(address: str, machine: str) -> str:
    """A worker as an execute host, ``<ip:port?alias=machine>``, from ``tcp://ip:port``."""
    return f"<{address.split('://', 1)[-1]}?alias={machine}>"


def worker_slot_name(info: dict, facts: dict) -> str:
    name = info.get("name")
    name = str(name if name not in (None, "") else info.get("id", "worker")).replace("@", "_")
    return f"slot1@dask-{name}@{facts.get('Machine') or info.get('host')}"


class DaskStartd(Startd):
    name = "dask_startd"
    log_name = "DaskStartLog"
    starter = DaskStarter

    def __init__(self, config_file: str | None = None):
        super().__init__(config_file)
        self.execute_dir = self.execute_dir / "dask"   # apart from the local startd's state
        self.execute_dir.mkdir(parents=True, exist_ok=True)
        self.execute_real = os.path.realpath(self.execute_dir)   # (a job's scratch directory is in it)
        self.scheduler = self.config("DASK_SCHEDULER_ADDRESS", "").strip()
        self.cluster = None                  # the cluster DASK_CLUSTER makes (daemons.dask_adapt)
        self.made = None
        try:
            import distributed  # noqa: F401 - the optional [dask] extra
        except ImportError:
            self.refuse(HTCondorException("DASK_SCHEDULER_ADDRESS or DASK_CLUSTER is set but the distributed "
                                          "package is not installed: pip install 'jobledger[dask]'"))
        if self.config("DASK_CLUSTER", "").strip():
            if self.scheduler:
                self.refuse(HTCondorException("both DASK_SCHEDULER_ADDRESS and DASK_CLUSTER are set: "
                                              "use a scheduler that runs, or a cluster the pool makes, not both"))
            try:
                self.made = (*cluster_factory(self.config), adapt_bounds(self.config))
            except HTCondorException as exc:
                self.refuse(exc)
        elif not self.scheduler:
            self.refuse(HTCondorException("DASK_SCHEDULER_ADDRESS is not set: no Dask cluster to use"))
        else:
            problem = scheduler_problem(self.scheduler)
            if problem:
                self.refuse(HTCondorException(problem))
        self.security = security_settings(self.config)
        # Jobs a starter queues on its worker behind the one running (daemons.dask_starter):
        # DASK_QUEUE_JOBS shared among the workers, at most DASK_QUEUE_DEPTH on one (``queue_depth``).
        self.depth_bound = max(0, self.config_int("DASK_QUEUE_DEPTH", QUEUE_DEPTH))
        self.queue_jobs = max(1, self.config_int("DASK_QUEUE_JOBS", QUEUE_JOBS))
        self.workers: dict[str, dict] = {}   # worker address -> {"slot", "total", "facts"}
        self.client = None
        self.tasks: dict[str, Task] = {}     # claim -> its job's run
        self.runners: dict[str, Runner] = {}   # worker address -> the job runner on it
        # workers a call could not reach: no new claim there until the scheduler lets them
        # go, or they answer again (``_refresh_workers``); their slots are withdrawn
        self.unreachable: set[str] = set()
        self._withdrawn: set[str] = set()
        self._runners_lock = threading.Lock()
        self._making: dict[str, threading.Lock] = {}   # worker address -> held while its runner is made
        self._numbers = itertools.count(1)

    def started(self) -> None:
        if self.made is not None:
            self._make_cluster(*self.made)
        try:
            self.client = self._connect(30)
        except (OSError, TimeoutError) as exc:
            self.refuse(HTCondorException(f"cannot reach the Dask scheduler {self.scheduler}: {exc}"))
        self._refresh_workers()
        super().started()

    def _make_cluster(self, factory, options: dict, bounds) -> None:
        """Make the cluster DASK_CLUSTER names and use its scheduler; with DASK_ADAPT_MAXIMUM,
        let the queue scale it (``daemons.dask_adapt``)."""
        try:
            self.cluster = factory(**options)
            self.scheduler = self.cluster.scheduler_address
            if bounds is not None:
                minimum, maximum, interval = bounds
                self.cluster.adapt(Adaptive=pool_adaptive(self._demand, self._claimed_workers),
                                   minimum=minimum, maximum=maximum, interval=interval)
        except Exception as exc:  # noqa: BLE001 - whatever the cluster manager raises, said once
            self.refuse(HTCondorException(f"DASK_CLUSTER could not make its cluster: {exc!r}"))
        self.log.info("made the Dask cluster %r, its scheduler at %s", self.cluster, self.scheduler)

    def _demand(self) -> int:
        """Workers the pool wants: the cores the schedds' idle jobs request, and those the
        jobs on our workers hold, in workers of the cores one has."""
        with self._lock:
            held = sum(int(c["resources"].get("Cpus", 0)) for c in self.claims.values() if c.get("worker"))
            per_worker = max((w["total"]["Cpus"] for w in self.workers.values()), default=1)
        idle = 0
        for schedd in self.located(AdType.Schedd):
            try:
                found = ipc.call(schedd, "idle_by_submitter", timeout=10, limit=IDLE_LIMIT)
            except HTCondorException as exc:
                self.log.info("could not ask %s for its idle jobs: %s", schedd, exc)
                continue
            idle += sum(_cores(ad) for jobs in found.values() for ad in jobs)
        return workers_wanted(idle, held, per_worker)

    def _claimed_workers(self) -> set:
        """Names of the workers holding claims: never retired by the scaling."""
        with self._lock:
            busy = {c.get("worker") for c in self.claims.values()}
            return {w.get("name") for address, w in self.workers.items() if address in busy}

    def _connect(self, timeout: float):
        from distributed import Client
        # (direct_to_workers: the runners are called over a connection to their workers)
        return Client(self.scheduler, timeout=timeout, set_as_default=False, direct_to_workers=True,
                      security=security_from(self.security))

    def _worker_infos(self) -> dict:
        """The scheduler's workers; none while it is unreachable (a scheduler that went
        away and came back is connected to again), the ones known when it is only slow.

        The scheduler is asked directly: ``Client.scheduler_info()`` returns a cached
        identity that the client's own periodic refresh may have replaced meanwhile
        with one listing no workers."""
        try:
            if self.client.status in ("closed", "failed"):
                self.client.close(timeout=2)
                self.client = self._connect(2)
                self.runners.clear()     # made through the old client: gone with it
            return self.client.sync(self.client.scheduler.identity, n_workers=-1)["workers"]
        except Exception as exc:  # noqa: BLE001 - an unreachable scheduler has no workers
            self.log.info("Dask scheduler not answering: %s", exc)
            if self.client.status == "running":
                with self._lock:
                    return {address: None for address in self.workers}
            return {}

    # -- workers ---------------------------------------------------------------------
    def _refresh_workers(self) -> None:
        """Take in joined workers, drop departed ones (their ads leave the collector)."""
        infos = self._worker_infos()
        new = [address for address in infos if address not in self.workers]
        unreachable = set(self.unreachable)     # (added to from the client's event loop)
        asked = new + [address for address in unreachable if address in infos and address in self.workers]
        facts = {}
        if asked:
            try:
                facts = self.client.run(_facts, workers=asked, on_error="return", wait=True)
            except Exception as exc:  # noqa: BLE001 - try again next round
                self.log.info("could not ask new workers for their facts: %s", exc)
        back = [address for address in asked if address not in new and isinstance(facts.get(address), dict)]
        self.unreachable.difference_update(back)
        self._withdrawn.difference_update(back)
        for address in unreachable - self._withdrawn - set(back):
            self.log.info("Dask worker %s cannot be reached: its slots are withdrawn", address)
            self._withdraw(address)
            self._withdrawn.add(address)
        joined = bool(back)
        with self._lock:
            for address in new:
                found = facts.get(address)
                if not isinstance(found, dict):
                    continue
                info = infos[address]
                declared = info.get("resources") or {}
                gpu_ids = gpus.machine_gpu_ids(int(declared.get("GPU") or declared.get("GPUs") or 0),
                                               found.get("CudaVisibleDevices"))
                total = {"Cpus": int(declared.get("Cpus") or info.get("nthreads") or 1),
                         "Memory": int(declared.get("Memory") or (info.get("memory_limit") or 0) // 2**20),
                         "Disk": int(declared.get("Disk") or found["Disk"]),
                         "GPUs": len(gpu_ids)}
                self.workers[address] = {"slot": worker_slot_name(info, found), "total": total,
                                         "name": info.get("name"), "threads": int(info.get("nthreads") or 1),
                                         "facts": found, "gpus": gpu_ids}
                self.log.info("Dask worker %s joined as %s", address, self.workers[address]["slot"])
                joined = True
            gone = [address for address in self.workers if address not in infos]
            left = [(address, self.workers.pop(address)["slot"]) for address in gone]
        for address, slot in left:
            self.log.info("Dask worker %s of %s left", address, slot)
            self.unreachable.discard(address)
            self._withdrawn.discard(address)
            self._drop_runner(address)
            self._withdraw(address)
        if joined or left:
            self._slot_freed()

    def _withdraw(self, address: str) -> None:
        """The slots of the worker at ``address`` leave the collector."""
        try:
            ipc.call(self.collector_address, "invalidate", timeout=2, mytype="Machine",
                     constraint=f"DaskWorkerAddress == {adwire.quote(address)}")
        except HTCondorException:
            pass

    def _advertise_changes(self) -> None:
        self._refresh_workers()
        self._release_orphans()
        super()._advertise_changes()

    # -- the starters' tasks -----------------------------------------------------------
    def handlers(self) -> dict:
        handlers = super().handlers()
        handlers.update({"dask_run": self._dask_run, "dask_result": self._dask_result,
                         "dask_results": self._dask_results, "dask_run_many": self._dask_run_many,
                         "activate_many": self._activate_many,
                         "dask_signal": self._dask_signal, "dask_cancel": self._dask_cancel})
        return handlers

    def queue_depth(self) -> int:
        """How many jobs a starter queues behind its running one: an even share of
        DASK_QUEUE_JOBS among the workers (at least one), at most DASK_QUEUE_DEPTH (0: none).
        A few workers each keep a deep queue; many keep short ones, so that the jobs
        queued in all stay about the same and no long queue is left to drain at the end."""
        with self._lock:
            workers = sum(1 for address in self.workers if address not in self.unreachable)
        return queue_share(self.depth_bound, self.queue_jobs, workers)

    def _worker_of(self, claim: str) -> str | None:
        with self._lock:
            entry = self.claims.get(claim)
            return entry.get("worker") if entry is not None else None

    def _dask_run(self, peer, claim: str, spec: dict, scratch: str, wait: float = 0.0,
                  then: str | None = None) -> dict:
        """Submit the job of ``claim`` to its worker: ``spec`` says how to run it (``run_job``),
        the sandbox is what its starter staged in ``scratch``, its directory under EXECUTE
        (read here: no bytes pass through the starter's connection).  Then as ``dask_result``;
        with ``then`` (the claim of the starter's running job, when it queues this one
        behind it), that job's ``dask_result`` at once comes along as ``then``."""
        answer = self._submit(peer, claim, spec, scratch, wait)
        if then is not None and answer.get("state") == "running":
            answer["then"] = self._dask_result(peer, then, 0.0)
        answer["depth"] = self.queue_depth()     # (it follows the workers that come and go)
        return answer

    def _dask_run_many(self, peer, items: list, then: str | None = None, also: list | None = None) -> dict:
        """``dask_run`` of several jobs in one call, in order (each queued behind the one
        before it): ``{"replies": {claim: its answer}}``, and with ``then`` (the claim of
        the starter's running job) that job's ``dask_result`` at once (``then``); with
        ``also`` (claims of jobs queued before), theirs (``also``, as ``dask_results``)."""
        if not isinstance(items, list) or not all(isinstance(item, dict) and isinstance(item.get("claim"), str)
                                                  and isinstance(item.get("spec"), dict)
                                                  and isinstance(item.get("scratch"), str) for item in items):
            raise HTCondorException("dask_run_many: items must be a list of {claim, spec, scratch}")
        answer: dict = {"replies": {item["claim"]: self._submit(peer, item["claim"], item["spec"], item["scratch"], 0.0)
                                    for item in items}}
        if then is not None:
            answer["then"] = self._dask_result(peer, then, 0.0)
        if also:
            answer["also"] = self._dask_results(peer, [claim for claim in also
                                                       if claim != then and claim not in answer["replies"]])
        answer["depth"] = self.queue_depth()
        return answer

    def _submit(self, peer, claim: str, spec: dict, scratch: str, wait: float) -> dict:
        if os.path.dirname(os.path.realpath(scratch)) != self.execute_real:
            raise HTCondorException(f"{scratch!r} is no scratch directory of this startd")
        with self._lock:
            entry = self.claims.get(claim)
            address = entry.get("worker") if entry is not None else None
            if address not in self.workers or address in self.unreachable or claim in self.tasks:
                return {"state": "lost"}
            held = bool(self.workers[address]["gpus"])
            assigned = list(entry.get("gpus", ()))
            behind = entry.get("behind")
        if behind is not None:      # run only after the job of that claim exited (run_job)
            spec = dict(spec, behind=behind)
        spec = dict(spec, env={**spec.get("env", {}), **gpus.job_environment(
            assigned, held, self.config("ENVIRONMENT_FOR_AssignedGPUs", gpus.DEFAULT_ENVIRONMENT),
            self.config("ENVIRONMENT_VALUE_FOR_UnAssignedGPUs", gpus.DEFAULT_UNASSIGNED))})
        task = Task(scratch, address)
        self.tasks[claim] = task
        try:
            runner = self._runner(address)
        except Exception as exc:  # noqa: BLE001 - a worker that cannot make one runs nothing
            # (lost, or not answering): it takes no new claim, and its slots leave the
            # collector, until the scheduler lets it go or it answers again (_refresh_workers);
            # else the job evicted here is matched to the same slot at once and waits out
            # RUNNER_TIMEOUT there
            self.log.info("claim %s: no job runner on %s: %r", claim, address, exc)
            self.tasks.pop(claim, None)
            self.unreachable.add(address)
            self._changed.set()
            return {"state": "lost"}
        try:
            task.future = self._call(runner, "run", spec, pack(scratch), claim)
        except BaseException:
            self.tasks.pop(claim, None)
            raise
        task.future.add_done_callback(task.done)
        return self._dask_result(peer, claim, wait)

    # -- the runners on the workers (daemons.dask_task.JobRunner) --------------------------
    def _runner(self, address: str) -> Runner:
        """The job runner on the worker at ``address``, made there on first use: once on
        each worker, on several workers at the same time (the first jobs of a run come to
        all the workers at once, and each runner takes a round trip through the scheduler)."""
        with self._runners_lock:
            runner = self.runners.get(address)
            if runner is not None:
                return runner
            making = self._making.setdefault(address, threading.Lock())
        with making:
            with self._runners_lock:
                runner = self.runners.get(address)
            if runner is None:
                key = f"jobledger-runner-{uuid.uuid4().hex}"
                future = self.client.submit(JobRunner, key=key, workers=[address], allow_other_workers=False,
                                            actor=True, retries=0)
                future.result(timeout=RUNNER_TIMEOUT)   # made (its worker holds it), or raises
                with self._runners_lock:
                    runner = self.runners[address] = Runner(address, key, future)
            return runner

    def _call(self, runner: Runner, function: str, *args) -> concurrent.futures.Future:
        """Call ``function`` of ``runner`` on its worker, over the client's direct
        connection to it, through the worker's handler ``HANDLER`` (``runner_call``): the
        answer's future.  Arguments and answers msgpack carries as they are (``wire_safe``)
        go in the messages themselves: no pickling on either side for a job's spec, claim,
        outcome and small sandboxes."""
        from distributed.protocol import to_serialize
        sent = [arg if wire_safe(arg) else to_serialize(arg) for arg in args]

        async def call():
            try:
                answer = await getattr(self.client.rpc(runner.address), HANDLER)(
                    actor=runner.key, function=function, args=sent)
                if not isinstance(answer, dict) or answer.get("status") not in ("OK", "error"):
                    raise LookupError(f"the Dask worker {runner.address} holds no job runner {runner.key}")
            except Exception as exc:
                # Not the job's failure (that comes as an answer): the worker is unreachable or
                # no longer holds the runner (a scheduler that restarted): the next job makes one.
                self._forget_runner(runner)
                if isinstance(exc, OSError):    # unreachable (CommClosedError is one): no new claims there
                    self.unreachable.add(runner.address)
                    self._changed.set()
                raise
            if answer["status"] != "OK":
                raise answer.get("exception") or RuntimeError(f"the runner's {function} failed")
            return answer["result"]
        return asyncio.run_coroutine_threadsafe(call(), self.client.loop.asyncio_loop)

    def _drop_runner(self, address: str) -> None:
        """Let go of the runner on ``address``: released, the worker deletes it (and kills
        any job it still runs); a worker holding none can be retired by Dask's scaling."""
        self._release(self.runners.pop(address, None))
        with self._runners_lock:
            self._making.pop(address, None)

    def _forget_runner(self, runner: Runner) -> None:
        """``runner`` is not to be called again (its jobs, if any, are lost).  (On the
        client's event loop: no lock taken.)"""
        if self.runners.get(runner.address) is runner:
            self.runners.pop(runner.address, None)
            self._release(runner)

    def _release(self, runner: Runner | None) -> None:
        if runner is not None:
            try:
                runner.future.release()
            except Exception as exc:  # noqa: BLE001 - a client that is gone released it already
                self.log.info("releasing the runner on %s: %r", runner.address, exc)

    def _dask_result(self, peer, claim: str, wait: float = 0.5) -> dict:
        """``{"state": "running"}``, ``{"state": "done", "result": outcome}`` (what the job
        made or changed is in the claim's scratch directory by then) or ``{"state": "lost"}``
        (the worker or the scheduler went away, or the task failed)."""
        task = self.tasks.get(claim)
        if task is None:
            return {"state": "lost"}
        if not task.collected.is_set() and self._worker_of(claim) in self.workers \
                and self.client.status == "running":
            task.collected.wait(max(0.0, min(float(wait), 5.0)))
        if not task.collected.is_set():
            if self._worker_of(claim) in self.workers and self.client.status == "running":
                return {"state": "running"}
            self.log.info("claim %s: its Dask worker or the scheduler went away", claim)
        self.tasks.pop(claim, None)
        if task.outcome is None:
            self.log.info("claim %s: no outcome from its Dask worker: %r", claim, task.failure)
            if task.future is not None and not task.future.done():
                self._cancel_on(claim, self._worker_of(claim))   # should the worker come back
            return {"state": "lost"}
        result = dict(task.outcome)
        try:
            unpack(result.pop("sandbox", b""), task.scratch)
        except (OSError, tarfile.TarError) as exc:
            self.log.info("claim %s: the sandbox from its worker would not unpack: %s", claim, exc)
            return {"state": "lost"}
        return {"state": "done", "result": result}

    def _dask_results(self, peer, claims: list, wait: float = 0.0) -> dict:
        """``dask_result`` of each of ``claims`` at once: a starter asking about the jobs it
        queued behind its own.  With ``wait`` (seconds, 5 at most), once the last of them
        is over or that long has passed (they run in turn: the last ends last)."""
        if not isinstance(claims, list) or not all(isinstance(claim, str) for claim in claims):
            raise HTCondorException("dask_results: claims must be a list of claim ids")
        if not isinstance(wait, (int, float)) or isinstance(wait, bool) or wait < 0:
            raise HTCondorException("dask_results: wait must be a number of seconds, 0 or more")
        last = self.tasks.get(claims[-1]) if claims and wait else None
        if last is not None and self._worker_of(claims[-1]) in self.workers and self.client.status == "running":
            last.collected.wait(min(float(wait), 5.0))
        # (once each: a job's outcome is handed out once, the claim asked again is "lost")
        return {claim: self._dask_result(peer, claim, 0.0) for claim in dict.fromkeys(claims)}

    def _dask_signal(self, peer, claim: str, signum: int) -> bool:
        """Send ``signum`` to the job of ``claim`` on its worker."""
        address = self._worker_of(claim)
        runner = self.runners.get(address) if address is not None else None
        if runner is None or claim not in self.tasks:
            return False
        try:
            return self._call(runner, "signal", claim, int(signum)).result(SIGNAL_TIMEOUT) is True
        except Exception as exc:  # noqa: BLE001 - a worker that is gone has no job to signal
            self.log.info("claim %s: could not signal its job: %r", claim, exc)
            return False

    def _release_orphans(self) -> None:
        """Jobs whose starters are gone are cancelled (killed on their workers); the runner
        of a worker with no claim left is let go."""
        with self._lock:
            gone = [(claim, task) for claim, task in self.tasks.items() if claim not in self.claims]
            busy = {c.get("worker") for c in self.claims.values()}
        for claim, task in gone:
            if self.tasks.pop(claim, None) is not None:
                self._cancel_on(claim, task.address)
        for address in [a for a in list(self.runners) if a not in busy]:
            with self._lock:   # (a runner is made or used only for a claim on its worker)
                if any(c.get("worker") == address for c in self.claims.values()):
                    continue
                runner = self.runners.pop(address, None)
            self._release(runner)

    def _cancel_on(self, claim: str, address: str | None) -> None:
        """Tell the runner on ``address`` that the job of ``claim`` is not to run (more)."""
        runner = self.runners.get(address) if address is not None else None
        if runner is None:
            return     # none: its worker, and the job with it, are gone
        try:
            self._call(runner, "cancel", claim)
        except Exception as exc:  # noqa: BLE001 - a worker that is gone runs nothing
            self.log.info("claim %s: could not cancel its job: %r", claim, exc)

    # -- resources and ads ---------------------------------------------------------------
    def free_on(self, address: str) -> dict:
        free = dict(self.workers[address]["total"])
        for slot in self.claims.values():
            if slot.get("worker") == address:
                for key in free:
                    free[key] -= slot["resources"].get(key, 0)
        return free

    def slot_ads(self) -> list[dict]:
        with self._lock:
            shown = [(w["slot"], w["total"], self.free_on(address), w["facts"],
                      [c for c in self.claims.values() if c.get("worker") == address and not c.get("behind")],
                      w["gpus"])
                     for address, w in self.workers.items() if address not in self.unreachable]
        ads = []
        for slot_name, total, free, facts, claims, gpu_ids in shown:
            mine = self.machine_ads(slot_name, total, free, claims, {
                "Machine": facts["Machine"], "Arch": facts["Arch"], "OpSys": facts["OpSys"],
                "FileSystemDomain": f"dask:{slot_name}", "UidDomain": f"dask:{slot_name}",
                "DaskWorkerAddress": next(a for a, w in self.workers.items() if w["slot"] == slot_name)})
            if gpu_ids:
                _with_gpus(mine, gpu_ids, free["GPUs"], claims)
            ads += mine
        return ads

    def _activate(self, peer, claim: str, job: dict, request: dict, reuse: str | None = None,
                  slot: str | None = None, continuing: bool = False, queued: bool = False) -> dict:
        """Start ``job`` on the worker of the matched ``slot`` (or of the reused claim).
        With ``continuing`` the reused claim's starter, which offered to, runs ``job``
        next on the same worker: the claim moves to it, no starter is forked.  With
        ``queued`` that starter queues ``job`` on the worker behind the one it runs
        (``_queue_behind``); ``continuing`` then moves the claim to it (``_promote``)."""
        asked = job.get("RequestGPUs")
        wanted = {"Cpus": int(request.get("Cpus", 1)), "Memory": int(request.get("Memory", 0)),
                  "Disk": int(request.get("Disk", 0)),
                  "GPUs": int(asked) if isinstance(asked, (int, float)) and not isinstance(asked, bool) else 0}
        if queued:
            return self._queue_behind(claim, job, wanted, reuse)
        with self._lock:
            if self.stopping.is_set():
                raise HTCondorException("the Dask startd is shutting down")
            if continuing and self.claims.get(claim, {}).get("behind") == reuse and reuse is not None:
                return self._promote(claim, reuse)
            if claim in self.claims:
                raise HTCondorException(f"claim {claim} is already active")
            old = self.claims.get(reuse) if reuse else None
            if old is not None and old.get("owner") != job.get("Owner"):
                old = None
            if continuing and (old is None or not old["pid"] or old.get("orphan")):
                raise HTCondorException(f"claim {reuse} has no starter of ours to run claim {claim}")
            address = old["worker"] if old is not None else \
                next((a for a, w in self.workers.items() if w["slot"] == slot), None)
            if address not in self.workers:
                raise HTCondorException(f"no Dask worker behind slot {slot!r}")
            if address in self.unreachable:
                raise HTCondorException(f"the Dask worker behind slot {slot!r} cannot be reached")
            free = self.free_on(address)
            if old is not None:
                for key in free:
                    free[key] += old["resources"].get(key, 0)
            short = [key for key, amount in wanted.items() if amount > free[key]]
            if short:
                raise HTCondorException(f"not enough {', '.join(short)} left for claim {claim}")
            if old is not None:
                old["resources"] = {key: 0 for key in old["resources"]}
                old_gpus, old["gpus"] = old.get("gpus", []), []
            held = self.workers[address]["gpus"]
            assigned = gpus.pick(held, {gpu for c in self.claims.values() if c.get("worker") == address
                                        for gpu in c.get("gpus", ())}, wanted["GPUs"])
            if assigned is None:   # counted free above, so not expected: the ids are the truth
                if old is not None:
                    old["gpus"] = old_gpus
                raise HTCondorException(f"not enough GPUs left for claim {claim}")
            number = next(self._numbers)
            pslot = self.workers[address]["slot"]
            name = pslot.replace("slot1@", f"slot1_{number}@", 1)
            entry = {"name": name, "resources": wanted, "worker": address,
                     "job": f"{job.get('ClusterId')}.{job.get('ProcId')}", "owner": job.get("Owner"),
                     "pid": 0, "start": None, "since": int(time.time()), "gpus": assigned}
            if continuing:      # the same dynamic slot and starter, a new claim and job
                del self.claims[reuse]
                entry.update(name=old["name"], pid=old["pid"], start=old["start"],
                             scratch=os.path.join(self.execute_dir, f"dir_{old['pid']}_{number}"))
            self.claims[claim] = entry
            self.job_starts.add(time.time())
        if continuing:
            self._changed.set()
            return {"slot": entry["name"], "pid": entry["pid"], "start": entry["start"],
                    "scratch": entry["scratch"], "continued": True, **self._started_on(address, assigned)}
        started = self._launch(claim, entry, dict(job, _DaskStartd=self.address_of(self.name),
                                                  _DaskQueueDepth=self.queue_depth()))
        started.update(self._started_on(address, assigned))
        return started

    def _activate_many(self, peer, calls: list) -> dict:
        """``activate`` for each of ``calls`` (its arguments) in order, in one call: a claim
        moved along jobs that ended (``continuing``), or jobs queued one behind the other
        (``queued``).  ``{"done": [each one's answer], "error": why the first that failed
        did, or None}``; none after a failure is tried."""
        done: list = []
        for call in calls if isinstance(calls, list) else []:
            try:
                if not isinstance(call, dict):
                    raise HTCondorException("activate_many: each call is a dict of activate's arguments")
                done.append(self._activate(peer, **call))
            except (HTCondorException, TypeError, KeyError, ValueError) as exc:
                return {"done": done, "error": str(exc)}
        return {"done": done, "error": None}

    def _queue_behind(self, claim: str, job: dict, wanted: dict, running: str | None) -> dict:
        """A claim for ``job``, queued behind the claim ``running`` (itself running or
        queued) on the same worker and dynamic slot: it holds no resources of its own (it
        takes those of the claim before it when promoted) and shows in no slot ad; its
        starter submits it to the worker's queue."""
        with self._lock:
            if self.stopping.is_set():
                raise HTCondorException("the Dask startd is shutting down")
            old = self.claims.get(running) if running else None
            if claim in self.claims:
                raise HTCondorException(f"claim {claim} is already active")
            if old is None or not old["pid"] or old.get("orphan") \
                    or old.get("owner") != job.get("Owner") or old.get("worker") not in self.workers:
                raise HTCondorException(f"claim {running} has no job of this owner to queue behind")
            if any(c.get("behind") == running for c in self.claims.values()):
                raise HTCondorException(f"claim {running} has a job queued behind it already")
            held = old.get("wanted") or old["resources"]
            if held.get("Cpus", 0) < self.workers[old["worker"]]["threads"]:
                # (a worker with threads to spare would start it at once, beside the running one)
                raise HTCondorException(f"claim {running} leaves threads of its worker free: no queue")
            if wanted["GPUs"] or any(amount > held.get(key, 0) for key, amount in wanted.items()):
                raise HTCondorException(f"claim {claim} does not fit in the slot of claim {running}")
            number = next(self._numbers)
            entry = {"name": old["name"], "resources": {key: 0 for key in wanted}, "wanted": wanted,
                     "worker": old["worker"], "job": f"{job.get('ClusterId')}.{job.get('ProcId')}",
                     "owner": job.get("Owner"), "pid": old["pid"], "start": old["start"],
                     "since": int(time.time()), "gpus": [], "behind": running,
                     "scratch": os.path.join(self.execute_dir, f"dir_{old['pid']}_{number}")}
            self.claims[claim] = entry
        return {"slot": entry["name"], "pid": entry["pid"], "start": entry["start"], "scratch": entry["scratch"]}

    def _promote(self, claim: str, running: str) -> dict:
        """(Under the lock.)  The job queued behind ``running`` is next: the claim moves to it."""
        entry = self.claims[claim]
        address = entry["worker"]
        if running not in self.claims or address not in self.workers:
            raise HTCondorException(f"claim {running} is gone: claim {claim} has no slot to run in")
        del self.claims[running]
        entry.pop("behind")
        entry["resources"] = entry.pop("wanted")
        entry["since"] = int(time.time())
        self.job_starts.add(time.time())
        self._changed.set()
        return {"slot": entry["name"], "pid": entry["pid"], "start": entry["start"],
                "scratch": entry["scratch"], "continued": True, **self._started_on(address, [])}

    def _signal(self, peer, claim: str, what: str) -> bool:
        """A claim queued behind another is cancelled (its task never starts, or is
        killed); the others' starters are signalled as on the local startd."""
        with self._lock:
            queued = self.claims.get(claim, {}).get("behind") is not None
        if not queued:
            return super()._signal(peer, claim, what)
        self._dask_cancel(peer, claim)
        return True

    def _dask_cancel(self, peer, claim: str) -> bool:
        """The task of ``claim`` is not to run (or to run no more): released, and its job
        killed on the worker if it started; a claim still queued behind another goes."""
        with self._lock:
            entry = self.claims.get(claim)
            if entry is not None and entry.get("behind") is not None:
                del self.claims[claim]
            address = entry.get("worker") if entry is not None else None
        task = self.tasks.pop(claim, None)
        if task is None or task.future is None:
            return False
        self._cancel_on(claim, address)
        return True

    def _started_on(self, address: str, assigned: list) -> dict:
        """What ``activate`` adds for a job on the worker at ``address``: the EXECUTE event
        names the worker, as HTCondor's the execute machine, and the job's ad its GPUs,
        as HTCondor's starter puts them there."""
        started: dict = {"host": worker_sinful(address, self.workers[address]["facts"]["Machine"])}
        if assigned:
            started["attrs"] = {"AssignedGPUs": adwire.quote(",".join(assigned))}
        return started

    def withdraw_ads(self) -> None:
        with self._lock:
            addresses = list(self.workers)
        for address in addresses:
            self._withdraw(address)
        if self.client is not None:
            self.client.close(timeout=5)
        if self.cluster is not None:
            try:
                self.cluster.close(timeout=10)    # the workers it made go with it
            except Exception as exc:  # noqa: BLE001 - stopping: said, not raised
                self.log.info("closing the Dask cluster: %r", exc)


class Task:
    """A claim's job on its worker: the runner call's future, its outcome (``collected``)."""

    def __init__(self, scratch: str, address: str | None = None):
        self.scratch = scratch
        self.address = address
        self.future: concurrent.futures.Future | None = None
        self.outcome: dict | None = None
        self.failure: BaseException | None = None
        self.collected = threading.Event()

    def done(self, future: concurrent.futures.Future) -> None:
        try:
            outcome = future.result()
            self.outcome = outcome if isinstance(outcome, dict) else None
        except BaseException as exc:  # noqa: BLE001 - a call that failed is a lost run
            self.failure = exc
        self.collected.set()


class Runner:
    """A ``JobRunner`` actor on one worker: its address, key and the future holding it."""

    def __init__(self, address: str, key: str, future):
        self.address, self.key, self.future = address, key, future


def _with_gpus(ads: list[dict], ids: list[str], free: int, claims: list) -> None:
    """GPUs on a worker's ads (``machine_ads`` order: the partitionable slot, then one
    dynamic slot per claim): the worker declared a ``GPU`` resource (``--resources GPU=n``).
    ``AssignedGPUs``: every id on the partitionable slot, a claim's own on its dynamic slot."""
    for ad in ads:
        ad.update(TotalGPUs=len(ids), DetectedGPUs=len(ids), TotalSlotGPUs=len(ids),
                  MachineResources="Cpus Memory Disk Swap GPUs", AssignedGPUs=",".join(ids))
    ads[0]["GPUs"] = free
    for ad, claim in zip(ads[1:], claims):
        ad["GPUs"] = claim["resources"].get("GPUs", 0)
        ad["AssignedGPUs"] = ",".join(claim.get("gpus", ()))


def _cores(ad: dict) -> int:
    """The cores an idle job's ad (attribute texts) requests: RequestCpus when a literal, else 1."""
    try:
        value = adwire.literal(ad.get("RequestCpus"))
    except Exception:  # noqa: BLE001 - an expression: one core, as a first guess
        return 1
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1 else 1


def _facts(dask_worker=None) -> dict:
    from jobledger.daemons.dask_task import worker_facts
    return worker_facts(dask_worker)


if __name__ == "__main__":
    main_for(DaskStartd)
