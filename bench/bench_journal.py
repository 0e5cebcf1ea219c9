"""Journal benchmark: appends per durability mode beside the disk's raw fsync rate,
cold rebuild of a 1,000,000-record journal, restart with a snapshot, queue queries.

``python -m bench journal`` (or ``python bench/bench_journal.py [--records N]``).
There is no htcondor2 peer for a schedd journal (the wheel has no daemons), so
the reference printed beside the appends is the disk itself: fsyncs/s of a
4 KiB write + fsync loop on the same file system, measured in this run.

Targets (issue 5): >= 50,000 records/s with group commit; cold rebuild of 1M
records < 10 s; restart with a snapshot < 1 s; a ClusterId/Owner/JobStatus
query on 100,000 jobs < 50 ms.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from jobledger.daemons.journal_check import check_before_start  # noqa: E402
from jobledger.daemons.storage.store import DB_NAME, Store  # noqa: E402
from jobledger.eventcore.codecs.journal import Row, make_rows, row_checksum  # noqa: E402
from jobledger.eventcore.events import event_to_dict, make_event  # noqa: E402
from jobledger.eventcore.ids import JobId  # noqa: E402
from jobledger.eventcore.records import ClusterAd, EventRecord, LeaveQueue, ProcAd, quote_string  # noqa: E402

T0 = 1_700_000_000
ATTRS = {
    0: {"SubmitHost": "<10.0.0.1:9618?addrs=10.0.0.1-9618&alias=ap.example.org>"},
    1: {"ExecuteHost": "<10.0.0.7:9618?addrs=10.0.0.7-9618&alias=ep07.example.org>",
        "SlotName": "slot1_3@ep07.example.org"},
    4: {"Checkpointed": False, "RunLocalUsage": "Usr 0 00:00:00, Sys 0 00:00:00",
        "RunRemoteUsage": "Usr 0 00:01:00, Sys 0 00:00:01", "SentBytes": 0.0,
        "ReceivedBytes": 1234.0, "TerminatedAndRequeued": False, "TerminatedNormally": False},
    5: {"TerminatedNormally": True, "ReturnValue": 0,
        "RunLocalUsage": "Usr 0 00:00:00, Sys 0 00:00:00",
        "RunRemoteUsage": "Usr 0 00:09:58, Sys 0 00:00:02",
        "TotalLocalUsage": "Usr 0 00:00:00, Sys 0 00:00:00",
        "TotalRemoteUsage": "Usr 0 00:09:58, Sys 0 00:00:02",
        "SentBytes": 30125.0, "ReceivedBytes": 2203.0, "TotalSentBytes": 30125.0,
        "TotalReceivedBytes": 2203.0},
    6: {"Size": 2048, "MemoryUsage": 2, "ResidentSetSize": 1800},
    12: {"HoldReason": "via condor_hold (by user alice)", "HoldReasonCode": 1,
         "HoldReasonSubCode": 0},
}


def ev(cluster, proc, number, t):
    return EventRecord(JobId(cluster, proc), event_to_dict(
        make_event(number, cluster=cluster, proc=proc, timestamp=t, attrs=ATTRS[number])))


def cluster_records(cluster, procs, owner):
    ad = {"Owner": quote_string(owner), "Cmd": '"/usr/bin/python3"', "JobUniverse": "5",
          "RequestCpus": "1", "RequestMemory": "2048", "RequestDisk": "1048576",
          "Requirements": '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX")',
          "Iwd": '"/home/user/run"', "QDate": str(T0 + cluster), "JobPrio": "0",
          "ShouldTransferFiles": '"YES"', "WhenToTransferOutput": '"ON_EXIT"'}
    out = [ClusterAd(cluster, ad)]
    for p in range(procs):
        out.append(ProcAd(JobId(cluster, p), {"JobStatus": "1", "Args": quote_string(f"run {p}"),
                                              "Out": quote_string(f"out.{p}")}))
        out.append(ev(cluster, p, 0, T0 + cluster))
    return out


def life_records(cluster, procs, leave=False):
    """About 8 records per job: execute, image sizes, evict, execute, end (held 1%)."""
    out = []
    t = T0 + 1000 + cluster
    for p in range(procs):
        out += [ev(cluster, p, 1, t), ev(cluster, p, 6, t + 5), ev(cluster, p, 4, t + 50),
                ev(cluster, p, 1, t + 60), ev(cluster, p, 6, t + 65), ev(cluster, p, 6, t + 90)]
        if p % 100 == 7:
            out.append(ev(cluster, p, 12, t + 100))
        elif p % 4 == 0:
            out.append(ev(cluster, p, 5, t + 100))
            if leave:
                out.append(LeaveQueue(JobId(cluster, p)))
    return out


# ----------------------------------------------------------------- disk --
def raw_fsync_rate(directory: str, seconds: float = 1.0) -> float:
    path = os.path.join(directory, "fsync.probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    block = b"x" * 4096
    n, start = 0, time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            os.write(fd, block)
            os.fsync(fd)
            n += 1
    finally:
        os.close(fd)
        os.unlink(path)
    return n / (time.perf_counter() - start)


# -------------------------------------------------------------- appends --
def cycles(cluster, procs, total):
    """``total`` events over ``procs`` jobs: execute, image size, evicted, again and again."""
    out = []
    for i in range(total):
        proc, step = i % procs, (i // procs) % 3
        out.append(ev(cluster, proc, (1, 6, 4)[step], T0 + i))
    return out


def bench_sequential(directory, durability, batch, total):
    store = Store(os.path.join(directory, f"seq-{durability}-{batch}"), durability=durability)
    store.append(cluster_records(1, 1000, "alice"))
    records = cycles(1, 1000, total)
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, total, batch):
        store.append(records[i:i + batch])
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    return total / elapsed, total / batch / elapsed, total / cpu


def bench_concurrent(directory, durability, threads, per_thread, batch=1):
    store = Store(os.path.join(directory, f"conc-{durability}-{threads}-{batch}"),
                  durability=durability)
    for t in range(threads):
        store.append(cluster_records(t + 1, 50, "alice"))
    work = [cycles(t + 1, 50, per_thread) for t in range(threads)]
    errors = []

    def run(records):
        try:
            for i in range(0, len(records), batch):
                store.append(records[i:i + batch])
        except Exception as exc:  # pragma: no cover - printed below
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(w,)) for w in work]
    start, cpu = time.perf_counter(), time.process_time()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    if errors:
        raise errors[0]
    return threads * per_thread / elapsed, threads * per_thread / cpu


# ------------------------------------------------------- big journal --
def build_journal(directory, records_wanted, procs_per_cluster=100, owners=100, leave=False,
                  bulk=False):
    """Write the journal table directly (rows as append makes them), no projection.

    ``bulk``: each cluster's rows are copied from one template cluster's (its
    id and owner substituted, checksums chained again; timestamps the same in
    every cluster): ~10x less CPU than building every record, for journals of
    millions of records.
    """
    local = os.path.join(directory, "big")
    Store(local).close()
    conn = sqlite3.connect(os.path.join(local, DB_NAME), isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    position, checksum, cluster = 1, 0, 0
    template = _Template(procs_per_cluster, leave) if bulk else None
    conn.execute("BEGIN")
    while position <= records_wanted:
        cluster += 1
        owner = f"user{cluster % owners}"
        if template is not None:
            rows = template.rows(cluster, owner, position, float(T0 + cluster), checksum)
        else:
            records = cluster_records(cluster, procs_per_cluster, owner)
            records += life_records(cluster, procs_per_cluster, leave)
            rows = make_rows(records, position, float(T0 + cluster), checksum)
        conn.executemany("INSERT INTO journal VALUES (?,?,?,?,?,?,?,?,?)", rows)
        position, checksum = rows[-1][0] + 1, rows[-1][7]
    conn.execute("COMMIT")
    conn.close()
    return local, position - 1, cluster * procs_per_cluster


class _Template:
    """One cluster's journal rows with its id and owner as markers (``build_journal``)."""

    CLUSTER = 987654321          # a cluster id no other text of the rows contains
    OWNER = "owner~marker"

    def __init__(self, procs: int, leave: bool):
        records = cluster_records(self.CLUSTER, procs, self.OWNER)
        records += life_records(self.CLUSTER, procs, leave)
        self.rows_ = make_rows(records, 1, 0.0, 0)

    def rows(self, cluster: int, owner: str, first: int, time: float, previous: int) -> list:
        marker, name, out = str(self.CLUSTER), str(cluster), []
        for offset, row in enumerate(self.rows_):
            payload = row.payload
            if marker in payload:
                payload = payload.replace(marker, name)
            if row.type == "cluster":
                payload = payload.replace(self.OWNER, owner)
            position = first + offset
            previous = row_checksum(previous, position, time, cluster, row.proc, row.type,
                                    payload, row.key)
            out.append((position, time, cluster, row.proc, row.type, payload, row.key,
                        previous, row.event))
        return out


def timed(fn, repeat=1):
    """(median wall seconds, result, median CPU seconds of this process)."""
    times, cpus = [], []
    result = None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(times), result, statistics.median(cpus)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    records = int(argv[argv.index("--records") + 1]) if "--records" in argv else 1_000_000
    base = tempfile.mkdtemp(prefix="bench-journal-", dir=os.environ.get("BENCH_DIR"))
    try:
        if "--storage" in argv:      # the before/after rows of the storage package (issue 16)
            rows = storage_rows(base, records)
        elif "--append-path" in argv:
            rows = append_path_rows(base)
        else:
            rows = (append_rows(base) + big_journal_rows(base, records) + storage_rows(base, 0)
                    + append_path_rows(base))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print_table(rows)


def append_rows(base: str) -> list[tuple]:
    """Appends in each durability mode, beside the disk's raw fsync rate."""
    rows = []
    fsyncs = raw_fsync_rate(base)
    rows.append(("disk: raw 4 KiB write+fsync", f"{fsyncs:,.0f} fsync/s", "", "reference"))
    for durability in ("fsync", "normal"):
        rate, commits, cpu = bench_sequential(base, durability, 1, 2000)
        rows.append((f"append 1 record/commit, {durability}", f"{rate:,.0f} rec/s",
                     f"{cpu:,.0f} rec/s", f"{commits / fsyncs:.2f} x raw fsync"))
    for durability in ("fsync", "group"):
        rate, cpu = bench_concurrent(base, durability, 16, 400)
        rows.append((f"16 threads x 1 record/append, {durability}", f"{rate:,.0f} rec/s",
                     f"{cpu:,.0f} rec/s", f"{rate / fsyncs:.1f} x raw fsync"))
    runs = [bench_concurrent(os.path.join(base, f"c{i}"), "group", 8, 20_000, batch=100)
            for i in range(3)]
    rows.append(("8 threads x 100 records/append, group (best of 3)",
                 f"{max(r[0] for r in runs):,.0f} rec/s", f"{max(r[1] for r in runs):,.0f} rec/s",
                 f"median wall {statistics.median(r[0] for r in runs):,.0f}; target >= 50,000"))
    for durability in ("fsync", "group", "normal"):
        runs = [bench_sequential(os.path.join(base, f"s{i}"), durability, 1000, 100_000)
                for i in range(3)]
        rows.append((f"1 thread x 1000 records/append, {durability} (best of 3)",
                     f"{max(r[0] for r in runs):,.0f} rec/s", f"{max(r[2] for r in runs):,.0f} rec/s",
                     f"median wall {statistics.median(r[0] for r in runs):,.0f}"
                     + ("; target >= 50,000" if durability == "group" else "")))
    submit = cluster_records(1, 10_000, "alice")
    store = Store(os.path.join(base, "submit"), durability="fsync")
    elapsed, _, cpu = timed(lambda: store.append(submit))
    store.close()
    rows.append(("one 10,000-proc submit (20,001 records), fsync", f"{elapsed * 1000:,.0f} ms",
                 f"{cpu * 1000:,.0f} ms", f"{len(submit) / elapsed:,.0f} rec/s"))
    return rows


def big_journal_rows(base: str, records: int) -> list[tuple]:
    """Cold rebuild, restarts with a snapshot, and queries on the big journal's queue."""
    rows = []
    local, total, jobs = build_journal(base, records)
    store = Store(local)     # no snapshot yet: this open rebuilds
    store.close()
    store = Store(local)
    runs = [timed(store.rebuild_queue) for _ in range(3)]
    best = min(r[0] for r in runs)
    rows.append((f"cold rebuild of the queue from {total:,} records (best of 3)", f"{best:.2f} s",
                 f"{min(r[2] for r in runs):.2f} s",
                 f"{total / best:,.0f} rec/s; median wall {statistics.median(r[0] for r in runs):.2f} s;"
                 " target < 10 s"))
    store.close()
    runs = [timed(lambda: check_before_start(local)) for _ in range(3)]
    best = min(r[0] for r in runs)
    rows.append((f"verify on start (chain, pages, high-water mark) of {total:,} records "
                 "(best of 3)", f"{best:.2f} s", f"{min(r[2] for r in runs):.2f} s",
                 f"{total / best:,.0f} rec/s; median wall {statistics.median(r[0] for r in runs):.2f} s"))
    elapsed, opened, cpu = timed(lambda: Store(local))
    rows.append(("restart with a current snapshot", f"{elapsed * 1000:,.0f} ms",
                 f"{cpu * 1000:,.0f} ms", f"{opened.recovered}; target < 1 s"))
    opened.append([ev(2, p % 100, 6, T0 + p) for p in range(10_000)])
    position = opened.head() - 10_000
    checksum = opened._conn.execute("SELECT checksum FROM journal WHERE position=?",
                                    (position,)).fetchone()[0]
    opened.close()
    conn = sqlite3.connect(os.path.join(local, DB_NAME), isolation_level=None)
    conn.execute("UPDATE projection SET position=?, checksum=? WHERE name='queue'",
                 (position, checksum))
    conn.close()
    elapsed, opened, cpu = timed(lambda: Store(local))
    rows.append(("restart, snapshot 10,000 records behind", f"{elapsed * 1000:,.0f} ms",
                 f"{cpu * 1000:,.0f} ms", f"{opened.recovered}; target < 1 s"))
    njobs = opened._read("SELECT count(*) FROM queue_jobs")[0][0]
    for label, constraint, projection in (
            ("ClusterId == 500", "ClusterId == 500", []),
            ('Owner == "user7"', 'Owner == "user7"', []),
            ("JobStatus == 5 (held)", "JobStatus == 5", []),
            ("JobStatus == 5, projection [ClusterId, ProcId]", "JobStatus == 5",
             ["ClusterId", "ProcId"]),
            ("ClusterId == 500 && RequestMemory > 1000",
             "ClusterId == 500 && RequestMemory > 1000", []),
    ):
        elapsed, found, cpu = timed(lambda: opened.query(constraint, projection), repeat=5)
        rows.append((f"query {label} on {njobs:,} jobs", f"{elapsed * 1000:,.1f} ms",
                     f"{cpu * 1000:,.1f} ms", f"{len(found):,} ads; target < 50 ms"))
    opened.close()
    return rows


def storage_rows(base: str, records: int) -> list[tuple]:
    """Append, rebuild, history(match) and projector catch-up (``records`` > 0: all of them;
    0: only those the full run does not already print)."""
    rows = []
    if records:
        for durability, batch, total in (("fsync", 1, 2000), ("group", 1000, 100_000),
                                         ("normal", 1000, 100_000)):
            runs = [bench_sequential(os.path.join(base, f"st{durability}{i}"), durability,
                                     batch, total) for i in range(3)]
            rows.append((f"append 1 thread x {batch} records/append, {durability} (best of 3)",
                         f"{max(r[0] for r in runs):,.0f} rec/s",
                         f"{max(r[2] for r in runs):,.0f} rec/s", ""))
        rate, cpu = bench_concurrent(base, "group", 16, 400)
        rows.append(("append 16 threads x 1 record/append, group", f"{rate:,.0f} rec/s",
                     f"{cpu:,.0f} rec/s", ""))
        local, total, jobs = build_journal(base, records, leave=True)
        store = Store(local)
        runs = [timed(store.rebuild_queue) for _ in range(3)]
        rows.append((f"cold rebuild of the queue from {total:,} records (best of 3)",
                     f"{min(r[0] for r in runs):.2f} s", f"{min(r[2] for r in runs):.2f} s",
                     f"{total / min(r[0] for r in runs):,.0f} rec/s"))
        rows += history_rows(store)
        store.close()
    return rows + projector_rows(base)


def append_path_rows(base: str, records: int = 100_000) -> list[tuple]:
    """The journal insert of the hot append path: sqlite3's executemany beside
    sqlite-utils' insert_all, the same rows into the same schema, one transaction each."""
    import sqlite_utils
    rows = make_rows(cycles(1, 1000, records), 1, float(T0), 0)
    columns = Row._fields
    out = []
    for label in ("sqlite3 executemany", "sqlite-utils insert_all"):
        local = os.path.join(base, f"path-{label.split()[0]}")
        Store(local).close()
        conn = sqlite3.connect(os.path.join(local, DB_NAME), isolation_level=None)
        conn.execute("PRAGMA synchronous=FULL")
        db = sqlite_utils.Database(conn, execute_plugins=False)

        def insert():
            conn.execute("BEGIN IMMEDIATE")
            if label.startswith("sqlite3"):
                conn.executemany("INSERT INTO journal VALUES (?,?,?,?,?,?,?,?,?)", rows)
            else:
                db["journal"].insert_all((dict(zip(columns, r)) for r in rows),
                                         batch_size=1000)
            conn.execute("COMMIT")
        elapsed, _, cpu = timed(insert)
        conn.close()
        out.append((f"journal insert of {records:,} rows, {label}", f"{records / elapsed:,.0f} rec/s",
                    f"{records / cpu:,.0f} rec/s", "the append path uses the faster"))
    return out


def history_rows(store) -> list[tuple]:
    rows = []
    left = len(store.history(projection=["ClusterId"]))
    for label, kwargs in (("history(match=10)", {"match": 10}),
                          ('history(Owner == "user7", match=10)',
                           {"constraint": 'Owner == "user7"', "match": 10}),
                          ("history(match=1000)", {"match": 1000})):
        elapsed, found, cpu = timed(lambda: store.history(**kwargs), repeat=5)
        rows.append((f"{label} of {left:,} left jobs", f"{elapsed * 1000:,.1f} ms",
                     f"{cpu * 1000:,.1f} ms", f"{len(found):,} ads"))
    return rows


def projector_rows(base: str, clusters: int = 100, procs: int = 100) -> list[tuple]:
    """User logs of ``clusters x procs`` queued jobs: the first catch-up, then one event at a time."""
    from jobledger.daemons.projector import Projector
    local, logs = os.path.join(base, "proj"), os.path.join(base, "proj-logs")
    os.makedirs(logs, exist_ok=True)
    store = Store(local, durability="normal")
    for c in range(1, clusters + 1):
        records = cluster_records(c, procs, f"user{c % 10}")
        records[0] = ClusterAd(c, {**records[0].ad,
                                   "UserLog": quote_string(os.path.join(logs, f"{c}.log"))})
        store.append(records)
    for c in range(1, clusters + 1):
        store.append(life_records(c, procs))     # 3 jobs in 4 stay queued
    projector = Projector(store, fsync=False)
    total = store.head()
    elapsed, _, cpu = timed(projector.catch_up)
    rows = [(f"projector catch-up: {total:,} records to {clusters} user logs",
             f"{total / elapsed:,.0f} rec/s", f"{total / cpu:,.0f} rec/s",
             f"{clusters * procs:,} jobs")]
    n, t = 300, T0 + 10_000
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        store.append([ev(1 + i % clusters, 1, 6, t + i)])
        projector.catch_up()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    rows.append((f"append 1 event + projector catch-up, {store.job_count():,} queued jobs "
                 "with user logs", f"{elapsed / n * 1000:,.2f} ms", f"{cpu / n * 1000:,.2f} ms",
                 f"{n / elapsed:,.0f} events/s"))
    projector.close()
    store.close()
    return rows


def print_table(rows: list[tuple]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"| {'case':<{width}} | wall clock | CPU time of this process | note |")
    print(f"|{'-' * (width + 2)}|---|---|---|")
    for case, result, cpu, note in rows:
        print(f"| {case:<{width}} | {result} | {cpu} | {note} |")


if __name__ == "__main__":
    main()
