"""Import HTCondor user logs and global event logs into a journal, idempotently.

``import_log(store, path)`` reads a whole log in any format the user-log
codecs read (text, JSON, XML), and appends one ``EventRecord`` per event
(``imported=True``), in batches, each batch one transaction.

Each record's ``key`` is ``ulog:<fingerprint>:<byte offset>``: the
fingerprint is a hash of the file's bytes up to the end of its first event
(stable while the file grows), the offset is where the event starts.
``source`` also keeps a digest of the event's own bytes.  The
journal refuses keys it holds, so importing the same file twice, a grown
file again, or again after the import was killed, adds each event exactly
once.  ``source`` (path, offsets, fingerprint) lets ``audit`` go back to the
file.  The header event that starts a global event log (008 ``Global
JobLog``) describes the file, not a job, and is not imported.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import stat
from typing import NamedTuple

from jobledger.eventcore.codecs.userlog import (
    Garbled, Parsed, TextReaderState, detect_format, parsed_event, scan_whole,
)
from jobledger.eventcore.errors import UserLogError
from jobledger.eventcore.events import event_to_dict
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import EventRecord
from jobledger.tracking.localzone import LOCAL_ZONE

__all__ = ["ImportResult", "import_log", "read_log", "fingerprint", "is_header_event",
           "LogItems", "reader_state", "digest"]

BATCH = 5000
MAX_IMPORT_BYTES = 1 << 30     # one log read whole into memory: at most 1 GiB


class ImportResult(NamedTuple):
    path: str
    events: int          # events in the file
    added: int           # of which new to the journal
    garbled: list        # (offset, reason) of records that are no event


class LogItems(NamedTuple):
    path: str
    fingerprint: str | None
    items: list          # Parsed / Skipped / Garbled, in file order
    data: bytes


def digest(data: bytes, item) -> str:
    """Hash of one record's bytes as they stand in the file."""
    return hashlib.sha256(data[item.offset:item.end]).hexdigest()[:24]


def reader_state(year: int | None = None) -> TextReaderState:
    """Reader settings: the local zone, legacy dates in ``year`` (default: this year)."""
    year = year or datetime.datetime.now().year
    return TextReaderState(zone=LOCAL_ZONE, year=year)


def fingerprint(data: bytes, items: list) -> str | None:
    """Hash of the bytes up to the end of the first event (None: no event yet)."""
    for item in items:
        if isinstance(item, Parsed):
            return hashlib.sha256(data[:item.end]).hexdigest()[:24]
    return None


def read_log(path: str, state: TextReaderState | None = None) -> LogItems:
    """Every record of the log at ``path`` (an incomplete tail is left out)."""
    try:        # non-blocking: a FIFO nobody writes is refused, not waited on
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UserLogError("not a regular file (a user log is one)", path)
            if st.st_size > MAX_IMPORT_BYTES:
                raise UserLogError(f"larger than {MAX_IMPORT_BYTES} bytes: split it first", path)
            data = f.read(MAX_IMPORT_BYTES + 1)
    except OSError as exc:
        raise UserLogError(f"cannot read: {exc.strerror}", path) from None
    if len(data) > MAX_IMPORT_BYTES:
        raise UserLogError(f"larger than {MAX_IMPORT_BYTES} bytes: split it first", path)
    fmt = detect_format(data)
    if fmt is None:
        return LogItems(path, None, [], data)
    if fmt == "unknown":
        raise UserLogError("not a job event log (first byte is not 0, 1, '{' or '<')", path, 0)
    items, _ = scan_whole(fmt, data, state or reader_state())
    return LogItems(path, fingerprint(data, items), items, data)


def is_header_event(event: dict) -> bool:
    info = event.get("attrs", {}).get("Info")
    return (event["type"] == 8 and event["cluster"] < 0
            and isinstance(info, str) and info.startswith("Global JobLog:"))


def _records(log: LogItems):
    path = os.path.abspath(log.path)
    for item in log.items:
        if not isinstance(item, Parsed):
            continue
        event = event_to_dict(parsed_event(item))
        if is_header_event(event):
            continue
        # execution-point events (100 and up) carry slot ids, not a job id
        job = JobId(-1, -1) if event["type"] >= 100 else JobId(event["cluster"], event["proc"])
        yield EventRecord(
            job, event, imported=True,
            source={"path": path, "offset": item.offset, "end": item.end,
                    "fingerprint": log.fingerprint, "digest": digest(log.data, item)},
            key=f"ulog:{log.fingerprint}:{item.offset}")


def import_log(store, path: str, state: TextReaderState | None = None,
               batch: int = BATCH, progress=None) -> ImportResult:
    """Append the log's events that the journal does not hold yet; ``progress(done,
    total)`` after each batch appended (events of this log)."""
    log = read_log(path, state)
    garbled = [(i.offset, i.reason) for i in log.items if isinstance(i, Garbled)]
    records = list(_records(log))
    added = 0
    for start in range(0, len(records), batch):
        chunk = records[start:start + batch]
        before = store.head()
        added += store.append(chunk) - before
        if progress is not None:
            progress(start + len(chunk), len(records))
    return ImportResult(path, len(records), added, garbled)
