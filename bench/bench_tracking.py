"""Job trackers: throughput at 10,000 and 100,000 jobs, cost per new event, latency.

Rows:

- ``read N jobs (user logs)``: a fresh ``UserLogTracker`` reads logs holding N
  jobs' lifecycles (100 jobs per log) to the end: events/s.  Peer: the
  tutorial's way, ``htcondor2.JobEventLog(...).events(0)`` over the same logs
  feeding the same fold (ours/theirs = their time / our time: > 1 is faster).
- ``new events with N jobs tracked``: after the full read, 2,000 events land
  in 20 logs; the time the watching tracker spends on them (notifications
  on: only changed logs are read).  Same at 10,000 and 100,000 jobs = the
  cost follows the events, not the jobs.
- ``idle step``: a step when nothing new was written, watching (only changed
  logs are looked at) vs polling (every log's size is checked).
- ``read N jobs (journal)``: ``JournalTracker`` over a pool journal.
- ``tracker RSS``: a child process reads the N jobs' logs with a
  ``UserLogTracker``, a quarter of the logs at a time, and reports its
  resident memory after each quarter and after 20 more steps with nothing
  new, and the growth per job once the step's working set is reached.
- latency rows: a writer appends one event at a time (a new job's submit)
  to a user log, or commits one journal append; the time from the write
  returning to the tracker's callback; p50 / p99 over 400 writes.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jobledger.daemons.storage.store import Store  # noqa: E402
from jobledger.eventcore.ids import JobId  # noqa: E402
from jobledger.eventcore.projections.jobstate import fold  # noqa: E402
from tests.tracking.workload import (T0, Step, Workload, event_text,  # noqa: E402
                                     journal_records, workload, write_userlogs)
from jobledger.tracking.journal import JournalTracker  # noqa: E402
from jobledger.tracking.userlogs import UserLogTracker  # noqa: E402

PER_LOG = 100
_ROUNDS = itertools.count()


def drain(tracker) -> None:
    while tracker.step():
        pass
    while tracker.step():
        pass


def timed(fn, repeat=1):
    best = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        dt = time.perf_counter() - t
        best = dt if best is None or dt < best else best
    return best, result


def read_userlogs(n: int, tmp: Path) -> list[tuple]:
    load = workload(n, seed=1, per_cluster=PER_LOG)
    paths = write_userlogs(load, tmp / f"logs{n}")
    events = len(load.steps)

    def ours():
        tracker = UserLogTracker(paths, batch=50_000)
        drain(tracker)
        tracker.stop()
        return len(tracker.states)

    def theirs():
        import htcondor2
        evs = []
        for p in paths:
            log = htcondor2.JobEventLog(str(p))
            evs.extend(log.events(0))
            log.close()
        return len(fold(evs).states)

    t_ours, jobs = timed(ours)
    assert jobs == n, (jobs, n)
    t_theirs, jobs2 = timed(theirs)
    assert jobs2 == n
    rows = [(f"read {n:,} jobs (user logs, {events:,} events)", events / t_ours, "events/s",
             t_theirs / t_ours)]
    rows.append(incremental(n, paths, load))
    rows.append(tracker_rss(n, paths))
    rows += idle_steps(n, paths)
    return rows


_RSS_CHILD = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
from jobledger.tracking.userlogs import UserLogTracker

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

def scratch():
    # bytes of the tracker's temporary files (SQLite names them etilqs_*; deleted, still open)
    total = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "etilqs_" in os.readlink(f"/proc/self/fd/{fd}"):
                total += os.fstat(int(fd)).st_size
        except OSError:
            pass
    return total

paths = [line for line in sys.stdin.read().split("\n") if line]
quarter = len(paths) // 4
base = rss()
tracker = UserLogTracker(paths[:quarter], batch=20_000)
seen = []
for k in range(1, 5):
    if k > 1:
        tracker.add_logs(paths[(k - 1) * quarter:k * quarter if k < 4 else len(paths)])
    while tracker.step():
        pass
    while tracker.step():
        pass
    seen += [rss(), len(tracker.states.live())]
for _ in range(20):
    tracker.step()
done = sum(1 for s in tracker.states.values() if s.done)
import time
print(base, *seen, rss(), len(tracker.states), done, scratch(), round(time.process_time() * 1000))
tracker.stop()
"""


def tracker_rss(n: int, paths, root: Path = ROOT, label: str = "") -> tuple:
    """Resident memory of a process whose tracker reads the n jobs' logs a quarter at
    a time (the default batch, 20,000 events a step): after imports, after each
    quarter, after 20 idle steps.  Growth per job = from the first quarter to
    the end, per job added (the step's working set is reached by then)."""
    import subprocess
    out = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(root)], input="\n".join(map(str, paths)),
                         capture_output=True, text=True, check=True).stdout.split()
    base, q1, l1, q2, l2, q3, l3, q4, l4, later, jobs, done, disk, cpu = (int(x) for x in out)
    assert jobs == n, (jobs, n)
    per_job = (q4 - q1) / (n - n // 4)
    return (f"tracker RSS{label}, {n:,} jobs read ({done:,} finished; MB after each quarter "
            f"{q1 / 2**20:.1f} / {q2 / 2**20:.1f} / {q3 / 2**20:.1f} / {q4 / 2**20:.1f}, after 20 idle "
            f"steps {later / 2**20:.1f}; {per_job:,.0f} B per job after the first quarter; jobs not "
            f"finished {l1:,} / {l2:,} / {l3:,} / {l4:,}; scratch file {disk / 2**20:.1f} MB; "
            f"CPU {cpu / 1000:.1f} s)",
            q4 / 2**20, "MB", None)


def finished_logs(n: int, directory: Path) -> list[Path]:
    """Logs of n jobs that all end (completed or removed): what a tracker holds
    once a long run's jobs are history."""
    load = workload(n * 13 // 10, seed=1, per_cluster=PER_LOG)
    ended = [j for j, f in load.finals.items() if f.status in (3, 4)][:n]
    assert len(ended) == n, len(ended)
    keep = set(ended)
    done = Workload([s for s in load.steps if s.job in keep], {j: load.finals[j] for j in ended},
                    PER_LOG)
    return write_userlogs(done, directory)


def rss_main(argv: list[str]) -> None:
    """``python -m bench.bench_tracking rss [N] [--before DIR]``: the tracker RSS rows
    only, of this tree and (with ``--before``) of another checkout's tracking code,
    on the mixed workload and on one whose jobs all end."""
    roots = [("", ROOT)]
    if "--before" in argv:
        i = argv.index("--before")
        roots.insert(0, (" (before)", Path(argv[i + 1]).resolve()))
        argv = argv[:i] + argv[i + 2:]
    n = int(argv[0]) if argv else 100_000
    tmp = Path(tempfile.mkdtemp(prefix="bench-tracking-rss-"))
    try:
        mixed = write_userlogs(workload(n, seed=1, per_cluster=PER_LOG), tmp / "mixed")
        ended = finished_logs(n, tmp / "ended")
        for kind, paths in (("mixed", mixed), ("all finished", ended)):
            for label, root in roots:
                name, value, unit, _ = tracker_rss(n, paths, root, f"{label}, {kind}")
                print(f"| {name} | {value:,.1f} {unit} |", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def idle_steps(n: int, paths) -> list[tuple]:
    """A step when nothing was written: watching vs checking every log's size."""
    rows = []
    for watching in (True, False):
        tracker = UserLogTracker(paths, batch=50_000, sweep=3600)
        if watching:
            tracker.watch()
        drain(tracker)
        t = time.perf_counter()
        for _ in range(20):
            tracker.step()
        dt = (time.perf_counter() - t) / 20
        tracker.stop()
        how = "notifications" if watching else "polling sizes"
        rows.append((f"idle step, {n:,} jobs in {len(paths):,} logs ({how})", 1 / dt, "steps/s",
                     None))
    return rows


def incremental(n: int, paths, load, rounds: int = 5) -> tuple:
    """2,000 new events in 20 logs, with n jobs already tracked and watched (median of rounds)."""
    tracker = UserLogTracker(paths, batch=50_000).watch()
    drain(tracker)
    rng = random.Random()
    rates = []
    for _ in range(rounds):
        chosen = rng.sample(paths, 20)
        base = 10_000_000 + 100 * next(_ROUNDS)        # new jobs each round
        data = {path: b"".join(event_text(Step(T0 + k, JobId(base + i, k), 0, {})).encode()
                               for k in range(100))
                for i, path in enumerate(chosen)}
        for path, chunk in data.items():
            with open(path, "ab") as f:
                f.write(chunk)
        time.sleep(0.3)                   # let the notifications arrive
        t = time.perf_counter()
        got = 0
        while got < 2000:
            got += len(tracker.step())
            if time.perf_counter() - t > 60:
                raise RuntimeError(f"only {got} of 2000 new jobs seen in 60 s")
        rates.append(2000 / (time.perf_counter() - t))
    tracker.stop()
    return (f"2,000 new events with {n:,} jobs tracked (median of {rounds})",
            statistics.median(rates), "events/s", None)


def read_journal(n: int, tmp: Path) -> list[tuple]:
    load = workload(n, seed=1, per_cluster=PER_LOG)
    store = Store(tmp / f"pool{n}", durability="normal")
    groups = journal_records(load)
    for i in range(0, len(groups), 500):
        store.append([r for g in groups[i:i + 500] for r in g])
    store.close()
    records = sum(len(g) for g in groups)

    def ours():
        tracker = JournalTracker(tmp / f"pool{n}" / "journal.sqlite", batch=20_000)
        drain(tracker)
        tracker.stop()
        return len(tracker.states)

    t_ours, jobs = timed(ours)
    assert jobs == n
    return [(f"read {n:,} jobs (journal, {records:,} records)", records / t_ours, "records/s", None),
            journal_tracker_rss(n, tmp / f"pool{n}" / "journal.sqlite")]


_JOURNAL_RSS_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from jobledger.tracking.journal import JournalTracker

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

base = rss()
tracker = JournalTracker(sys.argv[2], batch=20_000, notify=False)
while tracker.step():
    pass
after = rss()
done = sum(1 for s in tracker.states.values() if s.done)
print(base, after, len(tracker.states), done)
tracker.stop()
"""


def journal_tracker_rss(n: int, journal: Path, root: Path = ROOT) -> tuple:
    """Resident memory of a process whose ``JournalTracker`` has read the n jobs' journal."""
    import subprocess
    out = subprocess.run([sys.executable, "-c", _JOURNAL_RSS_CHILD, str(root), str(journal)],
                         capture_output=True, text=True, check=True).stdout.split()
    base, after, jobs, done = (int(x) for x in out)
    assert jobs == n, (jobs, n)
    return (f"journal tracker RSS, {n:,} jobs read ({done:,} finished; {(after - base) / n:,.0f} B "
            "per job over imports)", after / 2**20, "MB", None)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def userlog_latency(tmp: Path, writes: int = 400) -> tuple:
    load = workload(10_000, seed=1, per_cluster=PER_LOG)
    paths = write_userlogs(load, tmp / "lat-logs")
    tracker = UserLogTracker(paths, interval=1.0, batch=50_000)
    drain(tracker)
    written: dict[JobId, float] = {}
    seen: dict[JobId, float] = {}
    done = threading.Event()

    def callback(change):
        if change.job.cluster == 20_000_000:
            seen[change.job] = time.perf_counter()
            if len(seen) >= writes:
                done.set()

    tracker.add_callback(callback)
    tracker.start()
    rng = random.Random(5)
    try:
        for k in range(writes):
            job = JobId(20_000_000, k)
            data = event_text(Step(T0 + k, job, 0, {})).encode()
            path = rng.choice(paths)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.write(fd, data)
            written[job] = time.perf_counter()
            os.close(fd)
            time.sleep(0.005)
        done.wait(30)
    finally:
        tracker.stop()
    ms = [max(seen[j] - t, 0) * 1000 for j, t in written.items() if j in seen]
    assert len(ms) == writes, f"{writes - len(ms)} writes never reached a callback"
    return ("user-log write -> callback (10,000 jobs tracked)",
            f"p50 {statistics.median(ms):.1f} ms, p99 {percentile(ms, 99):.1f} ms (target < 100)")


def journal_latency(tmp: Path, writes: int = 400, durability: str = "fsync") -> tuple:
    load = workload(10_000, seed=1, per_cluster=PER_LOG)
    pool = tmp / f"lat-pool-{durability}"
    store = Store(pool, durability=durability)
    groups = journal_records(load)
    for i in range(0, len(groups), 500):
        store.append([r for g in groups[i:i + 500] for r in g])
    tracker = JournalTracker(pool / "journal.sqlite", interval=1.0, batch=50_000)
    drain(tracker)
    committed: dict[JobId, float] = {}
    seen: dict[JobId, float] = {}
    done = threading.Event()

    def callback(change):
        if change.job.cluster >= 30_000_000:
            seen[change.job] = time.perf_counter()
            if len(seen) >= writes:
                done.set()

    tracker.add_callback(callback)
    tracker.start()
    extra = journal_records(workload(writes, seed=9, per_cluster=writes, first_cluster=30_000_000))
    submits = [g for g in extra if any(type(r).__name__ == "ProcAd" for r in g)][:writes]
    try:
        for group in submits:
            job = next(r.job for r in group if type(r).__name__ == "ProcAd")
            store.append(group)
            committed[job] = time.perf_counter()
            time.sleep(0.005)
        done.wait(30)
    finally:
        tracker.stop()
        store.close()
    # a callback can even come before append() returns (the commit is visible first): 0 ms
    ms = [max(seen[j] - t, 0) * 1000 for j, t in committed.items() if j in seen]
    assert len(ms) == writes, f"{writes - len(ms)} commits never reached a callback"
    return (f"journal commit ({durability}) -> callback (10,000 jobs tracked)",
            f"p50 {statistics.median(ms):.1f} ms, p99 {percentile(ms, 99):.1f} ms (target < 50)")


def main(sizes=(10_000, 100_000)) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-tracking-"))
    try:
        print(f"| {'case':<58} | {'rate':>12} | {'unit':<9} | ours/theirs |")
        print(f"|{'-' * 60}|{'-' * 14}|{'-' * 11}|-------------|")
        for n in sizes:
            rows = read_userlogs(n, tmp) + read_journal(n, tmp)
            for name, rate, unit, ratio in rows:
                r = f"{ratio:.2f}" if ratio else "-"
                print(f"| {name:<58} | {rate:>12,.0f} | {unit:<9} | {r:>11} |", flush=True)
        for name, value in (userlog_latency(tmp), journal_latency(tmp)):
            print(f"| {name:<58} | {value} |", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["rss"]:
        rss_main(sys.argv[2:])
    else:
        main()
