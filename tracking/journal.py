"""The journal tracker: follows a pool's SQLite journal, no user-log files needed.

It opens the journal READ-ONLY through ``daemons.storage.reader.Reader`` (the
storage package's read-only reader, which refuses a schema version it does
not know) and reads records by position: first everything after its
starting position (list), then whatever is committed later (watch).  A
change of the database directory (the WAL file growing) wakes it at once;
since a commit becomes visible a moment after its bytes are written, a wake
that finds nothing looks again every millisecond for ``SETTLE`` seconds.
Without notifications the journal is read every ``interval`` seconds.

It resumes like a stream: its checkpoint keeps the last position read and
that row's checksum; a journal that no longer holds that row (another pool,
a rebuilt file) makes it replay from the start.

Records it uses: ``proc`` (a job is born, IDLE or HELD: submitted on hold
shows here, not in a user log; attributes its ``cluster`` record holds for
all procs count too), ``event`` (user-log events, folded by the one
status fold) and ``procs`` (a block of both, read as the procs and SUBMIT
events it stands for).  ``set``, ``action`` and ``leave`` do not move a job's status.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobledger.eventcore.codecs.journal import decode_payload, expand_block
from jobledger.eventcore.errors import JournalError, TrackerError
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import JobState, event_number
from jobledger.eventcore.status import JobStatus
from jobledger.daemons.storage.reader import Reader
from jobledger.tracking.core import Batch, Seed, Tracker
from jobledger.tracking.watch import DirectoryWatcher

__all__ = ["JournalTracker", "PayloadEvent"]

SETTLE = 0.05        # seconds to look again after a change notification found nothing


class PayloadEvent:
    """A journal event payload (``event_to_dict`` shape) seen as a ``JobEvent``."""

    __slots__ = ("type", "cluster", "proc", "timestamp", "_attrs")

    def __init__(self, data: Mapping[str, Any]):
        self.type = int(data["type"])
        self.cluster = int(data.get("cluster", -1))
        self.proc = int(data.get("proc", -1))
        self.timestamp = int(data.get("timestamp", 0))
        self._attrs = data.get("attrs") or {}

    def get(self, key: str, default: Any = None) -> Any:
        return self._attrs.get(key, default)

    def __repr__(self) -> str:
        return f"PayloadEvent({self.type}, {self.cluster}.{self.proc}, {self.timestamp})"


def _literal(text: str | None) -> Any:
    """An ad value given as ClassAd expression text, when it is a plain literal."""
    if text is None:
        return None
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    try:
        return int(text)
    except ValueError:
        return None


def born(job: JobId, ad: Mapping[str, str], when: float) -> JobState:
    """The state of a job from its ``proc`` record (before its submit event)."""
    status = JobStatus(_literal(ad.get("JobStatus")) or 1)
    held = status == JobStatus.HELD
    qdate = _literal(ad.get("QDate"))
    return JobState(
        job=job, status=status, entered_status=int(when),
        submitted=qdate if isinstance(qdate, int) else int(when),
        hold_reason=_literal(ad.get("HoldReason")) if held else None,
        hold_code=_literal(ad.get("HoldReasonCode")) if held else None,
        hold_subcode=(_literal(ad.get("HoldReasonSubCode")) or 0) if held else None)


class JournalTracker(Tracker):
    """Follows ``<pool>/journal.sqlite`` from ``after`` (a position; 0 = the beginning)."""

    kind = "journal"

    def __init__(self, journal: str | os.PathLike, *, after: int = 0, batch: int = 5000,
                 checkpoint: str | os.PathLike | None = None, interval: float = 0.25,
                 notify: bool = True):
        self.path = Path(journal)
        self.batch = batch
        self._start_after = after
        self.position = after
        self._checksum: int | None = None
        self._db: Reader | None = None
        self._data_version: int | None = None
        self._noticed = 0.0                  # when the directory last changed
        self._clusters: dict[int, Mapping[str, str]] = {}   # cluster ads, for proc records
        self._watcher = DirectoryWatcher(self._on_change, notify=notify)
        self._watcher.add([self.path, f"{self.path}-wal"])
        super().__init__(checkpoint=checkpoint, interval=interval)

    def _checkpoint_kind(self) -> str:
        return f"journal:{self.path.resolve()}"

    def _connect(self) -> Reader | None:
        """The read-only reader; None while the pool has not created its journal."""
        if self._db is None:
            if not self.path.exists():
                return None
            self._db = self._select(Reader, self.path)
        return self._db

    def _select(self, read, *args):
        """``read(*args)``; None while the pool is still creating its journal."""
        try:
            return read(*args)
        except JournalError as exc:
            if "no such table" in str(exc):
                return None
            raise TrackerError(f"cannot read the journal: {exc}", str(self.path)) from exc

    # --- positions ------------------------------------------------------------

    def _seek(self, positions: Mapping[str, Any]) -> bool:
        saved = positions.get("journal")
        if saved is None:
            self.position, self._checksum = self._start_after, None
            return True
        position, checksum = saved
        if position:
            db = self._connect()
            if db is None:
                return False
            if self._select(db.checksum_at, position) != checksum:
                return False
        self.position, self._checksum = position, checksum
        return True

    def _advance(self, positions: Mapping[str, Any]) -> None:
        if "journal" in positions:
            self.position, self._checksum = positions["journal"]

    # --- reading ----------------------------------------------------------------

    def _cluster_ad(self, db: Reader, cluster: int) -> Mapping[str, str]:
        """The attributes a cluster's procs share (its latest ``cluster`` record)."""
        ad = self._clusters.get(cluster)
        if ad is None:
            found = self._select(db.latest_cluster_ad, cluster)
            ad = decode_payload("cluster", *found)["ad"] if found else {}
            if len(self._clusters) > 10_000:
                self._clusters.clear()
            self._clusters[cluster] = ad
        return ad

    def _on_change(self) -> None:
        self._noticed = time.monotonic()
        self.wake()

    def _read(self) -> Batch:
        db = self._connect()
        if db is None:
            return Batch()
        # ``batch`` entries a read: a block of procs is one row standing for many
        rows = self._select(db.rows_spanning, self.position, self.batch)
        while not rows and time.monotonic() - self._noticed < SETTLE:
            # The WAL changed but the commit is not visible yet (it is written before
            # it is published, and publishing touches no file a watch can see).
            time.sleep(0.001)
            rows = self._select(db.rows_spanning, self.position, self.batch)
        if not rows:
            return Batch()
        items: list = []
        for position, when, cluster, proc, kind, payload, _key, _checksum, _event in rows:
            if kind == "event":
                event = PayloadEvent(decode_payload(kind, payload, position)["event"])
                if event_number(event) < 100:
                    items.append(event)
            elif kind == "cluster":
                self._clusters[cluster] = decode_payload(kind, payload, position)["ad"]
            elif kind == "proc" and proc >= 0:
                ad = {**self._cluster_ad(db, cluster), **decode_payload(kind, payload, position)["ad"]}
                items.append(Seed(born(JobId(cluster, proc), ad, when)))
            elif kind == "procs":      # a block: each proc is born, then its SUBMIT event
                shared = self._cluster_ad(db, cluster)
                for _at, number, what, body in expand_block(
                        decode_payload(kind, payload, position), position):
                    if what == "proc":
                        items.append(Seed(born(JobId(cluster, number), {**shared, **body["ad"]}, when)))
                    else:
                        items.append(PayloadEvent(body["event"]))
        last = rows[-1]
        return Batch(items, {"journal": [last.position, last.checksum]},
                     more=last.position >= self.position + self.batch)

    def start(self) -> "JournalTracker":
        self._watcher.start()
        super().start()
        return self

    def _close(self) -> None:
        self._watcher.stop()
        if self._db is not None:
            self._db.close()
            self._db = None
        super()._close()
