"""Journal records <-> rows, and the chained checksum that guards each row.

A row is ``(position, time, cluster, proc, type, payload, key, checksum, event)``:

- ``payload`` is canonical JSON (sorted keys, no spaces, UTF-8) of the
  record's fields plus ``"v"``, the payload version;
- ``event`` is the ULog number of an event record, copied from its payload
  so that folds can pass over informational events without decoding them;
- ``checksum`` is CRC-32 over the row's columns up to ``key``, seeded with the
  previous row's checksum (0 before position 1).  A changed byte in row N
  fails row N; a row removed or re-ordered fails the next one, and position
  continuity (1, 2, 3, ...) is checked beside it.

A ``procs`` row (``ProcBlock``: a submission's procs with their SUBMIT
events) stands for ``row_span`` positions, two a proc: it is stored at the
last of them, so the next row's position is its own + 1 and the head is
still the largest position.  Its payload is compact: the attributes every
proc has alike once (``common``, as the writer factored it), each proc's
others (``ads``, its ``ProcId`` implied by ``procs``), the SUBMIT event
once without its ``proc``; ``expand_block`` gives back, position by position, the ``proc``
and ``event`` payloads the two-row form would hold.

Reading upcasts: ``UPCASTERS[(type, version)]`` turns a payload of an older
version into the next one, until ``RECORD_VERSIONS[type]`` is reached.  No
older versions exist yet; the chain is where they will go.  The journal is
never rewritten.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Callable, Iterable, NamedTuple

from jobledger.eventcore.errors import JournalCorrupt
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import (
    RECORD_TYPES, RECORD_VERSIONS, ActionRecord, ClusterAd, EventRecord, LeaveQueue,
    ProcAd, ProcBlock, Record, SetAttributes, UserRecord,
)

__all__ = [
    "Row", "encode_payload", "decode_payload", "record_to_payload", "record_from_payload",
    "row_checksum", "make_rows", "verify_rows", "canonical_json", "UPCASTERS",
    "row_span", "expand_block", "block_span",
]


class Row(NamedTuple):
    """One journal row as stored."""

    position: int
    time: float
    cluster: int
    proc: int
    type: str
    payload: str
    key: str | None
    checksum: int
    event: int | None = None   # ULog number of an `event` record (an index, from the payload)


_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                            allow_nan=False)
_dumps = _ENCODER.encode
if json.encoder.c_make_encoder is not None:
    # The same encoder's C core, called directly: JSONEncoder.encode adds two
    # Python frames per payload, a noticeable share of a 100,000-proc submit.
    # Without circular-reference markers (payloads are trees of plain values).
    _c_encode = json.encoder.c_make_encoder(
        None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", True,
        False, False)

    def _dumps(value: Any, _join="".join, _encode=_c_encode) -> str:  # noqa: F811
        if isinstance(value, str):
            return _ENCODER.encode(value)
        return _join(_encode(value, 0))


def canonical_json(value: Any) -> str:
    """The one JSON spelling of ``value`` (sorted keys, compact, UTF-8)."""
    return _dumps(value)


def record_to_payload(record: Record) -> dict:
    """The record's fields (without job id and key) plus its version ``v``.

    The payload shares the record's ad and event dicts: read it, don't change it.
    """
    kind = record.type
    if kind == "event":
        body = {"event": record.event}     # already a dict of its own (attrs converter)
        if record.imported:
            body["imported"] = True
        if record.source is not None:
            body["source"] = dict(record.source)
    elif kind in ("cluster", "proc"):
        body = {"ad": record.ad}           # the record's own dict (attrs converter), not copied
    elif kind == "set":
        body = {"set": dict(record.set), "delete": list(record.delete)}
        if record.by is not None:
            body["by"] = record.by
    elif kind == "action":
        body = {"action": record.action}
        if record.reason is not None:
            body["reason"] = record.reason
        if record.by is not None:
            body["by"] = record.by
    elif kind == "leave":
        body = {}
    elif kind == "procs":
        body = _block_payload(record)
    elif kind == "userrec":
        body = {"kind": record.kind, "name": record.name, "op": record.op,
                "set": dict(record.set), "delete": list(record.delete)}
        if record.reason is not None:
            body["reason"] = record.reason
        if record.by is not None:
            body["by"] = record.by
    else:  # pragma: no cover - RECORD_TYPES is closed
        raise TypeError(f"not a journal record: {record!r}")
    body["v"] = RECORD_VERSIONS[kind]
    return body


def _block_payload(record: ProcBlock) -> dict:
    """What a block holds, as it holds it (the writer factored out what procs share)."""
    return {"procs": list(record.procs), "common": record.common, "ads": list(record.ads),
            "submit": {k: v for k, v in record.submit.items() if k != "proc"}}


def block_span(payload: dict) -> int:
    """The journal positions a ``procs`` payload stands for: a proc and its event each."""
    return 2 * len(payload["procs"])


def expand_block(payload: dict, last_position: int, after: int = 0):
    """``(position, proc, kind, payload)`` of the ``proc`` and ``event`` records a
    ``procs`` payload stands for (``last_position`` is its row's), those after
    ``after``; each proc ad sorted by name, as a decoded ``proc`` payload is."""
    procs, common, own, submit = payload["procs"], payload["common"], payload["ads"], payload["submit"]
    position = last_position - 2 * len(procs) + 1
    for proc, diff in zip(procs, own):
        if position + 1 > after:
            ad = dict(common)
            ad.update(diff)
            ad["ProcId"] = str(proc)
            if position > after:
                yield position, proc, "proc", {"ad": dict(sorted(ad.items())), "v": 1}
            event = dict(submit)
            event["proc"] = proc
            yield position + 1, proc, "event", {"event": event, "v": 1}
        position += 2


def row_span(kind: str, payload: str, position: int | None = None) -> int:
    """How many positions a stored row stands for (1 but for ``procs``)."""
    if kind != "procs":
        return 1
    return block_span(decode_payload(kind, payload, position))


def encode_payload(record: Record) -> str:
    return canonical_json(record_to_payload(record))


# (type, version) -> function(payload) -> payload of version + 1
UPCASTERS: dict[tuple[str, int], Callable[[dict], dict]] = {}


_raw_decode = json.JSONDecoder().raw_decode


def decode_payload(kind: str, text: str, position: int | None = None) -> dict:
    """Parse a stored payload and upcast it to today's version."""
    try:
        payload, end = _raw_decode(text)
        if end != len(text):
            raise ValueError(f"extra data at character {end}")
        version = payload["v"]
    except (ValueError, TypeError, KeyError) as exc:
        raise JournalCorrupt(f"unreadable {kind!r} payload: {exc}", position) from None
    target = RECORD_VERSIONS.get(kind)
    if target is None:
        raise JournalCorrupt(f"unknown record type {kind!r}", position)
    while version < target:
        step = UPCASTERS.get((kind, version))
        if step is None:
            raise JournalCorrupt(f"no upcaster for {kind!r} version {version}", position)
        payload = step(payload)
        version = payload["v"]
    if version != target:
        raise JournalCorrupt(f"{kind!r} payload version {version} is newer than {target}",
                             position)
    return payload


def record_from_payload(kind: str, job: JobId, payload: dict, key: str | None = None) -> Record:
    """The typed record for a decoded payload."""
    if kind == "event":
        return EventRecord(job, payload["event"], imported=payload.get("imported", False),
                           source=payload.get("source"), key=key)
    if kind == "cluster":
        return ClusterAd(job.cluster, payload["ad"], key=key)
    if kind == "proc":
        return ProcAd(job, payload["ad"], key=key)
    if kind == "set":
        return SetAttributes(job, payload["set"], tuple(payload["delete"]),
                             by=payload.get("by"), key=key)
    if kind == "action":
        return ActionRecord(job, payload["action"], payload.get("reason"),
                            payload.get("by"), key=key)
    if kind == "leave":
        return LeaveQueue(job, key=key)
    if kind == "procs":
        return ProcBlock(job.cluster, payload["procs"], payload["ads"],
                         dict(payload["submit"], proc=payload["procs"][0]), payload["common"],
                         key=key)
    if kind == "userrec":
        return UserRecord(payload["kind"], payload["name"], payload["op"], payload["set"],
                          tuple(payload["delete"]), payload.get("reason"), payload.get("by"), key=key)
    raise JournalCorrupt(f"unknown record type {kind!r}")


def row_checksum(previous: int, position: int, time: float, cluster: int, proc: int,
                 kind: str, payload: str, key: str | None) -> int:
    """CRC-32 of one row's columns, chained on the previous row's checksum."""
    text = f"{position}\x1f{time!r}\x1f{cluster}\x1f{proc}\x1f{kind}\x1f{key or ''}\x1f{payload}"
    return zlib.crc32(text.encode("utf-8"), previous)


def make_rows(records: Iterable[Record], first_position: int, time: float,
              previous_checksum: int, payloads: list[dict] | None = None) -> list[Row]:
    """Rows for ``records`` starting at ``first_position``, checksums chained.

    ``payloads`` (``record_to_payload`` of each record) saves computing them twice.
    The checksum is ``row_checksum``'s, spelled out here: this loop runs once
    per appended record.
    """
    rows = []
    checksum = previous_checksum
    position = first_position
    time_text = repr(time)
    crc32, dumps, classes = zlib.crc32, _dumps, _RECORD_CLASSES
    for i, record in enumerate(records):
        if type(record) not in classes and type(record).__name__ not in _RECORD_CLASS_NAMES:
            raise TypeError(f"not a journal record: {record!r}")
        job = record.job
        kind = record.type
        key = record.key
        body = payloads[i] if payloads is not None else record_to_payload(record)
        payload = dumps(body)
        if kind == "procs":        # stored at the last of the positions it stands for
            position += 2 * len(body["procs"]) - 1
        checksum = crc32(f"{position}\x1f{time_text}\x1f{job.cluster}\x1f{job.proc}\x1f{kind}"
                         f"\x1f{key or ''}\x1f{payload}".encode("utf-8"), checksum)
        rows.append(Row(position, time, job.cluster, job.proc, kind, payload, key, checksum,
                        body["event"]["type"] if kind == "event" else None))
        position += 1
    return rows


_RECORD_CLASSES = frozenset(RECORD_TYPES.values())
_RECORD_CLASS_NAMES = {cls.__name__ for cls in RECORD_TYPES.values()}


def verify_rows(rows: Iterable[Row], previous_position: int = 0,
                previous_checksum: int = 0) -> list[tuple[int, str]]:
    """Check checksums and continuity; return ``[(position, finding), ...]``."""
    findings = []
    expected = previous_position + 1
    previous = previous_checksum
    for row in rows:
        try:
            expected += row_span(row.type, row.payload, row.position) - 1
        except (JournalCorrupt, KeyError, TypeError) as exc:
            findings.append((row.position, f"unreadable block of procs: {exc}"))
        if row.position != expected:
            findings.append((row.position, f"position gap: expected {expected}, found {row.position}"))
        want = row_checksum(previous, row.position, row.time, row.cluster, row.proc,
                            row.type, row.payload, row.key)
        if want != row.checksum:
            findings.append((row.position, f"checksum mismatch (stored {row.checksum:08x}, "
                                           f"computed {want:08x})"))
        previous = row.checksum
        expected = row.position + 1
    return findings
