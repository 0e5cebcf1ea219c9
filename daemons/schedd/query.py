"""What the schedd answers about its jobs: ``query`` (ads, summary, autoclusters, groups) and ``history``.

Everything is read from the store's queue and history views; answers go back
in batches of BATCH ads (``ipc.Streamed``).  A query's constraint runs within
a time budget (SCHEDD_QUERY_TIMEOUT), so one client's costly constraint
cannot hold the schedd for long.
"""

from __future__ import annotations

import itertools
import time

from jobledger.eventcore import adwire
from jobledger.daemons import ipc, jobsets
from jobledger.daemons.schedd.match import MATCH_ATTRS
from jobledger.eventcore.enums import QueryOpt
from jobledger.eventcore.errors import HTCondorException
from jobledger.daemons.storage.interfaces import QueueReads

SUMMARY_KEYS = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held", 6: "Running",
                7: "Suspended"}
BATCH = 2000


def check_constraint(constraint) -> None:
    """A client's constraint must parse (an empty one is every job)."""
    if constraint:
        try:
            adwire.check_constraint(constraint)
        except Exception as exc:
            raise HTCondorException("Parse error in constraint") from exc


class Queries:
    """Queries over ``store`` for one schedd; ``budget`` is SCHEDD_QUERY_TIMEOUT (seconds)."""

    def __init__(self, store: QueueReads, budget: float):
        self.store = store
        self.budget = budget

    def query(self, user: str, constraint=None, projection=None, limit=-1, opts=0) -> ipc.Streamed:
        """``Schedd.query`` by ``user``: job ads (or a summary, or groups), in batches."""
        opts = QueryOpt(opts)
        constraint = constraint or None
        check_constraint(constraint)
        now = str(int(time.time()))
        if opts & QueryOpt.DefaultMyJobsOnly:
            mine = f"Owner == {adwire.quote(user)}"
            constraint = f"({constraint}) && {mine}" if constraint else mine
        if opts == QueryOpt.SummaryOnly:
            return ipc.Streamed([[self._summary(constraint, now)]])
        if opts & QueryOpt.SummaryOnly:
            return ipc.Streamed([])
        wanted = list(projection or [])
        if opts & (QueryOpt.AutoCluster | QueryOpt.GroupBy):
            return ipc.Streamed([self._grouped(constraint, wanted, opts, now)])
        first: list[list] = []
        if opts & QueryOpt.IncludeJobsetAds:
            first.append([dict({k: v for k, v in ad.items() if not wanted or k in wanted}, ServerTime=now)
                          for ad in jobsets.jobset_ads(self.store) if adwire.matches(constraint, ad)])
        if opts & QueryOpt.IncludeClusterAd:
            first.append(self._cluster_ads(constraint, wanted, now))
        pages = self._pages(constraint, wanted, limit, now)
        try:    # a constraint that does not evaluate fails before any ad goes out
            head = next(pages, None)
        except BaseException:
            pages.close()
            raise
        return ipc.Streamed(itertools.chain(first, [head] if head else [], pages))

    def _pages(self, constraint, wanted, limit, now):
        """The job ads, a page (BATCH rows read) at a time: the schedd holds one
        page per client, whatever the queue's size (``store.query_pages``)."""
        pages = self.store.query_pages(constraint, wanted, limit, budget=self.budget, rows=BATCH)
        try:    # one client's costly constraint cannot hold the schedd for long
            for page in pages:
                for ad in page:
                    ad["ServerTime"] = now
                yield page
        except TimeoutError:
            raise HTCondorException(f"the query ran longer than its budget of {self.budget:g} s "
                                    "(SCHEDD_QUERY_TIMEOUT): narrow the constraint") from None
        finally:
            pages.close()

    def _cluster_ads(self, constraint, wanted, now) -> list:
        out = []
        for cluster in self.store.cluster_ids():
            ad = self.store.cluster_ad(cluster)
            if ad is not None and adwire.matches(constraint, ad):
                names = {name.lower() for name in wanted}     # attribute names know no case
                ad = {k: v for k, v in ad.items() if not wanted or k.lower() in names}
                ad["ServerTime"] = now
                out.append(ad)
        return out

    def status_counts(self) -> dict:
        """Jobs per summary key over the whole queue, counted by SQLite (no ads loaded)."""
        counts: dict = {}
        for status, number in self.store.status_counts().items():
            key = SUMMARY_KEYS.get(int(status))
            if key:
                counts[key] = counts.get(key, 0) + number
        return counts

    def _summary(self, constraint, now) -> dict:
        counts = {name: 0 for name in set(SUMMARY_KEYS.values())}
        every = {name: 0 for name in counts}
        every.update(self.status_counts())
        for ad in self.store.query(constraint, ["JobStatus"]) if constraint else []:
            key = SUMMARY_KEYS.get(int(ad.get("JobStatus", "1")))
            if key:
                counts[key] += 1
        if not constraint:
            counts = dict(every)
        summary = {"MyType": '"Summary"', "ServerTime": now, "ErrorCode": "0",
                   "Jobs": str(sum(counts.values()))}
        for name in counts:
            summary[name] = str(counts[name])
            summary[f"Allusers{name}"] = str(every[name])
            summary[f"Scheduler{name}"] = "0"
        summary["AllusersJobs"] = str(sum(every.values()))
        return summary

    def _grouped(self, constraint, wanted, opts, now) -> list:
        """AutoCluster/GroupBy ads, as HTCondor's JobAggregationResults builds them.

        GroupBy tests the constraint on each job and again on each group ad;
        AutoCluster tests it only on the autocluster ads.  Attribute names are
        case-insensitive, as everywhere in ClassAds.
        """
        group_by = bool(opts & QueryOpt.GroupBy)
        keys = wanted if group_by and wanted else list(MATCH_ATTRS[:6])
        groups: dict[tuple, list[str]] = {}
        for ad in self.store.query(constraint if group_by else None):
            folded = {name.lower(): value for name, value in ad.items()}
            signature = tuple(folded.get(k.lower()) for k in keys)
            groups.setdefault(signature, []).append(f"{ad['ClusterId']}.{ad['ProcId']}")
        out = []
        for number, (signature, ids) in enumerate(groups.items(), start=1):
            ad = {k: v for k, v in zip(keys, signature) if v is not None}
            ad.update({"JobCount": str(len(ids)), "JobIds": adwire.quote(" ".join(ids)),
                       "ServerTime": now})
            ad["Id" if group_by else "AutoClusterId"] = str(number)
            if adwire.matches(constraint, ad):
                out.append(ad)
        return out

    def history(self, constraint=None, projection=None, match=-1, since=None) -> ipc.Streamed:
        """``Schedd.history``: ads of jobs that left the queue, in batches."""
        check_constraint(constraint)
        pages = self.store.history_pages(constraint or None, projection or [], match, since, rows=BATCH)
        try:    # a constraint that does not evaluate fails before any ad goes out
            head = next(pages, None)
        except BaseException:
            pages.close()
            raise
        return ipc.Streamed(itertools.chain([head] if head else [], pages))
