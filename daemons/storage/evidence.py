"""The journal's high-water mark: evidence of what it held, kept outside the database.

SQLite drops a WAL's tail from the first damaged frame on, and a deleted
``journal.sqlite`` is simply recreated empty: either way the journal goes
back in time and nothing inside the database can tell.  So every committing
store also records, in ``<local_dir>/spool/journal.hwm``, the last position
it committed, the chained checksum there and the largest cluster id ever
used -- committed, or only reserved (``new_cluster``: DAGMan's ids reserved
ahead, a submit whose reply a crash lost).  At start the journal must reach
that position with that checksum (``daemons.storage.check``), and new cluster
ids continue after it: an id handed out before a crash is never handed out again.

The file has two fixed-size slots written in turn (a ``pwrite`` of one
line), each with a CRC of its own: a write torn by a crash spoils only the
slot it was writing, and the reader takes the valid slot with the larger
position.  A ``pwrite`` after each commit (outside the store's write lock;
concurrent committers coalesce) is in the page cache at once, so it
survives any process crash; it is ``fdatasync``ed at most every
``SYNC_INTERVAL`` seconds and at close (never under ``durability="normal"``).
An fsync per commit would halve the rate of one-record fsync commits
(bench/RESULTS.md); this way a power cut can only leave the mark up to
``SYNC_INTERVAL`` behind the journal -- less evidence, never a false alarm,
because the journal's own commit was fsynced before the mark was written.
"""

from __future__ import annotations

import os
import re
import threading
import time
import zlib
from pathlib import Path
from typing import NamedTuple

__all__ = ["Mark", "HighWater", "EVIDENCE_NAME", "evidence_path"]

EVIDENCE_NAME = "journal.hwm"
SYNC_INTERVAL = 1.0
_SLOT = 96
_LINE = re.compile(rb"jobledger-hwm 1 position=(\d+) checksum=(\d+) cluster=(\d+) crc=(\d+)\n")


class Mark(NamedTuple):
    """What the journal held at its last recorded commit."""

    position: int
    checksum: int
    cluster: int       # the largest cluster id ever committed or reserved


def evidence_path(local_dir) -> Path:
    return Path(local_dir) / "spool" / EVIDENCE_NAME


def _encode(mark: Mark) -> bytes:
    body = f"jobledger-hwm 1 position={mark.position} checksum={mark.checksum} cluster={mark.cluster}"
    line = f"{body} crc={zlib.crc32(body.encode())}\n".encode()
    return line.ljust(_SLOT, b" ")


def _decode(slot: bytes) -> Mark | None:
    m = _LINE.match(slot)
    if m is None:
        return None
    body = slot[:slot.index(b" crc=")]
    if zlib.crc32(body) != int(m.group(4)):
        return None
    return Mark(int(m.group(1)), int(m.group(2)), int(m.group(3)))


class HighWater:
    """Reads and advances the mark of one journal (see the module docstring)."""

    def __init__(self, local_dir, sync: bool = True):
        self.path = evidence_path(local_dir)
        self.sync = sync
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._slot = 0
        self._synced = 0.0          # monotonic time of the last fdatasync
        self._dirty = False
        self.mark = self.read()

    def read(self) -> Mark | None:
        """The recorded mark, or None when there is no file or no valid slot."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        marks = [m for m in (_decode(data[i:i + _SLOT]) for i in (0, _SLOT)) if m is not None]
        return max(marks, default=None)

    def advance(self, position: int, checksum: int, cluster: int) -> None:
        """Record a commit (a no-op when a later one is recorded already)."""
        with self._lock:
            old = self.mark
            if old is not None and old.position >= position:
                return
            self.write(Mark(position, checksum, max(cluster, old.cluster if old else 0)))

    def reserve_clusters(self, last: int) -> None:
        """Cluster ids up to ``last`` are handed out (reserved, maybe never committed):
        the mark's cluster covers them, so a restart never hands them out again."""
        with self._lock:
            old = self.mark
            if old is not None and old.cluster >= last:
                return
            self.write(Mark(old.position if old else 0, old.checksum if old else 0, last))

    def write(self, mark: Mark) -> None:
        """Record ``mark`` as it is (``accept-loss`` uses this to move the mark back)."""
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            self._slot = self._older_slot()
        os.pwrite(self._fd, _encode(mark), self._slot * _SLOT)
        self._slot ^= 1
        self.mark = mark
        self._dirty = True
        if self.sync and time.monotonic() - self._synced >= SYNC_INTERVAL:
            self._sync()

    def _sync(self) -> None:
        os.fdatasync(self._fd)
        self._synced, self._dirty = time.monotonic(), False

    def _older_slot(self) -> int:
        """The slot not holding the newest mark: a torn write there loses nothing."""
        data = os.pread(self._fd, 2 * _SLOT, 0)
        first, second = _decode(data[:_SLOT]), _decode(data[_SLOT:])
        if first is None or second is None:
            return 0 if first is None else 1
        return 0 if first < second else 1

    def reset(self, mark: Mark) -> None:
        """Both slots hold ``mark`` (so an older one cannot win the next read)."""
        with self._lock:
            self.write(mark)
            self.write(mark)
            if self.sync:
                self._sync()

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                if self._dirty and self.sync:
                    self._sync()
                os.close(self._fd)
                self._fd = None
