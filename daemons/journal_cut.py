"""Accepting the loss of a journal whose own record chain is damaged: cut it there.

``cut_journal(local_dir, faults) -> Cut`` is what ``jobledger journal
accept-loss`` does when the chain itself is broken (a page SQLite cannot
read, a checksum mismatch, a gap in the positions, an unreadable block):
the journal is cut at the first damaged record and everything before it is
kept.  A new ``journal.sqlite`` is written beside the old one with the kept
records only; the queue and history tables are left empty, so the store
rebuilds them from the kept records when the pool starts (as after any
snapshot that does not match).  The log writers' state follows the cut:
each user log and the live global event log is cut back to the events of
the kept records (their rendering must be there, as audit checks it), and
the bytes cut off are saved first; in a user log, other writers' events
past that point are kept (daemons.log_sharing).  Then the old files
are moved into ``spool/accept-loss-<time>/`` (nothing is deleted) and the new
journal takes their place.  ``Cut`` says what was kept and what was given up.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import NamedTuple

from jobledger.daemons.log_sharing import locate_ours, others_events
from jobledger.daemons.storage.check import Fault, open_readonly, read_rows
from jobledger.daemons.storage.cut import write_cut_journal
from jobledger.daemons.storage.schema import DB_NAME
from jobledger.eventcore.codecs.journal import Row
from jobledger.eventcore.errors import JournalError
from jobledger.eventcore.codecs.userlog_text_write import TextFormat
from jobledger.eventcore.journal import row_entries
from jobledger.eventcore.projections.userlog import EVENT_LOG_FORMAT, LogTargets, planned_writes
from jobledger.tracking.localzone import LOCAL_TZINFO

__all__ = ["Cut", "cut_journal"]


class Cut(NamedTuple):
    at: int                    # position of the first damaged record
    reason: str                # what is wrong there
    head: int                  # last position kept (0: none)
    checksum: int              # chained checksum there
    given_up: int              # records at or after the cut that could still be read
    jobs: list                 # "cluster.proc" of the jobs those records were about
    logs: list                 # (path, bytes cut off) of each log cut back
    saved: Path                # where the old database and the cut-off bytes are

    def lines(self) -> list[str]:
        lost = ", ".join(self.jobs[:20]) + (f" and {len(self.jobs) - 20} more" if len(self.jobs) > 20 else "")
        out = [f"the journal was cut at position {self.at} ({self.reason}): records 1..{self.head} "
               f"kept, {self.given_up} readable records from position {self.at} on given up"
               + (f" (jobs {lost})" if lost else "")]
        out += [f"{path}: {size} bytes of events of given-up records cut off" for path, size in self.logs]
        out.append(f"the damaged database and the cut-off bytes are in {self.saved}")
        return out


def first_damage(faults: list[Fault]) -> Fault:
    return min((f for f in faults if f.kind != "evidence"), key=lambda f: f.position or 0)


def cut_journal(local_dir, faults: list[Fault]) -> Cut:
    """Cut the journal of the (stopped, locked) pool at ``local_dir`` at its first damaged record."""
    local_dir = Path(local_dir)
    path = local_dir / DB_NAME
    damage = first_damage(faults)
    at = damage.position or 1
    kept, after, states, failures, cursor = _read_old(path, at)
    saved = local_dir / "spool" / f"accept-loss-{datetime.datetime.now():%Y%m%dT%H%M%S.%f}"
    saved.mkdir(parents=True)
    head = kept[-1].position if kept else 0
    new_states, cut_logs, log_jobs = _cut_logs(kept, states, saved)
    fresh = local_dir / f"{DB_NAME}.cut"
    write_cut_journal(fresh, kept, new_states, log_jobs, failures, min(cursor or 0, head), head)
    for suffix in ("", "-wal", "-shm"):
        old = local_dir / f"{DB_NAME}{suffix}"
        if old.exists():
            os.replace(old, saved / old.name)
    os.replace(fresh, path)
    _sync_dir(local_dir)
    jobs = sorted({f"{r.cluster}.{r.proc}" for r in after if r.proc >= 0},
                  key=lambda j: tuple(int(x) for x in j.split(".")))
    return Cut(at, f"{damage.kind}: {damage.message}", head, kept[-1].checksum if kept else 0,
               len(after), jobs, cut_logs, saved)


def _read_old(path: Path, at: int):
    """The readable rows before ``at`` and from it on, and the log writers' state."""
    conn = open_readonly(path)
    try:
        kept: list[Row] = []
        after: list[Row] = []
        ignored: list = []
        for fields in read_rows(conn, ignored):
            row = Row(*fields)
            (kept if row.position < at else after).append(row)
        states, failures, cursor = [], [], None
        try:
            states = conn.log_states()
            failures = conn.log_failures()
            cursor = conn.projection_position("logs")
        except JournalError:
            pass        # a damaged log table: the writers start over from the kept records
        return kept, after, states, failures, cursor
    finally:
        conn.close()


def _cut_logs(kept: list[Row], states: list[tuple], saved: Path) -> tuple[list[tuple], list, list]:
    """Each log's state after the cut, its file cut back to the kept records' events;
    the jobs' log targets."""
    per_file, global_texts, log_jobs = _renders(kept)
    out, cut = [], []
    for number, (path, position, offset, sequence, ctime) in enumerate(states):
        if sequence > 0:
            texts = global_texts
            end = _event_log_end(path, texts)
        else:
            texts = per_file.get(path, [])
            end = _user_log_end(path, texts)
        last = max((p for p, _ in texts), default=0)
        if end is None:      # the file is not what the kept records made it: left as it is
            out.append((path, min(position, last), offset, sequence, ctime))
            continue
        size = _size(path)
        if size > end:
            with open(path, "rb") as f:
                f.seek(end)
                tail = f.read()
            (saved / f"log-{number}-{Path(path).name}").write_bytes(tail)
            keep = others_events(tail) if sequence == 0 else b""
            with open(path, "r+b") as f:
                f.truncate(end)
                f.seek(end)
                f.write(keep)
                os.fsync(f.fileno())
            if len(tail) > len(keep):
                cut.append((path, len(tail) - len(keep)))
            end += len(keep)
        out.append((path, min(position, last), min(offset, end), sequence, ctime))
    return out, cut, log_jobs


def _renders(kept: list[Row]) -> tuple[dict, list, list]:
    """What the projector writes for the kept records: per user log, and the event log's;
    and the jobs' log targets at the cut (cluster, proc, path, format) (the old table's
    follow the queue as it was at the old head: a job that left after the cut is back)."""
    targets = LogTargets()
    per_file: dict[str, list] = {}
    global_texts: list = []
    for row in kept:
        try:
            files, events = planned_writes(row_entries(row), targets, LOCAL_TZINFO, TextFormat(),
                                           EVENT_LOG_FORMAT)
        except Exception:  # noqa: BLE001 - a record that does not render wrote nothing
            continue
        targets.changed.clear()
        targets.gone.clear()
        for path, items in files.items():
            per_file.setdefault(path, []).extend((e.position, data) for e, data in items)
        global_texts += [(e.position, data) for e, data in events]
    jobs = [(*key, *target) for key, target in targets.paths.items() if target is not None]
    return per_file, global_texts, jobs


def _user_log_end(path: str, texts: list) -> int | None:
    """Where the kept records' events end in a user log (None: they are not all there, in
    order).  Other writers' events may lie among them, and a start another writer emptied
    is gone (daemons.log_sharing)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return 0
    gone, starts, end = locate_ours(data, [text for _, text in texts])
    return end if gone + len(starts) == len(texts) else None


def _event_log_end(path: str, texts: list) -> int | None:
    """Where the last kept event ends in the live event log (its header: a file of none of them)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return 0
    header_end = data.find(b"\n...\n") + 5 if b"\n...\n" in data else 0
    for _, text in reversed(texts):
        found = data.rfind(text, header_end)
        if found >= 0:
            return found + len(text)
    return header_end


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
