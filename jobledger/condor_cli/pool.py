"""The pool a condor_* command talks to, found as HTCondor finds it.

``$CONDOR_CONFIG`` names the configuration (and through ``COLLECTOR_HOST``
the collector that locates the schedd); without it, the personal pool the
``jobledger`` CLI uses by default (``~/.condor/personal``) when one is there:
the rule every command follows (jobledger.cli.where).  ``stopped_pool`` is
that pool when no master runs it, for the tools HTCondor lets read files
rather than a daemon (condor_history reads the journal's history then).
Job ids and owner names on a command line become one constraint here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from jobledger.daemons.config_files import reload_config
from jobledger.eventcore.classad import quote
from jobledger.eventcore.enums import DaemonType
from jobledger.eventcore.errors import HTCondorException, JobledgerError

from jobledger.condor_cli.args import Failed

_PROC_ID = re.compile(r"^(\d+)(?:\.(\d+))?$")


def load_config() -> None:
    """Point ``param`` at $CONDOR_CONFIG, else at the default personal pool."""
    if not os.environ.get("CONDOR_CONFIG"):
        from jobledger.cli.where import find_pool
        default = find_pool().config
        if default.is_file():
            os.environ["CONDOR_CONFIG"] = str(default)
    reload_config()


def stopped_pool():
    """The pool the rule finds when it has a journal and no master runs it, else None."""
    from jobledger.cli.where import find_pool
    try:
        found = find_pool()
    except JobledgerError:
        return None
    if found.journal.is_file() and not found.running():
        return found
    return None


def collector(pool_name: str | None = None):
    """The pool's collector, or the one at ``pool_name`` (``-pool host:port``)."""
    from jobledger.daemons.client.api import Collector
    load_config()
    return Collector(pool_name) if pool_name else Collector()


def schedd_ad(name: str | None = None, pool_name: str | None = None):
    """The schedd's location ad (from the collector at ``pool_name`` when given);
    ``Failed`` with HTCondor's wording when there is none."""
    try:
        ad = collector(pool_name).locate(DaemonType.Schedd, name)
    except HTCondorException as exc:
        from jobledger.daemons.client.api import local_location
        found = local_location("SCHEDD") if name is None and not pool_name else None
        if found is not None:
            return found
        where = f"schedd {name}" if name else "local schedd"
        raise Failed(f"ERROR: Can't find address of {where} ({_why(exc)})") from None
    if ad is None:
        raise Failed(f"ERROR: Can't find address of schedd {name}")
    return ad


def schedd(name: str | None = None, pool_name: str | None = None):
    from jobledger.daemons.client.api import Schedd
    return Schedd(schedd_ad(name, pool_name))


def _why(exc: Exception) -> str:
    return " ".join(str(exc).split())


def config_path() -> str | None:
    value = os.environ.get("CONDOR_CONFIG")
    return value if value and Path(value).is_file() else None


def parse_proc_id(text: str) -> tuple[int, int | None] | None:
    """``(cluster, proc)`` of ``C`` or ``C.P`` (proc None for a whole cluster); None otherwise."""
    match = _PROC_ID.match(text)
    if not match:
        return None
    return int(match.group(1)), (int(match.group(2)) if match.group(2) is not None else None)


def id_clause(cluster: int, proc: int | None) -> str:
    if proc is None:
        return f"ClusterId == {cluster}"
    return f"(ClusterId == {cluster} && ProcId == {proc})"


def owner_clause(owner: str) -> str:
    return f"Owner == {quote(owner)}"


def join_any(clauses: list[str]) -> str | None:
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else " || ".join(f"({c})" if "||" in c else c for c in clauses)


def join_all(clauses: list[str | None]) -> str | None:
    parts = [c for c in clauses if c]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else " && ".join(f"({c})" for c in parts)


def user_name() -> str:
    from jobledger.daemons.client.api import _user
    return _user()
