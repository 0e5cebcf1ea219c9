"""The schedd's submitters: who the negotiator's accountant charges for a job.

A job's submitter is its ``AccountingGroup`` (``accounting_group``,
``accounting_group_user``, ``nice_user`` at submit) or else its ``Owner``, at the
schedd's UID domain (``eventcore.accounting.submitter_of``), as HTCondor's
schedd names them in its Submitter ads.  The negotiator asks for idle jobs per
submitter (``idle_by_submitter``), so that it can give each its share of the pool
however the queue orders their jobs.  A cluster's AccountingGroup is read from
its cluster ad; a proc that sets its own is counted under it once its ad is read.
"""

from __future__ import annotations

from collections.abc import Callable

from jobledger.daemons.storage.interfaces import SubmitterReads
from jobledger.eventcore import adwire
from jobledger.eventcore.accounting import submitter_of
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.status import JobStatus

COUNTED = {int(JobStatus.IDLE): "Idle", int(JobStatus.RUNNING): "Running", int(JobStatus.HELD): "Held"}


def _text(ad: dict, name: str) -> str | None:
    value = adwire.evaluate(ad, name) if name in ad else None
    return value if isinstance(value, str) and value else None


def submitter_counts(store: SubmitterReads, domain: str) -> dict[str, dict]:
    """submitter -> {"Owner", "Idle", "Running", "Held"} over the queue."""
    out: dict[str, dict] = {}
    for _, owner, status, number, cluster_ad in store.cluster_status_counts():
        key = COUNTED.get(int(status))
        if not owner or key is None:
            continue
        name = submitter_of(owner, _text(cluster_ad, "AccountingGroup"), domain)
        counts = out.setdefault(name, {"Owner": owner, "Idle": 0, "Running": 0, "Held": 0})
        counts[key] += number
    return out


def idle_by_submitter(store: SubmitterReads, busy: set, limit: int, domain: str, attrs: tuple,
                      skip_universe: str, admit: Callable[[dict], bool] | None = None
                      ) -> dict[str, list[dict]]:
    """submitter -> up to ``limit`` of its idle jobs (``attrs`` of each), queue order;
    jobs being started (``busy``), of the universe ``skip_universe`` and those ``admit``
    turns away left out."""
    clusters: dict[str, list[int]] = {}
    for cluster, owner, status, _, cluster_ad in store.cluster_status_counts():
        if int(status) == int(JobStatus.IDLE):
            name = submitter_of(owner, _text(cluster_ad, "AccountingGroup"), domain)
            clusters.setdefault(name, []).append(cluster)
    out: dict[str, list[dict]] = {}
    for name, numbers in clusters.items():
        for cluster in numbers:
            if len(out.get(name, [])) >= limit:
                break
            for ad in store.query(f"ClusterId == {cluster} && JobStatus == 1", attrs, limit + len(busy)):
                job = JobId(int(ad["ClusterId"]), int(ad["ProcId"]))
                if job in busy or ad.get("JobUniverse") == skip_universe or ad.get("Managed") == '"External"':
                    continue
                whose = submitter_of(_text(ad, "Owner"), _text(ad, "AccountingGroup"), domain)
                jobs = out.setdefault(whose, [])
                if len(jobs) < limit and (admit is None or admit(ad)):
                    jobs.append(ad)
    return out
