"""Streamed answers, read as they come: v1's ``QueryIterator`` (``Schedd.xquery``),
``poll`` over several of them (``BulkQueryIterator``), ``BlockingMode``, and the
``HistoryIterator`` of v1's ``Schedd.history``.

Each iterator owns one connection to the schedd, which sends its answer in
batches (``ipc``'s streamed reply: ``{"items": [...]}`` ... ``{"end": ...}``)
and reads its queue a page at a time (``QueueViews.query_pages``): neither
side ever holds more than a batch or two, whatever the queue's size.  The
client keeps the wire form of a batch and makes each ``ClassAd`` when it is
handed out.

Non-blocking reads (``next(BlockingMode.NonBlocking)``, ``nextAdsNonBlocking``)
take what the socket holds now, stopping at the first whole batch: a message
cut in two waits in the buffer for the rest (``_Frames``, no I/O of its own).
``watch()`` is the connection's file descriptor, for ``select``; ``poll`` waits
on those of all its iterators and hands out one that has ads (or its end) ready.
"""

from __future__ import annotations

import enum
import json
import selectors
import socket
from collections import deque

from jobledger.eventcore import adwire
from jobledger.daemons import ipc
from jobledger.eventcore.classad import ClassAd
from jobledger.eventcore.errors import HTCondorIOError, HTCondorTypeError

__all__ = ["BlockingMode", "QueryIterator", "BulkQueryIterator", "HistoryIterator", "poll"]

READ_SIZE = 1 << 18     # bytes asked of the socket at a time
STREAM_TIMEOUT = 300.0  # seconds a blocking read waits for the schedd


class BlockingMode(enum.IntEnum):
    """What ``QueryIterator.next`` does when no ad has arrived yet (v1's values)."""

    NonBlocking = 0
    Blocking = 1


class _Frames:
    """Length-prefixed JSON messages (``ipc``'s framing) out of bytes fed in any pieces."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def messages(self) -> list:
        """The whole messages received so far (a partial one stays buffered)."""
        out = []
        header = ipc._HEADER.size
        while len(self._buffer) >= header:
            (size,) = ipc._HEADER.unpack_from(self._buffer)
            if size > ipc.MAX_MESSAGE:
                raise ConnectionError(f"message of {size} bytes is too large")
            if len(self._buffer) < header + size:
                break
            out.append(json.loads(bytes(self._buffer[header:header + size])))
            del self._buffer[:header + size]
        return out


class _AdStream:
    """One streamed request to a daemon and its answer, read as it comes."""

    def __init__(self, address: str, cmd: str, args: dict, timeout: float = STREAM_TIMEOUT):
        self._address = address
        self._ads: deque = deque()
        self._frames = _Frames()
        self._ended = False
        self._sock: socket.socket | None = None
        self._sock = ipc.connect(address, timeout)
        try:
            ipc.send_message(self._sock, {"cmd": cmd, "args": args})
        except OSError as exc:
            self._close()
            raise ipc.ConnectionLost(f"failed talking to daemon at {address}: {exc}") from exc

    def _close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __del__(self) -> None:
        self._close()

    def _take(self, messages: list) -> None:
        for message in messages:
            if "items" in message:
                self._ads.extend(message["items"])
            elif "err" in message:
                self._ended = True
                self._close()
                ipc._raise_remote(*message["err"])
            else:
                self._ended = True
                self._close()

    def _ready(self) -> bool:
        """True when the socket has bytes to read now."""
        assert self._sock is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._sock, selectors.EVENT_READ)
            return bool(selector.select(0))

    def _read(self, block: bool) -> None:
        """Read until a whole message came (``block``) or, not blocking, until the
        socket has nothing more to give now or a whole message came."""
        while not self._ended and self._sock is not None:
            if not block and not self._ready():
                return
            try:
                data = self._sock.recv(READ_SIZE)
            except OSError as exc:
                self._ended = True
                self._close()
                raise ipc.ConnectionLost(f"failed talking to daemon at {self._address}: {exc}") from exc
            if not data:
                self._ended = True
                self._close()
                raise ipc.ConnectionLost(f"the daemon at {self._address} closed the connection "
                                         "before the end of its answer")
            self._frames.feed(data)
            try:
                messages = self._frames.messages()
            except (ValueError, ConnectionError) as exc:
                self._ended = True
                self._close()
                raise ipc.ConnectionLost(f"bad answer from daemon at {self._address}: {exc}") from exc
            if messages:
                self._take(messages)
                return

    def _next_ad(self, block: bool) -> ClassAd | None:
        """The next ad; None when none is there yet (not blocking) or the answer ended."""
        while not self._ads and not self._ended:
            self._read(block)
            if not block:
                break
        if self._ads:
            return adwire.to_classad(self._ads.popleft())
        return None


class QueryIterator(_AdStream):
    """v1's ``QueryIterator``: the job ads of ``Schedd.xquery`` as the schedd sends them."""

    def __init__(self, address: str, args: dict, tag: str, timeout: float = STREAM_TIMEOUT):
        super().__init__(address, "query", args, timeout)
        self._tag = tag
        self._told_end = False

    def __iter__(self) -> "QueryIterator":
        return self

    def __next__(self) -> ClassAd:
        return self.next()

    def next(self, mode=BlockingMode.Blocking):
        """The next job ad.  Blocking: waits for it; ``StopIteration`` at the end.
        NonBlocking: None when none has arrived yet, and once at the end (then
        ``StopIteration``, as v1 did)."""
        if isinstance(mode, bool) or not isinstance(mode, int) or mode not in (0, 1):
            raise HTCondorTypeError("mode must be a BlockingMode")
        block = BlockingMode(mode) == BlockingMode.Blocking
        if self._told_end:
            raise StopIteration("All ads processed")
        ad = self._next_ad(block)
        if ad is not None:
            return ad
        if self._ended:
            self._told_end = True
            if block:
                raise StopIteration("All ads processed")
        return None

    def nextAdsNonBlocking(self) -> list:
        """Every ad that has arrived (a batch at most): [] when none has, or at the end."""
        out = []
        ad = self._next_ad(False)
        while ad is not None:
            out.append(ad)
            ad = adwire.to_classad(self._ads.popleft()) if self._ads else None
        if not out and self._ended:
            self._told_end = True
        return out

    def tag(self) -> str:
        """The name given to ``xquery`` (by default the schedd's): tells iterators apart in ``poll``."""
        return self._tag

    def done(self) -> bool:
        """True once every ad has been handed out and the answer's end has been read."""
        return self._ended and not self._ads

    def watch(self) -> int:
        """The connection's file descriptor (readable when more ads came); -1 once it is closed."""
        return self._sock.fileno() if self._sock is not None else -1

    def _has_ready(self) -> bool:
        """Ads (or the end) already read, waiting to be handed out."""
        return bool(self._ads) or self._ended

    def __repr__(self) -> str:
        return f"<QueryIterator {self._tag!r} at {self._address}>"


class BulkQueryIterator:
    """What ``poll`` returns: iterating gives each time a ``QueryIterator`` with ads
    (or its end) ready, until all of them are done; waiting longer than the timeout
    raises ``HTCondorIOError``."""

    def __init__(self, queries, timeout_ms: int = 20 * 1000):
        try:
            items = iter(queries)
        except TypeError:
            raise HTCondorTypeError("Unable to iterate over query object.") from None
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
            raise HTCondorTypeError("timeout_ms must be an int")
        self._queries: list[QueryIterator] = []
        for item in items:
            if item is None:
                continue
            if not isinstance(item, QueryIterator):
                raise HTCondorTypeError("poll takes QueryIterator objects (from Schedd.xquery)")
            self._queries.append(item)
        self._timeout = None if timeout_ms < 0 else timeout_ms / 1000.0

    def __iter__(self) -> "BulkQueryIterator":
        return self

    def __next__(self) -> QueryIterator:
        self._queries = [q for q in self._queries if not q.done()]
        if not self._queries:
            raise StopIteration("All ads are processed")
        for query in self._queries:
            if query._has_ready():
                return query
        with selectors.DefaultSelector() as selector:
            for query in self._queries:
                selector.register(query.watch(), selectors.EVENT_READ, query)
            ready = selector.select(self._timeout)
        if not ready:
            raise HTCondorIOError("Timeout when waiting for remote host")
        return ready[0][0].data

    def next(self) -> QueryIterator:
        return self.__next__()


def poll(queries, timeout_ms: int = 20 * 1000) -> BulkQueryIterator:
    """Wait on several ``QueryIterator``s (several schedds) at once."""
    return BulkQueryIterator(queries, timeout_ms)


class HistoryIterator(_AdStream):
    """v1's ``HistoryIterator``: ``Schedd.history``'s ads (newest first), as they come.

    Code written for htcondor2's list (``len(ads)``, ``ads[0]``) works too: those
    read the rest of the answer into memory first, and iterating then goes over it."""

    def __init__(self, address: str, cmd: str, args: dict, timeout: float = STREAM_TIMEOUT):
        super().__init__(address, cmd, args, timeout)
        self._kept: list | None = None
        self._at = 0

    def __iter__(self) -> "HistoryIterator":
        return self

    def __next__(self) -> ClassAd:
        if self._kept is not None:
            if self._at >= len(self._kept):
                raise StopIteration("All ads processed")
            self._at += 1
            return self._kept[self._at - 1]
        ad = self._next_ad(True)
        if ad is None:
            raise StopIteration("All ads processed")
        return ad

    def next(self) -> ClassAd:
        return self.__next__()

    def _all(self) -> list:
        if self._kept is None:
            rest = []
            ad = self._next_ad(True)
            while ad is not None:
                rest.append(ad)
                ad = self._next_ad(True)
            self._kept, self._at = rest, 0
        return self._kept

    def __len__(self) -> int:
        return len(self._all()) - self._at

    def __getitem__(self, index):
        return self._all()[self._at:][index]
