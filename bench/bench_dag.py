"""DAGMan benchmark: a fan-out/fan-in DAG of /bin/true beside a plain submit, in one run.

- plain: one cluster of N procs of /bin/true, from submit until all left the queue;
- DAG: N nodes (TOP -> N-2 middle nodes -> BOTTOM), each node its own
  cluster as DAGMan submits it, from ``Schedd.submit(Submit.from_dag(...))``
  until the DAGMan job left the queue (HTCondor's default -maxidle 1000
  throttles the fan-out);
- per-node overhead: (DAG time - plain time) / N;
- parent -> child latency: from the journal append of a parent's
  terminated event to the append of its child's SUBMIT event, over a
  200-node chain (each child has one parent, nothing throttles), p50/p99;
  over 30 fan-ins of 20 parents each (from the LAST parent's terminated
  event), p50/p99; and the fan-in (BOTTOM after the last middle node) of
  the big DAG.

``python -m bench dag [N]`` (default N = 10,000).  The machine is shared:
see bench/RESULTS.md for the load when the rows were taken.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from bench.bench_pool import _wait_empty
from jobledger.daemons.storage.reader import Reader
from jobledger.eventcore.events import EventType
from jobledger.personal import PersonalPool

TRUE_SUB = "executable = /bin/true\nqueue\n"


def _row(name: str, value: str, note: str = "") -> None:
    print(f"| {name:<62} | {value:>16} | {note} |", flush=True)


def _plain(schedd, n: int, work: Path) -> float:
    start = time.monotonic()
    cluster = schedd.submit(htcondor.Submit({"executable": "/bin/true", "initialdir": str(work)}),
                            count=n).cluster()
    _wait_empty(schedd, f"ClusterId == {cluster}", 3600)
    return time.monotonic() - start


def _run_dag(schedd, work: Path, name: str, text: str) -> tuple[int, float]:
    (work / name).write_text(text)
    old = os.getcwd()
    os.chdir(work)
    try:
        start = time.monotonic()
        cluster = schedd.submit(htcondor.Submit.from_dag(name)).cluster()
    finally:
        os.chdir(old)
    _wait_empty(schedd, f"ClusterId == {cluster}", 7200)
    elapsed = time.monotonic() - start
    code = schedd.history(f"ClusterId == {cluster}", ["ExitCode"])[0].get("ExitCode")
    if code != 0:
        raise RuntimeError(f"DAG {name} exited with {code}: see {work / (name + '.dagman.out')}")
    return cluster, elapsed


def _latencies(schedd, local_dir: Path, dagman: int, edges: list[tuple[str, str]]) -> list[float]:
    """Seconds from each parent's terminated append to its child's SUBMIT append (journal times)."""
    node_of = {ad["DAGNodeName"]: ad["ClusterId"]
               for ad in schedd.history(f"DAGManJobId == {dagman}", ["ClusterId", "DAGNodeName"])}
    times = {}
    with Reader(local_dir / "journal.sqlite") as reader:
        for cluster, _, event, at in reader.event_times([EventType.SUBMIT, EventType.JOB_TERMINATED]):
            times.setdefault((cluster, event), at)
    return [times[(node_of[child], 0)] - times[(node_of[parent], 5)] for parent, child in edges]


def _percentiles(lat: list[float]) -> tuple[float, float]:
    lat = sorted(lat)
    return statistics.median(lat) * 1000, lat[max(int(len(lat) * 0.99) - 1, 0)] * 1000


def _fan_ins(schedd, work: Path, groups: int = 30, width: int = 20) -> None:
    """``groups`` independent fan-ins of ``width`` parents: last parent terminated -> child SUBMIT."""
    text, parents = "", {}
    for g in range(groups):
        parents[g] = [f"G{g}P{i}" for i in range(width)]
        text += "".join(f"JOB {p} true.sub\n" for p in parents[g])
        text += f"JOB G{g}C true.sub\nPARENT {' '.join(parents[g])} CHILD G{g}C\n"
    cluster, elapsed = _run_dag(schedd, work, "fanin.dag", text)
    lat = [min(_latencies(schedd, work / "pool", cluster, [(p, f"G{g}C") for p in parents[g]])) for g in range(groups)]
    p50, p99 = _percentiles(lat)
    _row(f"{groups} fan-ins of {width}: last parent terminated -> child SUBMIT, p50", f"{p50:,.1f} ms",
         f"{groups} children, {groups * (width + 1)} nodes in {elapsed:,.1f} s")
    _row(f"{groups} fan-ins of {width}: last parent terminated -> child SUBMIT, p99", f"{p99:,.1f} ms",
         f"max {max(lat) * 1000:,.1f} ms")


def _big(schedd, work: Path, n: int) -> None:
    """The plain N-proc submit, then the N-node fan-out/fan-in DAG, in the same pool."""
    plain = _plain(schedd, n, work)
    _row(f"plain submit: {n:,} procs of /bin/true, submit -> all gone", f"{plain:,.1f} s",
         f"{n / plain:,.1f} jobs/s")
    middle = [f"M{i}" for i in range(n - 2)]
    fan = ("JOB TOP true.sub\nJOB BOTTOM true.sub\n" + "".join(f"JOB {m} true.sub\n" for m in middle)
           + "PARENT TOP CHILD " + " ".join(middle) + "\nPARENT " + " ".join(middle) + " CHILD BOTTOM\n")
    fan_cluster, fan_time = _run_dag(schedd, work, "fan.dag", fan)
    _row(f"DAG fan-out/fan-in: {n:,} nodes of /bin/true, submit -> DAGMan gone", f"{fan_time:,.1f} s",
         f"{n / fan_time:,.1f} nodes/s")
    _row("per-node overhead: (DAG - plain) / N", f"{(fan_time - plain) / n * 1000:,.1f} ms",
         f"DAG/plain = {fan_time / plain:,.2f}")
    fan_in = _latencies(schedd, work / "pool", fan_cluster, [(m, "BOTTOM") for m in middle])
    first_out = _latencies(schedd, work / "pool", fan_cluster, [("TOP", m) for m in middle])
    _row("fan-in: last middle node terminated -> BOTTOM SUBMIT", f"{min(fan_in)*1000:,.1f} ms", "")
    _row("fan-out: TOP terminated -> first middle SUBMIT", f"{min(first_out)*1000:,.1f} ms",
         f"last after {max(first_out):,.1f} s (-maxidle 1000)")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[2:] if argv is None else argv
    n = int(argv[0]) if argv and argv[0].isdigit() else 10_000     # 0: the latencies only
    print(f"load before: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-dag-") as tmp:
        work = Path(tmp)
        (work / "true.sub").write_text(TRUE_SUB)
        with PersonalPool(local_dir=work / "pool") as pool:
            schedd = pool.schedd
            _row("measure", "value", "note")
            print("| --- | --- | --- |")
            chain = [f"C{i}" for i in range(200)]
            chain_dag = "".join(f"JOB {c} true.sub\n" for c in chain) + "".join(
                f"PARENT {a} CHILD {b}\n" for a, b in zip(chain, chain[1:]))
            chain_cluster, chain_time = _run_dag(schedd, work, "chain.dag", chain_dag)
            lat = _latencies(schedd, work / "pool", chain_cluster, list(zip(chain, chain[1:])))
            p50, p99 = _percentiles(lat)
            _row("chain of 200 nodes: parent terminated -> child SUBMIT, p50", f"{p50:,.1f} ms",
                 f"{len(lat)} edges, journal append times")
            _row("chain of 200 nodes: parent terminated -> child SUBMIT, p99", f"{p99:,.1f} ms",
                 f"max {max(lat) * 1000:,.1f} ms")
            _row("chain of 200 nodes: total", f"{chain_time:,.1f} s", f"{chain_time / 200 * 1000:,.0f} ms per node")
            _fan_ins(schedd, work)
            if n > 0:
                _big(schedd, work, n)
    print(f"load after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
