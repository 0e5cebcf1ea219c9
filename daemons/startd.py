"""condor_startd's job: own the machine's resources and start one starter per claim.

The machine is one partitionable slot ``slot1@<host>`` holding all its
cores, memory (MB) and disk (KB of the EXECUTE file system); ``activate``
carves a dynamic slot ``slot1_<n>@<host>`` of the job's RequestCpus /
RequestMemory / RequestDisk out of it and starts a starter for the job.
A claim reused for the next job of the same kind (``activate`` with
``reuse`` and ``continuing``) keeps its slot and starter: the claim id moves
to the new job, and the schedd hands the job to that starter.  A plain
starter's schedd moves the claim itself (it knows the slot, the starter and
names the scratch directory) and tells the startd after, in order and in
batches (``claims_moved``); while a drain is in force the startd keeps a
marker file in EXECUTE (``NO_REUSE``) and its starters offer no next job.
When the
starter exits the dynamic slot goes back into the partitionable one and the
negotiator is told at once; its ad leaves the collector with the next update
(HTCondor's startd invalidates a deleted slot's ad), so condor_status shows
only the claims that are.  A claim whose resources were handed to the next
job's claim is no slot any more, and is not shown while its starter finishes.

Starters are forked by a *launcher*: a single-threaded child of the startd
forked before any thread starts, so forking a starter is cheap (no new
interpreter) and safe.  Starters hold the read end of the startd's lifeline
pipe: if the startd dies (even by SIGKILL) they see EOF, kill their jobs and
report them evicted, and the jobs are run again.  A starter that dies before
its job leaves the job to the launcher, which kills it (``daemons.orphans``).  A restarted startd finds
the previous incarnation's starters in ``$(EXECUTE)/startd_state.json`` and
keeps their resources until they are gone.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import socket
import threading
import sys
import time
import traceback

from jobledger.eventcore import adwire
from jobledger.daemons import ipc
from jobledger.daemons import custom_resources
from jobledger.daemons.daemon import (DC_RECONFIG, EXIT_REFUSED, Daemon, alive, filesystem_domain, main_for,
                                      process_start_time)
from jobledger.daemons.machine_facts import machine_facts
from jobledger.daemons.orphans import become_subreaper, kill_leftovers
from jobledger.daemons.selfmonitor import RecentCount
from jobledger.daemons.starter import NO_REUSE, SIGNALS, Starter
from jobledger.daemons.startd_drain import Drain, check, check_args
from jobledger.daemons.startd_ocu import hold_claim, ocu_slot_attrs, release_claim, release_idle_ocus, within_ocu
from jobledger.eventcore.enums import CompletionType
from jobledger.daemons.threadnames import name_this_thread
from jobledger.eventcore.errors import HTCondorException

STATE_FILE = "startd_state.json"


def machine_resources(execute_dir: str, cpus_setting: int = 0, memory_setting: int = 0) -> dict:
    """Cores, memory (MB) and disk (KB) this machine offers."""
    cpus = cpus_setting or len(os.sched_getaffinity(0)) or os.cpu_count() or 1
    memory = memory_setting
    if not memory:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    memory = int(line.split()[1]) // 1024
                    break
    stat = os.statvfs(execute_dir)
    disk = stat.f_bavail * stat.f_frsize // 1024
    return {"Cpus": cpus, "Memory": memory, "Disk": disk}


class Launcher:
    """The single-threaded process that forks starters on the startd's behalf."""

    def __init__(self, execute_dir: str, schedd_address: str, reconnect_timeout: float,
                 on_exit, log, update_intervals: tuple[float, float] = (5.0, 300.0),
                 starter=Starter):
        self.lifeline_r, self.lifeline_w = os.pipe()
        ours, theirs = socket.socketpair()
        self.pid = os.fork()
        if self.pid == 0:  # the launcher
            ours.close()
            os.close(self.lifeline_w)
            code = 1
            try:
                _launcher_loop(theirs, self.lifeline_r, execute_dir, schedd_address, reconnect_timeout,
                               update_intervals, starter)
                code = 0
            finally:
                os._exit(code)
        theirs.close()
        os.close(self.lifeline_r)
        self.sock = ours
        self.on_exit = on_exit
        self.on_dead = None
        self.dead = threading.Event()
        self.log = log
        self._send_lock = threading.Lock()
        self._waiting: dict[int, list] = {}
        self._ids = itertools.count(1)
        self._reader = threading.Thread(target=self._read_loop, name="launcher-reader", daemon=True)
        self._reader.start()

    def launch(self, job: dict, claim: str, timeout: float = 10.0, env: dict | None = None) -> dict:
        """Fork the starter of ``claim`` for ``job``; ``env``: what the machine adds to the
        environment of each job it runs (its custom resources' assigned ids)."""
        request_id = next(self._ids)
        slot = [threading.Event(), None]
        self._waiting[request_id] = slot
        with self._send_lock:
            ipc.send_message(self.sock, {"id": request_id, "job": job, "claim": claim, "env": env or {}})
        if self.dead.is_set() or not slot[0].wait(timeout) or slot[1] is None:
            raise HTCondorException("the starter launcher did not answer")
        return slot[1]

    def _read_loop(self) -> None:
        while True:
            try:
                message = ipc.recv_message(self.sock)
            except (OSError, ValueError):
                self.dead.set()
                for slot in list(self._waiting.values()):
                    slot[0].set()  # nobody will answer these
                if self.on_dead is not None:
                    self.on_dead()
                return
            if "exited" in message:
                self.on_exit(message["exited"])
            else:
                slot = self._waiting.pop(message["id"], None)
                if slot is not None:
                    slot[1] = message
                    slot[0].set()

    def close(self) -> None:
        self.sock.close()
        os.close(self.lifeline_w)


def _launcher_loop(sock, lifeline_r, execute_dir, schedd_address, reconnect_timeout,
                   update_intervals, starter=Starter) -> None:
    """The launcher's whole life: fork starters on request, report their exits."""
    name_this_thread("launcher")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the startd stops us by closing the socket
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)          # a child's exit wakes the select at once
    signal.signal(signal.SIGCHLD, lambda *_: None)
    become_subreaper()                    # a dead starter's job comes to us (daemons.orphans)
    children: set[int] = set()
    open_ = True
    while open_ or children:
        try:
            ready, _, _ = select.select(([sock] if open_ else []) + [wake_r], [], [], 5.0)
        except InterruptedError:
            ready = []
        if wake_r in ready:
            os.read(wake_r, 4096)
        if sock in ready:
            try:
                request = ipc.recv_message(sock)
            except (OSError, ValueError):
                open_ = False
                request = None
            if request is not None:
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    os.close(wake_r)
                    os.close(wake_w)
                    sock.close()
                    code = 1
                    try:
                        code = starter(request["job"], request["claim"], execute_dir, schedd_address,
                                       lifeline_r, reconnect_timeout, update_intervals=update_intervals,
                                       machine_env=request.get("env") or {}).run()
                    except BaseException:
                        traceback.print_exc()     # to the startd's stderr file
                        sys.stderr.flush()
                    finally:
                        os._exit(code)
                children.add(pid)
                ipc.send_message(sock, {"id": request["id"], "pid": pid,
                                        "start": process_start_time(pid),
                                        "scratch": os.path.join(execute_dir, f"dir_{pid}")})
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            if pid not in children:
                continue            # a leftover of a dead starter's job, killed below
            children.discard(pid)
            if open_:
                try:
                    ipc.send_message(sock, {"exited": pid})
                except OSError:
                    open_ = False
        if wake_r in ready:     # a child exited: what a starter that is gone left behind goes too
            kill_leftovers(children)


class Startd(Daemon):
    name = "startd"
    log_name = "StartLog"
    starter = Starter   # what the launcher forks per claim

    def __init__(self, config_file: str | None = None):
        super().__init__(config_file)
        self.execute_dir.mkdir(parents=True, exist_ok=True)
        self.total = machine_resources(str(self.execute_dir), self.config_int("NUM_CPUS", 0),
                                       self.config_int("MEMORY", 0))
        self.custom = custom_resources.machine_resources(
            {name: self.config(name, "") for name in self.table.names()
             if "MACHINE_RESOURCE" in name.upper() or name.upper() == "STARTD_DETECT_GPUS"}, warn=self.log.warning)
        self.total.update({tag: res.count for tag, res in self.custom.items()})
        self.slot_name = f"slot1@{self.host}"
        self.claims: dict[str, dict] = {}  # claim id -> dynamic slot
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._changed = threading.Event()
        self._advertising = threading.Lock()
        self._shown: set[str] | None = None   # dynamic slots in the collector (None: unknown)
        self.launcher: Launcher | None = None
        self.job_starts = RecentCount()     # JobStarts, RecentJobStarts (the last 20 minutes)
        self.drain: Drain | None = None          # the drain request in force (daemons.startd_drain)
        self.last_drain = (0, 0)                 # LastDrainStartTime, LastDrainStopTime

    def setup(self) -> None:
        self._mark_no_reuse(False)   # (no drain survives a restart)
        self._adopt_previous()
        filesystem_domain()  # looked up once here, inherited by every starter
        # Fork the launcher now: no thread of ours exists yet.
        self.launcher = Launcher(str(self.execute_dir), self.address_of("schedd"),
                                 self.config_float("SCHEDD_RECONNECT_TIMEOUT", 60),
                                 self._starter_exited, self.log,
                                 (self.config_float("STARTER_INITIAL_UPDATE_INTERVAL", 5),
                                  self.config_float("STARTER_UPDATE_INTERVAL", 300)),
                                 type(self).starter)

    def _adopt_previous(self) -> None:
        """Keep the resources of a previous incarnation's starters until they are gone."""
        try:
            previous = json.loads((self.execute_dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return
        for claim, slot in previous.items():
            if slot.get("ocu"):       # an OCU's claim: held with no starter (daemons.startd_ocu)
                self.claims[claim] = slot
                self.log.info("OCU claim %s (%s) kept", claim, slot["ocu"].get("name"))
            elif alive(slot.get("pid"), slot.get("start")):
                slot["orphan"] = True
                self.claims[claim] = slot
                self.log.info("starter %s of a previous startd is still running", slot["pid"])

    def started(self) -> None:
        super().started()
        self.launcher.on_dead = self._launcher_died
        # The launcher reports its starters' exits; this finds those it cannot see
        # (a previous startd's starters).
        self.every(1.0, self._check_starters, name="check-starters")
        self.every(0.0, self._advertise_changes, name="ads-on-change")

    def _launcher_died(self) -> None:
        """Without its launcher the startd cannot start jobs: exit, the master restarts us."""
        if not self.stopping.is_set():
            self.log.error("the starter launcher died; exiting so the master restarts the startd")
            self.failure = HTCondorException("the starter launcher died")
            self.stopping.set()

    # -- resources ---------------------------------------------------------------
    def free(self) -> dict:
        free = dict(self.total)
        for slot in self.claims.values():
            for key in free:
                free[key] -= slot["resources"].get(key, 0)
        return free

    def _save_state(self) -> None:
        path = self.execute_dir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.claims))
        os.replace(tmp, path)

    def _starter_exited(self, pid: int) -> None:
        self._forget(lambda slot: slot["pid"] == pid)

    def _check_starters(self) -> None:
        self._forget(lambda slot: slot["pid"] and not alive(slot["pid"], slot["start"]))
        self._drain_step()

    # -- draining ------------------------------------------------------------------
    def _drain_jobs(self, peer, how: int = 0, on_completion: int = 0, check_expr: str | None = None,
                    start_expr: str | None = None, reason: str | None = None) -> str:
        """DRAIN_JOBS: the request id; refused if one is in force or ``check_expr`` fails."""
        how, on_completion = check_args(how, on_completion, check_expr, start_expr, reason)
        check(check_expr, self.slot_ads())
        with self._lock:
            if self.drain is not None:
                raise HTCondorException(f"{self.slot_name} is already draining "
                                        f"(request {self.drain.request_id})")
            retirement = self.config_float("MAXJOBRETIREMENTTIME", 0.0)
            self.drain = Drain(how, on_completion, start_expr, reason, time.time(), retirement,
                               self.config("DEFAULT_DRAINING_START_EXPR", "false") or "false")
            self.last_drain = (self.drain.began, self.last_drain[1])
            self._mark_no_reuse(True)
        self.log.info("draining (%s, request %s): %s", self.drain.how.name, self.drain.request_id,
                      self.drain.reason)
        self._drain_step()
        self._changed.set()
        return self.drain.request_id

    def _cancel_drain(self, peer, request_id: str | None = None) -> bool:
        """CANCEL_DRAIN_JOBS: the machine takes jobs again (jobs already vacated stay so)."""
        with self._lock:
            if self.drain is None or (request_id is not None and request_id != self.drain.request_id):
                raise HTCondorException(f"no draining request {request_id or ''} to cancel".replace("  ", " "))
            self.log.info("draining cancelled (request %s)", self.drain.request_id)
            self.drain = None
            self.last_drain = (self.last_drain[0], int(time.time()))
            self._mark_no_reuse(False)
        self._slot_freed()
        return True

    def _mark_no_reuse(self, on: bool) -> None:
        """The marker that tells starters to offer no next job (a drain is in force).  A
        starter that offered one just before still runs it, as if its claim had moved
        before the drain began: the drain then retires it."""
        path = self.execute_dir / NO_REUSE
        if on:
            path.touch(mode=0o644)
        else:
            path.unlink(missing_ok=True)

    def _vacate(self, peer, slot: str | None = None, fast: bool = False) -> int:
        """Vacate the job of ``slot`` (every job when None): it goes back to idle."""
        with self._lock:
            chosen = [claim for claim, s in self.claims.items()      # (a job on an OCU's claim too)
                      if (any(s["resources"].values()) or s.get("within")) and slot in (None, s["name"])]
        if slot is not None and not chosen:
            raise HTCondorException(f"no claimed slot {slot}")
        for claim in chosen:
            self._signal(peer, claim, "kill" if fast else "vacate")
        return len(chosen)

    def _drain_step(self) -> None:
        """Vacate the jobs whose time came; once none is left, do what the request said."""
        with self._lock:
            drain = self.drain
            if drain is None:
                return
        release_idle_ocus(self)      # a draining machine keeps no idle claim (daemons.startd_ocu)
        with self._lock:
            due = drain.due(self.claims, time.time())
            drain.signalled.update(claim for claim, _ in due)
            busy = any(any(s["resources"].values()) for s in self.claims.values())
        for claim, what in due:
            self.log.info("draining: %s the job of claim %s", what, claim)
            self._signal({}, claim, what)
        if busy or drain.completed:
            return
        drain.completed = True
        self._changed.set()
        self.log.info("draining complete (request %s)", drain.request_id)
        if drain.on_completion is CompletionType.Resume:
            self._cancel_drain({}, drain.request_id)
        elif drain.on_completion is CompletionType.Reconfig:
            self.daemon_command({}, DC_RECONFIG)
            self._cancel_drain({}, drain.request_id)
        elif drain.on_completion in (CompletionType.Restart, CompletionType.Exit):
            if drain.on_completion is CompletionType.Exit:
                self.exit_code = EXIT_REFUSED
            self.stopping.set()

    def _forget(self, finished) -> None:
        """Drop the claims whose starters are gone; ask for a negotiation if that freed
        anything (a claim handed over to the next job frees nothing).  The state file
        keeps them until the next launch rewrites it: a restarted startd adopts only
        starters still alive."""
        with self._lock:
            done = [claim for claim, slot in self.claims.items() if finished(slot)]
            freed = any(any(self.claims[c]["resources"].values()) for c in done)
            for claim in done:
                del self.claims[claim]
        if freed:
            self._slot_freed()
        elif done:
            self._changed.set()

    def _slot_freed(self) -> None:
        self._changed.set()
        threading.Thread(target=self.poke_negotiator, name="poke", daemon=True).start()

    # -- commands ------------------------------------------------------------------
    def handlers(self) -> dict:
        handlers = super().handlers()
        handlers.update({
            "activate": self._activate,
            "signal": self._signal,
            "slots": lambda peer: self.slot_ads(),
            "drain": self._drain_jobs,
            "cancel_drain": self._cancel_drain,
            "vacate": self._vacate,
            "claims": lambda peer: self._claims(),
            "claims_moved": self._claims_moved,
            "refresh_proxy": self._refresh_proxy,
            "hold_claim": lambda peer, **a: hold_claim(self, **a),
            "release_claim": lambda peer, claim: release_claim(self, claim),
        })
        return handlers

    def _activate(self, peer, claim: str, job: dict, request: dict, reuse: str | None = None,
                  slot: str | None = None, continuing: bool = False, within: str | None = None) -> dict:
        """Start ``job`` in a new dynamic slot; ``reuse`` names a claim of the same owner
        whose job has finished: its resources pass to this one (claim reuse).  With
        ``continuing``, the reused claim's starter (which offered to) runs ``job`` itself:
        no starter is forked, the answer says ``continued`` and the schedd hands the job
        to that starter."""
        if within is not None:      # a job on an OCU's claim (daemons.startd_ocu)
            return self._launch(claim, within_ocu(self, claim, job, request, within), job)
        wanted = {"Cpus": int(request.get("Cpus", 1)), "Memory": int(request.get("Memory", 0)),
                  "Disk": int(request.get("Disk", 0)),
                  **{tag: custom_resources.requested(job, tag) for tag in self.custom}}
        with self._lock:
            if self.stopping.is_set():
                raise HTCondorException("the startd is shutting down")
            if claim in self.claims:
                raise HTCondorException(f"claim {claim} is already active")
            if self.drain is not None and (reuse or self.drain.start_expr is None):
                raise HTCondorException(f"{self.slot_name} is draining: claim {claim} not started")
            free = self.free()
            old = self.claims.get(reuse) if reuse else None
            if (old is not None and old.get("owner") == job.get("Owner")
                    and old.get("group") == job.get("AccountingGroup")):   # the same submitter
                for key in free:
                    free[key] += old["resources"].get(key, 0)
            else:
                old = None
            if continuing and (old is None or not old["pid"] or old.get("orphan")):
                # (an orphan's starter belongs to a previous startd: its lifeline is gone,
                # it kills what it runs)
                raise HTCondorException(f"claim {reuse} has no starter of ours to run claim {claim}")
            short = [key for key, amount in wanted.items() if amount > free[key]]
            if short:
                raise HTCondorException(f"not enough {', '.join(short)} left for claim {claim}")
            assigned = custom_resources.assign(self.custom, wanted, old, self.claims.values())
            number = next(self._numbers)
            slot = {"name": f"slot1_{number}@{self.host}", "resources": wanted, "assigned": assigned,
                    "job": f"{job.get('ClusterId')}.{job.get('ProcId')}",
                    "owner": job.get("Owner"), "group": job.get("AccountingGroup"),
                    "user": job.get("User") or job.get("Owner"),
                    "retirement": job.get("MaxJobRetirementTime"), "pid": 0, "start": None, "since": int(time.time())}
            self.job_starts.add(time.time())
            if continuing:      # the same dynamic slot and starter, a new claim and job
                del self.claims[reuse]
                slot.update(name=old["name"], pid=old["pid"], start=old["start"],
                            scratch=os.path.join(self.execute_dir, f"dir_{old['pid']}_{number}"))
                self.claims[claim] = slot   # the state file's pid and start still hold
            else:
                if old is not None:
                    old["resources"] = {key: 0 for key in old["resources"]}  # handed over
                    old["assigned"] = {}
                self.claims[claim] = slot
        if continuing:
            self._changed.set()
            return {"slot": slot["name"], "pid": slot["pid"], "start": slot["start"],
                    "scratch": slot["scratch"], "continued": True}
        return self._launch(claim, slot, job)

    def _claims_moved(self, peer, moves: list) -> int:
        """A schedd moved claims to the next jobs their starters run (each ``{"from",
        "claim", "job", "scratch"}``, in the order it moved them): the same dynamic slot
        and starter under the new claim, as ``activate`` with ``continuing`` makes it.
        A move whose old claim is gone (its starter exited meanwhile) changes nothing.
        Returns how many moved."""
        if not isinstance(moves, list):
            raise ValueError("claims_moved: moves must be a list")
        moved = 0
        with self._lock:
            for move in moves:
                if not isinstance(move, dict) or not isinstance(move.get("job"), dict):
                    raise ValueError("claims_moved: each move is {from, claim, job, scratch}")
                old, claim, job = self.claims.get(move.get("from")), move.get("claim"), move["job"]
                if old is None or not isinstance(claim, str) or claim in self.claims:
                    continue
                del self.claims[move["from"]]
                self.claims[claim] = {
                    **old, "job": f"{job.get('ClusterId')}.{job.get('ProcId')}",
                    "owner": job.get("Owner"), "group": job.get("AccountingGroup"),
                    "user": job.get("User") or job.get("Owner"),
                    "retirement": job.get("MaxJobRetirementTime"), "since": int(time.time()),
                    "scratch": str(move.get("scratch") or old.get("scratch"))}
                self.job_starts.add(time.time())
                moved += 1
        if moved:
            self._changed.set()
        return moved

    def _launch(self, claim: str, slot: dict, job: dict) -> dict:
        """Fork the starter of ``claim`` (already holding ``slot``); what ``activate`` answers."""
        try:
            launched = self.launcher.launch(job, claim, env=custom_resources.job_environment(
                self.custom, slot.get("assigned") or {}, self.config))
        except Exception:
            with self._lock:
                self.claims.pop(claim, None)
            raise
        with self._lock:
            slot.update(pid=launched["pid"], start=launched["start"], scratch=launched["scratch"])
            self._save_state()
        self._changed.set()
        return {"slot": slot["name"], "pid": launched["pid"], "start": launched["start"],
                "scratch": launched["scratch"]}

    def _signal(self, peer, claim: str, what: str) -> bool:
        with self._lock:
            slot = self.claims.get(claim)
        if slot is None or not alive(slot["pid"], slot["start"]):
            return False
        os.kill(slot["pid"], SIGNALS[what])
        return True

    def _refresh_proxy(self, peer, claim: str, name: str, proxy: str) -> bool:
        """Put a refreshed X.509 proxy (the schedd's ``refreshGSIProxy``) in the sandbox of
        ``claim``'s job as ``name``, whole and owner-only; False when the claim is gone."""
        from pathlib import Path
        from jobledger.daemons.x509_proxy import MAX_PROXY_BYTES, replace_file
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise ValueError("refresh_proxy: name must be a file name")
        if not isinstance(proxy, str) or len(proxy) > MAX_PROXY_BYTES:
            raise ValueError("refresh_proxy: the proxy must be text of at most 1 MiB")
        with self._lock:
            slot = self.claims.get(claim)
        if slot is None or not slot.get("scratch") or not os.path.isdir(slot["scratch"]):
            return False
        replace_file(Path(slot["scratch"]) / name, proxy.encode())
        self.log.info("job %s: refreshed its proxy %s", slot.get("job"), name)
        return True

    def _claims(self) -> dict:
        with self._lock:
            return {claim: dict(slot) for claim, slot in self.claims.items()}

    # -- ads -------------------------------------------------------------------------
    def slot_ads(self) -> list[dict]:
        with self._lock:
            free = self.free()
            claims = list(self.claims.values())
        ads = self.machine_ads(self.slot_name, self.total, free, claims, {})
        if self.custom:
            custom_resources.publish(ads, self.custom, free, [c for c in claims if not c.get("within")
                                                              and any(c["resources"].values())])
        return ads

    def machine_ads(self, slot_name: str, total: dict, free: dict, claims: list, facts: dict) -> list[dict]:
        """The partitionable slot ``slot_name`` and its dynamic slots ``claims``;
        ``facts`` override the local machine's (a remote machine's Machine, Arch...)."""
        base = self.common_ad("Machine", slot_name)
        base.update(machine_facts(sum(slot["resources"].get("Cpus", 0) for slot in claims)))
        base.update({
            "TargetType": "Job", "StartdIpAddr": base["MyAddress"],
            "SlotID": 1, "SlotTypeID": 1, "UidDomain": self.host,
            "FileSystemDomain": filesystem_domain(), "HasFileTransfer": True,
            "HasFileTransferPluginMethods": "file",  # the only URL scheme the starter copies
            "DetectedCpus": total["Cpus"], "DetectedMemory": total["Memory"],
            "TotalCpus": total["Cpus"], "TotalMemory": total["Memory"],
            "TotalDisk": total["Disk"], "TotalSlotCpus": total["Cpus"],
            "TotalSlotMemory": total["Memory"], "TotalSlotDisk": total["Disk"],
            "Start": {"expr": self.config("START", "True")},
            "WithinResourceLimits": {"expr": "(MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && "
                                             "MY.Memory > 0 && TARGET.RequestMemory <= MY.Memory && "
                                             "MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk)"},
            "Requirements": {"expr": "START && (WithinResourceLimits)"},
            "Rank": 0.0, "CurrentRank": 0.0, "TotalSlots": 1 + len(claims),
            "SlotWeight": {"expr": "Cpus"}, "MachineResources": "Cpus Memory Disk Swap",
            "CpuBusy": {"expr": "((LoadAvg - CondorLoadAvg) >= 0.5)"},
            "KeyboardIdle": int(time.time()) - self.start_time,
            "ConsoleIdle": int(time.time()) - self.start_time,
            "JobStarts": self.job_starts.total, "RecentJobStarts": self.job_starts.recent(time.time()),
            "HasReconnect": True,
        })
        base.update(facts)
        inside = {s["within"]: s for s in claims if s.get("within")}   # jobs on OCU claims
        claims = [s for s in claims if not s.get("within")]
        pslot = dict(base, SlotType="Partitionable", PartitionableSlot=True, State="Unclaimed",
                     Activity="Idle", NumDynamicSlots=len(claims), Cpus=free["Cpus"],
                     Memory=free["Memory"], Disk=free["Disk"],
                     EnteredCurrentState=self.start_time, EnteredCurrentActivity=self.start_time,
                     ChildName=[slot["name"] for slot in claims],
                     ChildState=["Claimed"] * len(claims), ChildActivity=["Busy"] * len(claims),
                     ChildCpus=[slot["resources"]["Cpus"] for slot in claims],
                     ChildMemory=[slot["resources"].get("Memory", 0) for slot in claims],
                     ChildRemoteOwner=[slot.get("owner") or "" for slot in claims])
        drain = self.drain
        pslot.update(Draining=False, LastDrainStartTime=self.last_drain[0],
                     LastDrainStopTime=self.last_drain[1])
        if drain is not None:
            pslot.update(drain.slot_attrs(any(any(s["resources"].values()) for s in claims), True))
        ads = [pslot]
        for slot in claims:
            resources = slot["resources"]
            if not any(resources.values()):
                continue   # handed over to the next job's claim: that claim is the slot now
            dslot = dict(base, Name=slot["name"], SlotType="Dynamic", PartitionableSlot=False,
                            DynamicSlot=True, State="Claimed", Activity="Busy",
                            Cpus=resources["Cpus"], Memory=resources["Memory"],
                            Disk=resources["Disk"], JobId=slot["job"],
                            RemoteOwner=slot.get("user") or slot.get("owner") or "",
                            RemoteUser=slot.get("user") or slot.get("owner") or "",
                            EnteredCurrentState=slot["since"], EnteredCurrentActivity=slot["since"],
                            TotalSlots=1 + len(claims),
                            **_accounting_group(slot))
            dslot.update(drain.slot_attrs(True, False) if drain is not None else {"Draining": False})
            if slot.get("ocu"):
                dslot.update(ocu_slot_attrs(slot, inside.get(slot.get("claim"))))
                dslot = {name: value for name, value in dslot.items() if value is not None}
            ads.append(dslot)
        return ads

    def ads(self) -> list[dict]:
        """The slots' ads, and a private ad (MachinePrivate) per slot that is not a dynamic one,
        as HTCondor's startd sends with each slot's update (the collector answers
        AdType.StartdPrivate queries from them).  HTCondor's carries the slot's claim id
        (Capability); jobledger's claims need none, so none goes to the collector."""
        slots = self.slot_ads()
        private = [{"MyType": "MachinePrivate", "Name": ad["Name"], "Machine": ad.get("Machine", self.host),
                    "MyAddress": ad.get("MyAddress", self.address_of(self.name)),
                    "StartdIpAddr": ad.get("MyAddress", self.address_of(self.name))}
                   for ad in slots if ad.get("DynamicSlot") is not True]
        return slots + private

    def advertise(self, ads: list[dict] | None = None) -> None:
        """Send the slots' ads, then take the dynamic slots that are gone out of the
        collector (all of ours it may hold but those shown, after a restart)."""
        with self._advertising:
            ads = self.ads() if ads is None else ads
            super().advertise(ads)
            shown = {ad["Name"] for ad in ads if ad.get("DynamicSlot") is True}
            if self._shown is not None and self._shown <= shown:
                self._shown = shown
                return
            constraint = " && ".join(
                ["DynamicSlot =?= true", f"MyAddress == {adwire.quote(self.address_of(self.name))}"]
                + [f"Name != {adwire.quote(name)}" for name in sorted(shown)])
            try:
                ipc.call(self.collector_address, "invalidate", timeout=5, mytype="Machine",
                         constraint=constraint)
            except HTCondorException as exc:
                self.log.info("collector not reachable: %s", exc)
                return      # tried again with the next update
            self._shown = shown

    def _advertise_changes(self) -> None:
        """Changed slots go to the collector at most once a second (the negotiator asks
        us); unchanged ones every UPDATE_INTERVAL (``started``)."""
        if not self._changed.wait(5.0):
            return
        self._changed.clear()
        self.advertise()
        self.stopping.wait(1.0)

    def teardown(self) -> None:
        """Vacate every job we run (the schedd requeues them), then stop the launcher."""
        self._mark_no_reuse(True)   # (no starter offers a next job meanwhile)
        with self._lock:
            claims = list(self.claims.items())
        for _, slot in claims:
            if alive(slot["pid"], slot["start"]):
                os.kill(slot["pid"], SIGNALS["shutdown"])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(s["pid"], s["start"]) for _, s in claims):
            time.sleep(0.05)
        self.launcher.close()
        self.withdraw_ads()

    def withdraw_ads(self) -> None:
        """Take our slots out of the collector (the pool is stopping)."""
        try:
            for mytype in ("Machine", "MachinePrivate"):
                ipc.call(self.collector_address, "invalidate", timeout=2, mytype=mytype)
        except HTCondorException:
            pass


def _accounting_group(slot: dict) -> dict:
    """The slot's AccountingGroup attribute (``group.user@uid_domain``) when its job has one:
    the negotiator's accountant charges the slot to it rather than to its RemoteUser."""
    group, user = slot.get("group"), slot.get("user") or ""
    if not group:
        return {}
    return {"AccountingGroup": f"{group}@{user.rpartition('@')[2]}" if "@" in user else group}


if __name__ == "__main__":
    main_for(Startd)
