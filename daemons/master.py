"""condor_master's job: start the pool's daemons, restart one that dies, stop them all.

Each daemon of ``DAEMON_LIST`` (collector first) runs as its own process,
``python -m jobledger.daemons.<name>``, holding the read end of the master's lifeline
pipe.  The master waits on its children; one that exits while the pool is up
is started again after HTCondor's back-off (``daemons.master_backoff``:
MASTER_BACKOFF_CONSTANT + MASTER_BACKOFF_FACTOR ** failures, at most
MASTER_BACKOFF_CEILING, the count reset once it stayed up MASTER_RECOVER_FACTOR
seconds), so a schedd or startd killed with SIGKILL comes back by itself and
one that cannot start is not started twice a second.  ``status`` says, per
daemon, when its next start is due and how many failures in a row led there.

A name in DAEMON_LIST that is not one of the pool's daemons is run as
HTCondor's master runs any daemon: the executable its own knob names
(``KBDD = $(SBIN)/condor_kbdd``); with no such knob the master refuses to
start, with HTCondor's message; one it cannot execute is retried with the
same back-off, and ``status`` says why.

Stop (SIGTERM, or the ``off`` command): startd first (it vacates its jobs),
then negotiator, schedd, collector; each gets SIGTERM, then SIGKILL after
``SHUTDOWN_GRACEFUL_TIMEOUT``.  Then every process still below the master
goes too (``daemons.orphans.end_descendants``): the master is a child
subreaper, so a job that daemonized, a launcher or starter whose daemon died,
are its descendants whatever they did, and none outlives ``pool stop``.
While the pool runs, a job's process handed up to the master (its starter
was killed) is killed there.  The master owns LOCAL_DIR's layout and writes
``$(RUN)/master.pid``.

One pool per LOCAL_DIR: the master holds an exclusive ``flock`` on the
directory for its whole life (the kernel drops it when the master dies, even
by SIGKILL).  A second master there says so on stderr and exits 1 before it
writes anything.

Before it starts anything the master checks the journal
(``daemons.journal_check.check_before_start``: chained checksums, pages,
the high-water mark): on a damaged journal, or one that holds less than was
committed, it writes why to stderr and its log and exits with
``EXIT_REFUSED`` instead of letting the schedd run completed jobs again.
A daemon that exits with ``EXIT_REFUSED`` (the schedd finding the same at a
restart) is not restarted.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from jobledger.daemons import idtokens, ipc
from jobledger.daemons.daemon import DC_OFF, DC_RECONFIG, DC_RESTART, EXIT_REFUSED, Daemon, main_for
from jobledger.daemons.journal_check import check_before_start
from jobledger.daemons.master_backoff import BY_COMMAND_DELAY, Backoff, backoff_for
from jobledger.daemons.orphans import JOB_MARKER, become_subreaper, end_descendants, reap_adopted
from jobledger.daemons.safe_open import private_layout
from jobledger.eventcore.errors import HTCondorException, JournalError, TokenError

START_ORDER = ["collector", "shared_port", "negotiator", "credd", "schedd", "startd", "dask_startd"]
STOP_ORDER = ["shared_port", "dask_startd", "startd", "negotiator", "credd", "schedd", "collector"]
# DaemonCommand values (eventcore.enums) the master acts on.
OFF_COMMANDS = {454, 461, 484} | DC_OFF   # DaemonsOff*, Off*
DAEMON_OFF, DAEMON_ON = 467, 469
LAYOUT = ["execute", "lock", "log", "run", "spool", "passwords.d", "tokens.d", "system_tokens.d"]


LOCAL_FILES = ["condor_config", "journal.sqlite", "journal.sqlite-wal", "journal.sqlite-shm"]


def make_layout(local_dir) -> None:
    """LOCAL_DIR and its sub-directories, all private to the pool's user;
    ``UnsafePathError`` when another user owns or could change any of them
    (``daemons.safe_open.private_layout``, ssh's StrictModes)."""
    private_layout(local_dir, LAYOUT, LOCAL_FILES)


def lock_local_dir(local_dir) -> int | None:
    """Take LOCAL_DIR's exclusive lock: the descriptor holding it (kept open for as
    long as the lock is wanted), or None when another process holds it."""
    fd = os.open(local_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def pool_running_in(local_dir) -> str | None:
    """Why LOCAL_DIR cannot take another pool (a master holds it), or None when it can."""
    try:
        fd = lock_local_dir(local_dir)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if fd is not None:
        os.close(fd)
        return None
    try:
        pid = (Path(local_dir) / "run" / "master.pid").read_text().strip()
    except OSError:
        pid = "unknown"
    return f"a pool is already running in {local_dir} (its master holds the directory's lock; pid {pid})"


class Master(Daemon):
    name = "master"
    log_name = "MasterLog"

    def __init__(self, config_file: str | None = None):
        super().__init__(config_file)
        wanted = self.config("DAEMON_LIST", "MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD").lower().split()
        if self.config("DASK_SCHEDULER_ADDRESS", "").strip() or self.config("DASK_CLUSTER", "").strip():
            wanted.append("dask_startd")   # the pool's machines include a Dask cluster's workers
        if self.endpoint is not None and "shared_port" not in wanted:
            wanted.append("shared_port")   # the network was asked for: HTCondor adds SHARED_PORT too
        self.daemons = [d for d in START_ORDER if d in wanted]
        # Other names run the executable their knob names (HTCondor's non-DaemonCore daemons).
        self.others = {d: "" for d in dict.fromkeys(wanted) if d not in START_ORDER and d != "master"}
        self.daemons += list(self.others)
        self.children: dict[str, subprocess.Popen] = {}
        self.restarts: dict[str, int] = {d: 0 for d in self.daemons}
        self.exits: dict[str, int] = {}   # the last exit status of each daemon that exited
        self.disabled: set[str] = set()   # turned off by DaemonOff: not restarted
        self.backoff: dict[str, Backoff] = {d: backoff_for(self._knob, d) for d in self.daemons}
        self.due: dict[str, float] = {}          # monotonic time of a daemon's next start
        self.started_at: dict[str, float] = {}   # monotonic time of each daemon's last start
        self.start_times: dict[str, int] = {}    # wall time of the same, for the master's ad
        self.cannot: dict[str, str] = {}         # why the last start of a daemon failed
        self.commanded: set[str] = set()         # stopped by a command that starts it again
        self.ready: dict[str, str] = {}          # the state a daemon told us (set_ready_state)
        self.alive_until: dict[str, float] = {}  # monotonic deadline of a daemon's last send_alive
        self._lock = threading.Lock()
        self._lifeline_r, self._lifeline_w = os.pipe()

    def _knob(self, name: str) -> str | None:
        return self.config(name, "") or None

    def run(self) -> int:
        self.local_dir.mkdir(parents=True, exist_ok=True)
        self._dir_lock = lock_local_dir(self.local_dir)
        if self._dir_lock is None:
            print(f"jobledger master: {pool_running_in(self.local_dir) or 'LOCAL_DIR is locked'}; "
                  "not starting", file=sys.stderr, flush=True)
            return 1
        return super().run()

    def setup(self) -> None:
        become_subreaper()      # nothing the pool starts outlives it (daemons.orphans)
        make_layout(self.local_dir)
        self._signing_key()
        for name in self.others:
            path = self.config(name.upper(), "")
            if not path:   # HTCondor's master stops here too (daemon::InitParams)
                self.refuse(f"{name.upper()} is in the DAEMON_LIST parameter, but there is no "
                            "executable path for it defined in the config files!")
            self.others[name] = path
        self._check_journal()
        (self.run_dir / "master.pid").write_text(f"{os.getpid()}\n")
        for name in self.daemons:
            self._spawn(name)
            if name == "collector":
                self._wait_for_socket("collector", 10.0)

    def _signing_key(self) -> None:
        """The pool's IDTOKENS signing key (SEC_TOKEN_POOL_SIGNING_KEY_FILE), made on the
        first start as HTCondor's collector makes it; a key already there is kept."""
        try:
            path, _ = idtokens.key_path(idtokens.POOL, lambda name: self.config(name, "") or None)
            if not path.exists():
                idtokens.write_signing_key(path)
                self.log.info("created the pool signing key %s", path)
        except (OSError, TokenError) as exc:
            self.log.error("no pool signing key: %s", exc)

    def _check_journal(self) -> None:
        try:
            verdict = check_before_start(self.local_dir)
        except JournalError as exc:
            self.refuse(exc)
        self.log.info("journal verified: %d records, head %d", verdict.records, verdict.head)

    def _spawn(self, name: str) -> None:
        now = time.monotonic()
        self.started_at[name], self.start_times[name] = now, int(time.time())
        path = self.others.get(name)
        if path is not None and not os.access(path, os.X_OK):
            self.cannot[name] = f"{path}: Cannot execute ({os.strerror(_access_errno(path))})"
            self.log.error("%s", self.cannot[name])
            self.children.pop(name, None)
            self._schedule(name, now)
            return
        self.cannot.pop(name, None)
        self.ready.pop(name, None)
        self.alive_until.pop(name, None)
        # CONDOR_INHERIT: "<parent pid> <parent address>", where a daemon finds its master
        # (htcondor.set_ready_state and send_alive read it as HTCondor's daemons do)
        env = dict(os.environ, CONDOR_CONFIG=self.config_file,
                   JOBLEDGER_LIFELINE_FD=str(self._lifeline_r),
                   CONDOR_INHERIT=f"{os.getpid()} {self.address_of('master')}")
        # Only a job's processes carry the job marker (jobledger.daemons.orphans), also in a pool
        # started from inside a job: a starter handed up to us is never taken for one.
        env.pop(JOB_MARKER.decode().rstrip("="), None)
        command = [path] if path is not None else [sys.executable, "-m", f"jobledger.daemons.{name}"]
        log = open(self.log_dir / f"{name}.stderr", "ab")
        try:
            child = subprocess.Popen(command, env=env,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     pass_fds=(self._lifeline_r,), cwd=str(self.local_dir))
        finally:
            log.close()
        self.children[name] = child
        self.log.info("started %s, pid %d", name, child.pid)

    def _own_pids(self) -> set[int]:
        """The daemons' pids (reaped by their Popen objects, never by daemons.orphans)."""
        return {child.pid for child in self.children.values() if child.returncode is None}

    def _wait_for_socket(self, name: str, timeout: float) -> None:
        path = self.run_dir / f"{name}.sock"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not path.exists():
            if name not in self.children or self.children[name].poll() is not None:
                return
            time.sleep(0.01)

    def started(self) -> None:
        super().started()
        self.every(0.5, self._supervise, name="supervise")

    def _supervise(self) -> None:
        with self._lock:
            if self.stopping.is_set():
                return
            for pid in reap_adopted(self._own_pids()):
                self.log.info("killed pid %d, a job's process whose starter is gone", pid)
            now = time.monotonic()
            for name in self.daemons:
                if name in self.disabled:
                    continue
                if name in self.due:
                    if now >= self.due[name]:
                        del self.due[name]
                        self.restarts[name] += 1
                        self._spawn(name)
                    continue
                child = self.children.get(name)
                code = None if child is None else child.poll()
                if code is None and child is not None and now > self.alive_until.get(name, now):
                    self._not_responding(name, child)
                    code = child.returncode
                if code is None:
                    if child is not None and self.backoff[name].recovered(now - self.started_at[name]):
                        self.log.info("%s recovered", name)
                    continue
                self.exits[name] = code
                if code == EXIT_REFUSED:
                    self.log.error("%s refused to run (see %s.stderr); not restarting it",
                                   name, name)
                    self.disabled.add(name)
                    continue
                self.log.info("%s (pid %d) exited with %s", name, child.pid, code)
                self._schedule(name, now)

    def _not_responding(self, name: str, child: subprocess.Popen) -> None:
        """A daemon that promised a keep-alive (send_alive) and sent none in time is hung:
        the master kills it, as HTCondor's does after NOT_RESPONDING_TIMEOUT, and the
        supervisor starts it again after the back-off."""
        self.log.error("%s (pid %d) sent no keep-alive in time; killing it", name, child.pid)
        del self.alive_until[name]
        child.kill()
        child.wait()

    def _child(self, pid) -> str:
        """The name of the daemon whose pid is ``pid`` (a bad or foreign pid is a ValueError)."""
        if isinstance(pid, bool) or not isinstance(pid, int):
            raise TypeError("pid must be an integer")
        for name, child in self.children.items():
            if child.pid == pid and child.poll() is None:
                return name
        raise ValueError(f"pid {pid} is not a daemon this master started")

    def _set_ready(self, peer, pid, state="Ready") -> bool:
        """DC_SET_READY: the daemon ``pid`` says it is in ``state`` (condor_who shows it)."""
        if not isinstance(state, str) or not state or len(state) > 64 or not state.isprintable():
            raise ValueError("state must be a short printable string")
        with self._lock:
            name = self._child(pid)
            self.ready[name] = state
        self.log.info("%s (pid %d) is %s", name, pid, state)
        return True

    def _child_alive(self, peer, pid, timeout_s) -> bool:
        """DC_CHILDALIVE: the daemon ``pid`` is alive and will say so again within ``timeout_s`` s."""
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int) or not 0 < timeout_s <= 10 ** 7:
            raise ValueError("timeout must be a positive number of seconds")
        with self._lock:
            self.alive_until[self._child(pid)] = time.monotonic() + timeout_s
        return True

    def _schedule(self, name: str, now: float) -> None:
        """The next start of ``name``, after HTCondor's back-off (or 1 s after a command)."""
        if name in self.commanded:
            self.commanded.discard(name)
            self.backoff[name].failures = 0
            seconds = BY_COMMAND_DELAY
        else:
            seconds = self.backoff[name].failed()
        self.due[name] = now + seconds
        self.log.info("restarting %s in %d seconds", name, seconds)

    def handlers(self) -> dict:
        handlers = super().handlers()
        handlers.update({
            "off": self._off,
            "status": lambda peer: self._status(),
            "command": self._command,
            "set_ready": self._set_ready,
            "child_alive": self._child_alive,
        })
        return handlers

    def _reconfig(self, peer, command: int, target: str | None) -> bool:
        """condor_reconfig: the master reads its configuration again and passes the
        command on to its running daemons (``target``: that one only), as HTCondor's
        master does with DC_RECONFIG_FULL."""
        if target is None:
            super().daemon_command(peer, command, None)
        names = [target.lower()] if target else sorted(self.children)
        with self._lock:
            running = [name for name in names if name in self.children and self.children[name].poll() is None]
        if target and not running:
            raise ValueError(f"no running daemon {target!r} in this pool")
        for name in running:
            try:
                ipc.call(self.address_of(name), "command", timeout=30, command=command)
            except ipc.ConnectionLost as exc:     # it is stopping or starting: it reads it then
                self.log.info("reconfig of the %s: %s", name, exc)
        return True

    def _command(self, peer, command: int, target: str | None = None) -> bool:
        """``htcondor.send_command`` to the master (DaemonCommand values)."""
        if command in OFF_COMMANDS:
            return self._off(peer)
        if command in DC_RESTART:
            with self._lock:
                for name, child in self.children.items():
                    if child.poll() is None:
                        self.commanded.add(name)
                        child.send_signal(signal.SIGTERM)  # the supervisor starts it again
            return True
        if command == DC_RECONFIG:
            return self._reconfig(peer, command, target)
        if command in (DAEMON_OFF, DAEMON_ON) and target:
            name = target.lower()
            if name not in self.daemons:
                raise ValueError(f"no daemon {target!r} in this pool")
            with self._lock:
                if command == DAEMON_OFF:
                    self.disabled.add(name)
                    self.due.pop(name, None)
                    if name in self.children:
                        self.children[name].send_signal(signal.SIGTERM)
                elif name in self.disabled:
                    self.disabled.discard(name)
                    self.backoff[name].failures = 0
                    self.due[name] = time.monotonic()   # condor_on: start it now
            return True
        raise HTCondorException(f"the master does not handle command {command}")

    def _off(self, peer) -> bool:
        self.stopping.set()
        return True

    def _status(self) -> dict:
        """Per daemon: pid, running, restarts (starts after the first), exit (the last
        status), state (HTCondor's master ad: Alive, Dead, Hold), failures (in a row,
        the back-off's count), restart_in (seconds to the next start while it is due)
        why its last start failed ("cannot") and, while it runs, the state it told the
        master ("ready", set_ready_state)."""
        with self._lock:
            now = time.monotonic()
            return {name: self._daemon_status(name, now) for name in self.daemons
                    if name in self.children or name in self.due or name in self.disabled}

    def _daemon_status(self, name: str, now: float) -> dict:
        child = self.children.get(name)
        running = child is not None and child.poll() is None
        due = self.due.get(name)
        info = {"pid": child.pid if child is not None else 0, "running": running,
                "restarts": self.restarts[name],
                "exit": None if running or child is None else child.returncode,
                "state": "Alive" if running else "Hold" if name in self.disabled else "Dead",
                "failures": self.backoff[name].failures,
                "restart_in": None if due is None else max(0, round(due - now, 1)),
                "daemon_core": name not in self.others}
        if name in self.cannot:
            info["cannot"] = self.cannot[name]
        if running and name in self.ready:
            info["ready"] = self.ready[name]
        return info

    def ads(self) -> list[dict]:
        ad = self.common_ad("DaemonMaster")
        ad["MasterIpAddr"] = ad["MyAddress"]
        with self._lock:   # HTCondor's <NAME>_StartTime: 0 while a daemon is down
            for name in self.daemons:
                child = self.children.get(name)
                up = child is not None and child.poll() is None
                ad[f"{name.upper()}_StartTime"] = self.start_times.get(name, 0) if up else 0
        return [ad]

    def teardown(self) -> None:
        timeout = self.config_float("SHUTDOWN_GRACEFUL_TIMEOUT", 30)
        with self._lock:
            for name in [*self.others, *STOP_ORDER]:
                child = self.children.get(name)
                if child is None or child.poll() is not None:
                    continue
                child.send_signal(signal.SIGTERM)
                try:
                    child.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.log.info("%s did not stop in %ss; killing it", name, timeout)
                    child.kill()
                    child.wait()
                self.log.info("%s stopped", name)
        os.close(self._lifeline_w)
        # Whatever is left below us now (a job that daemonized, a starter or launcher of a
        # daemon that had to be killed) goes: every process the pool started ends with it.
        with self._lock:
            killed = end_descendants(self._own_pids(), timeout)
        if killed:
            self.log.info("killed %d leftover process(es) of the pool at its stop", killed)
        try:
            (self.run_dir / "master.pid").unlink()
        except FileNotFoundError:
            pass


def _access_errno(path: str) -> int:
    """Why ``path`` cannot be executed, as an errno."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno or 0
    return 13   # EACCES: it is there but not executable


if __name__ == "__main__":
    main_for(Master)
