"""Parsing a DAG input file: time and memory against the node count.

Each DAG is layered like a workflow's: LAYER nodes per layer, every node a
JOB line, a VARS line and a RETRY line, and one ``PARENT a CHILD b`` line
joining it to the node under it in the next layer (plus one FINAL node).
So N nodes are about 4N lines.  Every size is parsed in a fresh process
(``eventcore.dagman.parse_dag``, the code DAGMan runs at each start) and the
row shows wall and CPU seconds, nodes per CPU second, and the process's
peak RSS before and after the parse; then the CPU seconds and peak RSS of
building the DAG's run (``DagRun``, DAGMan's state machine).  Time per node should stay flat as N
grows (the parse is linear); the target is 10^5 nodes in < 2 s.

``python -m bench dag_parse [N ...]`` (default 10,000 20,000 40,000 100,000).
"""

from __future__ import annotations

import json
import subprocess
import sys

LAYER = 100
SIZES = (10_000, 20_000, 40_000, 100_000)

_CHILD = r"""
import json, resource, sys, time
from jobledger.eventcore.dagman import parse_dag
from jobledger.eventcore.dagman.run import DagRun
n, layer = int(sys.argv[1]), int(sys.argv[2])
lines = []
for i in range(n):
    lines += [f"JOB n{i} node.sub", f'VARS n{i} index="{i}" name="n{i}"', f"RETRY n{i} 2"]
    if i >= layer:
        lines.append(f"PARENT n{i - layer} CHILD n{i}")
lines.append("FINAL cleanup node.sub")
data = "\n".join(lines).encode()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
wall, cpu = time.perf_counter(), time.process_time()
dag = parse_dag("big.dag", lambda path: data)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert len(dag.nodes) == n + 1
run_cpu = time.process_time()
run = DagRun(dag)
run_cpu = time.process_time() - run_cpu
with_run = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"lines": len(lines), "bytes": len(data), "wall": wall, "cpu": cpu,
                  "rss_before": before // 1024, "rss_after": after // 1024, "run_cpu": run_cpu,
                  "rss_run": with_run // 1024}))
"""


def measure(n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n), str(LAYER)], check=True,
                         capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> None:
    sizes = [int(a) for a in (argv or [])] or list(SIZES)
    print("| nodes | lines | MB of text | wall s | CPU s | nodes/CPU s | peak RSS before -> after MB "
          "| run object CPU s | peak RSS with it MB |")
    print("|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for n in sizes:
        row = measure(n)
        print(f"| {n:,} | {row['lines']:,} | {row['bytes'] / 1e6:.1f} | {row['wall']:.2f} | "
              f"{row['cpu']:.2f} | {n / row['cpu']:,.0f} | {row['rss_before']} -> {row['rss_after']} | "
              f"{row['run_cpu']:.2f} | {row['rss_run']} |",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
