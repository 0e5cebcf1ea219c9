"""condor_config_val asking a daemon: ``-name``/``-address``/``-schedd``..., ``-set``,
``-rset``, ``-unset``, ``-runset`` (HTCondor's condor_tools/config_val.cpp).

The daemon is the master unless a daemon flag names another; ``-name`` picks
it by name through the collector, ``-address`` by its sinful string.  A query
prints the daemon's expanded values; ``-set``/``-unset`` change its
persistent configuration, ``-rset``/``-runset`` its runtime configuration
(daemons/runtime_config.py: ENABLE_PERSISTENT_CONFIG / ENABLE_RUNTIME_CONFIG
and SETTABLE_ATTRS_<level>), taking effect on its next condor_reconfig.
"""

from __future__ import annotations

import re
import sys

from jobledger.condor_cli import pool
from jobledger.condor_cli.args import Failed
from jobledger.eventcore.errors import HTCondorException

__all__ = ["ask_daemon", "SET_MODES"]

SET_MODES = {"set": (True, True), "unset": (False, True), "rset": (True, False), "runset": (False, False)}
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*[=:]")
_NAME = re.compile(r"^[A-Za-z0-9_.]+$")


def _locate(kind: str, name: str | None, address: str | None):
    from jobledger.classad import ClassAd
    from jobledger.daemons.client.api import local_location
    from jobledger.eventcore.enums import DaemonType
    if address is not None:
        return ClassAd({"MyAddress": address, "Name": name or ""})
    types = {"master": DaemonType.Master, "schedd": DaemonType.Schedd, "startd": DaemonType.Startd,
             "collector": DaemonType.Collector, "negotiator": DaemonType.Negotiator}
    found = None
    try:
        found = pool.collector().locate(types[kind], name)
    except HTCondorException:
        if name is None:
            found = local_location(kind.upper())
    if found is None:
        raise Failed(f"Can't find address for {kind} '{name or 'default'}' in local pool\n"
                     "Perhaps you need to query another pool.")
    return found


def ask_daemon(kind: str, name: str | None, address: str | None, mode: str | None,
               params: list[str], verbose: bool) -> int:
    """Query or set ``params`` on the daemon; the exit status."""
    from jobledger.daemons import ipc
    if mode is not None:        # checked before any daemon is looked for, as HTCondor's tool does
        for text in params:
            _setting(mode, text)
    location = _locate(kind, name, address)
    target, where = location.get("Name", "") or "", location["MyAddress"]
    if mode is not None:
        for text in params:
            config_name, assignment = _setting(mode, text)
            value, persistent = SET_MODES[mode]
            verb = "set" if value else "unset"
            try:
                ipc.call(where, "config_set", timeout=30, name=config_name, assignment=assignment,
                         persistent=persistent)
            except ipc.ConnectionLost:
                raise Failed(f"Can't connect to {kind} on {target} {where}") from None
            except HTCondorException:
                raise Failed(f'Attempt to {verb} configuration "{text}" on {kind} {target} {where} failed.') \
                    from None
            print(f'Successfully {verb} configuration "{text}" on {kind} {target} {where}. '
                  "The change will take effect on the next condor_reconfig.")
        return 0
    missing = 0
    for param_name in params:
        try:
            value = ipc.call(where, "config_val", timeout=30, name=param_name)
        except ipc.ConnectionLost:
            raise Failed(f"Can't connect to {kind} on {target} {where}") from None
        if value is None:
            print(f"Not defined: {param_name.upper()}", file=sys.stderr)
            missing += 1
        elif verbose:
            print(f"{param_name.upper()} = {value}")
        else:
            print(value)
    return 1 if missing else 0


def _setting(mode: str, text: str) -> tuple[str, str]:
    """(lower-case name, assignment or "") of a -set/-rset/-unset/-runset argument."""
    value, _ = SET_MODES[mode]
    if value:
        found = _ASSIGNMENT.match(text)
        if found is None:
            name = re.split(r"[=:]", text, maxsplit=1)[0].strip()
            raise Failed(f'condor_config_val: Can\'t set configuration value ("{name}")\n'
                         'You must specify "macro_name = value" or "expr_name : value"')
        name, assignment = found.group(1), text.strip()
        if ":" in assignment.split("=", 1)[0]:     # "NAME : value" is a ClassAd expression assignment
            assignment = name + " = " + assignment.split(":", 1)[1].strip()
    else:
        if "=" in text or ":" in text:
            raise Failed(f'condor_config_val: Can\'t unset configuration value ("{text}")\n'
                         "To unset, you only specify the name of the attribute")
        name, assignment = text.strip().split(" ")[0], ""
    if not _NAME.match(name):
        raise Failed(f"condor_config_val: Error: Configuration variable name ({name}) is not valid, "
                     "alphanumeric and _ only")
    return name.lower(), assignment
