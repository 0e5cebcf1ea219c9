"""HTCondor's built-in parameter defaults and the macros it computes at start-up.

``param_table.json`` holds the defaults (generated from HTCondor's param table by
``daemons/param_table_generate.py``: the raw default and declared type of each
parameter); ``live_macros()`` the values HTCondor works out when it reads its
configuration (host names, detected cores and memory, architecture, OS).
``config_files.load_config`` starts every configuration from both, so ``param``
answers as ``htcondor2.param`` does for knobs nobody set.
"""

from __future__ import annotations

import functools
import json
import os
import socket
from pathlib import Path

from jobledger.daemons.machine_facts import proc_kb, static_facts

TABLE = Path(__file__).with_name("param_table.json")


@functools.lru_cache(maxsize=1)
def defaults() -> dict[str, tuple[str, str]]:
    """NAME -> (raw default, declared type)."""
    data = json.loads(TABLE.read_text("utf-8"))
    return {name: (value, kind) for name, (value, kind) in data["params"].items()}


def declared_type(name: str) -> str | None:
    entry = defaults().get(name.upper())
    return entry[1] if entry else None


@functools.lru_cache(maxsize=1)
def live_macros() -> dict[str, str]:
    """The macros HTCondor computes rather than reads (this machine's facts)."""
    facts = static_facts()
    host = socket.gethostname()
    fqdn = socket.getfqdn()
    full = host if "." in host or not fqdn.startswith(host + ".") else fqdn
    cpus = len(os.sched_getaffinity(0)) or os.cpu_count() or 1
    try:
        address = socket.gethostbyname(socket.gethostname())
    except OSError:
        address = "127.0.0.1"
    return {
        "HOSTNAME": host.split(".")[0], "FULL_HOSTNAME": full, "USERNAME": _user(),
        "IP_ADDRESS": address, "IPV4_ADDRESS": address, "IP_ADDRESS_IS_IPV6": "false",
        "DETECTED_CPUS": str(cpus), "DETECTED_CORES": str(os.cpu_count() or cpus),
        "DETECTED_PHYSICAL_CPUS": str(os.cpu_count() or cpus),
        "DETECTED_MEMORY": str(proc_kb("/proc/meminfo", ("MemTotal",))["MemTotal"] // 1024),
        "ARCH": facts["Arch"], "OPSYS": facts["OpSys"], "OPSYSANDVER": facts["OpSysAndVer"],
        "OPSYSMAJORVER": str(facts["OpSysMajorVer"]), "OPSYSVER": str(facts["OpSysVer"]),
        "OPSYSNAME": facts["OpSysName"], "OPSYSLONGNAME": facts["OpSysLongName"],
        "OPSYSSHORTNAME": facts["OpSysShortName"], "OPSYSLEGACY": facts["OpSysLegacy"],
        "UNAME_ARCH": facts["UtsnameMachine"], "UNAME_OPSYS": facts["UtsnameSysname"].upper(),
        "CondorIsAdmin": "true" if os.geteuid() == 0 else "false",
    }


def _user() -> str:
    import pwd
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())
