"""What a submit writes to the journal: the cluster ad as stored and its procs' records.

Pure: the schedd (``daemons.schedd``) gives the cluster's number, its owner,
what it knows of itself (host, name, address) and the moment, and appends what
``cluster_records`` returns in the submit's transaction.  Every refusal here is
an ``HTCondorException`` naming the job, raised before anything is appended.
"""

from __future__ import annotations

from typing import Callable

from jobledger.eventcore import adwire
from jobledger.eventcore.attrnames import check_values, fold
from jobledger.eventcore.decide.runs import RUN_ATTRS, event
from jobledger.eventcore.decide.submit_notes import has_notes, submit_notes
from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, EventRecord, ProcAd, ProcBlock

__all__ = ["SPELLINGS", "Submitter", "cluster_records"]

# Canonical spellings of the attributes the schedd sets or guards ("OWNER" is "Owner").
SPELLINGS = {name.lower(): name for name in (
    "ClusterId", "ProcId", "Owner", "User", "OsUser", "JobStatus", "QDate", "MyType", "TargetType",
    "TotalSubmitProcs", "EnteredCurrentStatus", "GlobalJobId", *RUN_ATTRS)}
# What a submitted ad may not set: the schedd's own, and a run's
REFUSED = frozenset(RUN_ATTRS) | {"Owner", "User", "OsUser", "ClusterId"}
KEPT_SHAPES = 64    # distinct attribute-name tuples of procs remembered in one submit


class Submitter:
    """Who submits and where: ``owner`` (the OS user), ``identity`` (``User``, e.g. a
    token's; ``owner@host`` when None), the schedd's ``host``, ``name`` (GlobalJobId's
    first part) and ``address`` (the SUBMIT event's host)."""

    def __init__(self, owner: str, identity: str | None, host: str, name: str, address: str):
        self.owner, self.identity, self.host, self.name, self.address = owner, identity, host, name, address


def cluster_records(who: Submitter, cluster: int, cluster_ad: dict, num_procs: int, now: int,
                    jobset_id: Callable[[str], int] | None = None) -> tuple:
    """The cluster ad as stored, its record, and ``build(proc_ads, first_index)`` giving
    the records of those procs: one ``ProcBlock`` (their ads and their SUBMIT event),
    or a proc ad and a SUBMIT event each when some proc's SUBMIT event carries notes
    of its own.  ``jobset_id(name)`` numbers a job set (given when job sets are on)."""
    if not num_procs:
        raise ValueError("invalid Queue statement: no jobs")
    shared, spellings = _shared_ad(who, cluster, cluster_ad, num_procs, now)
    set_name = adwire.evaluate(shared, "JobSetName") if "JobSetName" in shared else None
    if isinstance(set_name, str) and set_name and jobset_id is not None:
        shared["JobSetId"] = str(jobset_id(set_name))
    # One SUBMIT payload, copied per proc (building 100,000 event records one by one is slow).
    template = dict(event(EventType.SUBMIT, JobId(cluster, 0), now, SubmitHost=who.address).event)
    if has_notes(shared):
        template = dict(template, attrs=dict(template["attrs"], **submit_notes(shared)))
    procs = _Procs(who, cluster, shared, spellings, template, now)
    return shared, ClusterAd(cluster, shared), procs.build


def _shared_ad(who: Submitter, cluster: int, cluster_ad: dict, num_procs: int, now: int) -> tuple[dict, dict]:
    """The cluster's ad as stored, and the spellings its procs' names fold to (the
    schedd's own, and the cluster ad's as sent)."""
    try:   # one key per attribute however spelled ("MY.owner", "OWNER"), before the checks
        shared = fold(cluster_ad, SPELLINGS)
        check_values(shared)
    except ValueError as exc:
        raise HTCondorException(f"Failed to set attribute for job {cluster}.0: {exc}") from None
    shared.update({
        "ClusterId": str(cluster), "Owner": adwire.quote(who.owner),
        "User": adwire.quote(who.identity or f"{who.owner}@{who.host}"), "OsUser": adwire.quote(who.owner),
    })
    shared.pop("ProcId", None)
    spellings = dict(SPELLINGS, **{name.lower(): name for name in shared})
    shared.setdefault("QDate", str(now))
    if "JobMaterializeDigestFile" not in shared:    # a job factory's: its whole size
        shared["TotalSubmitProcs"] = str(num_procs)  # set at commit, as HTCondor's schedd does
    shared.setdefault("MyType", '"Job"')
    shared.setdefault("TargetType", '"Machine"')
    for attr in RUN_ATTRS:
        shared.pop(attr, None)
    return shared, spellings


class _Procs:
    """The records of a cluster's procs, built a chunk at a time (``build``)."""

    def __init__(self, who: Submitter, cluster: int, shared: dict, spellings: dict, template: dict, now: int):
        self.who, self.cluster, self.shared, self.template, self.now = who, cluster, shared, template, now
        self.spellings = spellings
        self.default_status = shared.get("JobStatus", "1")
        # what every proc has unless its own ad says otherwise (kept once a block)
        self.common = {"JobStatus": self.default_status.strip(), "EnteredCurrentStatus": str(now)}
        self.kept: dict[tuple, tuple] = {}   # a proc's attribute names -> (_kept_names, has_notes)

    def build(self, proc_ads: list, first: int) -> list:
        procs: list[int] = []
        ads: list[dict] = []
        own_notes: dict[int, dict] = {}
        for index, own in enumerate(proc_ads, first):
            proc, ad, notes = self._proc(own, index)
            procs.append(proc)
            ads.append(ad)
            if notes:  # notes of this proc's own (e.g. one DAG node per proc)
                own_notes[len(ads) - 1] = dict(self.template["attrs"], **submit_notes(
                    dict(self.shared, **self.common, **ad, ProcId=str(proc))))
        if not procs:
            return []
        block = ProcBlock(self.cluster, procs, ads, self.template, self.common)
        if not own_notes:   # one record: the procs' ads, their SUBMIT event once
            return [block]
        records: list = []
        for i, proc in enumerate(procs):
            job = JobId(self.cluster, proc)
            records.append(ProcAd(job, block.ad_of(i)))
            payload = dict(self.template, proc=proc)
            if i in own_notes:
                payload["attrs"] = own_notes[i]
            records.append(EventRecord(job, payload))
        return records

    def _proc(self, own, index: int) -> tuple[int, dict, bool]:
        """(proc id, the ad kept of it, whether it has SUBMIT notes of its own)."""
        cluster = self.cluster
        if not isinstance(own, dict):
            raise HTCondorException(f"cluster {cluster}: proc {index} is not an ad")
        proc = int(own.get("ProcId", own.get("procid", index)))
        try:
            names = tuple(own)
            known = self.kept.get(names)
            if known is None:   # the procs of a submit mostly share their names
                known = (_kept_names(names, self.spellings, REFUSED), has_notes(own))
                if len(self.kept) < KEPT_SHAPES:
                    self.kept[names] = known
            pairs, notes = known
            ad = ({plain: own[name] for name, plain in pairs} if pairs is not None else
                  {k: v for k, v in fold(own, self.spellings).items() if k not in REFUSED})
            check_values(ad)
        except ValueError as exc:
            raise HTCondorException(f"Failed to set attribute for job {cluster}.{proc}: {exc}") from None
        ad.pop("ProcId", None)    # the block gives each proc its own
        status = ad.get("JobStatus", self.default_status).strip()
        if status not in ("1", "5"):
            raise HTCondorException(f"Failed to set JobStatus={status} for job {cluster}.{proc}: "
                                    "a new job must be idle (1) or held (5)")
        if status == self.common["JobStatus"]:
            ad.pop("JobStatus", None)    # what every proc has is kept once
        else:
            ad["JobStatus"] = status
        ad.setdefault("GlobalJobId", f'"{self.who.name}#{cluster}.{proc}#{self.now}"')
        return proc, ad, notes


def _kept_names(names: tuple, spellings: dict, refused) -> tuple | None:
    """(name as sent, name as stored) of each attribute a new proc keeps; None
    when two names spell one attribute (``fold`` then decides whose value wins)."""
    plain = list(fold(dict.fromkeys(names, ""), spellings))
    if len(plain) != len(names):
        return None
    return tuple((name, stored) for name, stored in zip(names, plain) if stored not in refused)
