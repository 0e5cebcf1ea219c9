"""Audit a pool's journal and everything projected from it.

``audit(local_dir, tz=None) -> Report`` checks, and reports each problem as
a ``Finding`` (kind, message, position, job, file, byte offset):

- ``checksum`` / ``continuity`` / ``page``: every row's chained CRC,
  positions 1..N, and pages SQLite cannot read (daemons.storage.check);
- ``evidence``: the journal reaches its high-water mark (daemons.storage.evidence)
  and no user log holds events the journal does not: otherwise the journal
  went back in time, and the report says how to recover;
- ``payload``: every payload decodes (and upcasts) to today's version and
  folds; a record that does not is reported and left out of the later checks;
- ``transition``: every record our schedd wrote is legal under the status
  table, job by job (imported events follow their log, see status.py);
- ``queue`` / ``history``: the queue and history tables equal a fold of the
  journal at their position;
- ``userlog``: each user log holds exactly the rendering of its events up
  to its saved position, and every event the projector has passed
  (its ``logs`` cursor) is in its log: a log left behind (full disk,
  unwritable path) is a finding per job.  Bytes past the saved offset that
  are the start of the next events are a write in flight or a crash window
  (a note: the projector completes it); to tell them from bytes the journal
  never had, the journal is read again after the files (the projector
  writes only what is committed);
- ``eventlog``: the live global event log's header and events;
- ``source``: each imported event's bytes are still in its file, unchanged.

All reads of the database are one snapshot (one read transaction), so a
running pool gets the same verdict as a stopped one.  Notes
(``Report.notes``) are facts that are not failures.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from jobledger.eventcore.codecs.journal import Row
from jobledger.eventcore.codecs.userlog_text_write import TextFormat
from jobledger.eventcore.errors import InvalidTransition, JournalCorrupt, JournalError
from jobledger.eventcore.journal import entry_from_row, row_entries
from jobledger.eventcore.projections.queue import QueueFold
from jobledger.eventcore.projections.userlog import (
    EVENT_LOG_FORMAT, LogTargets, planned_writes, render_header,
)
from jobledger.eventcore.status import next_status
from jobledger.daemons.storage.adrow import decode_ad
from jobledger.daemons.storage.evidence import HighWater
from jobledger.daemons.journal_check import known_cluster, log_faults, written_logs
from jobledger.daemons.log_sharing import foreign_spans, locate_ours, suspect_at
from jobledger.daemons.storage.check import RECOVERY, open_readonly, read_rows, verify
from jobledger.daemons.storage.schema import DB_NAME
from jobledger.daemons.userlog_files import find_ours
from jobledger.tracking.localzone import LOCAL_TZINFO

__all__ = ["Finding", "Report", "audit"]


class Finding(NamedTuple):
    kind: str
    message: str
    position: int | None = None
    job: str | None = None
    path: str | None = None
    offset: int | None = None

    def __str__(self) -> str:
        where = []
        if self.position is not None:
            where.append(f"position {self.position}")
        if self.job is not None:
            where.append(f"job {self.job}")
        if self.path is not None:
            where.append(f"file {self.path}")
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        return f"[{self.kind}] {' '.join(where)}: {self.message}"


class Report(NamedTuple):
    findings: list
    notes: list
    counts: dict

    @property
    def ok(self) -> bool:
        return not self.findings


# What the audit does, in order; ``progress(stage)`` is told as each begins.
STAGES = ("checksums and continuity", "database pages", "log files", "records",
          "transitions", "queue and history", "user and event logs", "sources")


def audit(local_dir, tz: datetime.tzinfo | None = None,
          user_log_format: TextFormat = TextFormat(),
          event_log_format: TextFormat = EVENT_LOG_FORMAT, progress=None) -> Report:
    """Check the pool under ``local_dir`` (see the module docstring); ``progress`` (optional)
    is called with each of ``STAGES`` as it begins."""
    path = Path(local_dir) / DB_NAME
    if not path.exists():
        mark = HighWater(local_dir).read()
        if mark is None or mark.position == 0:
            raise JournalError(f"no journal at {path}")
        return Report([Finding("evidence", f"the journal is gone, but positions up to "
                               f"{mark.position} (clusters up to {mark.cluster}) were committed",
                               1, None, str(path))],
                      [RECOVERY.format(local_dir=local_dir)], {"records": 0})
    tz = tz or LOCAL_TZINFO
    try:
        return _audit(Path(local_dir), path, tz, user_log_format, event_log_format,
                      progress or (lambda stage: None))
    except JournalCorrupt:
        raise
    except JournalError as exc:
        raise JournalCorrupt(f"the database file cannot be read: {exc}", path=str(path)) from None


def _audit(local_dir: Path, path: Path, tz, user_log_format, event_log_format, step) -> Report:
    conn = open_readonly(path)
    try:
        conn.snapshot()                # one snapshot for every read below
        findings, notes, rows = [], [], []
        step(STAGES[0])
        verdict = verify(conn, local_dir, keep=rows)
        if not conn.exists():
            return _no_tables(local_dir, path, conn, verdict)
        jobs = {r.position: f"{r.cluster}.{r.proc}" for r in rows}
        for fault in verdict.faults:
            findings.append(Finding(fault.kind, fault.message, fault.position,
                                    jobs.get(fault.position), str(path)))
        step(STAGES[1])
        _check_pages(conn, findings)
        step(STAGES[2])
        for fault in log_faults(written_logs(local_dir, conn), lambda: _known_now(local_dir, path)):
            findings.append(Finding(fault.kind, fault.message))
        step(STAGES[3])
        entries = _decode(rows, findings)
        step(STAGES[4])
        fold, entries = _check_transitions(entries, findings, notes)
        step(STAGES[5])
        _check_queue(conn, fold, verdict.head, findings, notes)
        step(STAGES[6])
        _check_logs(conn, entries, tz, user_log_format, event_log_format, findings, notes,
                    lambda: _read_after(path, verdict.head))
        step(STAGES[7])
        _check_sources(entries, findings, notes)
        if any(f.kind == "evidence" for f in findings):
            notes.append("the journal went back in time. "
                         + RECOVERY.format(local_dir=local_dir))
        counts = {"records": len(rows), "events": sum(e.type == "event" for e in entries),
                  "jobs": sum(1 for _ in fold.jobs())}
        return Report(findings, notes, counts)
    finally:
        conn.close()


def _no_tables(local_dir: Path, path: Path, conn, verdict) -> Report:
    """A database file with no journal table: nothing to compare; say what is missing."""
    findings = [Finding(f.kind, f.message, f.position, None, str(path)) for f in verdict.faults]
    findings += [Finding(f.kind, f.message) for f in log_faults(
        written_logs(local_dir, conn), lambda: known_cluster(None, verdict.mark))]
    notes = []
    if findings:
        notes.append(f"{path} has no journal table (nor queue, history or log tables): every "
                     "record and view was in the lost journal.sqlite-wal. "
                     + RECOVERY.format(local_dir=local_dir))
    return Report(findings, notes, {"records": 0, "events": 0, "jobs": 0})


def _known_now(local_dir: Path, path: Path) -> int:
    """The largest cluster id committed, read now (after the logs were read)."""
    mark = HighWater(local_dir).read()
    conn = open_readonly(path)
    try:
        return known_cluster(conn, mark)
    finally:
        conn.close()


def _read_after(path: Path, head: int) -> list:
    """Entries committed after ``head``, read now (a new snapshot)."""
    conn = open_readonly(path)
    try:
        faults: list = []
        return _decode([Row(*r) for r in read_rows(conn, faults, head)], [])
    finally:
        conn.close()


def _check_pages(conn, findings) -> None:
    """SQLite's own structure check: pages of any table that are damaged."""
    try:
        problems = conn.quick_check(100)
    except JournalError as exc:
        problems = [str(exc)]
    for problem in problems:
        if problem != "ok":
            findings.append(Finding("page", f"database structure: {problem}", None, None,
                                    conn.file_name()))


def _decode(rows, findings):
    entries = []
    for row in rows:
        try:
            if row.type == "procs":     # a block of procs: the entries it stands for
                block = row_entries(row)
                if row.event is not None:
                    raise JournalCorrupt(f"a block of procs with event column {row.event}")
                entries.extend(block)
                continue
            entry = entry_from_row(row)
            number = entry.payload["event"]["type"] if entry.type == "event" else None
        except Exception as exc:  # noqa: BLE001 - a damaged row is a finding
            message = exc.message if isinstance(exc, JournalCorrupt) else f"unreadable: {exc!r}"
            findings.append(Finding("payload", message, row.position,
                                    f"{row.cluster}.{row.proc}"))
            continue
        entries.append(entry)
        if row.event is not None and row.event != number:
            findings.append(Finding("payload", f"event column says {row.event}, the payload "
                                    f"{number}", row.position, str(entry.job)))
    return entries


def _check_transitions(entries, findings, notes) -> tuple[QueueFold, list]:
    """Fold every entry; return the fold and the entries that folded."""
    fold = QueueFold()
    off_table = 0
    good = []
    for e in entries:
        if e.type == "event" and e.payload.get("imported") and e.job.proc >= 0 and e.job.cluster >= 0:
            row = fold.proc(e.job.cluster, e.job.proc)
            try:
                next_status(row and row.status, e.payload["event"]["type"])
            except InvalidTransition:
                off_table += 1
        fold.begin()
        try:
            fold.apply(e.position, e.time, e.job, e.type, e.payload)
            fold.commit()
            good.append(e)
        except InvalidTransition as exc:
            fold.rollback()
            findings.append(Finding("transition", str(exc), e.position, str(e.job)))
            good.append(e)     # well-formed: its event was still written to logs
        except Exception as exc:  # noqa: BLE001 - a damaged payload is a finding
            fold.rollback()
            findings.append(Finding("payload", f"cannot fold {e.type!r}: {exc!r}",
                                    e.position, str(e.job)))
    fold.history = fold.take_changes().history
    if off_table:
        notes.append(f"{off_table} imported events do not follow the status table "
                     "(their logs start midway or are unusual); their implied status was used")
    return fold, good


def _check_queue(conn, fold: QueueFold, head: int, findings, notes) -> None:
    try:
        position = conn.projection_position("queue")
        if position is None:
            if head:
                notes.append("the queue projection has not been built (a restart builds it)")
            return
        if position != head:
            notes.append(f"queue projection at position {position}, journal head {head} "
                         "(a restart catches up)")
            return
        stored = _table(conn.queue_rows(), "queue",
                        findings, lambda c, p, s, ad: ((c, p), (s, decode_ad(ad))),
                        lambda c, p, *_: (None, f"{c}.{p}"))
        history = _table(conn.history_rows(), "history",
                         findings, lambda pos, c, p, ad: (pos, (c, p, decode_ad(ad))),
                         lambda pos, c, p, _: (pos, f"{c}.{p}"))
        clusters = _table(conn.cluster_rows(), "queue", findings,
                          lambda c, ad: (c, decode_ad(ad)), lambda c, _: (None, f"{c}.-1"))
    except JournalError as exc:
        findings.append(Finding("page", f"the queue tables cannot be read: {exc}"))
        return
    folded = {k: (v.status, v.ad) for k, v in fold.jobs()}
    for key in sorted(stored.keys() | folded.keys(), key=str):
        if stored.get(key) != folded.get(key):
            findings.append(Finding("queue", "queue row differs from the journal's fold",
                                    None, f"{key[0]}.{key[1]}"))
    want_history = {h.position: (h.cluster, h.proc, h.ad) for h in fold.history}
    for position in sorted(history.keys() | want_history.keys(), key=str):
        if history.get(position) != want_history.get(position):
            job = history.get(position) or want_history.get(position)
            findings.append(Finding("history", "history row differs from the journal's fold",
                                    position, f"{job[0]}.{job[1]}"))
    want = {c: ad for c, ad in fold.clusters.items() if ad is not None}
    differ = clusters.keys() ^ want.keys() | {c for c in clusters if clusters[c] != want.get(c)}
    for cluster in sorted(differ, key=str):
        findings.append(Finding("queue", "cluster ad differs from the journal's fold", None,
                                f"{cluster}.-1"))


def _table(rows, kind, findings, decode, where) -> dict:
    """A projection table as a dict; a row that cannot be decoded is a finding."""
    out = {}
    for row in rows:
        try:
            key, value = decode(*row)
        except Exception as exc:  # noqa: BLE001 - a damaged row is a finding
            position, job = where(*row)
            findings.append(Finding(kind, f"{kind} row cannot be read: {exc!r}", position, job))
            continue
        out[key] = value
    return out


def _expected_renders(entries, tz, user_fmt, event_fmt, findings):
    """What the projector writes for ``entries``; an entry that cannot render is a finding."""
    targets = LogTargets()
    per_file, global_items = defaultdict(list), []
    for entry in entries:
        try:
            files, events = planned_writes([entry], targets, tz, user_fmt, event_fmt)
        except Exception as exc:  # noqa: BLE001 - a damaged payload is a finding
            findings.append(Finding("payload", f"cannot render {entry.type!r}: {exc!r}",
                                    entry.position, str(entry.job)))
            continue
        targets.changed.clear()
        targets.gone.clear()        # nothing is written again here
        for path, items in files.items():
            per_file[path] += [(e.position, str(e.job), data) for e, data in items]
        global_items += [(e.position, str(e.job), data) for e, data in events]
    return per_file, global_items


def _check_logs(conn, entries, tz, user_fmt, event_fmt, findings, notes, read_later) -> None:
    states = {p: (pos, off, seq, ctime) for p, pos, off, seq, ctime in conn.log_states()}
    cursor = conn.projection_position("logs") or 0
    failures = {path: error for path, _, error in conn.log_failures()}
    per_file, global_items = _expected_renders(entries, tz, user_fmt, event_fmt, findings)
    unexplained = {}
    for path, items in sorted(per_file.items()):
        state = states.get(path, (0, 0, 0, 0))
        _behind(path, state[0], cursor, items, failures.get(path), findings, notes)
        if path not in states:
            continue
        tail = _compare_user_log(path, state, items, findings, notes)
        if tail is not None:
            unexplained[path] = (state, tail)
    if unexplained:
        _recheck_tails(unexplained, entries, read_later(), tz, user_fmt, findings, notes)
    for path, state in states.items():
        if state[2] > 0:
            _compare_event_log(path, state, global_items, tz, event_fmt, findings)


def _behind(path, position, cursor, items, error, findings, notes) -> None:
    """Events the projector has passed that are not in the log: a finding per job."""
    missing = defaultdict(list)
    for pos, job, _ in items:
        if position < pos <= cursor:
            missing[job].append(pos)
    why = f" ({error}; the projector retries it)" if error else ""
    for job, positions in missing.items():
        findings.append(Finding("userlog", f"{len(positions)} events of this job (positions "
                                f"{positions[0]}..{positions[-1]}) are not in its user log{why}",
                                positions[0], job, path))
    later = sum(1 for pos, _, _ in items if pos > max(position, cursor))
    if later:
        notes.append(f"user log {path}: {later} events not written yet (the projector is "
                     f"at position {cursor})")


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _compare_user_log(path, state, items, findings, notes) -> tuple[int, bytes] | None:
    """Compare the file with the events up to its saved position.

    Our events must be there, whole and in order; other writers' bytes may
    lie between them, and a start the file lost when another writer emptied
    it is a note (daemons.log_sharing).  Returns where the bytes past them
    begin and those bytes when they hold something other writers would not
    write (for ``_recheck_tails``), else None.
    """
    position = state[0]
    data = _read(path)
    if data is None:
        findings.append(Finding("userlog", "file is missing", position, None, path))
        return None
    written = [i for i in items if i[0] <= position]
    texts = [t for _, _, t in written]
    gone, starts, at = locate_ours(data, texts)
    if gone + len(starts) < len(written):
        pos, job, text = written[gone + len(starts)]
        at = _likely_place(data, text, at)
        findings.append(Finding("userlog", "bytes differ from the event the journal holds",
                                pos, job, path, at + _common_prefix(data[at:], text)))
        return None
    if gone:
        notes.append(f"user log {path}: its first {gone} events are gone: another writer "
                     "emptied the file (as DAGMan empties its nodes log when a DAG runs again)")
    others = at - sum(len(t) for t in texts[gone:])
    if others:
        notes.append(f"user log {path}: {others} bytes among our events are other writers'")
    if at < len(data):
        tail = data[at:]
        if _tail_suspect(tail, [t for p, _, t in items if p > position]) is not None:
            return at, tail
        notes.append(f"user log {path}: {len(tail)} bytes past our last saved event are the "
                     "next events (a write in flight or a crash window; the projector "
                     "completes it) or other writers' events")
    return None


def _likely_place(data: bytes, text: bytes, at: int) -> int:
    """Where a damaged event of ours most likely is, past other writers' events: the first
    line from ``at`` that begins with its kind, job and time, else ``at``."""
    head = _EVENT_HEAD.match(text)
    found = find_ours(data, [head[0] if head else text[:text.find(b"\n") + 1]], at)[0]
    return found[0] if found else at


def _tail_suspect(tail: bytes, pending: list[bytes]) -> int | None:
    """Where the tail holds bytes that are neither our ``pending`` events (in order, the
    last perhaps torn) nor events other writers put in user logs; None if it holds none."""
    starts, torn = find_ours(tail, pending)
    end = len(tail) if torn is None else torn
    return suspect_at(tail, foreign_spans(tail, pending, starts, 0, end))


def _recheck_tails(unexplained, entries, later, tz, user_fmt, findings, notes) -> None:
    """Tails past the saved offsets, against the journal as it is now (read after the files).

    The projector writes only committed records, so a tail that holds more
    than the rendering of the journal's next events (even of records
    committed after the snapshot) and other writers' events holds events the
    journal never had, or lost.
    """
    per_file, _ = _expected_renders(list(entries) + later, tz, user_fmt, None, [])
    for path, (state, (at, tail)) in sorted(unexplained.items()):
        position = state[0]
        pending = [t for p, _, t in per_file.get(path, []) if p > position]
        suspect = _tail_suspect(tail, pending)
        if suspect is None:
            notes.append(f"user log {path}: {len(tail)} bytes past the saved offset are "
                         "events committed while the audit ran (a write in flight)")
            continue
        findings.append(Finding("evidence", f"{len(tail) - suspect} bytes after the last event "
                                "the journal knows are events the journal does not hold (the "
                                "journal lost records, or the file was written by something "
                                "else)", position, None, path, at + suspect))


def _common_prefix(a: bytes, b: bytes) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _rotated(path: str) -> list[str]:
    """The rotated files of an event log, newest first (``.old``, or ``.1`` .. ``.N``)."""
    if os.path.exists(path + ".old"):
        return [path + ".old"]
    out, n = [], 1
    while os.path.exists(f"{path}.{n}"):
        out.append(f"{path}.{n}")
        n += 1
    return out


_EVENT_HEAD = re.compile(rb"\d{3} \([^)\n]*\) \S+ \S+ ")
_CTIME = re.compile(rb"Global JobLog: ctime=(\d+) ")


def _compare_event_log(path, state, items, tz, fmt, findings) -> None:
    """The live event log, then each rotated file: contiguous runs of the journal's events."""
    position, offset, sequence, _ = state
    written = [i for i in items if i[0] <= position]
    j = len(written) - 1
    for k, fpath in enumerate([path] + _rotated(path)):
        data = _read(fpath)
        if data is None:
            findings.append(Finding("eventlog", "file is missing", position, None, fpath))
            return
        m = _CTIME.search(data[:1024])
        header = render_header(int(m.group(1)) if m else 0, sequence - k, fmt, tz).encode()
        first = data[:data.find(b"\n...\n") + 5] if b"\n...\n" in data else data
        if len(first) != len(header) or first.split(b" size=")[0] != header.split(b" size=")[0]:
            findings.append(Finding("eventlog", f"header is not the one of sequence "
                                    f"{sequence - k}", None, None, fpath, 0))
            return
        end = min(offset, len(data)) if k == 0 else len(data)
        body_start = len(first)
        while end > body_start and j >= 0:
            pos, job, text = written[j]
            if not data.endswith(text, body_start, end):
                findings.append(Finding("eventlog", "bytes differ from the event the journal "
                                        "holds", pos, job, fpath, max(body_start, end - len(text))))
                return
            end -= len(text)
            j -= 1
        if end > body_start:
            findings.append(Finding("eventlog", "bytes before the first event match no event",
                                    None, None, fpath, body_start))
            return


def _check_sources(entries, findings, notes) -> None:
    by_path = defaultdict(list)
    for e in entries:
        source = e.payload.get("source") if e.type == "event" else None
        if source:
            by_path[source["path"]].append((e, source))
    for path, events in sorted(by_path.items()):
        data = _read(path)
        if data is None:
            notes.append(f"imported log {path} is gone ({len(events)} events were read from it)")
            continue
        for e, source in events:
            chunk = data[source["offset"]:source["end"]]
            if hashlib.sha256(chunk).hexdigest()[:24] != source["digest"]:
                findings.append(Finding("source", "the event read from this log has changed "
                                        "since it was imported", e.position, str(e.job), path,
                                        source["offset"]))
    if by_path:
        notes.append(f"{sum(len(v) for v in by_path.values())} imported events checked "
                     f"against {len(by_path)} logs")
