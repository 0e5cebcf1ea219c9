"""Queue and history views: what ``condor_q`` and ``condor_history`` read.

``QueueViews`` is mixed into ``daemons.storage.store.Store`` and reads through
its ``reads`` (``daemons.storage.connections.ReadConnections``: point reads on
one locked connection, chunked reads on connections of their own);
constraints are evaluated with its ``constraint_filter``.
Constraints are ClassAd expression text: ``==`` conjuncts on ClusterId,
ProcId, JobStatus or Owner use indexes (daemons.storage.queryplan); the rest
is evaluated on each candidate ad, read as a ``JobAd`` (not merged).  A
filter with ``shared_answer(cluster_ad) -> (names, answer) | None``
(``eventcore.adwire.ConstraintTest``) is asked once per cluster: a job whose
own attributes name none of ``names`` takes the cluster's answer undecoded.
Rows are read in chunks (``CHUNK``) and reading stops as soon as enough ads
matched: ``history(match=N)`` reads the newest rows only until N matched
(``LIMIT N`` in SQL when there is no constraint).
"""

from __future__ import annotations

import time as _time
from pathlib import Path
from typing import Callable, Container, Generator, Iterable, Iterator

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.queue import merged_ad
from jobledger.eventcore.records import quote_string
from jobledger.eventcore.status import JobStatus
from jobledger.daemons.storage.adrow import JobAd, decode_ad, lowered
from jobledger.daemons.storage.adtext import compile_filter
from jobledger.daemons.storage.connections import ReadConnections
from jobledger.daemons.storage.errors import guard
from jobledger.daemons.storage.queryplan import plan

__all__ = ["QueueViews", "default_constraint_filter", "CHUNK"]

CHUNK = 500      # rows read under the read lock at a time
PAGE = 2000      # rows a page of a streamed query reads (query_pages)
# attributes kept in queue_jobs columns (a projection of only these reads no ad)
_COLUMN_ATTRS = {"clusterid": "ClusterId", "procid": "ProcId", "jobstatus": "JobStatus",
                 "owner": "Owner"}
_COLUMN_INDEX = {"clusterid": 0, "procid": 1, "jobstatus": 2, "owner": 3}   # in the rows read


def _past(p, after: tuple | None) -> tuple[str, tuple]:
    """The plan's WHERE clause and parameters, narrowed to jobs past ``after`` (cluster, proc)."""
    if after is None:
        return p.where, p.params
    return f"({p.where}) AND (j.cluster, j.proc) > (?, ?)", (*p.params, *after)


def default_constraint_filter(text: str) -> Callable[[dict], bool]:
    """A predicate over ads (attr -> expression text) from the ClassAd engine."""
    return compile_filter(text)


def _column_ads(rows, wanted: list[str]) -> list[dict]:
    """The ads of ``(cluster, proc, status, owner)`` rows with the ``wanted`` attributes
    (all in ``_COLUMN_ATTRS``, in their order), spelled as the queue's ads spell them."""
    columns = [(_COLUMN_ATTRS[w.lower()], _COLUMN_INDEX[w.lower()]) for w in wanted]
    if all(at != 3 for _, at in columns):
        return [{name: str(row[at]) for name, at in columns} for row in rows]
    quoted: dict[str, str] = {}     # an owner's text, once per owner
    out = []
    for row in rows:
        ad = {}
        for name, at in columns:
            value = row[at]
            if at != 3:
                ad[name] = str(value)
            elif value is not None:
                text = quoted.get(value)
                if text is None:
                    text = quoted[value] = quote_string(value)
                ad[name] = text
        out.append(ad)
    return out


class QueueViews:
    """Reads of the queue and history tables (see the module docstring)."""

    path: Path
    reads: ReadConnections
    constraint_filter: Callable[[str], Callable[[dict], bool]]
    _has_counts: bool | None = None    # whether the journal has queue_counts (``_counts_kept``)

    def _read(self, sql: str, args: tuple = ()) -> list:
        return self.reads.read(sql, args)

    def _chunks(self, sql: str, args: tuple, what: str = "reading the queue") -> Iterator[list]:
        """The rows of ``sql`` CHUNK at a time, on a connection of the store's own for
        chunked reads (``reads.take``), so no lock is held between chunks; an SQLite
        error is translated saying ``what`` was being read."""
        conn, cursor = self.reads.take(), None
        try:
            with guard(what, self.path):
                cursor = conn.execute(sql, args)
                rows = cursor.fetchmany(CHUNK)
            while rows:
                yield rows
                with guard(what, self.path):
                    rows = cursor.fetchmany(CHUNK)
        finally:
            if cursor is not None:
                cursor.close()
            self.reads.give_back(conn)

    def job_ad(self, job: JobId) -> dict | None:
        rows = self._read("SELECT j.ad, c.ad FROM queue_jobs j LEFT JOIN queue_clusters c "
                          "ON c.cluster = j.cluster WHERE j.cluster=? AND j.proc=?",
                          (job.cluster, job.proc))
        if not rows:
            return None
        proc_ad, cluster_ad = rows[0]
        return merged_ad(decode_ad(cluster_ad) if cluster_ad else None, decode_ad(proc_ad))

    def idle_ads(self, cluster: int | None, limit: int,
                 skip: Container[JobId] = ()) -> Iterator[tuple[JobId, dict]]:
        """The first ``limit`` idle jobs (of ``cluster``, or of any), by (cluster, proc),
        but those in ``skip`` (looked at as each comes), with their merged ads: one read,
        and only the ads handed out decoded (a claim's handover passes over the jobs
        being started)."""
        p = plan("JobStatus == 1" if cluster is None else f"ClusterId == {int(cluster)} && JobStatus == 1")
        rows = self._read(f"SELECT j.cluster, j.proc, j.ad, c.ad FROM queue_jobs j LEFT JOIN "
                          f"queue_clusters c ON c.cluster = j.cluster WHERE {p.where} "
                          f"ORDER BY j.cluster, j.proc LIMIT {int(limit)}", p.params)
        for cluster_id, proc, proc_ad, cluster_ad in rows:
            job = JobId(cluster_id, proc)
            if job not in skip:
                yield job, merged_ad(decode_ad(cluster_ad) if cluster_ad else None, decode_ad(proc_ad))

    def job_status(self, job: JobId) -> JobStatus | None:
        rows = self._read("SELECT status FROM queue_jobs WHERE cluster=? AND proc=?",
                          (job.cluster, job.proc))
        return JobStatus(rows[0][0]) if rows else None

    def cluster_ad(self, cluster: int) -> dict | None:
        rows = self._read("SELECT ad FROM queue_clusters WHERE cluster=?", (cluster,))
        return decode_ad(rows[0][0]) if rows else None

    def cluster_ids(self) -> list[int]:
        """Every cluster with an ad in the queue (a job factory's has one while it has
        no job), in order."""
        return [row[0] for row in self._read("SELECT cluster FROM queue_clusters ORDER BY cluster")]

    def status_counts(self) -> dict[int, int]:
        """JobStatus -> number of jobs in the queue (from the kept counts: no row is read)."""
        if not self._counts_kept():
            return dict(self._read("SELECT status, count(*) FROM queue_jobs GROUP BY status"))
        return dict(self._read("SELECT status, sum(n) FROM queue_counts GROUP BY status"))

    def owner_status_counts(self) -> dict[tuple[str, int], int]:
        """(Owner, JobStatus) -> number of jobs in the queue (for the Submitter ads)."""
        return {(owner or "", status): n for owner, status, n in self._read(
            "SELECT owner, status, count(*) FROM queue_jobs GROUP BY owner, status")}

    def cluster_status_counts(self) -> list[tuple[int, str, int, int, dict]]:
        """(cluster, Owner, JobStatus, number of jobs, the cluster ad) for every cluster and
        status in the queue, by cluster (the schedd's Submitter ads and per-submitter
        idle jobs: a cluster's AccountingGroup is in its cluster ad).  The numbers are the
        kept counts (``queue_counts``); the Owner is that of a job of the cluster in that
        status (one look-up in the status index), as a GROUP BY over the rows gives it."""
        if not self._counts_kept():
            rows = self._read("SELECT j.cluster, j.owner, j.status, count(*), c.ad FROM queue_jobs j "
                              "LEFT JOIN queue_clusters c ON c.cluster = j.cluster "
                              "GROUP BY j.cluster, j.status ORDER BY j.cluster")
        else:
            rows = self._read("SELECT q.cluster, (SELECT j.owner FROM queue_jobs j "
                              "INDEXED BY queue_jobs_status WHERE j.status = q.status "
                              "AND j.cluster = q.cluster LIMIT 1), q.status, q.n, c.ad "
                              "FROM queue_counts q LEFT JOIN queue_clusters c "
                              "ON c.cluster = q.cluster ORDER BY q.cluster, q.status")
        return [(cluster, owner or "", status, n, decode_ad(ad) if ad else {})
                for cluster, owner, status, n, ad in rows]

    def _counts_kept(self) -> bool:
        """Whether the store keeps ``queue_counts`` (a journal written before them, opened
        read-only, has none: its reads count the rows)."""
        kept = self._has_counts
        if kept is None:
            kept = self._has_counts = bool(self._read(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='queue_counts'"))
        return kept

    def job_count(self) -> int:
        """Number of jobs (proc ads) in the queue."""
        return self._read("SELECT count(*) FROM queue_jobs")[0][0]

    def query(self, constraint: str | None = None, projection: Iterable[str] | None = None,
              limit: int = -1, deadline: float | None = None) -> list[dict]:
        """Merged ads of the jobs matching ``constraint``, by (cluster, proc).

        ``constraint``: ClassAd text or anything whose ``str()`` is (an ExprTree).
        Rows are read in chunks and the constraint is evaluated between them,
        outside the read lock, so appends (which take it) are never held up for
        long; past ``deadline`` (``time.monotonic()``) ``TimeoutError``.
        """
        if constraint is not None and not isinstance(constraint, str):
            constraint = str(constraint)
        p = plan(constraint)
        predicate = self.constraint_filter(p.residual) if p.residual else None
        wanted = list(projection or [])
        if wanted and predicate is None and all(w.lower() in _COLUMN_ATTRS for w in wanted):
            return self._query_columns(p, wanted, limit)
        out: list[dict] = []
        # Without a residual every row read is an answer: read no more than wanted
        # (a claim handover asks for the next 2 idle jobs of thousands).
        for ad in self._matching(p, predicate, deadline, limit if predicate is None else -1):
            out.append(ad.project(wanted))
            if 0 <= limit <= len(out):
                break
        return out

    def each(self, constraint: str | None = None) -> Iterator[dict]:
        """The merged ads ``query(constraint)`` would list, one at a time: a
        walk over every queued job holds one chunk of ads, not the queue."""
        p = plan(constraint)
        predicate = self.constraint_filter(p.residual) if p.residual else None
        for ad in self._matching(p, predicate, None):
            yield ad.merged()

    def query_pages(self, constraint: str | None = None, projection: Iterable[str] | None = None,
                    limit: int = -1, budget: float | None = None,
                    rows: int = PAGE) -> Generator[list[dict], None, None]:
        """``query``'s answer in pages, each read on its own: at most ``rows`` queue
        rows, then the next page from the job after the last one read (by
        (cluster, proc)).  Between pages nothing of the store is held (no lock,
        no read snapshot), so a client that reads slowly holds up no one, and
        neither side ever holds more than a page.  A job that stays in the queue
        throughout comes exactly once; one that leaves or arrives meanwhile may
        or may not.  ``budget``: seconds of reading over all pages
        (``TimeoutError`` past it; the time the pages wait to be sent is not counted)."""
        if constraint is not None and not isinstance(constraint, str):
            constraint = str(constraint)
        p = plan(constraint)
        predicate = self.constraint_filter(p.residual) if p.residual else None
        wanted = list(projection or [])
        columns = bool(wanted) and predicate is None and all(w.lower() in _COLUMN_ATTRS for w in wanted)
        after: tuple | None = None
        spent, left = 0.0, limit
        while left != 0:
            started = _time.monotonic()
            deadline = None if budget is None else started + budget - spent
            last: list = []
            if columns:     # as ``query``: a projection of indexed columns decodes no ad
                page = self._column_page(p, wanted, rows if left < 0 else min(rows, left), after, last)
                if deadline is not None and _time.monotonic() > deadline:
                    raise TimeoutError("the query ran past its time budget")
            else:
                page = []
                for ad in self._matching(p, predicate, deadline, rows, after=after, last=last):
                    page.append(ad.project(wanted))
                    if len(page) == left:
                        break
            spent += _time.monotonic() - started
            if page:
                left -= len(page) if left > 0 else 0
                yield page
            if not last or last[1] < rows or left == 0:
                return
            after = last[0]

    def _matching(self, p, predicate, deadline: float | None,
                  limit: int = -1, after: tuple | None = None,
                  last: list | None = None) -> Iterator[JobAd]:
        """The matching jobs' ads as ``JobAd`` (not merged: a scan reads only the
        attributes its constraint and projection name); ``limit`` > 0: read no
        more rows than that; ``after``: only jobs past that (cluster, proc);
        ``last`` is set to [(cluster, proc) of the last row read, rows read]."""
        where, params = _past(p, after)
        sql = ("SELECT j.cluster, j.ad, c.ad, j.proc FROM queue_jobs j LEFT JOIN queue_clusters c "
               f"ON c.cluster = j.cluster WHERE {where} ORDER BY j.cluster, j.proc")
        if limit > 0:
            sql += f" LIMIT {int(limit)}"
        sharing = getattr(predicate, "shared_answer", None)
        # The answer for a cluster whose ad names nothing the test reads: such a cluster ad
        # (most of a scan's, when each job is a cluster of its own) is decoded only if a
        # job of it is an answer or names something the test reads itself.
        bare = sharing(None) if sharing is not None else None
        current, cluster_ad, cluster_lower, shared, undecoded = None, None, None, None, None
        read = 0
        for rows in self._chunks(sql, params):
            if last is not None:
                read += len(rows)
                last[:] = [(rows[-1][0], rows[-1][3]), read]
            for cluster, proc_text, cluster_text, _ in rows:
                if deadline is not None and _time.monotonic() > deadline:
                    raise TimeoutError("the query ran past its time budget")
                if cluster != current:
                    current, undecoded = cluster, None
                    if bare is not None and cluster_text and _names_none_of(cluster_text, bare[0]):
                        cluster_ad, cluster_lower, shared, undecoded = None, None, bare, cluster_text
                    else:
                        cluster_ad = decode_ad(cluster_text) if cluster_text else None
                        cluster_lower = lowered(cluster_ad) if cluster_ad else None
                        shared = sharing(cluster_ad) if sharing is not None else None
                answer = None
                if shared is not None and _names_none_of(proc_text, shared[0]):
                    if not shared[1]:   # the cluster's answer is this job's: no decode to say no
                        continue
                    answer = True
                if undecoded is not None:
                    cluster_ad = decode_ad(undecoded)
                    cluster_lower, undecoded = lowered(cluster_ad), None
                ad = JobAd(decode_ad(proc_text), cluster_ad, cluster_lower)
                if answer or predicate is None or predicate(ad):
                    yield ad

    def _query_columns(self, p, wanted: list[str], limit: int) -> list[dict]:
        """A projection of indexed columns only: no ad is decoded."""
        return self._column_page(p, wanted, limit, None, [])

    def _column_page(self, p, wanted: list[str], rows: int, after: tuple | None, last: list) -> list[dict]:
        """``_query_columns`` for one page of ``query_pages``: at most ``rows`` jobs (-1: all)
        past ``after``; ``last`` set as ``_matching`` sets it."""
        where, params = _past(p, after)
        sql = (f"SELECT j.cluster, j.proc, j.status, j.owner FROM queue_jobs j WHERE {where} "
               "ORDER BY j.cluster, j.proc")
        if rows >= 0:
            sql += f" LIMIT {int(rows)}"
        found = self._read(sql, params)
        if found:
            last[:] = [(found[-1][0], found[-1][1]), len(found)]
        return _column_ads(found, wanted)

    def history(self, constraint: str | None = None, projection: Iterable[str] | None = None,
                match: int = -1, since: str | int | None = None) -> list[dict]:
        """Ads of jobs that left the queue, newest first (schedd.md 6.3); reading
        stops once ``match`` ads matched (or at ``since``)."""
        return [ad for page in self.history_pages(constraint, projection, match, since) for ad in page]

    def history_pages(self, constraint: str | None = None, projection: Iterable[str] | None = None,
                      match: int = -1, since: str | int | None = None,
                      rows: int = PAGE) -> Generator[list[dict], None, None]:
        """``history``'s answer in pages of at most ``rows`` history rows read, each read
        on its own (the next from the row before the last one read): nothing of the
        store is held between pages, and no more than a page in memory."""
        if constraint is not None and not isinstance(constraint, str):
            constraint = str(constraint)
        predicate = self.constraint_filter(constraint) if constraint else None
        stop = _since_predicate(since, self.constraint_filter) if since is not None else None
        wanted = list(projection or [])
        where, params = _history_where(constraint) if stop is None else ("1", ())
        before: int | None = None
        left = match
        while left != 0:
            # every row an answer: read no more than wanted
            wanted_rows = min(rows, left) if predicate is None and stop is None and left > 0 else rows
            sql = (f"SELECT j.position, j.ad FROM history j WHERE ({where})"
                   f"{'' if before is None else ' AND j.position < ?'} "
                   f"ORDER BY j.position DESC LIMIT {int(wanted_rows)}")
            page, read = [], 0
            for chunk in self._chunks(sql, params if before is None else (*params, before)):
                for position, text in chunk:
                    read, before = read + 1, position
                    ad = JobAd(decode_ad(text))
                    if stop is not None and stop(ad):
                        left = 0
                        break
                    if predicate is not None and not predicate(ad):
                        continue
                    page.append(ad.project(wanted))
                    if len(page) == left:
                        break
                else:
                    continue
                break
            if page:
                yield page
                left = left - len(page) if left > 0 else left
            if read < wanted_rows:
                return


def _names_none_of(text: str, names: tuple[str, ...]) -> bool:
    """No attribute of the stored ad ``text`` is named any of ``names`` (lower case).
    A name found anywhere in the text counts (it may be in a value): then the
    job is tested on its own."""
    low = text.lower()
    return not any(name in low for name in names)


def _history_where(constraint: str | None) -> tuple[str, tuple]:
    """SQL narrowing the history to the ClusterId/ProcId conjuncts of ``constraint``
    (the whole constraint is still evaluated on each ad)."""
    p = plan(constraint)
    parts = [(c, v) for c, v in zip(p.where.split(" AND "), p.params)
             if c in ("j.cluster = ?", "j.proc = ?")]
    if not parts:
        return "1", ()
    return " AND ".join(c for c, _ in parts), tuple(v for _, v in parts)


def _since_predicate(since, compile_filter) -> Callable[[dict], bool]:
    """``since`` (int cluster, "C.P", or an expression) as a predicate over ads."""
    if isinstance(since, bool):
        raise TypeError("since must be an int, a 'C.P' string or an expression")
    if isinstance(since, int):
        return lambda ad: _int_of(ad, "ClusterId") == since
    text = str(since).strip()
    parts = text.split(".")
    if len(parts) == 2 and all(p.strip().lstrip("-").isdigit() for p in parts):
        cluster, proc = int(parts[0]), int(parts[1])
        return lambda ad: (_int_of(ad, "ClusterId"), _int_of(ad, "ProcId")) == (cluster, proc)
    if text.isdigit():
        return lambda ad: _int_of(ad, "ClusterId") == int(text)
    return compile_filter(text)


def _int_of(ad: dict, name: str) -> int | None:
    try:
        return int(ad.get(name, ""))
    except ValueError:
        return None
