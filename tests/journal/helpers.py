"""Small builders for journal tests: records of a job's life, a fake constraint filter."""

from __future__ import annotations

from jobledger.eventcore.events import event_to_dict, make_event
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, EventRecord, LeaveQueue, ProcAd, quote_string

HOLD_ATTRS = {"HoldReason": "because", "HoldReasonCode": 1, "HoldReasonSubCode": 0}
TERMINATED_ATTRS = {"TerminatedNormally": True, "ReturnValue": 0}

EVENT_ATTRS = {
    0: {"SubmitHost": "<127.0.0.1:9618>"},
    1: {"ExecuteHost": "<127.0.0.1:9619>"},
    4: {},
    5: TERMINATED_ATTRS,
    6: {"Size": 100, "ResidentSetSize": 0},
    9: {"Reason": "by user"},
    10: {"NumberOfPIDs": 1},
    11: {},
    12: HOLD_ATTRS,
    13: {"Reason": "ok"},
}


def event(job: JobId, number: int, timestamp: int = 1_700_000_000, imported=False, **attrs):
    """An EventRecord for ``job`` with the usual attributes of ``number``."""
    values = dict(EVENT_ATTRS.get(number, {}))
    values.update(attrs)
    payload = event_to_dict(make_event(number, cluster=job.cluster, proc=job.proc,
                                       timestamp=timestamp, attrs=values))
    return EventRecord(job, payload, imported=imported)


def submit(cluster: int, procs: int, owner: str = "alice", log: str | None = None,
           held: bool = False, timestamp: int = 1_700_000_000) -> list:
    """Cluster ad + proc ads + one SUBMIT event per proc."""
    ad = {"Owner": quote_string(owner), "Cmd": '"/bin/sleep"', "QDate": str(timestamp)}
    if log:
        ad["UserLog"] = quote_string(log)
    records = [ClusterAd(cluster, ad)]
    for p in range(procs):
        job = JobId(cluster, p)
        records.append(ProcAd(job, {"JobStatus": "5" if held else "1",
                                    "Args": quote_string(str(p))}))
        records.append(event(job, 0, timestamp))
    return records


def life(job: JobId, t: int = 1_700_000_100) -> list:
    """Execute, terminate and leave."""
    return [event(job, 1, t), event(job, 5, t + 10), LeaveQueue(job)]


def all_ads(text):
    """A constraint filter that accepts every ad (for tests of the SQL part)."""
    return lambda ad: True


def as_blocks(records: list, size: int = 1000) -> list:
    """``records`` with each run of a cluster's proc ad + SUBMIT event pairs (at most
    ``size`` procs, one SUBMIT event but for ``proc``) as one ``ProcBlock``, as the
    schedd writes a submission: the journal entries they stand for are the same."""
    from jobledger.eventcore.records import ProcBlock

    out, run = [], []

    def flush():
        if run:
            procs = [ad.job.proc for ad, _ in run]
            out.append(ProcBlock.factored(run[0][0].job.cluster, procs, [ad.ad for ad, _ in run],
                                          run[0][1].event))
            run.clear()

    i = 0
    while i < len(records):
        record, following = records[i], records[i + 1] if i + 1 < len(records) else None
        if (isinstance(record, ProcAd) and isinstance(following, EventRecord)
                and following.job == record.job and following.number == 0
                and not following.imported and following.key is None and record.key is None
                and record.ad.get("ProcId", str(record.job.proc)) == str(record.job.proc)):
            template = dict(following.event, proc=None)
            if run and (run[0][0].job.cluster != record.job.cluster or len(run) == size
                        or dict(run[0][1].event, proc=None) != template):
                flush()
            run.append((record, following))
            i += 2
            continue
        flush()
        out.append(record)
        i += 1
    flush()
    return out
