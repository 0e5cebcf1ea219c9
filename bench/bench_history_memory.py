"""The schedd's journal side over many finished jobs: does its memory follow the history?

``python -m bench.bench_history_memory [N] [--before DIR]``: a child process
runs what the schedd runs for every job's records -- ``Store.append`` (the
journal and the queue/history tables, with the writer's in-memory fold) and
the ``Projector`` (user logs, with each job's log target) -- over N jobs that
all end and leave the queue (100 per cluster, one user log per cluster,
the lifecycles of ``tests/tracking/workload.py``), appended in groups as a
busy schedd commits them.  It reports its RSS and, with tracemalloc on, the
Python heap after each fifth of the jobs, and the biggest growth by source
line from the first fifth to the end.  With ``--before DIR`` the same child
runs a second time with another checkout's ``daemons``/``eventcore`` first on
its path.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import gc, sys, tempfile, tracemalloc
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from jobledger.daemons.projector import Projector
from jobledger.daemons.storage.store import Store
from tests.tracking.workload import Workload, journal_records, workload

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

n, tmp = int(sys.argv[3]), Path(sys.argv[4])
load = workload(n * 13 // 10, seed=1, per_cluster=100)
ended = set([j for j, f in load.finals.items() if f.status in (3, 4)][:n])
load = Workload([s for s in load.steps if s.job in ended], {j: load.finals[j] for j in ended}, 100)
groups = journal_records(load, tmp / "logs")
(tmp / "logs").mkdir()
del load
store = Store(tmp / "pool", durability="normal")
projector = Projector(store, fsync=False)
tracemalloc.start()
left, marks, out, first = 0, [n * k // 5 for k in range(1, 6)], [], None
for i in range(0, len(groups), 200):
    chunk = [r for g in groups[i:i + 200] for r in g]
    store.append(chunk)
    projector.catch_up()
    left += sum(1 for r in chunk if r.type == "leave")
    while marks and left >= marks[0]:
        marks.pop(0)
        gc.collect()
        out.append((left, rss(), tracemalloc.get_traced_memory()[0]))
        if first is None:
            first = tracemalloc.take_snapshot()
top = tracemalloc.take_snapshot().compare_to(first, "lineno")[:6]
print(" ".join(f"{a},{b},{c}" for a, b, c in out))
for stat in top:
    frame = stat.traceback[0]
    print(f"{Path(frame.filename).name}:{frame.lineno} {stat.size_diff} {stat.count_diff}")
projector.close()
store.close()
"""


def run(n: int, root: Path, label: str) -> list[str]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-history-memory-"))
    try:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(root), str(ROOT), str(n), str(tmp)],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    points = [tuple(int(x) for x in p.split(",")) for p in out[0].split()]
    (j1, r1, h1), (jn, rn, hn) = points[0], points[-1]
    rows = [f"| {label} | " + " / ".join(f"{r / 2**20:.1f}" for _, r, _ in points) + " | "
            + " / ".join(f"{h / 2**20:.1f}" for _, _, h in points)
            + f" | {(rn - r1) / (jn - j1):,.0f} B | {(hn - h1) / (jn - j1):,.0f} B |"]
    rows += [f"|   growth at {line} |" for line in out[1:]]
    return rows


def main(argv: list[str] | None = None) -> None:
    argv = list(argv or [])
    roots = [("this tree", ROOT)]
    if "--before" in argv:
        i = argv.index("--before")
        roots.insert(0, (f"before ({argv[i + 1]})", Path(argv[i + 1]).resolve()))
        del argv[i:i + 2]
    n = int(argv[0]) if argv else 60_000
    print(f"| {n:,} finished jobs, after each fifth | RSS MB | Python heap MB (tracemalloc) "
          "| RSS growth per job after the first fifth | heap growth per job |")
    print("|---|---|---|---:|---:|")
    for label, root in roots:
        for row in run(n, root, label):
            print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
