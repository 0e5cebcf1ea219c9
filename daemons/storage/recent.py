"""Committed records kept in memory for the projector, so that it need not read them back.

Once ``start(base)`` was called (a follower asks, through ``Store.keep_recent``: the
projector, the JOB_QUEUE_LOG writer), ``add(rows, payloads)`` keeps what the writer
commits, with its payloads as appended (no JSON decode), and ``after(position, limit,
follower)`` hands them out in order and drops those up to the position of the follower
furthest behind: the followers have them, and short-lived entries cost the appends (and
the GC) least.  At most ``RECENT`` records wait; a follower further behind reads the
journal (``after`` says None).  Without a follower nothing is kept: appends pay nothing
for it.
"""

from __future__ import annotations

import bisect
import threading

from jobledger.eventcore.codecs.journal import Row

__all__ = ["RecentCommits", "RECENT"]

RECENT = 20_000        # committed records kept in memory for the projector


def _row_end(pair: tuple) -> int:
    return pair[0].position


class RecentCommits:
    """(row, payload) pairs committed after a follower's position (see the module docstring)."""

    def __init__(self, base: int):
        self._lock = threading.Lock()
        self.keeping = False
        self._pairs: list[tuple[Row, dict]] = []
        self._base = base                 # position of _pairs[0]
        self._followers: dict[str, int] = {}     # each follower's last ``after``

    def start(self, base: int, follower: str = "projector") -> None:
        """Keep what is committed from ``base`` on (once: later calls only add
        ``follower``, whose records are kept from then on until it has them)."""
        with self._lock:
            if not self.keeping:
                self.keeping = True
                self._pairs, self._base = [], base
            self._followers.setdefault(follower, self._base - 1)

    def add(self, rows: list[Row], payloads: list[dict]) -> None:
        if not self.keeping:
            return
        with self._lock:
            pairs = self._pairs
            pairs.extend(zip(rows, payloads))
            if pairs[-1][0].position - self._base >= RECENT:
                self._drop(pairs[-1][0].position - RECENT)     # the follower fell behind

    def forget(self, head: int) -> None:
        """Everything up to ``head`` is gone (another process wrote, or a stream was not kept)."""
        with self._lock:
            self._pairs = []
            self._base = head + 1

    def after(self, after: int, limit: int, follower: str = "projector") -> list[tuple[Row, dict]] | None:
        """Up to ``limit`` pairs committed after ``after``, in order (a block of procs is one
        row: the first may begin at or before ``after``); None when they are not in memory
        (not kept, or no longer, or not yet: read the journal)."""
        with self._lock:
            if not self.keeping:
                return None
            followers = self._followers
            followers[follower] = after
            if after + 1 < self._base:
                return None
            self._drop(after if len(followers) == 1 else min(followers.values()))
            pairs = self._pairs
            if not pairs:
                return None if after >= self._base else []
            if after >= pairs[-1][0].position:
                return []          # a follower ahead of another has every record kept
            start = bisect.bisect_right(pairs, after, key=_row_end) if len(followers) > 1 else 0
            return pairs[start:start + limit]

    def _drop(self, upto: int) -> None:
        """Forget the rows that end at or before ``upto`` (a block ends at its row)."""
        pairs = self._pairs
        cut = bisect.bisect_right(pairs, upto, key=_row_end)
        if cut:
            self._base = pairs[cut - 1][0].position + 1
            del pairs[:cut]
