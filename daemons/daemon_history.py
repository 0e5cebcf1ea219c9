"""The schedd's daemon history (SCHEDD_DAEMON_HISTORY) and ``Schedd.daemonHistory``.

As HTCondor's schedd does (Scheduler::maybeWriteDaemonHistory,
DaemonCore::AppendDaemonHistory): when it advertises, at most every
SCHEDD_HISTORY_RECORD_INTERVAL seconds (default 900), the schedd appends its
ad, with ``RecordWriteDate``, to SCHEDD_DAEMON_HISTORY (default
``$(SPOOL)/schedd_daemon_history``; empty: not written) in the old ClassAd
form, each record ended by ``*** SCHEDD CurrentTime=<time>``.  When the file
would pass MAX_DAEMON_HISTORY_LOG bytes (default 20 MiB) it is renamed to
``<file>.old`` first (one rotation kept).

``records`` reads it back for ``daemonHistory``: newest first, filtered by a
constraint, stopping (exclusive) at the first record ``since`` is true of, at
most ``match`` of them, projected.  A record that cannot be read is passed over.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from jobledger.eventcore import adwire
from jobledger.daemons.input_files import read_text
from jobledger.daemons.schedd.query import check_constraint

__all__ = ["DaemonHistory", "records"]

MAX_LOG = 20 * 1024 * 1024


class DaemonHistory:
    """Appends a daemon's ad to its history file, at most once an ``interval``."""

    def __init__(self, path: str | None, subsystem: str, interval: float, max_bytes: int = MAX_LOG,
                 log=None):
        self.path = Path(path) if path else None
        self.subsystem = subsystem.upper()
        self.interval = interval
        self.max_bytes = max_bytes
        self.log = log
        self._last: float | None = None

    def maybe_write(self, ad: dict, now: float | None = None) -> bool:
        """Append ``ad`` (attribute -> value) when the interval has passed; True if written."""
        now = time.time() if now is None else now
        if self.path is None or (self._last is not None and now - self._last <= self.interval):
            return False
        self._last = now
        exprs = adwire.exprs_of(ad)
        stamp = int(now)
        text = "".join(f"{name} = {value}\n" for name, value in exprs.items())
        text += f"RecordWriteDate = {stamp}\n*** {self.subsystem} CurrentTime={stamp}\n"
        try:
            if self.path.exists() and self.path.stat().st_size + len(text) > self.max_bytes:
                os.replace(self.path, self.path.with_name(self.path.name + ".old"))
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            if self.log is not None:
                self.log.error("cannot write the daemon history %s: %s", self.path, exc)
            return False
        return True


def _parse(text: str) -> list[dict]:
    """The records of a daemon history file, oldest first (attribute -> expression text)."""
    out: list[dict] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("***"):
            if current:
                out.append(current)
            current = {}
            continue
        name, sep, value = line.partition("=")
        if sep and name.strip():
            current[name.strip()] = value.strip()
    return out


def records(path: str | None, constraint=None, projection=None, match: int = -1, since=None) -> list[dict]:
    """The records of ``path`` (and its ``.old`` rotation) as ``daemonHistory`` asks."""
    check_constraint(constraint)
    if since:
        check_constraint(since)
    if not path:
        return []
    text = ""
    for part in (Path(str(path) + ".old"), Path(path)):
        try:
            text += read_text(str(part))
        except (OSError, ValueError):
            continue
    wanted = {name.lower() for name in projection or []}
    out: list[dict] = []
    for ad in reversed(_parse(text)):
        if 0 <= match <= len(out):
            break
        if since and adwire.matches(since, ad):
            break
        if constraint and not adwire.matches(constraint, ad):
            continue
        out.append({k: v for k, v in ad.items() if k.lower() in wanted} if wanted else ad)
    return out
