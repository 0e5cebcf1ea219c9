"""The facts about this machine a startd puts in every slot ad (HTCondor's sysapi).

``machine_facts()`` reads them now (load average, clock) or once (operating
system, architecture, memory): ``Arch``, ``OpSys`` and the ``OpSys*`` family
from /etc/os-release (``OpSysAndVer = "Debian12"``, ``OpSysVer = 1200`` for
12.0), ``Utsname*``, ``LoadAvg`` / ``TotalLoadAvg`` (the one-minute load),
``CondorLoadAvg`` (the load of our own jobs: their cores while they run),
``ClockDay`` / ``ClockMin`` (local time), ``VirtualMemory`` (KB of memory and
swap).
"""

from __future__ import annotations

import functools
import os
import platform
import time

ARCH = {"x86_64": "X86_64", "amd64": "X86_64", "i686": "INTEL", "i386": "INTEL",
        "aarch64": "aarch64", "arm64": "aarch64", "ppc64le": "ppc64le"}


def proc_kb(path: str, names: tuple[str, ...]) -> dict[str, int]:
    """``Name:  <n> kB`` fields of a /proc file (0 for those missing or unreadable)."""
    out = dict.fromkeys(names, 0)
    try:
        with open(path) as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                if key in out:
                    out[key] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def _os_release() -> dict:
    out = {}
    try:
        with open("/etc/os-release") as handle:
            for line in handle:
                key, sep, value = line.strip().partition("=")
                if sep:
                    out[key] = value.strip().strip('"')
    except OSError:
        pass
    return out


@functools.lru_cache(maxsize=1)
def static_facts() -> dict:
    """What does not change while the daemon runs."""
    uname = platform.uname()
    release = _os_release()
    name = (release.get("NAME") or "Linux").split()[0]
    parts = (release.get("VERSION_ID") or "0").split(".")
    major = int(parts[0]) if parts[0].isdigit() else 0
    minor = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    kb = proc_kb("/proc/meminfo", ("MemTotal", "SwapTotal"))
    mem, swap = kb["MemTotal"], kb["SwapTotal"]
    return {
        "Arch": ARCH.get(uname.machine.lower(), uname.machine), "OpSys": "LINUX",
        "OpSysLegacy": "LINUX", "OpSysName": name, "OpSysShortName": name,
        "OpSysLongName": release.get("PRETTY_NAME") or f"{name} {major}",
        "OpSysMajorVer": major, "OpSysVer": major * 100 + minor, "OpSysAndVer": f"{name}{major}",
        "UtsnameSysname": uname.system, "UtsnameNodename": uname.node,
        "UtsnameRelease": uname.release, "UtsnameVersion": uname.version,
        "UtsnameMachine": uname.machine,
        "VirtualMemory": mem + swap, "TotalVirtualMemory": mem + swap,
    }


def machine_facts(condor_load: float = 0.0) -> dict:
    """Static facts plus the load and clock now; ``condor_load`` = our jobs' cores."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    now = time.localtime()
    facts = dict(static_facts())
    facts.update({
        "LoadAvg": round(load, 2), "TotalLoadAvg": round(load, 2),
        "CondorLoadAvg": float(condor_load), "TotalCondorLoadAvg": float(condor_load),
        "ClockDay": (now.tm_wday + 1) % 7, "ClockMin": now.tm_hour * 60 + now.tm_min,
    })
    return facts
