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
daemon's one connection to the Dask scheduler: a starter hands its staged
sandbox to ``dask_run``, asks ``dask_result`` until the task is done (or
lost: its worker left, the scheduler went away), and passes signals on with
``dask_signal``; this daemon submits the task, holds its future and signals
the job on its worker (``daemons.dask_task.signal_job``).  A claim whose
starter is gone has its task released, and the worker kills the job.
"""

from __future__ import annotations

import base64
import itertools
import socket
import threading
import time

from jobledger.daemons import adwire, gpus, ipc
from jobledger.daemons.daemon import main_for
from jobledger.daemons.dask_security import security_from, security_settings
from jobledger.daemons.dask_starter import DaskStarter
from jobledger.daemons.dask_task import run_job, signal_job
from jobledger.daemons.startd import Startd
from jobledger.eventcore.errors import HTCondorException

RESOURCES = ("Cpus", "Memory", "Disk")
RESULT_TIMEOUT = 20.0   # seconds to fetch a finished task's outcome and sandbox from its worker


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
        self.scheduler = self.config("DASK_SCHEDULER_ADDRESS", "").strip()
        if not self.scheduler:
            self.refuse(HTCondorException("DASK_SCHEDULER_ADDRESS is not set: no Dask cluster to use"))
        problem = scheduler_problem(self.scheduler)
        if problem:
            self.refuse(HTCondorException(problem))
        try:
            import distributed  # noqa: F401 - the optional [dask] extra
        except ImportError:
            self.refuse(HTCondorException("DASK_SCHEDULER_ADDRESS is set but the distributed package "
                                          "is not installed: pip install 'jobledger[dask]'"))
        self.security = security_settings(self.config)
        self.workers: dict[str, dict] = {}   # worker address -> {"slot", "total", "facts"}
        self.client = None
        self.tasks: dict[str, object] = {}   # claim -> the Future of its job's task
        self._numbers = itertools.count(1)

    def started(self) -> None:
        try:
            self.client = self._connect(30)
        except (OSError, TimeoutError) as exc:
            self.refuse(HTCondorException(f"cannot reach the Dask scheduler {self.scheduler}: {exc}"))
        self._refresh_workers()
        super().started()

    def _connect(self, timeout: float):
        from distributed import Client
        return Client(self.scheduler, timeout=timeout, set_as_default=False,
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
        facts = {}
        if new:
            try:
                facts = self.client.run(_facts, workers=new, on_error="return", wait=True)
            except Exception as exc:  # noqa: BLE001 - try again next round
                self.log.info("could not ask new workers for their facts: %s", exc)
        joined = False
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
                                         "facts": found, "gpus": gpu_ids}
                self.log.info("Dask worker %s joined as %s", address, self.workers[address]["slot"])
                joined = True
            gone = [address for address in self.workers if address not in infos]
            left = [(address, self.workers.pop(address)["slot"]) for address in gone]
        for address, slot in left:
            self.log.info("Dask worker %s of %s left", address, slot)
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
                         "dask_signal": self._dask_signal})
        return handlers

    def _worker_of(self, claim: str) -> str | None:
        with self._lock:
            entry = self.claims.get(claim)
            return entry.get("worker") if entry is not None else None

    def _dask_run(self, peer, claim: str, spec: dict, sandbox: str) -> bool:
        """Submit the job of ``claim`` to its worker: ``sandbox`` is the staged sandbox (tar, base64)."""
        address = self._worker_of(claim)
        if address is None or address not in self.workers:
            return False
        future = self.client.submit(
            run_job, spec, base64.b64decode(sandbox), claim, key=f"jobledger-{claim}",
            workers=[address], allow_other_workers=False, pure=False, retries=0)
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        self.tasks[claim] = (future, done)
        return True

    def _dask_result(self, peer, claim: str, wait: float = 0.5) -> dict:
        """``{"state": "running"}``, ``{"state": "done", "result": outcome}`` (the sandbox
        in it base64) or ``{"state": "lost"}`` (the worker or the scheduler went away)."""
        future, done = self.tasks.get(claim, (None, None))
        if future is None:
            return {"state": "lost"}
        if future.status == "pending" and self._worker_of(claim) in self.workers \
                and self.client.status == "running":
            # A done callback, not result(timeout=): that call can fail under load instead
            # of timing out (a cancelled wait inside distributed's sync).
            done.wait(max(0.0, min(float(wait), 5.0)))
            if future.status == "pending":
                return {"state": "running"}
        if future.status != "finished":
            self.tasks.pop(claim, None)   # the last reference: the task is released, not waited for
            self.log.info("claim %s: the Dask task is %s", claim, future.status)
            return {"state": "lost"}
        self.tasks.pop(claim, None)
        try:   # held on its worker: gone with it when the worker died since it finished
            result = dict(future.result(timeout=RESULT_TIMEOUT))
        except Exception as exc:  # noqa: BLE001 - a result we cannot fetch is a lost run
            self.log.info("claim %s: could not fetch the Dask task's result: %r", claim, exc)
            return {"state": "lost"}
        result["sandbox"] = base64.b64encode(result.get("sandbox", b"")).decode("ascii")
        return {"state": "done", "result": result}

    def _dask_signal(self, peer, claim: str, signum: int) -> bool:
        """Send ``signum`` to the job of ``claim`` on its worker."""
        address = self._worker_of(claim)
        if address is None or claim not in self.tasks:
            return False
        try:
            done = self.client.run(signal_job, claim, int(signum), workers=[address], on_error="return")
        except Exception as exc:  # noqa: BLE001 - a worker that is gone has no job to signal
            self.log.info("claim %s: could not signal its job: %s", claim, exc)
            return False
        return done.get(address) is True

    def _release_orphans(self) -> None:
        """Tasks whose starters are gone are released: their workers kill the jobs."""
        with self._lock:
            gone = [claim for claim in self.tasks if claim not in self.claims]
        for claim in gone:
            self.tasks.pop(claim, None)   # the last reference: the scheduler releases the task

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
                      [c for c in self.claims.values() if c.get("worker") == address], w["gpus"])
                     for address, w in self.workers.items()]
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
                  slot: str | None = None) -> dict:
        """Start ``job`` on the worker of the matched ``slot`` (or of the reused claim)."""
        asked = job.get("RequestGPUs")
        wanted = {"Cpus": int(request.get("Cpus", 1)), "Memory": int(request.get("Memory", 0)),
                  "Disk": int(request.get("Disk", 0)),
                  "GPUs": int(asked) if isinstance(asked, (int, float)) and not isinstance(asked, bool) else 0}
        with self._lock:
            if self.stopping.is_set():
                raise HTCondorException("the Dask startd is shutting down")
            if claim in self.claims:
                raise HTCondorException(f"claim {claim} is already active")
            old = self.claims.get(reuse) if reuse else None
            if old is not None and old.get("owner") != job.get("Owner"):
                old = None
            address = old["worker"] if old is not None else \
                next((a for a, w in self.workers.items() if w["slot"] == slot), None)
            if address not in self.workers:
                raise HTCondorException(f"no Dask worker behind slot {slot!r}")
            free = self.free_on(address)
            if old is not None:
                for key in free:
                    free[key] += old["resources"].get(key, 0)
            short = [key for key, amount in wanted.items() if amount > free[key]]
            if short:
                raise HTCondorException(f"not enough {', '.join(short)} left for claim {claim}")
            if old is not None:
                old["resources"] = {key: 0 for key in old["resources"]}
                old["gpus"] = []
            held = self.workers[address]["gpus"]
            assigned = gpus.pick(held, {gpu for c in self.claims.values() if c.get("worker") == address
                                        for gpu in c.get("gpus", ())}, wanted["GPUs"])
            if assigned is None:   # counted free above, so not expected: the ids are the truth
                raise HTCondorException(f"not enough GPUs left for claim {claim}")
            pslot = self.workers[address]["slot"]
            name = pslot.replace("slot1@", f"slot1_{next(self._numbers)}@", 1)
            entry = {"name": name, "resources": wanted, "worker": address,
                     "job": f"{job.get('ClusterId')}.{job.get('ProcId')}", "owner": job.get("Owner"),
                     "pid": 0, "start": None, "since": int(time.time()), "gpus": assigned}
            self.claims[claim] = entry
            self.job_starts += 1
        environment = gpus.job_environment(
            assigned, bool(held), self.config("ENVIRONMENT_FOR_AssignedGPUs", gpus.DEFAULT_ENVIRONMENT),
            self.config("ENVIRONMENT_VALUE_FOR_UnAssignedGPUs", gpus.DEFAULT_UNASSIGNED))
        started = self._launch(claim, entry, dict(job, _DaskStartd=self.address_of(self.name),
                                                  _SlotEnvironment=environment))
        started["host"] = worker_sinful(address, self.workers[address]["facts"]["Machine"])
        if assigned:   # the job's ad names its GPUs, as HTCondor's starter puts them there
            started["attrs"] = {"AssignedGPUs": adwire.quote(",".join(assigned))}
        return started   # the EXECUTE event names the worker, as HTCondor's the execute machine

    def withdraw_ads(self) -> None:
        with self._lock:
            addresses = list(self.workers)
        for address in addresses:
            self._withdraw(address)
        if self.client is not None:
            self.client.close(timeout=5)


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


def _facts(dask_worker=None) -> dict:
    from jobledger.daemons.dask_task import worker_facts
    return worker_facts(dask_worker)


if __name__ == "__main__":
    main_for(DaskStartd)
