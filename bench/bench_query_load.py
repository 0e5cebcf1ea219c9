"""Queries under load, and the schedd's memory: a real personal pool (2 slots).

- flow: JOBS short /bin/true jobs (clusters of 100, each with a user log)
  flow through 2 slots; a feeder keeps about BACKLOG of them queued while 4
  client processes query in a loop, each in turn: one cluster
  (``ClusterId == c``), the first 100 jobs (``limit=100``), a scan (a
  constraint the ClassAd engine evaluates on every queued ad) and the
  running jobs (``JobStatus == 2``).  Rows: p50/p99 per kind, jobs/s,
  nothing lost (every job's terminate event is in its user log), the
  schedd's RSS at the start, at a quarter of the jobs and at the end (it
  must not grow with the jobs already in history);
- scaling: query latency of the four kinds (p50 / p99 of 20, of 5 for the
  scan), the schedd's CPU per query and its RSS with 10,000 and 100,000
  jobs queued (held, so none runs), or the sizes of ``--sizes=N,N,...``.

``python -m bench query_load`` (20,000 jobs), or ``python -m
bench.bench_query_load [JOBS] [--flow-only | --scaling-only] [--sizes=N,...]``.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from bench.bench_jobcost import TICK, _stat
from bench.bench_submit import _schedd_pid as schedd_pid
from jobledger.personal import PersonalPool

CLUSTER = 100
BACKLOG = 1000
CLIENTS = 4
COLUMNS = ["ClusterId", "ProcId", "JobStatus"]
SCAN = "JobPrio > 1000"       # no job has it: every queued ad is decoded and evaluated


def _row(name: str, value: str, target: str = "") -> None:
    print(f"| {name:<62} | {value:>26} | {target:<12} |", flush=True)


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _queries(clusters: list[int]):
    """The four kinds of query, as (kind, constraint, limit)."""
    return [("by cluster", lambda: f"ClusterId == {random.choice(clusters)}", -1),
            ("limit 100", lambda: None, 100),
            ("scan", lambda: SCAN, -1),
            ("running", lambda: "JobStatus == 2", -1)]


def _client(pool, clusters, stop, out) -> None:
    """One client: the four kinds in turn until ``stop``; its latencies by kind to ``out``."""
    schedd, times = pool.schedd, {}
    kinds = _queries(list(clusters))
    while not stop.is_set():
        for kind, constraint, limit in kinds:
            began = time.perf_counter()
            schedd.query(constraint(), COLUMNS, limit=limit)
            times.setdefault(kind, []).append(time.perf_counter() - began)
    out.put(times)


def _percentiles(values: list[float]) -> str:
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return f"{statistics.median(values) * 1000:.0f} / {p99 * 1000:.0f} ms (n={len(values)})"


def _terminated(logs: Path) -> int:
    return sum(path.read_bytes().count(b"\n005 (") for path in logs.glob("*.log"))


def bench_flow(where: Path, jobs: int) -> None:
    logs = where / "logs"
    logs.mkdir()
    with PersonalPool(local_dir=where / "flow", config={"NUM_CPUS": "2"}) as pool:
        schedd, pid = pool.schedd, schedd_pid(where / "flow")
        rss = {"start": rss_mb(pid)}
        clusters: list[int] = []

        def submit_one() -> None:
            n = len(clusters)
            sub = htcondor.Submit({"executable": "/bin/true", "log": str(logs / f"c{n}.log")})
            clusters.append(schedd.submit(sub, count=CLUSTER).cluster())

        for _ in range(BACKLOG // CLUSTER):
            submit_one()
        ctx = multiprocessing.get_context("fork")
        stop, out = ctx.Event(), ctx.Queue()
        # the clients query the first clusters (queued at first, then in history)
        # and any cluster id up to the last one the feeder will submit
        ids = list(range(clusters[0], clusters[0] + jobs // CLUSTER))
        clients = [ctx.Process(target=_client, args=(pool, ids, stop, out)) for _ in range(CLIENTS)]
        began = time.perf_counter()
        for c in clients:
            c.start()
        total = jobs // CLUSTER
        while len(clusters) < total or schedd.query(None, ["ProcId"], limit=1):
            if len(clusters) < total and len(schedd.query(None, ["ProcId"], limit=BACKLOG)) < BACKLOG:
                submit_one()
                if len(clusters) == max(total // 4, BACKLOG // CLUSTER + 1):
                    rss["a quarter"] = rss_mb(pid)
            else:
                time.sleep(0.05)
        elapsed = time.perf_counter() - began
        stop.set()
        merged: dict[str, list[float]] = {}
        for _ in clients:
            for kind, values in out.get().items():
                merged.setdefault(kind, []).extend(values)
        for c in clients:
            c.join()
        rss["end"] = rss_mb(pid)
        _row(f"flow: {jobs:,} /bin/true jobs on 2 slots, {CLIENTS} clients querying",
             f"{jobs / elapsed:,.1f} jobs/s")
        for kind, values in merged.items():
            _row(f"  query {kind}, p50 / p99", _percentiles(values), "p99 < 100 ms")
        pool.schedd.query(None, ["ProcId"], limit=1)   # answers once the user logs caught up
        _row("  terminate events in the user logs", f"{_terminated(logs):,} of {jobs:,}", "all")
        _row("  schedd RSS: start / a quarter / end",
             " / ".join(f"{v:.0f}" for v in rss.values()) + " MB", "no growth")


def _schedd_cpu(pid: int) -> float:
    """CPU seconds (user + system) the schedd has used so far."""
    return _stat(pid)[1] / TICK


def _settle(pid: int, budget: float = 300.0) -> None:
    """Wait until the schedd is idle (under 20 ms of CPU in a second: the submits'
    aftermath done), so that its CPU per query is the queries'."""
    deadline = time.monotonic() + budget
    before = _schedd_cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = _schedd_cpu(pid)
        if now - before < 0.02:
            return
        before = now


def bench_scaling(where: Path, sizes=(10_000, 100_000)) -> None:
    config = {"MAX_JOBS_PER_SUBMISSION": str(max(sizes) + CLUSTER), "NUM_CPUS": "2"}
    with PersonalPool(local_dir=where / "scale", config=config) as pool:
        schedd, pid = pool.schedd, schedd_pid(where / "scale")
        held = htcondor.Submit({"executable": "/bin/true", "hold": "true"})
        queued, clusters = 0, []
        for size in sizes:
            while queued < size:
                n = min(CLUSTER * 100, size - queued)
                clusters.append(schedd.submit(held, count=n).cluster())
                queued += n
            # one cluster of CLUSTER jobs to query by id (the bulk ones hold 10,000 each)
            clusters.append(schedd.submit(held, count=CLUSTER).cluster())
            queued += CLUSTER
            _settle(pid)
            for kind, constraint, limit in _queries(clusters[-1:]):
                times, cpu = [], _schedd_cpu(pid)
                for _ in range(5 if kind == "scan" else 20):
                    began = time.perf_counter()
                    schedd.query(constraint(), COLUMNS, limit=limit)
                    times.append(time.perf_counter() - began)
                cpu = (_schedd_cpu(pid) - cpu) / len(times)
                _row(f"  {size:,} queued: query {kind}, p50 / p99; schedd CPU per query",
                     f"{_percentiles(times)}; {cpu * 1000:,.0f} ms")
            _row(f"  {size:,} queued: schedd RSS; load average",
                 f"{rss_mb(pid):.0f} MB; {os.getloadavg()[0]:.0f}")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    jobs = int(args[0]) if args and args[0].isdigit() else 20_000
    print(f"| {'measure':<62} | {'ours':>26} | {'target':<12} |")
    print(f"|{'-' * 64}|{'-' * 28}|{'-' * 14}|")
    with tempfile.TemporaryDirectory(prefix="bench-qload-") as where:
        if "--scaling-only" not in args:
            bench_flow(Path(where), jobs)
        if "--flow-only" not in args:
            sizes = next((a.split("=", 1)[1] for a in args if a.startswith("--sizes=")), None)
            bench_scaling(Path(where), *([[int(n) for n in sizes.split(",")]] if sizes else []))


if __name__ == "__main__":
    main()
