"""Where configuration comes from: CONDOR_CONFIG, local files, the ``param`` mapping.

``param`` is htcondor2's ``htcondor.param``: a mutable mapping over the
configuration the process loaded, values typed by the parameter's declared
type (``eventcore.config.typed_value``).  ``reload_config()`` re-reads it
from ``$CONDOR_CONFIG`` (or the file given), then ``LOCAL_CONFIG_FILE`` and
``LOCAL_CONFIG_DIR``, then ``_CONDOR_<NAME>`` environment overrides, exactly
the order HTCondor uses.  Without ``CONDOR_CONFIG`` only the built-in
defaults below are known.

``pool_config_text`` writes the configuration of a personal pool (the file
``PersonalPool`` keeps in its LOCAL_DIR).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path

from jobledger.daemons import param_table
from jobledger.daemons.ipc import sinful
from jobledger.eventcore.config import ConfigTable, Setting, expand, parse_config, typed_value
from jobledger.eventcore.errors import ConfigError

# Our own defaults, over HTCondor's param table (daemons/param_table.py).
DEFAULTS = """
UPDATE_INTERVAL = 300
NEGOTIATOR_INTERVAL = 60
PERIODIC_EXPR_INTERVAL = 60
MAX_PERIODIC_EXPR_INTERVAL = 1200
MAX_JOBS_RUNNING = 10000
MAX_JOBS_PER_SUBMISSION = 20000
SYSTEM_MAX_RELEASES = -1
CLASSAD_LIFETIME = 900
START = True
SUSPEND = False
PREEMPT = False
RUNBENCHMARKS = LastBenchmark == 0
JOB_RENICE_INCREMENT = 0
IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS = True
JOB_DEFAULT_REQUESTMEMORY = 128
JOB_DEFAULT_REQUESTDISK = 1024
JOB_DEFAULT_REQUESTCPUS = 1
KILLING_TIMEOUT = 30
SHUTDOWN_GRACEFUL_TIMEOUT = 30
LOG = $(LOCAL_DIR)/log
SPOOL = $(LOCAL_DIR)/spool
EXECUTE = $(LOCAL_DIR)/execute
RUN = $(LOCAL_DIR)/run
HISTORY = $(SPOOL)/history
JOB_QUEUE_LOG = $(SPOOL)/job_queue.log
MAX_HISTORY_LOG = 20971520
MAX_HISTORY_ROTATIONS = 2
SCHEDD_NAME =
"""


def _read(path: str) -> str:
    return Path(path).read_text("utf-8")


@functools.lru_cache(maxsize=1)
def _builtin() -> ConfigTable:
    """HTCondor's param table and computed macros, then the defaults above."""
    table = ConfigTable()
    for name, (value, _) in param_table.defaults().items():
        table.set(Setting(name, value, "<param table>", 0))
    for name, value in param_table.live_macros().items():
        table.set(Setting(name, value, "<detected>", 0))
    return parse_config(DEFAULTS, "<defaults>", table)


def load_config(root: str | None, env: Mapping[str, str]) -> ConfigTable:
    """Defaults, then ``root`` (if any), then its local files; ``ConfigError`` on bad input."""
    table = _builtin().copy()
    if root:
        try:
            text = _read(root)
        except OSError as exc:
            raise ConfigError(f"cannot read configuration: {exc.strerror or exc}", root) from exc
        parse_config(text, root, table, _read, env)
        _load_local_files(table, env)
    for key, value in env.items():
        if key.upper().startswith("_CONDOR_") and len(key) > 8:
            table.set(Setting(key[8:], value, "<environment>", 0))
    return table


def _load_local_files(table: ConfigTable, env: Mapping[str, str]) -> None:
    files = expand(table.raw("LOCAL_CONFIG_FILE") or "", table, env)
    for path in [p for p in files.replace(",", " ").split() if p]:
        if Path(path).is_file():
            parse_config(_read(path), path, table, _read, env)
    folder = expand(table.raw("LOCAL_CONFIG_DIR") or "", table, env).strip()
    if folder and Path(folder).is_dir():
        for entry in sorted(Path(folder).iterdir()):
            if entry.is_file() and not entry.name.startswith(".") and not entry.name.endswith("~"):
                parse_config(_read(str(entry)), str(entry), table, _read, env)


class Param(MutableMapping):
    """htcondor2's ``param``: typed configuration values of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table = ConfigTable()
        self._loaded = False

    def _ensure(self) -> ConfigTable:
        with self._lock:
            if not self._loaded:
                self._table = load_config(os.environ.get("CONDOR_CONFIG"), os.environ)
                self._loaded = True
            return self._table

    def reload(self, root: str | None = None) -> None:
        table = load_config(root if root is not None else os.environ.get("CONDOR_CONFIG"), os.environ)
        with self._lock:
            self._table = table
            self._loaded = True

    def raw(self, name: str) -> str | None:
        return self._ensure().raw(name)

    def table(self) -> ConfigTable:
        """Every setting as read, with where it was read (condor_config_val -v)."""
        return self._ensure()

    def expanded(self, name: str) -> str:
        """The macro-expanded string value; ``KeyError`` when not defined."""
        table = self._ensure()
        raw = table.raw(name)
        if raw is None:
            raise KeyError(name)
        return expand(raw, table, os.environ)

    def __getitem__(self, name: str):
        if not isinstance(name, str):
            raise TypeError("key must be a string")
        value = self.expanded(name)
        if value == "":
            raise KeyError(name)  # htcondor2 treats an empty value as not defined
        return typed_value(name, value, param_table.declared_type(name))

    def __setitem__(self, name: str, value: str) -> None:
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("param keys and values must be strings")
        self._ensure().set(Setting(name, value, "<param>", 0))

    def __delitem__(self, name: str) -> None:
        table = self._ensure()
        if table.raw(name) is None:
            raise KeyError(name)
        with self._lock:
            del table.settings[name.upper()]

    def _defined(self) -> list[str]:
        """The names whose expanded value is not empty: what ``param[name]`` answers."""
        table = self._ensure()
        return [name for name in table.names() if expand(table.raw(name) or "", table, os.environ) != ""]

    def __iter__(self) -> Iterator[str]:
        # htcondor2 lists only what it would answer: ADSTASH_READ_POOLS = $(CONDOR_HOST)
        # with CONDOR_HOST unset is neither listed nor readable.
        return iter(self._defined())

    def __len__(self) -> int:
        return len(self._defined())

    def __repr__(self) -> str:
        return f"<Param: {len(self)} parameters>"


class ParamV1(MutableMapping):
    """v1 ``htcondor.param`` over the same configuration as ``param``.

    Where the v1 bindings differ from htcondor2 (checked against the 24.0 wheel): every
    name with a raw value is listed, and a name whose value expands to nothing answers
    its raw text (``ADSTASH_READ_POOLS`` -> ``'$(CONDOR_HOST)'``) instead of KeyError,
    while ``in`` still says whether it expands to something.
    """

    def __init__(self, v2: Param) -> None:
        self._v2 = v2

    def __getitem__(self, name: str):
        try:
            return self._v2[name]
        except KeyError:
            raw = self._v2.raw(name) if isinstance(name, str) else None
            if not raw:
                raise
            return raw

    def __contains__(self, name) -> bool:
        return name in self._v2

    def __setitem__(self, name: str, value: str) -> None:
        self._v2[name] = value

    def __delitem__(self, name: str) -> None:
        del self._v2[name]

    def __iter__(self) -> Iterator[str]:
        table = self._v2.table()
        return iter([name for name in table.names() if table.raw(name)])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"<Param: {len(self)} parameters>"


param = Param()
param_v1 = ParamV1(param)


def reload_config(root_config_file: str | None = None) -> None:
    """Re-read the configuration (from ``root_config_file`` as if it were CONDOR_CONFIG)."""
    param.reload(root_config_file)


def collector_address(get) -> str | None:
    """The address to reach the pool's collector at, from ``get(name)`` (a config lookup).

    COLLECTOR_HOST naming a socket (``<...?sock=PATH>``) is used as it is.  Written as
    HTCondor's configurations write it, ``host[:port]`` (``$(CONDOR_HOST):0``: port 0,
    the collector picks its own and publishes it), it means this machine's collector,
    which a pool's daemons always are here: the address in COLLECTOR_ADDRESS_FILE, or
    else ``$(RUN)/collector.sock``.
    """
    host = (get("COLLECTOR_HOST") or "").strip()
    if not host or "sock=" in host:
        return host or None
    published = (get("COLLECTOR_ADDRESS_FILE") or "").strip()
    if published:
        try:
            text = Path(published).read_text().strip().splitlines()
        except OSError:
            text = []
        if text and "sock=" in text[0]:
            return text[0].strip()
    run = (get("RUN") or "").strip()
    return sinful(str(Path(run) / "collector.sock")) if run else host


def network_endpoint(get) -> tuple[str, int] | None:
    """(host, port) the pool listens on over TCP, or None (the default: Unix sockets only).

    The pool opens the network only when asked: COLLECTOR_HOST written ``host:port``
    with a port other than 0 (``127.0.0.1:9618``).  The host is where the shared port
    listens and what the daemons' addresses say (NETWORK_INTERFACE, when set, instead)."""
    host = (get("COLLECTOR_HOST") or "").strip()
    if not host or "sock=" in host or "," in host:
        return None
    if host.startswith("<") and host.endswith(">"):
        host = host[1:-1].partition("?")[0]
    name, colon, port = host.rpartition(":")
    if not colon:
        return None
    try:
        number = int(port)
    except ValueError:
        return None
    if not 0 < number < 65536 or not name:
        return None
    interface = (get("NETWORK_INTERFACE") or "").strip()
    if interface and interface != "*":
        name = interface
    return name.strip("[]"), number


def read_pool_config(config_file: str | Path) -> ConfigTable:
    """The configuration of the pool whose file is ``config_file`` (for daemons and tools)."""
    return load_config(str(config_file), os.environ)


def config_value(table: ConfigTable, name: str, default: str | None = None) -> str:
    """``name`` expanded under ``table``; ``default`` (or ``KeyError``) when undefined or empty."""
    raw = table.raw(name)
    value = expand(raw, table, os.environ) if raw is not None else ""
    if value == "":
        if default is None:
            raise KeyError(name)
        return default
    return value


def pool_config_text(local_dir: Path, extra: Mapping[str, str] | None = None,
                     raw: str = "") -> str:
    """The condor_config of a personal pool rooted at ``local_dir``."""
    run = local_dir / "run"
    lines = [
        "# Personal pool configuration written by jobledger.",
        "use ROLE: Personal",
        "use FEATURE: PartitionableSlot",
        f"LOCAL_DIR = {local_dir.as_posix()}",
        "EXECUTE = $(LOCAL_DIR)/execute",
        "LOCK = $(LOCAL_DIR)/lock",
        "LOG = $(LOCAL_DIR)/log",
        "RUN = $(LOCAL_DIR)/run",
        "SPOOL = $(LOCAL_DIR)/spool",
        "SEC_PASSWORD_DIRECTORY = $(LOCAL_DIR)/passwords.d",
        "SEC_TOKEN_DIRECTORY = $(LOCAL_DIR)/tokens.d",
        "SEC_TOKEN_SYSTEM_DIRECTORY = $(LOCAL_DIR)/system_tokens.d",
        "JOURNAL = $(LOCAL_DIR)/journal.sqlite",   # where daemons.storage keeps it (DB_NAME)
        f"COLLECTOR_HOST = {sinful(str(run / 'collector.sock'))}",
        "UPDATE_INTERVAL = 2",
        "NEGOTIATOR_INTERVAL = 2",
        "NEGOTIATOR_CYCLE_DELAY = 0",
        "PERIODIC_EXPR_INTERVAL = 1",
        "POLLING_INTERVAL = 2",
        "MASTER_UPDATE_INTERVAL = 2",
        "STARTER_UPDATE_INTERVAL = 2",
        "SHADOW_QUEUE_UPDATE_INTERVAL = 2",
        "STARTER_INITIAL_UPDATE_INTERVAL = 1",
        "MASTER_BACKOFF_CONSTANT = 1",
        "SCHEDD_RECONNECT_TIMEOUT = 60",
        "MAIL = /bin/true",
        "SENDMAIL = /bin/true",
    ]
    lines += [f"{k} = {'' if v is None else v}" for k, v in (extra or {}).items()]
    text = "\n".join(lines) + "\n"
    if raw:
        text += "# RAW PARAMS\n" + raw.strip("\n") + "\n"
    return text
