"""htcondor2's debug-log functions for client code: enable_debug, enable_log, log, set_subsystem.

Client-side messages (``htcondor.log(level, text)`` and the library's own
notes) go to the ``jobledger`` logger.  ``enable_debug()`` sends them to
stderr, ``enable_log()`` to the file named by ``TOOL_LOG`` (or
``$(LOG)/ToolLog``), ``disable_debug()`` stops both.  ``set_subsystem``
records the subsystem name used in the message header, as in HTCondor.
"""

from __future__ import annotations

import logging
import os
import sys

from jobledger.daemons.config_files import param
from jobledger.eventcore.enums import LogLevel, SubsystemType

LOGGER = logging.getLogger("jobledger")
_state = {"subsystem": "TOOL", "handlers": []}


def _format() -> logging.Formatter:
    return logging.Formatter(f"%(asctime)s ({_state['subsystem']}:%(process)d) %(message)s",
                             "%m/%d/%y %H:%M:%S")


def _attach(handler: logging.Handler) -> None:
    handler.setFormatter(_format())
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.DEBUG)
    _state["handlers"].append(handler)


def enable_debug(flags: str | None = None) -> None:
    """Send debug output to stderr (``flags`` as TOOL_DEBUG: ``D_FULLDEBUG`` shows everything)."""
    flags = flags if flags is not None else param.get("TOOL_DEBUG", "")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.DEBUG if "FULLDEBUG" in str(flags).upper() else logging.INFO)
    _attach(handler)


def enable_log() -> None:
    """Send debug output to the TOOL_LOG file."""
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
    level = LogLevel(int(level) & 0xFFFF)
    python_level = {LogLevel.Always: logging.WARNING, LogLevel.Error: logging.ERROR,
                    LogLevel.FullDebug: logging.DEBUG}.get(level, logging.INFO)
    LOGGER.log(python_level, message)


def set_subsystem(name: str, daemon_type: SubsystemType = SubsystemType.Auto) -> None:
    """Name this process's subsystem (used in debug-log headers)."""
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    _state["subsystem"] = name.upper()
    for handler in _state["handlers"]:
        handler.setFormatter(_format())
