"""Authorization as HTCondor's: levels, ALLOW_* / DENY_* lists, token scopes.

A command over the network needs one level (``COMMAND_LEVELS``; a command not in
the table needs DAEMON).  An identity ``user@domain`` coming from ``host`` holds
level L when no DENY_L entry matches it and an ALLOW_X entry does, for L or a level
that implies L (ADMINISTRATOR and DAEMON imply WRITE, WRITE implies READ, DAEMON
implies the ADVERTISE_* levels).  An entry is ``user@domain/host`` with ``*``
wildcards; without a ``/`` it is a user when it holds an ``@`` (any host) and a
host otherwise (any user), as HTCondor reads them.  A token with a ``scope``
narrows what the identity holds to those levels (and the levels they imply):
it never adds to ALLOW_*.

Refusals are ``PermissionDenied`` naming the identity, the command and the level.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable

from jobledger.eventcore.errors import PermissionDenied

LEVELS = ("READ", "WRITE", "ADMINISTRATOR", "CONFIG", "DAEMON", "NEGOTIATOR", "OWNER",
          "ADVERTISE_STARTD", "ADVERTISE_SCHEDD", "ADVERTISE_MASTER")
# level -> the levels that imply it (HTCondor's DCpermissionHierarchy)
IMPLIED_BY = {
    "READ": ("WRITE", "ADMINISTRATOR", "DAEMON", "NEGOTIATOR"),
    "WRITE": ("ADMINISTRATOR", "DAEMON"),
    "ADVERTISE_STARTD": ("DAEMON",), "ADVERTISE_SCHEDD": ("DAEMON",), "ADVERTISE_MASTER": ("DAEMON",),
    "OWNER": ("ADMINISTRATOR",), "CONFIG": ("ADMINISTRATOR",),
}

ANONYMOUS = "unauthenticated@unmapped"   # a peer with no token: ALLOW-level commands only
# (daemon, command) -> level; "*" is any daemon
COMMAND_LEVELS = {
    ("*", "ping"): "READ",
    ("*", "command"): "ADMINISTRATOR",
    # a daemon's configuration (daemons/runtime_config.py; setting also needs a SETTABLE_ATTRS list)
    ("*", "config_names"): "READ",
    ("*", "config_val"): "READ",
    ("*", "config_set"): "CONFIG",
    # a daemon the master started tells it its state and that it is alive (DC_SET_READY, DC_CHILDALIVE)
    ("master", "set_ready"): "DAEMON",
    ("master", "child_alive"): "DAEMON",
    ("collector", "query"): "READ",
    ("collector", "locate"): "READ",
    ("collector", "advertise"): "DAEMON",
    ("schedd", "query"): "READ",
    ("schedd", "history"): "READ",
    ("schedd", "epoch_history"): "READ",
    ("schedd", "watch"): "READ",
    ("schedd", "daemon_history"): "READ",
    ("schedd", "get_claims"): "READ",
    # job export (daemons/schedd/export.py): HTCondor registers all three at WRITE
    ("schedd", "export_jobs"): "WRITE",
    ("schedd", "import_exported_job_results"): "WRITE",
    ("schedd", "unexport_jobs"): "WRITE",
    # the schedd's User and Project records (daemons/schedd/userrecs.py), as HTCondor registers them
    ("schedd", "query_userrec_ads"): "READ",
    ("schedd", "enable_userrec"): "ADMINISTRATOR",
    ("schedd", "add_userrec"): "ADMINISTRATOR",
    ("schedd", "disable_userrec"): "ADMINISTRATOR",
    ("schedd", "edit_userrec"): "ADMINISTRATOR",
    ("schedd", "delete_userrec"): "ADMINISTRATOR",
    # owner claimed units (daemons/schedd/ocus.py): HTCondor registers create and remove at WRITE
    # (and then asks for an OCU super user), the query at READ
    ("schedd", "create_ocu"): "WRITE",
    ("schedd", "remove_ocu"): "WRITE",
    ("schedd", "query_ocu"): "READ",
    ("schedd", "head"): "READ",
    ("schedd", "wait_logs"): "READ",
    ("schedd", "new_cluster"): "WRITE",
    ("schedd", "submit"): "WRITE",
    ("schedd", "submit_many"): "WRITE",
    ("schedd", "act"): "WRITE",
    ("schedd", "edit"): "WRITE",
    ("schedd", "spooled"): "WRITE",
    ("schedd", "retrieve"): "WRITE",
    ("schedd", "spool_upload"): "WRITE",     # a remote client's input files (daemons/spool_net.py)
    ("schedd", "retrieve_files"): "WRITE",   # and its jobs' output files back
    ("schedd", "reschedule"): "WRITE",
    # tokens the collector issues: anyone may ask (even with no token yet), an admin approves
    ("collector", "token_request"): "ALLOW",
    ("collector", "token_request_result"): "ALLOW",
    ("collector", "token_request_list"): "ADMINISTRATOR",
    ("collector", "token_request_approve"): "ADMINISTRATOR",
    ("collector", "token_request_auto_approve"): "ADMINISTRATOR",
    ("collector", "token_fetch"): "READ",
    # the accountant (daemons/accounting.py): reading is READ, changing it ADMINISTRATOR
    ("negotiator", "priorities"): "READ",
    ("negotiator", "accounting_ads"): "READ",
    ("negotiator", "resources"): "READ",
    ("negotiator", "accountant"): "ADMINISTRATOR",
    # draining and vacating a machine (daemons/startd_drain.py)
    ("startd", "drain"): "ADMINISTRATOR",
    ("startd", "cancel_drain"): "ADMINISTRATOR",
    ("startd", "vacate"): "ADMINISTRATOR",
    # the schedd hands a running job its refreshed proxy (refreshGSIProxy)
    ("startd", "refresh_proxy"): "DAEMON",
    ("schedd", "refresh_proxy"): "WRITE",
    # a user's own credentials (daemons/credd.py keeps a non-super user to their own)
    ("credd", "store_cred"): "WRITE",
    ("credd", "check_services"): "READ",
    ("credd", "get_service_cred"): "WRITE",
}
# the collector's advertise command names -> the ADVERTISE_* level they need
ADVERTISE = {"UPDATE_STARTD_AD": "ADVERTISE_STARTD", "UPDATE_SCHEDD_AD": "ADVERTISE_SCHEDD",
             "UPDATE_SUBMITTOR_AD": "ADVERTISE_SCHEDD", "UPDATE_MASTER_AD": "ADVERTISE_MASTER"}


def command_level(daemon: str, cmd: str, args: dict | None = None) -> str:
    """The level ``cmd`` of ``daemon`` needs (DAEMON for one not in the table)."""
    if daemon == "collector" and cmd == "advertise":
        return ADVERTISE.get(str((args or {}).get("command", "")).upper(), "DAEMON")
    if cmd == "ping" and isinstance((args or {}).get("authz"), str):
        level = str(args["authz"]).upper()   # type: ignore[index]
        if level in LEVELS:
            return level
    return COMMAND_LEVELS.get((daemon, cmd)) or COMMAND_LEVELS.get(("*", cmd)) or "DAEMON"


def _entries(text: str | None) -> list[str]:
    return [e for e in re.split(r"[\s,]+", text or "") if e]


def matches(entry: str, identity: str, host: str) -> bool:
    """Does one ALLOW/DENY entry match ``identity`` connecting from ``host``?"""
    if "/" in entry:
        user, _, where = entry.partition("/")
    elif "@" in entry:
        user, where = entry, "*"
    else:
        user, where = "*", entry
    if user != "*" and "@" not in user:
        user += "@*"
    return fnmatch.fnmatchcase(identity, user) and fnmatch.fnmatchcase(host, where)


def holds(level: str, identity: str, host: str, get: Callable[[str], str | None],
          scopes: list[str] | None = None) -> bool:
    """Does ``identity`` from ``host`` hold ``level`` (config lookups ``get``, token ``scopes``)?
    ALLOW is held by anyone, even an unauthenticated peer."""
    if level == "ALLOW":
        return True
    if identity == ANONYMOUS:
        return False
    if scopes is not None and "ALLOW" not in scopes:
        if not ({level} | set(IMPLIED_BY.get(level, ()))) & set(scopes):
            return False
    for candidate in (level, *IMPLIED_BY.get(level, ())):
        if any(matches(e, identity, host) for e in _entries(get(f"DENY_{candidate}"))):
            continue
        if any(matches(e, identity, host) for e in _entries(get(f"ALLOW_{candidate}"))):
            return True
    return False


def why_not(level: str, identity: str, host: str, get: Callable[[str], str | None],
            scopes: list[str] | None) -> str:
    """Why ``identity`` does not hold ``level``: its token's scope, a DENY, or no ALLOW."""
    if scopes is not None and "ALLOW" not in scopes and \
            not ({level} | set(IMPLIED_BY.get(level, ()))) & set(scopes):
        return f"its token is limited to {' '.join(scopes) or 'nothing'}"
    if any(matches(e, identity, host) for e in _entries(get(f"DENY_{level}"))):
        return f"DENY_{level} names it"
    return f"ALLOW_{level} does not name it"


def authorize(daemon: str, cmd: str, args: dict | None, identity: str, host: str,
              get: Callable[[str], str | None], scopes: list[str] | None) -> str:
    """The level ``cmd`` needs, or ``PermissionDenied`` when ``identity`` lacks it."""
    level = command_level(daemon, cmd, args)
    if not holds(level, identity, host, get, scopes):
        raise PermissionDenied(identity, f"{daemon} {cmd}", level, why_not(level, identity, host, get, scopes))
    return level


def is_super_user(identity: str, get: Callable[[str], str | None]) -> bool:
    """Is ``identity`` one of QUEUE_SUPER_USERS (default ``root, condor``)?  An entry
    without ``@`` names the user in any domain."""
    listed = get("QUEUE_SUPER_USERS")
    entries = _entries("root, condor" if listed is None else listed)
    user = identity.partition("@")[0]
    return any(e == identity or ("@" not in e and e == user) for e in entries)
