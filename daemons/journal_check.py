"""Is this pool's journal whole?  The check a pool makes before it starts, and audit's first part.

The journal's own records are checked by ``daemons.storage.check`` (chain, continuity,
pages, the high-water mark); here the logs the pool wrote are evidence too (a log holding
a cluster the journal never had), ``check_before_start(local_dir)`` raises
``JournalCorrupt`` (or ``JournalBehind``) naming every fault, so the master refuses to
start a pool on a damaged journal or one that went back in time; ``jobledger audit``
reports the same faults with how to recover (``RECOVERY``), and
``daemons.journal_loss.accept_loss`` (``jobledger journal accept-loss``) is the way on
with the journal as it is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

from jobledger.eventcore.errors import JournalBehind, JournalCorrupt, JournalError
from jobledger.daemons.storage.check import (
    RECOVERY, Fault, Verdict, evidence_faults, open_readonly, reason, verify,
)
from jobledger.daemons.storage.evidence import HighWater, Mark
from jobledger.daemons.storage.schema import DB_NAME

__all__ = ["check_before_start", "known_cluster", "written_logs",
           "logged_cluster", "log_faults"]


def check_before_start(local_dir) -> Verdict:
    """The whole check; raise ``JournalBehind``/``JournalCorrupt`` naming every fault.

    Beside the mark, the logs the pool wrote are evidence too: the global
    event log (``EVENT_LOG`` of the pool's condor_config) and the user logs
    the journal still lists must not hold a cluster id the journal (or the
    mark) never reached.
    """
    path = Path(local_dir) / DB_NAME
    if not path.exists():
        verdict = Verdict(0, 0, 0, HighWater(local_dir).read(), [])
        faults = evidence_faults(None, verdict.mark, 0, local_dir)
        faults += log_faults(written_logs(local_dir, None), lambda: known_cluster(None, verdict.mark))
    else:
        try:
            conn = open_readonly(path)
            try:
                verdict = verify(conn, local_dir)
                faults = verdict.faults + log_faults(written_logs(local_dir, conn),
                                                     lambda: known_cluster(conn, verdict.mark))
            finally:
                conn.close()
        except JournalError as exc:
            raise JournalCorrupt(f"the database file cannot be read: {reason(exc)}",
                                 path=str(path)) from None
    if faults:
        shown = "\n".join(f"  {f.kind}" + ("" if f.position is None else f" at position {f.position}")
                          + f": {f.message}" for f in faults[:20])
        more = f"\n  ... and {len(faults) - 20} more" if len(faults) > 20 else ""
        cls = JournalBehind if all(f.kind == "evidence" for f in faults) else JournalCorrupt
        raise cls(f"refusing to start on this journal ({len(faults)} faults):\n{shown}{more}\n"
                  f"`jobledger audit --local-dir {local_dir}` reports everything. "
                  + RECOVERY.format(local_dir=local_dir), path=str(path))
    return verdict


_EVENT_HEAD = re.compile(rb"^\d{3} \((\d+)\.\d+\.\d+\) ", re.M)
_TAIL = 64 * 1024


def known_cluster(conn, mark: Mark | None) -> int:
    cluster = 0
    if conn is not None:
        try:
            cluster = conn.max_cluster()
        except JournalError:
            pass           # reported as a page fault
    return max(cluster, mark.cluster if mark else 0)


def written_logs(local_dir, conn) -> list[str]:
    """The event log of the pool's configuration, and the logs the journal lists."""
    from jobledger.daemons.config_files import config_value, read_pool_config
    paths = []
    config = Path(local_dir) / "condor_config"
    if config.is_file():
        try:
            event_log = config_value(read_pool_config(config), "EVENT_LOG", "")
        except Exception:  # noqa: BLE001 - an unreadable config is the master's to report
            event_log = ""
        if event_log:
            paths.append(event_log)
    if conn is not None:
        try:
            paths += conn.log_paths()
        except JournalError:
            pass
    return list(dict.fromkeys(paths))


def logged_cluster(path: str) -> int:
    """The largest cluster id among the events at the end of a log (0: none, no file)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - _TAIL))
            tail = f.read()
    except OSError:
        return 0
    return max((int(m.group(1)) for m in _EVENT_HEAD.finditer(tail)), default=0)


def log_faults(paths: list[str], known: Callable[[], int]) -> list:
    """Logs holding events of clusters the journal never had: it lost them.

    ``known()`` (the largest cluster id the journal or its mark has) is asked
    after the files are read: a running pool writes only committed records.
    """
    seen = {path: logged_cluster(path) for path in paths}
    known_now = known() if any(seen.values()) else 0
    faults = []
    for path, cluster in seen.items():
        if cluster > known_now:
            faults.append(Fault("evidence", f"{path} holds events of cluster {cluster}, but the "
                                f"journal's clusters end at {known_now}: the journal lost records",
                                None))
    return faults
