"""What each of the schedd's parts may do with the store: narrow, typed views of
``daemons.storage.store.Store`` (structural: ``Store`` satisfies every one, and mypy checks
that it does wherever the schedd hands its store to a part).

A part that reads a job, decides and appends gets a ``JobLedger``; one that only reads
gets the reads it uses; the projector follows the journal through a ``JournalFeed``.  A part
that needs more must say so here, where a reader sees every part's reach at once.
"""

from __future__ import annotations

import threading
from pathlib import Path
from collections.abc import Container, Generator, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from jobledger.eventcore.codecs.journal import Row
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import Entry
from jobledger.eventcore.records import Assumed, Record
from jobledger.eventcore.status import JobStatus

__all__ = ["JobReads", "JobLedger", "ActionLedger", "PolicyLedger", "ClusterLedger", "FactoryLedger",
           "UserRecLedger", "QueueReads", "WatchReads", "SubmitterReads", "JournalFeed"]


class JobReads(Protocol):
    """A job's and a cluster's merged ads, and constraint queries over the queue."""

    def job_ad(self, job: JobId) -> dict | None: ...

    def job_status(self, job: JobId) -> JobStatus | None: ...

    def cluster_ad(self, cluster: int) -> dict | None: ...

    def query(self, constraint: str | None = None, projection: Iterable[str] | None = None,
              limit: int = -1, deadline: float | None = None) -> list[dict]: ...

    def idle_ads(self, cluster: int | None, limit: int,
                 skip: Container[JobId] = ()) -> Iterator[tuple[JobId, dict]]: ...


class JobLedger(JobReads, Protocol):
    """Reads, and the one way to change anything: an atomic append of records (each
    carrying the status its decision assumed: ``eventcore.records.Assumed``)."""

    def append(self, records: Iterable[Record | Assumed], expected_head: int | None = None,
               time: float | None = None) -> int: ...


class ActionLedger(JobLedger, Protocol):
    """condor_rm/hold/release/...: also how many jobs the queue holds."""

    def job_count(self) -> int: ...


class PolicyLedger(JobLedger, Protocol):
    """The periodic expressions: also every job, one at a time."""

    def each(self, constraint: str | None = None) -> Iterator[dict]: ...


class ClusterLedger(JobLedger, Protocol):
    """Export and import of jobs, DAGMan's progress: also the next cluster id."""

    def next_cluster_id(self) -> int: ...


class FactoryLedger(JobLedger, Protocol):
    """Job factories (late materialization): also the journal's head, to wait for commits."""

    def head(self) -> int: ...

    def cluster_ids(self) -> list[int]: ...

    def wait_for_position(self, position: int, timeout: float | None = None,
                          stop: threading.Event | None = None) -> bool: ...


class UserRecLedger(JobLedger, Protocol):
    """User and Project records: also the jobs per owner and status."""

    def owner_status_counts(self) -> dict[tuple[str, int], int]: ...


class SubmitterReads(Protocol):
    """The Submitter ads and idle jobs per submitter."""

    def cluster_status_counts(self) -> list[tuple[int, str, int, int, dict]]: ...

    def query(self, constraint: str | None = None, projection: Iterable[str] | None = None,
              limit: int = -1, deadline: float | None = None) -> list[dict]: ...


class QueueReads(Protocol):
    """condor_q and condor_history answers, streamed in pages."""

    def cluster_ad(self, cluster: int) -> dict | None: ...

    def cluster_ids(self) -> list[int]: ...

    def status_counts(self) -> dict[int, int]: ...

    def query(self, constraint: str | None = None, projection: Iterable[str] | None = None,
              limit: int = -1, deadline: float | None = None) -> list[dict]: ...

    def query_pages(self, constraint: str | None = None, projection: Iterable[str] | None = None,
                    limit: int = -1, budget: float | None = None,
                    rows: int = ...) -> Generator[list[dict], None, None]: ...

    def history_pages(self, constraint: str | None = None, projection: Iterable[str] | None = None,
                      match: int = -1, since: str | int | None = None,
                      rows: int = ...) -> Generator[list[dict], None, None]: ...


class WatchReads(Protocol):
    """A watch stream's ads: queued and gone."""

    def job_ad(self, job: JobId) -> dict | None: ...

    def cluster_ad(self, cluster: int) -> dict | None: ...

    def history(self, constraint: str | None = None, projection: Iterable[str] | None = None,
                match: int = -1, since: str | int | None = None) -> list[dict]: ...


class JournalFeed(Protocol):
    """The journal as the projector follows it: positions, rows, and a wait for more."""

    path: Path

    @property
    def write_turn(self) -> AbstractContextManager: ...

    def keep_recent(self) -> None: ...

    def head(self) -> int: ...

    def rows(self, after: int = 0, limit: int | None = None,
             positions: int | None = None) -> Iterator[Row]: ...

    def entries(self, after: int = 0, limit: int | None = None) -> Iterator[Entry]: ...

    def recent(self, after: int, limit: int) -> list[tuple[Row, dict]] | None: ...

    def wait_for_position(self, position: int, timeout: float | None = None,
                          stop: threading.Event | None = None) -> bool: ...

    def wake_waiters(self) -> None: ...


if TYPE_CHECKING:
    from jobledger.daemons.storage.store import Store

    def _the_store_serves_every_part(store: Store) -> None:
        """mypy checks here that ``Store`` has every method each interface names, with a
        signature that fits (the schedd, which hands the store out, is not yet checked)."""
        served: tuple[ActionLedger, PolicyLedger, ClusterLedger, UserRecLedger, SubmitterReads,
                      QueueReads, WatchReads, JournalFeed, FactoryLedger] = (
            store, store, store, store, store, store, store, store, store)
        del served
