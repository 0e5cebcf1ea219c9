"""Audit a pool's journal and everything projected from it.

``audit(local_dir, tz=None) -> Report`` checks, and reports each problem as
a ``Finding`` (kind, message, position, job, file, byte offset):

- ``checksum`` / ``continuity``: every row's chained CRC and positions 1..N;
- ``payload``: every payload decodes (and upcasts) to today's version;
- ``transition``: every record our schedd wrote is legal under the status
  table, job by job (imported events follow their log, see status.py);
- ``queue`` / ``history``: the queue and history tables equal a fold of the
  journal at their position;
- ``userlog``: each user log holds exactly the rendering of its events up
  to its saved position (a tail that is the start of the next events is a
  crash window, reported as a note: the projector completes it);
- ``eventlog``: the live global event log's header and events;
- ``source``: each imported event's bytes are still in its file, unchanged.

Notes (``Report.notes``) are facts that are not failures.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from eventcore.codecs.journal import Row, verify_rows
from eventcore.codecs.userlog_text_write import TextFormat
from eventcore.errors import InvalidTransition, JournalCorrupt, JournalError
from eventcore.journal import entry_from_row
from eventcore.projections.queue import QueueFold
from eventcore.projections.userlog import (
    EVENT_LOG_FORMAT, LogTargets, planned_writes, render_header,
)
from eventcore.status import next_status
from daemons.adrow import decode_ad
from daemons.store import DB_NAME

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


def audit(local_dir, tz: datetime.tzinfo | None = None,
          user_log_format: TextFormat = TextFormat(),
          event_log_format: TextFormat = EVENT_LOG_FORMAT) -> Report:
    """Check the pool under ``local_dir`` (see the module docstring)."""
    path = Path(local_dir) / DB_NAME
    if not path.exists():
        raise JournalError(f"no journal at {path}")
    tz = tz or datetime.datetime.now().astimezone().tzinfo
    try:
        return _audit(path, tz, user_log_format, event_log_format)
    except sqlite3.DatabaseError as exc:
        raise JournalCorrupt(f"the database file cannot be read: {exc}", path=str(path)) from None


def _audit(path: Path, tz, user_log_format, event_log_format) -> Report:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        findings, notes = [], []
        rows = [Row(*r) for r in conn.execute(
            "SELECT position, time, cluster, proc, type, payload, key, checksum, event "
            "FROM journal ORDER BY position")]
        jobs = {r.position: f"{r.cluster}.{r.proc}" for r in rows}
        for position, message in verify_rows(rows):
            kind = "continuity" if "gap" in message else "checksum"
            findings.append(Finding(kind, message, position, jobs.get(position), str(path)))
        entries = _decode(rows, findings)
        fold = _check_transitions(entries, findings, notes)
        _check_queue(conn, fold, len(rows) and rows[-1].position, findings, notes)
        _check_logs(conn, entries, tz, user_log_format, event_log_format, findings, notes)
        _check_sources(entries, findings, notes)
        counts = {"records": len(rows), "events": sum(e.type == "event" for e in entries),
                  "jobs": sum(1 for _ in fold.jobs())}
        return Report(findings, notes, counts)
    finally:
        conn.close()


def _decode(rows, findings):
    entries = []
    for row in rows:
        try:
            entry = entry_from_row(row)
        except JournalCorrupt as exc:
            findings.append(Finding("payload", exc.message, row.position,
                                    f"{row.cluster}.{row.proc}"))
            continue
        entries.append(entry)
        number = entry.payload["event"]["type"] if entry.type == "event" else None
        if row.event is not None and row.event != number:
            findings.append(Finding("payload", f"event column says {row.event}, the payload "
                                    f"{number}", row.position, str(entry.job)))
    return entries


def _check_transitions(entries, findings, notes) -> QueueFold:
    fold = QueueFold()
    off_table = 0
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
        except InvalidTransition as exc:
            fold.rollback()
            findings.append(Finding("transition", str(exc), e.position, str(e.job)))
        except (KeyError, TypeError, ValueError) as exc:
            fold.rollback()
            findings.append(Finding("payload", f"cannot fold {e.type!r}: {exc!r}",
                                    e.position, str(e.job)))
    fold.history = fold.take_changes().history
    if off_table:
        notes.append(f"{off_table} imported events do not follow the status table "
                     "(their logs start midway or are unusual); their implied status was used")
    return fold


def _check_queue(conn, fold: QueueFold, head: int, findings, notes) -> None:
    row = conn.execute("SELECT position FROM projection WHERE name='queue'").fetchone()
    if row is None:
        if head:
            notes.append("the queue projection has not been built (a restart builds it)")
        return
    if row[0] != head:
        notes.append(f"queue projection at position {row[0]}, journal head {head} "
                     "(a restart catches up)")
        return
    stored = {(c, p): (s, decode_ad(ad)) for c, p, s, ad in
              conn.execute("SELECT cluster, proc, status, ad FROM queue_jobs")}
    folded = {k: (v.status, v.ad) for k, v in fold.jobs()}
    for key in sorted(stored.keys() | folded.keys()):
        if stored.get(key) != folded.get(key):
            findings.append(Finding("queue", "queue row differs from the journal's fold",
                                    None, f"{key[0]}.{key[1]}"))
    history = {pos: (c, p, decode_ad(ad)) for pos, c, p, ad in
               conn.execute("SELECT position, cluster, proc, ad FROM history")}
    want_history = {h.position: (h.cluster, h.proc, h.ad) for h in fold.history}
    for position in sorted(history.keys() | want_history.keys()):
        if history.get(position) != want_history.get(position):
            job = history.get(position) or want_history.get(position)
            findings.append(Finding("history", "history row differs from the journal's fold",
                                    position, f"{job[0]}.{job[1]}"))
    clusters = {c: decode_ad(ad) for c, ad in conn.execute("SELECT cluster, ad FROM queue_clusters")}
    want = {c: ad for c, ad in fold.clusters.items() if ad is not None}
    for cluster in sorted(clusters.keys() ^ want.keys() | {c for c in clusters if clusters[c] != want.get(c)}):
        findings.append(Finding("queue", "cluster ad differs from the journal's fold", None,
                                f"{cluster}.-1"))


def _expected_renders(entries, tz, user_fmt, event_fmt):
    per_file, global_items = planned_writes(entries, LogTargets(), tz, user_fmt, event_fmt)
    return ({path: [(e.position, str(e.job), data) for e, data in items]
             for path, items in per_file.items()},
            [(e.position, str(e.job), data) for e, data in global_items])


def _check_logs(conn, entries, tz, user_fmt, event_fmt, findings, notes) -> None:
    states = {p: (pos, off, seq, ctime) for p, pos, off, seq, ctime in conn.execute(
        "SELECT path, position, offset, sequence, ctime FROM log_files")}
    per_file, global_items = _expected_renders(entries, tz, user_fmt, event_fmt)
    for path, position, error in conn.execute("SELECT path, position, error FROM log_failures"):
        notes.append(f"user log {path}: not written after position {position} ({error}); "
                     "the projector retries it")
    for path, items in sorted(per_file.items()):
        state = states.get(path)
        if state is None:
            notes.append(f"user log {path}: not written yet ({len(items)} events)")
            continue
        _compare_user_log(path, state, items, findings, notes)
    for path, state in states.items():
        if state[2] > 0:
            _compare_event_log(path, state, global_items, tz, event_fmt, findings)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _compare_user_log(path, state, items, findings, notes) -> None:
    position, offset = state[0], state[1]
    data = _read(path)
    if data is None:
        findings.append(Finding("userlog", "file is missing", position, None, path))
        return
    at = 0
    written = [i for i in items if i[0] <= position]
    for pos, job, text in written:
        if data.startswith(text, at):
            at += len(text)
            continue
        findings.append(Finding("userlog", "bytes differ from the event the journal holds",
                                pos, job, path, at + _common_prefix(data[at:], text)))
        return
    if at < len(data):
        pending = b"".join(t for p, _, t in items if p > position)
        if at == offset and pending.startswith(data[at:]):
            notes.append(f"user log {path}: {len(data) - at} bytes past the saved offset "
                         "are the next events (crash window; the projector completes it)")
        else:
            findings.append(Finding("userlog", f"{len(data) - at} unexpected bytes after "
                                    "the last event", position, None, path, at))


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
