"""The client side of ``Schedd.watch``: an iterator of job events that resumes by itself.

``EventStream`` holds one connection to the schedd's ``watch`` command
(``daemons.schedd.watch``) and yields each event as a ``WatchedEvent``: the
``JobEvent`` a user log would give for it (the event rendered as the user log
holds it, in local time, and read back), plus ``.position``, its journal
position.  ``.position`` is the resume token: the last position the schedd
said it covered (an event, or a mark past entries that matched nothing).
When the connection drops or the schedd stops (killed, restarted), the stream
connects again and asks from that position, for up to ``retry`` seconds
without an answer: nothing is missed and nothing comes twice.
"""

from __future__ import annotations

import time
from collections.abc import Generator

from jobledger.daemons import ipc
from jobledger.eventcore.codecs.userlog import Parsed, TextReaderState, scan
from jobledger.eventcore.projections.userlog import render
from jobledger.tracking.jobevent import JobEvent
from jobledger.tracking.localzone import LOCAL_TZINFO

__all__ = ["EventStream", "WatchedEvent"]

RETRY = 60.0          # seconds a stream keeps trying to reach its schedd again
READ_TIMEOUT = 60.0   # seconds without a byte (the schedd marks an idle stream every 5 s)


class WatchedEvent(JobEvent):
    """A job event of ``Schedd.watch``: a ``JobEvent`` with its journal ``position``."""

    __slots__ = ("position",)

    def __init__(self, item, position: int):
        super().__init__(item)
        self.position = position

    def __repr__(self) -> str:
        return f"WatchedEvent(position={self.position}, {super().__repr__()})"


def _event(item: dict) -> WatchedEvent:
    text = render(item["event"], tz=LOCAL_TZINFO).encode("utf-8")
    parsed, _ = scan("text", text, 0, TextReaderState())
    found = [p for p in parsed if isinstance(p, Parsed)]
    if not found:
        raise ipc.ConnectionLost(f"the schedd sent an event this client cannot read (position "
                                 f"{item.get('position')})")
    return WatchedEvent(found[0], int(item["position"]))


class EventStream:
    """Job events from a journal position on (see the module docstring)."""

    def __init__(self, address: str, constraint: str | None = None, since: int = 0,
                 retry: float = RETRY):
        self.address = address
        self.constraint = constraint
        self.position = since
        self.retry = retry
        self.reconnects = 0
        self.repeated = 0
        self._items: Generator | None = None

    def __iter__(self) -> "EventStream":
        return self

    def _open(self):
        return ipc.stream(self.address, "watch", timeout=READ_TIMEOUT, constraint=self.constraint,
                          since=self.position)

    def __next__(self) -> WatchedEvent:
        deadline, delay = None, 0.05
        while True:
            try:
                items = self._items
                if items is None:
                    items = self._items = self._open()
                item = next(items)
            except (ipc.ConnectionLost, StopIteration) as exc:
                # gone (killed, restarting) or stopped: ask again from the last position
                self.close()
                if deadline is None:
                    deadline = time.monotonic() + self.retry
                elif time.monotonic() + delay > deadline:
                    if isinstance(exc, StopIteration):
                        raise ipc.ConnectionLost(f"the schedd at {self.address} ended the stream") from None
                    raise
                self.reconnects += 1
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            deadline, delay = None, 0.05
            position = int(item["position"])
            if position <= self.position:
                self.repeated += "event" in item   # a whole journal never sends one again
                continue
            self.position = position
            if "event" in item:
                return _event(item)

    def close(self) -> None:
        """Drop the connection (a later ``next`` connects again from ``position``)."""
        items, self._items = self._items, None
        if items is not None:
            items.close()
