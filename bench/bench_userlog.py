"""User-log reading: our JobEventLog against htcondor2.JobEventLog, side by side.

``python -m bench userlog`` (``BENCH_USERLOG_EVENTS`` scales the big log,
default 300,000 events).  Cases:

* read a big mixed log (big_10000.log's events repeated, ids shifted so no
  two events are alike in their header) touching every event's type,
  cluster, proc, timestamp and items;
* the same, bare iteration;
* poll a growing file: a writer appends batches of 50 events, the reader
  drains each with ``events(stop_after=0)``; only the reader's time counts.

Prints events/s for both and ours/theirs.  The file sits in the page cache.
The two reading cases run ours and htcondor2 alternately, RUNS times each:
medians of ev/s and of the per-run ratios.
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from jobledger.tracking.jobeventlog import JobEventLog

ORACLE = Path(__file__).resolve().parent.parent.parent / "shared" / "oracle" / "userlog"
_HEADER = re.compile(rb"^(\d{3}) \((\d+)\.", re.M)
RUNS = 3


def _big_log(path: Path, events: int) -> int:
    """Repeat big_10000.log's events (clusters shifted per copy) up to ``events``."""
    base = (ORACLE / "big_10000.log").read_bytes()
    records = base.split(b"...\n")[:-1]
    written = 0
    with open(path, "wb") as out:
        copy = 0
        while written < events:
            shift = copy * 100_000
            chunk = []
            for rec in records[: events - written]:
                chunk.append(_HEADER.sub(lambda m: b"%s (%d." % (m.group(1), int(m.group(2)) + shift),
                                         rec, count=1) + b"...\n")
            out.write(b"".join(chunk))
            written += len(chunk)
            copy += 1
    return written


def _touch_all(jel) -> int:
    n = 0
    for event in jel:
        event.type, event.cluster, event.proc, event.timestamp
        for _key, _value in event.items():
            pass
        n += 1
    return n


def _bare(jel) -> int:
    n = 0
    for _ in jel:
        n += 1
    return n


def _timed(fn, make):
    start = time.perf_counter()
    n = fn(make())
    return n, time.perf_counter() - start


def _poll_growing(cls, path: Path, records: list[bytes], batch: int = 50) -> tuple[int, float]:
    path.write_bytes(b"")
    jel = cls(str(path))
    spent, n = 0.0, 0
    with open(path, "ab", buffering=0) as out:
        for i in range(0, len(records), batch):
            out.write(b"".join(records[i:i + batch]))
            start = time.perf_counter()
            for event in jel.events(stop_after=0):
                event.type, event.cluster, event.proc
                n += 1
            spent += time.perf_counter() - start
    jel.close()
    return n, spent


def _row(name, ours, theirs):
    (n1, t1), (n2, t2) = ours, theirs
    r1, r2 = n1 / t1, n2 / t2
    print(f"| {name} | {n1:,} | {r1:,.0f} | {r2:,.0f} | {r1 / r2:.2f} |", flush=True)


def _alternating(name, fn, ours, theirs, runs: int = RUNS):
    """``runs`` runs of ours then theirs, alternately (the machine's load hits
    both alike): median ev/s of each, the median of the per-run wall-clock
    ratios and of the per-run CPU-time ratios (this process's own time, which
    the neighbours' load moves less)."""
    a, b, ratios, cpu = [], [], [], []
    for _ in range(runs):
        c0 = time.process_time()
        n, t1 = _timed(fn, ours)
        c1 = time.process_time()
        _, t2 = _timed(fn, theirs)
        c2 = time.process_time()
        a.append(n / t1)
        b.append(n / t2)
        ratios.append(t2 / t1)
        cpu.append((c2 - c1) / (c1 - c0))
    print(f"| {name} | {n:,} | {statistics.median(a):,.0f} | {statistics.median(b):,.0f} "
          f"| {statistics.median(ratios):.2f} (CPU {statistics.median(cpu):.2f}) |  <!-- runs: "
          f"{' '.join(f'{r:.2f}' for r in ratios)}; CPU {' '.join(f'{r:.2f}' for r in cpu)} -->",
          flush=True)


def main() -> None:
    import htcondor2
    events = int(os.environ.get("BENCH_USERLOG_EVENTS", "300000"))
    print("| case | events | ours ev/s | htcondor2 ev/s | ours/theirs |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        big = Path(tmp) / "big.log"
        _big_log(big, events)
        big.read_bytes()                          # into the page cache
        ours, theirs = (lambda: JobEventLog(str(big)).events(0),
                        lambda: htcondor2.JobEventLog(str(big)).events(0))
        _alternating("read + touch type/ids/time/items", _touch_all, ours, theirs)
        _alternating("read, bare iteration", _bare, ours, theirs)
        records = [r + b"...\n" for r in (ORACLE / "big_10000.log").read_bytes().split(b"...\n")[:-1]]
        grow = Path(tmp) / "grow.log"
        _row("poll growing file, events(0) per 50-event batch",
             _poll_growing(JobEventLog, grow, records),
             _poll_growing(htcondor2.JobEventLog, grow, records))


if __name__ == "__main__":
    main()
