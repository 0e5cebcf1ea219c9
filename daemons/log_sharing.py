"""What in a shared user log is ours, and what another writer put there.

A user log is not ours alone: DAGMan writes its NOOP nodes' events, PRE_SKIP
and POST-script events to the nodes log, ``condor_chirp ulog`` writes
generic events, and DAGMan empties its nodes log when a DAG runs again.  The
projector keeps such bytes (daemons.userlog_files.reconcile); the audit must
tell them from events the journal lost.  An event is another writer's when
its kind is one only they write (generic 008, POST script 016, PRE_SKIP 030)
or it names cluster 0 (DAGMan's NOOP nodes); any other event, or bytes that
are not whole text-format events, could be the rendering of records the
journal no longer holds.
"""

from __future__ import annotations

import re

from jobledger.daemons.userlog_files import find_ours

__all__ = ["first_present", "foreign_spans", "locate_ours", "others_events", "suspect_at"]

# Events only other writers put in a user log (HTCondor's DAGMan and condor_chirp).
OTHERS_KINDS = frozenset({8, 16, 30})
_HEADER = re.compile(rb"(\d{3}) \((-?\d+)\.(-?\d+)\.(-?\d+)\) ")
_END = b"\n...\n"


def first_present(data: bytes, texts: list[bytes]) -> int:
    """How many of ``texts`` (a log's events in order) are gone from its start: the file
    was emptied and written on since.  Text-format events are looked up among the file's
    events at once (one pass over the file, not one search per event gone)."""
    chunks: set[bytes] | None = None
    for i, text in enumerate(texts):
        if text.endswith(_END):
            if chunks is None:
                chunks = set(data.split(_END))
            if text[:-len(_END)] in chunks:
                return i
        elif find_ours(data, [text])[0]:
            return i
    return len(texts)


def locate_ours(data: bytes, texts: list[bytes]) -> tuple[int, list[int], int]:
    """Our events ``texts`` (a log's, in order) in ``data``: how many are gone from its start
    (``first_present``), where each of the rest found in order begins (other writers' bytes
    allowed between them; fewer than the rest when one is missing), and where the last
    found ends (0 if none)."""
    gone = first_present(data, texts)
    starts, _ = find_ours(data, texts[gone:])
    end = starts[-1] + len(texts[gone + len(starts) - 1]) if starts else 0
    return gone, starts, end


def foreign_spans(data: bytes, texts: list[bytes], starts: list[int],
                  start: int, end: int) -> list[tuple[int, int]]:
    """The stretches of ``data[start:end]`` that are not the events found at ``starts``."""
    spans, at = [], start
    for begin, text in zip(starts, texts):
        if begin > at:
            spans.append((at, begin))
        at = begin + len(text)
    if end > at:
        spans.append((at, end))
    return spans


def suspect_at(data: bytes, spans: list[tuple[int, int]]) -> int | None:
    """Where the first byte lies, among ``spans``, that another writer would not have written
    (see the module's docstring); None when every span is other writers' whole events."""
    for begin, end in spans:
        for at, close, theirs in _events(data, begin, end):
            if not theirs:
                return at
    return None


def others_events(data: bytes) -> bytes:
    """Other writers' whole events in ``data``, in order: what a cut of ours keeps."""
    return b"".join(data[at:close] for at, close, theirs in _events(data, 0, len(data)) if theirs)


def _events(data: bytes, begin: int, end: int):
    """``(start, end, another writer's?)`` of each event in ``data[begin:end]``; bytes that
    are not a whole text-format event run to ``end`` as one piece, not another writer's."""
    at = begin
    while at < end:
        header = _HEADER.match(data, at, end)
        close = data.find(_END, at, end)
        if header is None or close < 0:
            yield at, end, False
            return
        close += len(_END)                # past the event's closing "..." line
        yield at, close, int(header[1]) in OTHERS_KINDS or int(header[2]) == 0
        at = close
