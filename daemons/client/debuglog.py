"""htcondor2's debug-log functions for client code: enable_debug, enable_log, log, set_subsystem.

Client-side messages (``htcondor.log(level, text)`` and the library's own
notes) go to the ``jobledger`` logger.  ``enable_debug()`` sends them to
stderr, ``enable_log()`` to the file named by ``TOOL_LOG`` (or
``$(LOG)/ToolLog``), ``disable_debug()`` stops both.  ``set_subsystem``
records the subsystem name.  Each line starts with HTCondor's dprintf header, shaped by
TOOL_DEBUG (D_PID, D_CAT, D_SUB_SECOND, D_TIMESTAMP) and the level's own flags; which
levels show is TOOL_DEBUG's categories (D_FULLDEBUG for the verbose ones), as htcondor2 has it.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time

from jobledger.daemons.config_files import param
from jobledger.eventcore.enums import SubsystemType

LOGGER = logging.getLogger("jobledger")
_state: dict = {"subsystem": "TOOL", "handlers": []}

# HTCondor's debug categories (the low byte of a LogLevel), by number; D_STATUS messages
# carry D_ALWAYS's name in the header, as HTCondor's dprintf writes them.
CATEGORIES = {0: "D_ALWAYS", 1: "D_ERROR", 2: "D_ALWAYS", 3: "D_GENERAL", 4: "D_JOB", 5: "D_MACHINE",
              6: "D_CONFIG", 7: "D_PROTOCOL", 8: "D_PRIV", 9: "D_DAEMONCORE", 10: "D_FULLDEBUG",
              11: "D_SECURITY", 12: "D_COMMAND", 13: "D_LOAD", 14: "D_NETWORK", 15: "D_PROC",
              16: "D_PERF_TRACE", 17: "D_ACCOUNTANT", 22: "D_HOSTNAME", 24: "D_AUDIT"}
SHOWN_ALWAYS = {0, 1, 2}
VERBOSE, SUB_SECOND, TIMESTAMP, PID, NO_HEADER = 1 << 10, 1 << 26, 1 << 27, 1 << 28, 1 << 31


class DprintfFilter(logging.Filter):
    """Which messages a debug output shows: D_ALWAYS, D_ERROR and D_STATUS always; another
    category when its name is in the output's flags (TOOL_DEBUG); a verbose message (a
    FullDebug level) when D_FULLDEBUG (or the category's ``:2``) is."""

    def __init__(self, flags: str):
        super().__init__()
        self.names = {name.upper() for name in re.split(r"[\s,|]+", flags or "") if name}

    def filter(self, record: logging.LogRecord) -> bool:
        level = _condor_level(record)
        category = CATEGORIES.get(level & 0xFF, "D_ALWAYS")
        if level & 0xFF == 10:
            return "D_FULLDEBUG" in self.names or "D_ALL" in self.names
        if level & VERBOSE:
            return "D_FULLDEBUG" in self.names or f"{category}:2" in self.names or "D_ALL" in self.names
        return (level & 0xFF) in SHOWN_ALWAYS or category in self.names or "D_ALL" in self.names


class DprintfFormatter(logging.Formatter):
    """HTCondor's dprintf header: ``MM/DD/YY HH:MM:SS`` (the Unix time instead with D_TIMESTAMP;
    ``.mmm`` after either with D_SUB_SECOND), ``(pid:N)`` with D_PID, ``(D_CATEGORY)`` with D_CAT;
    the level's own SubSecond, Timestamp and PID bits ask for them too, NoHeader for none."""

    def __init__(self, flags: str):
        super().__init__()
        self.names = {name.upper() for name in re.split(r"[\s,|]+", flags or "") if name}

    def format(self, record: logging.LogRecord) -> str:
        level = _condor_level(record)
        message = record.getMessage()
        if level & NO_HEADER:
            return message
        if level & TIMESTAMP or "D_TIMESTAMP" in self.names:
            head = str(int(record.created))
        else:
            head = time.strftime("%m/%d/%y %H:%M:%S", time.localtime(record.created))
        if level & SUB_SECOND or "D_SUB_SECOND" in self.names:
            head += f".{int(record.msecs):03d}"
        parts = [head]
        if level & PID or "D_PID" in self.names:
            parts.append(f"(pid:{record.process})")
        if "D_CAT" in self.names or "D_CATEGORY" in self.names:
            category = CATEGORIES.get(level & 0xFF, "D_ALWAYS")
            parts.append(f"({category}:2)" if level & VERBOSE else f"({category})")
        return " ".join(parts) + " " + message


def _condor_level(record: logging.LogRecord) -> int:
    level = getattr(record, "condor_level", None)
    if isinstance(level, int):
        return level
    return VERBOSE if record.levelno <= logging.DEBUG else 0   # the library's own notes


def _attach(handler: logging.Handler) -> None:
    flags = str(param.get("TOOL_DEBUG", "") or "")
    handler.setFormatter(DprintfFormatter(flags))
    handler.addFilter(DprintfFilter(flags))
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.DEBUG)
    _state["handlers"].append(handler)


def enable_debug() -> None:
    """Send the debug output to stderr, with TOOL_DEBUG's categories and header flags."""
    _attach(logging.StreamHandler(sys.stderr))


def enable_log() -> None:
    """Send the debug output to the TOOL_LOG file (or ``$(LOG)/ToolLog``)."""
    path = param.get("TOOL_LOG")
    if not path:
        log_dir = param.get("LOG")
        if not log_dir:
            raise ValueError("neither TOOL_LOG nor LOG is configured")
        path = os.path.join(log_dir, "ToolLog")
    _attach(logging.FileHandler(path))


def disable_debug() -> None:
    while _state["handlers"]:
        handler = _state["handlers"].pop()
        LOGGER.removeHandler(handler)
        handler.close()


def log(level, message: str) -> None:
    """Write ``message`` to the debug log at ``level`` (a LogLevel or its int)."""
    if not isinstance(message, str):
        raise TypeError("message must be a string")
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError("level must be a LogLevel")
    value = int(level)
    python_level = logging.ERROR if value & 0xFF == 1 else logging.DEBUG if value & VERBOSE else logging.INFO
    LOGGER.log(python_level, message, extra={"condor_level": value})


def set_subsystem(name: str, daemon_type: SubsystemType = SubsystemType.Auto) -> None:
    """Name this process's subsystem (used in debug-log headers)."""
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    _state["subsystem"] = name.upper()   # (HTCondor's header does not show it)
