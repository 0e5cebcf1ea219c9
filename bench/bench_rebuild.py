"""Cold rebuild at scale: the queue projection folded again from the whole journal.

``python -m bench rebuild`` (``BENCH_REBUILD_RECORDS``: comma-separated journal
sizes, default ``1000000,5000000``).  Each size runs in a fresh process: the
journal is generated (clusters of 100 procs, each job through a realistic life,
none leaving the queue: bench_journal's ``build_journal`` in bulk, every
cluster's rows copied from one template cluster's), then

* ``first open``: ``Store(local)`` on a journal with no snapshot, which
  rebuilds the queue (what a pool's first start after an import does);
* ``rebuild_queue()``: the projection dropped and folded again (best of 2).

Only public entry points of the store are used.  Prints wall seconds, CPU
seconds of the process, records/s (by CPU time), the process's peak RSS and
the load average (1 min) before and after: the machine is shared.  There is no
htcondor2 peer (the wheel has no schedd); issue 17 asks how the cost grows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import os, resource, shutil, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from bench.bench_journal import build_journal, timed
from jobledger.daemons.storage.store import Store

records = int(sys.argv[2])
base = tempfile.mkdtemp(prefix="bench-rebuild-", dir=os.environ.get("BENCH_DIR"))
try:
    load = os.getloadavg()[0]
    start, start_cpu = time.perf_counter(), time.process_time()
    local, total, jobs = build_journal(base, records, bulk=True)
    built, built_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    first, store, first_cpu = timed(lambda: Store(local))
    runs = [timed(store.rebuild_queue) for _ in range(2)]
    store.close()
    wall, _, cpu = min(runs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(total, jobs, built, built_cpu, first, first_cpu, wall, cpu, peak, load,
          os.getloadavg()[0])
finally:
    shutil.rmtree(base, ignore_errors=True)
"""


def one_size(records: int) -> list[tuple]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), str(records)],
                         capture_output=True, text=True, check=True).stdout.split()
    total, jobs = int(out[0]), int(out[1])
    built, built_cpu, first, first_cpu, wall, cpu = (float(x) for x in out[2:8])
    peak, load = int(out[8]), f"load {float(out[9]):.0f} -> {float(out[10]):.0f}"
    return [
        (f"journal generated, {total:,} records, {jobs:,} jobs", f"{built:.1f} s",
         f"{built_cpu:.1f} s", load),
        (f"first open (rebuilds), {total:,} records", f"{first:.2f} s",
         f"{first_cpu:.2f} s", f"{total / first_cpu:,.0f} rec/s by CPU"),
        (f"rebuild_queue(), {total:,} records (best of 2)", f"{wall:.2f} s", f"{cpu:.2f} s",
         f"{total / cpu:,.0f} rec/s by CPU; peak RSS {peak / 2**20:,.0f} MB"),
    ]


def main() -> None:
    sizes = [int(s) for s in os.environ.get("BENCH_REBUILD_RECORDS", "1000000,5000000").split(",")]
    print("| case | wall clock | CPU time | note |")
    print("|---|---:|---:|---|")
    for records in sizes:
        for row in one_size(records):
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
