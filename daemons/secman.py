"""v1 ``htcondor.SecMan``: ask a pool daemon how a command of ours would be authorized.

The pool's daemons listen on Unix sockets in LOCAL_DIR and accept a connection only
from their own uid (``daemons/ipc.py``, SO_PEERCRED): that is the whole of the
pool's security, and ``ping`` reports it as HTCondor would a session authenticated by
the file system (``FS``), with no encryption or integrity (the socket never leaves
the machine).  Tokens, TLS and remote authentication are not here.
"""

from __future__ import annotations

import itertools
import os
import socket
import time

from jobledger.daemons import ipc
from jobledger.daemons.config_files import param
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.errors import HTCondorException, HTCondorIOError, HTCondorValueError

# condor_commands.h: DaemonCore's commands, and the authorization levels condor_ping
# takes as names (each checked with DC_NOP_<LEVEL>, DC_BASE+20...).
COMMANDS = {
    "DC_NOP": 60011, "DC_RECONFIG": 60004, "DC_OFF_GRACEFUL": 60005, "DC_OFF_FAST": 60006,
    "DC_CONFIG_VAL": 60007, "DC_RECONFIG_FULL": 60012, "DC_OFF_PEACEFUL": 60015,
    "DC_NOP_READ": 60020, "DC_NOP_WRITE": 60021, "DC_NOP_NEGOTIATOR": 60022, "DC_NOP_ADMINISTRATOR": 60023,
    "DC_NOP_OWNER": 60024, "DC_NOP_CONFIG": 60025, "DC_NOP_DAEMON": 60026, "DC_NOP_ADVERTISE_STARTD": 60027,
    "DC_NOP_ADVERTISE_SCHEDD": 60028, "DC_NOP_ADVERTISE_MASTER": 60029,
}
LEVELS = {"READ", "WRITE", "NEGOTIATOR", "ADMINISTRATOR", "OWNER", "CONFIG", "DAEMON",
          "ADVERTISE_STARTD", "ADVERTISE_SCHEDD", "ADVERTISE_MASTER"}
_session = itertools.count(1)


def command_number(command) -> int:
    """``command`` (a number, a DaemonCore command name or an authorization level) as a number."""
    if isinstance(command, int) and not isinstance(command, bool):
        return command
    if not isinstance(command, str):
        raise TypeError("command must be a string or an int")
    name = command.strip().upper()
    if name in LEVELS:
        name = f"DC_NOP_{name}"
    if name not in COMMANDS:
        raise HTCondorValueError(f"Unknown command name: {command}")
    return COMMANDS[name]


def _address(ad) -> str:
    if isinstance(ad, ClassAd):
        address = ad.get("MyAddress")
        if not isinstance(address, str):
            raise HTCondorValueError("Address not available in location ClassAd.")
        return address
    if isinstance(ad, str):
        return ad
    raise TypeError("ad must be a location ClassAd or an address string")


def _remote_user() -> str:
    import pwd
    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        user = f"uid{os.getuid()}"
    try:
        domain = param["UID_DOMAIN"]
    except KeyError:
        domain = socket.getfqdn()
    return f"{user}@{domain}"


class SecMan:
    """v1's security manager: ``ping`` a daemon; sessions are not cached between calls
    (each request authenticates afresh by its socket's peer credentials)."""

    def __enter__(self) -> "SecMan":
        return self

    def __exit__(self, *exc) -> None:
        self.invalidateAllSessions()

    def invalidateAllSessions(self) -> None:
        """Forget cached sessions: there are none to forget, every request is checked anew."""

    def ping(self, ad, command="DC_NOP") -> ClassAd:
        """The authorization ad of ``command`` at the daemon ``ad`` locates (a ClassAd
        with ``MyAddress``, or the address); ``HTCondorIOError`` when it cannot be reached."""
        number = command_number(command)
        address = _address(ad)
        try:
            answer = ipc.call(address, "ping", timeout=20)
        except HTCondorException as exc:
            raise HTCondorIOError(f"Failed to ping {address}: {exc}") from exc
        from jobledger.daemons.daemon import VERSION
        lease = int(param.get("SEC_DEFAULT_SESSION_LEASE", 3600))
        return ClassAd({
            "AuthCommand": number, "Command": number,
            "AuthMethods": "FS", "Authentication": "YES", "TriedAuthentication": True,
            "Encryption": "NO", "Integrity": "NO", "CryptoMethods": "",
            "MyRemoteUserName": _remote_user(), "User": _remote_user(),
            "RemoteVersion": VERSION,
            "SessionDuration": str(int(param.get("SEC_DEFAULT_SESSION_DURATION", 86400))),
            "SessionLease": lease,
            "Sid": f"{socket.gethostname()}:{answer.get('pid', 0)}:{int(time.time())}:{next(_session)}",
        })
