"""Pool benchmarks: a real personal pool (all daemons) on this machine.

- submit: one cluster of 100,000 procs (held, so none runs), durable (the
  journal's group commit fsyncs before the schedd answers);
- query latency with those 100,000 jobs queued: one job by id, a 10-job
  cluster, the whole 100,000-job cluster (projection of 3 attributes);
- idle CPU: the share of one core all the pool's processes use over 5 s
  with nothing to do;
- submit -> execute latency on an idle pool (from the client's submit call
  to the EXECUTE record in the journal);
- end to end: 2,000 /bin/true jobs, from submit until all left the queue,
  with the machine's own cores as slots and, for comparison, 8 slots
  (NUM_CPUS = 8).

Each timed row also gives the CPU seconds all pool processes (this client,
the daemons, the starters and jobs) used meanwhile, read from /proc: the
cost when the machine is shared, where the wall clock follows the load.

There is no htcondor2 peer: the wheel ships the bindings, not the daemons.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from jobledger.daemons.storage.reader import Reader
from jobledger.eventcore.events import EventType
from jobledger.personal import PersonalPool


def _row(name: str, value: float, unit: str, target: str = "", cpu: float | None = None) -> None:
    spent = f"{cpu:,.2f} s" if cpu is not None else ""
    print(f"| {name:<58} | {value:>12,.1f} {unit:<7} | {spent:>9} | {target:<12} |", flush=True)


def _tree_cpu() -> float:
    """CPU seconds of this process and its descendants (live, plus those they reaped)."""
    return sum(tree_ticks().values()) / os.sysconf("SC_CLK_TCK")


def tree_ticks() -> dict[int, int]:
    """pid -> CPU ticks of this process and of each descendant, each with the children it
    reaped (utime stime cutime cstime); one that ends during the walk is left out."""
    found, todo = {}, [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            found[pid] = sum(int(x) for x in fields[11:15])
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue   # ended meanwhile
    return found


def _wait_empty(schedd, constraint: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while schedd.query(constraint, ["ProcId"], limit=1):
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs matching {constraint} still queued after {timeout}s")
        time.sleep(0.05)


def _execute_time(local_dir: Path, cluster: int) -> float | None:
    """The journal time of the cluster's first EXECUTE event (None: none yet)."""
    with Reader(local_dir / "journal.sqlite") as reader:
        times = reader.event_times([EventType.EXECUTE], cluster)
    return times[0][3] if times else None


def bench_submit_and_query(pool) -> None:
    schedd = pool.schedd
    held = htcondor.Submit({"executable": "/bin/true", "hold": "true"})
    schedd.submit(held, count=1000)  # warm up
    began, cpu = time.perf_counter(), _tree_cpu()
    big = schedd.submit(held, count=100_000)
    elapsed, cpu = time.perf_counter() - began, _tree_cpu() - cpu
    _row("submit one cluster of 100,000 procs (durable)", 100_000 / elapsed, "jobs/s", ">= 20,000",
         cpu)
    small = schedd.submit(held, count=10).cluster()
    cluster = big.cluster()
    for name, constraint in (("query one job by id (100,000 queued)", f"ClusterId == {cluster} && ProcId == 5000"),
                             ("query a 10-job cluster (100,000 queued)", f"ClusterId == {small}")):
        times = []
        for _ in range(20):
            began = time.perf_counter()
            schedd.query(constraint, ["ClusterId", "ProcId", "JobStatus"])
            times.append(time.perf_counter() - began)
        _row(f"{name}, median", statistics.median(times) * 1000, "ms", "< 50 ms")
    began = time.perf_counter()
    ads = schedd.query(f"ClusterId == {cluster}", ["ClusterId", "ProcId", "JobStatus"])
    _row(f"query the whole 100,000-job cluster ({len(ads)} ads)", (time.perf_counter() - began) * 1000, "ms", "")
    began = time.perf_counter()
    schedd.act(htcondor.JobAction.Remove, f"ClusterId >= 1")
    _row("remove all 100,000+ jobs (one act)", (time.perf_counter() - began) * 1000, "ms", "")


def _pool_cpu(local_dir: Path) -> float:
    """CPU seconds so far of the live processes started for the pool at ``local_dir``."""
    marker, total = str(local_dir).encode(), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker not in f.read():
                    continue
            with open(f"/proc/{entry}/stat") as f:
                total += sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
        except OSError:
            continue   # ended meanwhile, or not ours to read
    return total / os.sysconf("SC_CLK_TCK")


def bench_idle(pool, seconds: float = 5.0) -> None:
    time.sleep(1.0)   # let start-up work settle
    began, cpu = time.perf_counter(), _pool_cpu(pool.local_dir)
    time.sleep(seconds)
    cpu = _pool_cpu(pool.local_dir) - cpu
    _row(f"idle pool, share of one core over {seconds:.0f} s", 100 * cpu / (time.perf_counter() - began),
         "%", "~0-2 %", cpu)


def bench_latency(pool) -> None:
    schedd = pool.schedd
    job = htcondor.Submit({"executable": "/bin/true"})
    latencies = []
    for _ in range(20):
        began = time.time()
        cluster = schedd.submit(job, count=1).cluster()
        _wait_empty(schedd, f"ClusterId == {cluster}", 30)
        executed = _execute_time(pool.local_dir, cluster)
        latencies.append(executed - began)
    _row("submit -> execute on an idle pool, median of 20", statistics.median(latencies) * 1000, "ms",
         "< 200 ms")
    _row("submit -> execute on an idle pool, worst of 20", max(latencies) * 1000, "ms", "")


def bench_end_to_end(pool, label: str) -> None:
    schedd = pool.schedd
    began, cpu = time.perf_counter(), _tree_cpu()
    cluster = schedd.submit(htcondor.Submit({"executable": "/bin/true"}), count=2000).cluster()
    _wait_empty(schedd, f"ClusterId == {cluster}", 600)
    elapsed, cpu = time.perf_counter() - began, _tree_cpu() - cpu
    _row(f"end to end, 2,000 /bin/true jobs ({label})", 2000 / elapsed, "jobs/s", ">= 100", cpu)


def main() -> None:
    print(f"| {'measure':<58} | {'ours':>20} | {'CPU':>9} | {'target':<12} |")
    print(f"|{'-' * 60}|{'-' * 22}|{'-' * 11}|{'-' * 14}|")
    with tempfile.TemporaryDirectory(prefix="bench-pool-") as where:
        # one 100,000-proc cluster: above HTCondor's default MAX_JOBS_PER_SUBMISSION
        with PersonalPool(local_dir=Path(where) / "a", config={"MAX_JOBS_PER_SUBMISSION": "200000"}) as pool:
            bench_submit_and_query(pool)
        with PersonalPool(local_dir=Path(where) / "b") as pool:
            bench_idle(pool)
            bench_latency(pool)
            cores = pool.collector.query(htcondor.AdType.Startd, "PartitionableSlot", ["TotalCpus"])
            bench_end_to_end(pool, f"{cores[0]['TotalCpus']} slots = cores")
        with PersonalPool(local_dir=Path(where) / "c", config={"NUM_CPUS": "8"}) as pool:
            bench_end_to_end(pool, "8 slots, NUM_CPUS = 8")


if __name__ == "__main__":
    main()
