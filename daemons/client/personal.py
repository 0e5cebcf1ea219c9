"""``PersonalPool``: a whole pool of real daemons in one directory (htcondor2.personal).

``PersonalPool(local_dir=...)`` writes ``local_dir/condor_config`` and
points this process at it (CONDOR_CONFIG + ``reload_config``), so its repr
already says INITIALIZED.  ``start()`` launches the master (in its own
session) and returns once the collector knows every daemon and each one,
up and still running after it advertised, says so (READY), or stops the
pool and raises ``HTCondorException`` naming a daemon that exited while the
pool started, with the last line of its stderr;
``stop()`` asks the master to stop them all and waits until it is gone.
A pool is stopped when its object is garbage-collected or the interpreter
exits, unless ``detach()`` was called; ``attach(local_dir)`` finds a running
pool again.
"""

from __future__ import annotations

import enum
import os
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

from jobledger.daemons import ipc
from jobledger.daemons.config_files import config_value, pool_config_text, read_pool_config, reload_config
from jobledger.daemons.daemon import process_start_time
from jobledger.daemons.master import make_layout, pool_running_in
from jobledger.eventcore.enums import DaemonType
from jobledger.eventcore.errors import HTCondorException

READY_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
NEEDED = (DaemonType.Master, DaemonType.Collector, DaemonType.Schedd, DaemonType.Negotiator,
          DaemonType.Startd)


def _needed(daemons: dict) -> tuple:
    """The daemon types the collector must know for the pool to be ready.  A pool whose
    only machines are Dask workers may have none yet (an elastic cluster starts with
    none): its Dask startd saying it is up is enough there."""
    if "dask_startd" in daemons and "startd" not in daemons:
        return tuple(kind for kind in NEEDED if kind != DaemonType.Startd)
    return NEEDED


class PersonalPoolState(str, enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZED = "INITIALIZED"
    STARTING = "STARTING"
    READY = "READY"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"


class SetCondorConfig:
    """Point CONDOR_CONFIG (and ``param``) at a file; ``unset`` puts the old one back."""

    def __init__(self, config_file: Path):
        self.config_file = Path(config_file)
        self.previous: str | None = None

    def set(self) -> None:
        self.previous = os.environ.get("CONDOR_CONFIG")
        os.environ["CONDOR_CONFIG"] = str(self.config_file)
        reload_config()

    def unset(self) -> None:
        if self.previous is None:
            os.environ.pop("CONDOR_CONFIG", None)
        else:
            os.environ["CONDOR_CONFIG"] = self.previous
        reload_config()

    def __enter__(self):
        self.set()
        return self

    def __exit__(self, *exc):
        self.unset()


def _short_path(path: Path) -> str:
    absolute = path.absolute()
    candidates = [absolute.as_posix()]
    try:
        candidates.append("~/" + absolute.relative_to(Path.home()).as_posix())
    except ValueError:
        pass
    try:
        candidates.append("./" + absolute.relative_to(Path.cwd()).as_posix())
    except ValueError:
        pass
    return min(candidates, key=len)


def _stop_master(pid: int, start, run_dir: Path, timeout: float) -> None:
    """Ask the master at ``run_dir`` to stop; wait; kill its session if it will not."""
    try:
        ipc.call(ipc.sinful(str(run_dir / "master.sock")), "off", timeout=5)
    except HTCondorException:
        if process_start_time(pid) == start:
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process_start_time(pid) == start:
        time.sleep(0.02)
    if process_start_time(pid) == start:
        os.killpg(pid, signal.SIGKILL)


class PersonalPool:
    """A personal pool rooted at ``local_dir`` (see the module docstring)."""

    def __init__(self, local_dir: Path | None = None, config: dict | None = None,
                 raw_config: str | None = None, detach: bool = False, use_config: bool = True):
        self.local_dir = Path(local_dir if local_dir is not None else Path.home() / ".condor" / "personal")
        self.local_dir = self.local_dir.absolute()
        self.config_file = self.local_dir / "condor_config"
        self._config = {k: ("" if v is None else str(v)) for k, v in (config or {}).items()}
        self._raw_config = raw_config or ""
        self._detached = detach
        self._state = PersonalPoolState.UNINITIALIZED
        self._master: subprocess.Popen | None = None
        self._master_pid: int | None = None
        self._master_start = None
        self._schedd = None
        self._collector = None
        self._config_setter = SetCondorConfig(self.config_file)
        self._finalizer = None
        self._stderr_sizes: dict[str, int] = {}
        if use_config:
            self.initialize()
            self._config_setter.set()

    # -- state -------------------------------------------------------------------------
    @property
    def state(self) -> PersonalPoolState:
        return self._state

    def __repr__(self) -> str:
        return f"PersonalPool(local_dir={_short_path(self.local_dir)}, state={self._state})"

    def initialize(self, overwrite_config: bool = True) -> "PersonalPool":
        busy = pool_running_in(self.local_dir)
        if busy:
            raise HTCondorException(f"{busy}; nothing was changed")
        if not overwrite_config and self.config_file.exists():
            raise FileExistsError(
                f"Found existing config file; refusing to write config because overwrite={overwrite_config}.")
        make_layout(self.local_dir)
        text = pool_config_text(self.local_dir, self._config, self._raw_config)
        self.config_file.write_text(text)
        self._state = PersonalPoolState.INITIALIZED
        return self

    # -- start / stop ----------------------------------------------------------------------
    def start(self) -> "PersonalPool":
        if self._state is PersonalPoolState.READY:
            return self
        if self._state is PersonalPoolState.UNINITIALIZED or not self.config_file.exists():
            self.initialize()
        self._state = PersonalPoolState.STARTING
        env = dict(os.environ, CONDOR_CONFIG=str(self.config_file))
        env.pop("JOBLEDGER_LIFELINE_FD", None)
        # the daemons append to their stderr files: what this start adds begins here
        self._stderr_sizes = {path.name: path.stat().st_size
                              for path in (self.local_dir / "log").glob("*.stderr")}
        log = open(self.local_dir / "log" / "master.stderr", "ab")
        try:
            self._master = subprocess.Popen([sys.executable, "-m", "jobledger.daemons.master"], env=env,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True, cwd=str(self.local_dir),
                                            close_fds=True)
        finally:
            log.close()
        self._master_pid = self._master.pid
        self._master_start = process_start_time(self._master.pid)
        self._finalizer = weakref.finalize(self, _finalize, self._master_pid, self._master_start,
                                           self.local_dir / "run", self._detached)
        self._wait_ready(READY_TIMEOUT)
        self._state = PersonalPoolState.READY
        return self

    def _wait_ready(self, timeout: float, starting: bool = True) -> None:
        """Until the collector knows every daemon and the master says each is up.

        While the pool starts (``starting``), READY needs more than the ads: each
        daemon must say it is up (its start finished and its first ads were sent:
        ``ping``), and after that the master must see every daemon still running,
        with the pids that answered and no restart.  A daemon that has exited even
        once (an import error, a refusal, a crash before, while or right after it
        advertises) fails the start: the pool is stopped and the error names the
        daemon and the last line of its stderr.
        """
        collector = ipc.sinful(str(self.local_dir / "run" / "collector.sock"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._master is not None and self._master.poll() is not None:
                stderr = self.local_dir / "log" / "master.stderr"
                raise HTCondorException(f"the pool's master exited with status {self._master.returncode}"
                                        f"{self._said(stderr)} (see {stderr})")
            daemons = self._daemons()       # the master's word, read once a turn
            try:
                located = all(ipc.call(collector, "locate", timeout=2, daemon_type=int(kind))
                              for kind in _needed(daemons))
            except HTCondorException:
                located = False
            # Then the master's word on every daemon it runs (not only those the collector
            # knows), before and after each one says it is up: the second look, taken after
            # the daemons' own answers, sees one that died after advertising.
            if starting:
                self._fail_on_exit(daemons)
            if starting and located:
                located = bool(daemons) and self._all_up(daemons)
                if located:
                    after = self._daemons()
                    self._fail_on_exit(after)
                    located = _pids(after) == _pids(daemons)
            if located:
                return
            time.sleep(0.02)
        raise HTCondorException(f"the personal pool at {self.local_dir} did not become ready in {timeout:g}s")

    def _daemons(self) -> dict:
        """The master's view of its daemons (``status``), or {} while it cannot answer."""
        try:
            return ipc.call(ipc.sinful(str(self.local_dir / "run" / "master.sock")), "status", timeout=2)
        except HTCondorException:
            return {}

    def _all_up(self, daemons: dict) -> bool:
        """Each daemon the master runs answers that it is up, from the pid the master started."""
        for name, info in daemons.items():
            if not info["running"]:
                return False
            if not info.get("daemon_core", True):
                continue   # a plain program: running, from the pid the master started, is all it says
            try:
                answer = ipc.call(ipc.sinful(str(self.local_dir / "run" / f"{name}.sock")), "ping", timeout=2)
            except HTCondorException:
                return False
            if not (answer.get("up") and answer.get("pid") == info["pid"]):
                return False
        return True

    def _fail_on_exit(self, daemons: dict) -> None:
        """A daemon that exited while the pool starts will not get better: stop, say which."""
        for name, info in daemons.items():
            if info["running"] and not info["restarts"]:
                continue
            code = info.get("exit")
            stderr = self.local_dir / "log" / f"{name}.stderr"
            self.stop()
            if info.get("cannot"):
                raise HTCondorException(f"the {name} daemon of DAEMON_LIST cannot start: {info['cannot']}")
            raise HTCondorException(f"the {name} daemon exited as the pool started"
                                    + (f" (status {code})" if code is not None else "")
                                    + f"{self._said(stderr)} (see {stderr})")

    def _said(self, stderr: Path) -> str:
        """What a daemon wrote to ``stderr`` since this start (``_last_words``)."""
        return _last_words(stderr, self._stderr_sizes.get(stderr.name, 0))

    def stop(self) -> "PersonalPool":
        if self._state is not PersonalPoolState.READY and self._state is not PersonalPoolState.STARTING:
            return self
        if self._detached:
            return self
        self._state = PersonalPoolState.STOPPING
        _stop_master(self._master_pid, self._master_start, self.local_dir / "run", STOP_TIMEOUT)
        if self._master is not None:
            self._master.wait()
        if self._finalizer is not None:
            self._finalizer.detach()
        self._state = PersonalPoolState.STOPPED
        return self

    def detach(self) -> "PersonalPool":
        self._detached = True
        if self._finalizer is not None:
            self._finalizer.detach()
        return self

    @classmethod
    def attach(cls, local_dir: Path | None = None) -> "PersonalPool":
        pool = cls(local_dir=local_dir, use_config=False)
        pool._state = PersonalPoolState.INITIALIZED
        pid_file = pool.local_dir / "run" / "master.pid"
        try:
            pid = int(pid_file.read_text())
        except (OSError, ValueError):
            raise Exception(f"no personal pool is running at {pool.local_dir}") from None
        pool._master_pid, pool._master_start = pid, process_start_time(pid)
        if pool._master_start is None:
            raise Exception(f"no personal pool is running at {pool.local_dir}")
        pool._config_setter.set()
        pool._wait_ready(5.0, starting=False)
        pool._state = PersonalPoolState.READY
        # As htcondor2's: an attached pool is not detached -- stop() (or losing the
        # object) stops it; call detach() to leave it running.
        pool._finalizer = weakref.finalize(pool, _finalize, pid, pool._master_start,
                                           pool.local_dir / "run", False)
        return pool

    def __enter__(self) -> "PersonalPool":
        self._config_setter.set()
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        self._config_setter.unset()

    # -- the pool's daemons ----------------------------------------------------------------
    @property
    def collector(self):
        from jobledger.daemons.client.api import Collector
        if self._collector is None:
            self._collector = Collector(self.get_config_val("COLLECTOR_HOST"))
        return self._collector

    @property
    def schedd(self):
        from jobledger.daemons.client.api import Schedd
        if self._schedd is None:
            self._schedd = Schedd(self.collector.locate(DaemonType.Schedd))
        return self._schedd

    def get_config_val(self, macro: str, default: str | None = None) -> str:
        table = read_pool_config(self.config_file)
        return config_value(table, macro, default)

    def use_config(self) -> SetCondorConfig:
        return SetCondorConfig(self.config_file)

    def run_command(self, args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    universal_newlines=True, **kwargs):
        env = dict(os.environ, CONDOR_CONFIG=str(self.config_file))
        done = subprocess.run(args, stdout=stdout, stderr=stderr, universal_newlines=universal_newlines,
                              env=env, **kwargs)
        if universal_newlines:
            done.stdout = done.stdout.rstrip() if isinstance(done.stdout, str) else done.stdout
            done.stderr = done.stderr.rstrip() if isinstance(done.stderr, str) else done.stderr
        return done


def _pids(daemons: dict) -> dict:
    return {name: info["pid"] for name, info in daemons.items()}


def _last_words(stderr: Path, since: int = 0, limit: int = 300) -> str:
    """``": <why>"`` for a daemon that exited, from what it wrote to ``stderr``
    after ``since``: its refusal (a ``jobledger:`` message, made one line), else
    its last non-empty line (both ends of a long one); "" when it said nothing."""
    try:
        with open(stderr, "rb") as handle:
            handle.seek(max(since, os.fstat(handle.fileno()).st_size - 65536))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    refusal = text.rfind("jobledger: ")
    if refusal >= 0:
        return ": " + " ".join(text[refusal + len("jobledger: "):].split())
    line = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    if len(line) > limit:
        line = f"{line[:limit // 2]}...{line[-limit // 2:]}"
    return f": {line}" if line else ""


def _finalize(pid, start, run_dir, detached) -> None:
    """Stop a pool whose object is gone (garbage collection or interpreter exit)."""
    if detached or pid is None:
        return
    try:
        _stop_master(pid, start, run_dir, STOP_TIMEOUT)
    except OSError:
        pass

