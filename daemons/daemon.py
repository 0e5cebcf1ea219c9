"""What every pool daemon process shares: config, directories, log, lifeline, stop.

A daemon is started by the master as ``python -m jobledger.daemons.<name>`` with
``CONDOR_CONFIG`` pointing at the pool's configuration and, in
``JOBLEDGER_LIFELINE_FD``, the read end of a pipe whose write end only the
master holds: when the master dies (even by SIGKILL) the pipe reads EOF and
the daemon shuts down instead of living on as an orphan.

``Daemon`` gives a subclass: ``config(name)``, the pool directories, a log
file at ``<NAME>_LOG`` (``$(LOG)/<Name>Log``) in HTCondor's line format, its socket server at ``$(RUN)/<name>.sock``,
``advertise(ads)`` to the collector, ``stopping`` (an Event set by SIGTERM,
SIGINT or the lifeline) and ``every(seconds, fn)`` for periodic work that
runs in one worker thread and keeps its first exception for ``run()`` to
re-raise.
"""

from __future__ import annotations

import functools
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from jobledger.eventcore import adwire
from jobledger.daemons import ipc
from jobledger.daemons.storage import adtext
from jobledger.daemons.config_files import collector_address, config_value, network_endpoint, read_pool_config
from jobledger.daemons.selfmonitor import DEFAULT_WINDOW, SelfMonitor
from jobledger.daemons.runtime_config import RuntimeConfig
from jobledger.daemons.threadnames import name_process
from jobledger.eventcore.config import param_boolean
from jobledger.eventcore.errors import HTCondorException

LIFELINE_ENV = "JOBLEDGER_LIFELINE_FD"
# DaemonCommand values every daemon acts on (the master takes more).
DC_OFF = {60005, 60006, 60015, 60042}   # OffGraceful, OffFast, OffPeaceful, OffForce
DC_RESTART = {453, 485}                  # Restart, RestartPeaceful
DC_RECONFIG = 60004
EXIT_REFUSED = 4     # HTCondor's DAEMON_NO_RESTART: the master does not start it again
VERSION = "$CondorVersion: 25.14.1 2026-09-24 BuildID: jobledger $"
PLATFORM = "$CondorPlatform: X86_64-Linux jobledger $"


# HTCondor's daemon log line: "11/28/26 05:36:50.123 (pid:4242) message" (D_PID's tag).
LOG_FORMAT = logging.Formatter("%(asctime)s.%(msecs)03d (pid:%(process)d) %(message)s", "%m/%d/%y %H:%M:%S")


LOCATE_CACHE = 5.0  # seconds the located addresses of a daemon type are reused


def hostname() -> str:
    return socket.gethostname()


@functools.cache
def filesystem_domain() -> str:
    """This machine's FileSystemDomain (HTCondor's default: the full host name);
    submit and execute sides must say the same."""
    return socket.getfqdn()


def process_start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (None if there is no such process).

    A pid plus its start time names one process for good: pids are reused,
    the pair is not.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()
    if fields[0] == b"Z":
        return None  # a zombie has finished
    return int(fields[19])


def alive(pid: int | None, start: int | None) -> bool:
    return bool(pid) and start is not None and process_start_time(pid) == start


class Daemon:
    """Base of collector, schedd, negotiator, startd, master."""

    name = "daemon"          # socket and log base name: collector, schedd, ...
    log_name = "DaemonLog"   # HTCondor's log file name: CollectorLog, SchedLog, ...

    def __init__(self, config_file: str | None = None):
        adtext.real_environment()
        self.config_file = config_file or os.environ.get("CONDOR_CONFIG", "")
        if not self.config_file:
            raise HTCondorException("CONDOR_CONFIG is not set: no pool to serve")
        self.table = read_pool_config(self.config_file)
        self.local_dir = Path(self.config("LOCAL_DIR"))
        self.run_dir = Path(self.config("RUN"))
        self.log_dir = Path(self.config("LOG"))
        self.spool_dir = Path(self.config("SPOOL"))
        self.execute_dir = Path(self.config("EXECUTE"))
        self.host = hostname()
        self.start_time = int(time.time())
        self.monitor = SelfMonitor(time.time(), self.config_float("DCSTATISTICS_WINDOW_SECONDS",
                                                                  DEFAULT_WINDOW))
        self._ad_sequence = 0
        self.stopping = threading.Event()
        self.up = threading.Event()           # started, and its first ads sent (``ping`` says)
        self._starting = True
        self._first_ads_sent = False
        self.failure: BaseException | None = None
        self.exit_code = 0     # EXIT_REFUSED: stopped for good (the master does not restart it)
        self.log = self._open_log()
        # assignments set from outside (condor_config_val -set/-rset, RemoteParam)
        self.runtime_config = RuntimeConfig(self.table, self.name, self.log)
        self.table = self.runtime_config.applied(self.table)
        self.server: ipc.Server | None = None
        self._threads: list[threading.Thread] = []
        self._where: dict = {}     # ad type -> (when, addresses): ``located``

    # -- configuration ---------------------------------------------------------
    def config(self, name: str, default: str | None = None) -> str:
        return config_value(self.table, name, default)

    def config_int(self, name: str, default: int) -> int:
        try:
            return int(self.config(name, str(default)))
        except ValueError:
            return default

    def config_bool(self, name: str, default: bool) -> bool:
        """A boolean setting as HTCondor's param_boolean reads it (``eventcore.config``):
        a value that is no boolean is a ``ConfigError`` naming where it was set."""
        return param_boolean(name, self.config(name, ""), default, self.table.settings.get(name.upper()))

    def config_float(self, name: str, default: float) -> float:
        try:
            return float(self.config(name, str(default)))
        except ValueError:
            return default

    def address_of(self, name: str) -> str:
        """``name``'s address: its Unix socket, and the pool's shared port when the pool
        listens on the network (``config_files.network_endpoint``)."""
        return ipc.sinful(str(self.run_dir / f"{name}.sock"), self.endpoint)

    @functools.cached_property
    def endpoint(self) -> tuple[str, int] | None:
        return network_endpoint(lambda name: self.config(name, "") or None)

    def poke_negotiator(self) -> None:
        """Ask the negotiator for a cycle now; a negotiator that is down is not an error
        (its timer cycle and the master's restart cover it)."""
        try:
            ipc.call(self.address_of("negotiator"), "reschedule", timeout=5)
        except HTCondorException:
            pass

    def located(self, ad_type) -> list[str]:
        """The addresses of the pool's daemons of ``ad_type`` (an ``AdType``), from the
        collector; a non-empty answer is reused for LOCATE_CACHE seconds."""
        now = time.monotonic()
        cached = self._where.get(ad_type)
        if cached is not None and now - cached[0] < LOCATE_CACHE:
            return cached[1]
        try:
            found = ipc.call(self.collector_address, "query", timeout=5, ad_type=int(ad_type),
                             projection=["MyAddress"])
        except HTCondorException:
            return []
        addresses = sorted({adwire.literal(ad["MyAddress"]) for ad in found if ad.get("MyAddress")})
        if addresses:
            self._where[ad_type] = (now, addresses)
        return addresses

    @property
    def collector_address(self) -> str:
        return collector_address(lambda name: self.config(name, "")) or ""

    # -- logging -----------------------------------------------------------------
    def _open_log(self) -> logging.Logger:
        logger = logging.getLogger(f"jobledger.{self.name}")
        logger.setLevel(logging.INFO)
        logger.propagate = False
        if not logger.handlers:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            path = Path(self.config(f"{self.name.upper()}_LOG", "") or self.log_dir / self.log_name)
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(path)
            handler.setFormatter(LOG_FORMAT)
            logger.addHandler(handler)
        return logger

    def refuse(self, reason: BaseException) -> None:
        """Exit with ``EXIT_REFUSED``, the reason in the log and on stderr."""
        self.log.error("%s", reason)
        print(f"jobledger: {reason}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_REFUSED)

    def unexpected(self, exc: BaseException) -> None:
        self.log.error("unexpected failure: %r", exc, exc_info=exc)

    # -- the daemon's life ---------------------------------------------------------
    def handlers(self) -> dict:
        """IPC commands this daemon answers (subclasses extend)."""
        return {"ping": lambda peer: {"name": self.name, "pid": os.getpid(), "up": self.up.is_set()},
                "command": self.daemon_command,
                **self.runtime_config.handlers(lambda: self.table)}

    def daemon_command(self, peer, command: int, target: str | None = None) -> bool:
        """``htcondor.send_command`` to this daemon (DaemonCore's own commands): Off*
        and Restart shut it down (the master starts it again), Reconfig re-reads
        the configuration."""
        if command in DC_OFF or command in DC_RESTART:
            self.log.info("command %d: shutting down", command)
            self.stopping.set()
            return True
        if command == DC_RECONFIG:
            self.table = self.runtime_config.applied(read_pool_config(self.config_file))
            return True
        raise HTCondorException(f"the {self.name} does not handle command {command}")

    def setup(self) -> None:
        """Work before the socket opens (subclasses)."""

    def teardown(self) -> None:
        """Work after ``stopping`` is set, before exit (subclasses)."""

    def ads(self) -> list[dict]:
        """This daemon's ads for the collector (subclasses)."""
        return []

    def every(self, seconds: float, fn, name: str | None = None, wake: threading.Event | None = None):
        """Run ``fn`` every ``seconds`` (sooner when ``wake`` is set) until stopping."""
        def loop():
            while not self.stopping.is_set():
                if wake is not None:
                    wake.clear()  # before the work: a wake-up during it is kept for the next round
                try:
                    fn()
                except Exception as exc:  # noqa: BLE001 - kept, logged, re-raised by run()
                    self.unexpected(exc)
                    if self.failure is None:
                        self.failure = exc
                    self.stopping.set()
                    return
                if wake is not None:
                    wake.wait(seconds)
                else:
                    self.stopping.wait(seconds)
        thread = threading.Thread(target=loop, name=name or getattr(fn, "__name__", "periodic"),
                                  daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def advertise(self, ads: list[dict] | None = None) -> None:
        ads = self.ads() if ads is None else ads
        if not ads:
            return
        try:
            ipc.call(self.collector_address, "advertise", timeout=5,
                     ads=[adwire.exprs_of(ad) for ad in ads],
                     command=f"UPDATE_{self.name.upper()}_AD")  # UPDATE_SCHEDD_AD, ...
        except HTCondorException as exc:
            self.log.info("collector not reachable: %s", exc)

    def common_ad(self, mytype: str, name: str | None = None) -> dict:
        """The attributes every daemon ad carries (values as ClassAd literals)."""
        return {
            "MyType": mytype,
            "Name": name or f"{self.host}",
            "Machine": self.host,
            "MyAddress": self.address_of(self.name),
            "CondorVersion": VERSION,
            "CondorPlatform": PLATFORM,
            "DaemonStartTime": self.start_time,
            "DaemonLastReconfigTime": self.start_time,
            "MyPid": os.getpid(),
            "UpdateSequenceNumber": self._next_sequence(),
            **self.monitor.attrs(),
        }

    def _next_sequence(self) -> int:
        self._ad_sequence += 1
        return self._ad_sequence

    def run(self) -> int:
        name_process(self.name)   # and every thread by its own name, as top -H shows them
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stopping.set())
        self._watch_lifeline()
        self.log.info("%s starting (pid %d)", self.name, os.getpid())
        self.setup()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.server = ipc.Server(str(self.run_dir / f"{self.name}.sock"), self.handlers(),
                                 unexpected=self.unexpected).start(f"{self.name}-ipc")
        self._write_address_file()
        self.started()
        self._starting = False
        self._check_up()
        while not self.stopping.wait(5.0):   # a signal's handler sets it at once
            pass
        self.log.info("%s stopping", self.name)
        try:
            self.teardown()
        finally:
            self.server.close()
        if self.failure is not None:
            self.log.error("%s failed: %r", self.name, self.failure)
            return 1
        return self.exit_code

    def _write_address_file(self) -> None:
        """``<NAME>_ADDRESS_FILE`` (STARTD_ADDRESS_FILE, ...), where HTCondor's tools find a
        daemon: its address, CondorVersion and CondorPlatform lines, written whole (a temporary file renamed)."""
        path = self.config(f"{self.name.upper()}_ADDRESS_FILE", "")
        if not path:
            return
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(target.name + ".new")
        temp.write_text(f"{self.address_of(self.name)}\n{VERSION}\n{PLATFORM}\n")   # HTCondor's three lines
        os.replace(temp, target)

    def started(self) -> None:
        """Called once the socket is up (subclasses start their loops here)."""
        interval = self.config_float("UPDATE_INTERVAL", 300)
        self.every(interval, self._advertise_round, name="advertise")

    def _advertise_round(self) -> None:
        self.advertise()
        self._first_ads_sent = True
        self._check_up()

    def _check_up(self) -> None:
        """``up`` once ``started()`` has returned and the first ads were sent: a pool
        starting reports READY only for daemons that got this far (and are alive after)."""
        if not self._starting and self._first_ads_sent:
            self.up.set()

    def _watch_lifeline(self) -> None:
        fd = os.environ.get(LIFELINE_ENV)
        if not fd:
            return
        fd = int(fd)

        def watch():   # a daemon thread: blocks until the master's end of the pipe closes
            while not self.stopping.is_set():
                ready, _, _ = select.select([fd], [], [])
                if ready and not os.read(fd, 1):
                    self.log.info("master is gone: stopping")
                    self.stopping.set()
                    return
        threading.Thread(target=watch, name="lifeline", daemon=True).start()


def main_for(cls) -> None:
    """Entry point body of ``python -m jobledger.daemons.<name>``."""
    daemon = cls()
    sys.exit(daemon.run())
