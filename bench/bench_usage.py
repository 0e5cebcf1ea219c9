"""The hourly and daily usage counters of User and Project records (``eventcore.projections.usage``).

A journal of N jobs (clusters of 10,000 procs, three owners, two projects) submitted, then
half of them started and a tenth of those evicted: the fold's rate over its entries (the
schedd folds them once, at the first User/Project query after it starts, then only what
is new), and one ``publish`` with N/2 jobs still running and the rest idle (what each
query costs).  No peer: HTCondor keeps these counters inside its schedd.

``python -m bench usage [N ...]`` (default 100,000).
"""

from __future__ import annotations

import sys
import time

from jobledger.eventcore.events import event_to_dict, make_event
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import MemoryJournal
from jobledger.eventcore.projections.usage import UsageFold
from jobledger.eventcore.records import ClusterAd, EventRecord, ProcBlock, quote_string

T0 = 1_700_006_400
PER_CLUSTER = 10_000


def _event(job: JobId, number: int) -> EventRecord:
    return EventRecord(job, event_to_dict(make_event(number, cluster=job.cluster, proc=job.proc,
                                                     timestamp=T0, attrs={})))


def journal(n: int) -> MemoryJournal:
    j = MemoryJournal()
    clusters = max(n // PER_CLUSTER, 1)
    for c in range(1, clusters + 1):
        ad = {"Owner": quote_string(f"user{c % 3}"), "ProjectName": quote_string(f"p{c % 2}"),
              "RequestCpus": "1"}
        procs = list(range(PER_CLUSTER))
        j.append([ClusterAd(c, ad), ProcBlock.factored(c, procs, [{"JobStatus": "1"} for _ in procs],
                                                        _event(JobId(c, 0), 0).event)], time=T0 + c)
    for c in range(1, clusters + 1):
        j.append([_event(JobId(c, p), 1) for p in range(0, PER_CLUSTER, 2)], time=T0 + 600 + c)
        j.append([_event(JobId(c, p), 4) for p in range(0, PER_CLUSTER, 20)], time=T0 + 1200 + c)
    return j


def main(argv: list[str] | None = None) -> None:
    sizes = [int(a) for a in (argv if argv is not None else sys.argv[2:]) if a.isdigit()] or [100_000]
    print("| jobs | entries | fold entries/s (CPU) | fold s (wall) | publish ms (CPU) | records |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        entries = list(journal(n).entries())
        fold = UsageFold()
        wall, cpu = time.perf_counter(), time.process_time()
        fold.apply_all(entries)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        runs = []
        for _ in range(5):
            start = time.process_time()
            ads = fold.publish(T0 + 5 * 3600, start=T0)
            runs.append(time.process_time() - start)
        runs.sort()
        print(f"| {n:,} | {len(entries):,} | {len(entries) / cpu:,.0f} | {wall:.1f} | "
              f"{runs[2] * 1000:.2f} | {len(ads)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
