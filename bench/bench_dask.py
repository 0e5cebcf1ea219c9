"""The pool executing on Dask workers, beside the local startd and beside raw Dask.

One run, one machine, a LocalCluster of 4 single-thread worker processes:

- the pool with its local startd (NUM_CPUS = 4, 4 slots) -- the baseline;
- the pool with no local startd, its jobs on the 4 Dask workers
  (DASK_SCHEDULER_ADDRESS; sandbox shipped to the worker and back);
- raw Dask: ``client.submit(subprocess.run, ["/bin/true"])`` on the same workers,
  no queue, journal, user log or file transfer.

Rows: submit -> execute latency on an idle pool (median of 10; to the
EXECUTE record in the journal, for raw Dask to the task's start), and
jobs/s for 200 sandboxed /bin/true jobs from submit until all left the
queue (raw Dask: until all 200 futures are done), with the CPU seconds all
processes of this tree used meanwhile (the Dask workers are children too).
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from bench.bench_pool import _execute_time, _row, _tree_cpu, _wait_empty
from jobledger.personal import PersonalPool

JOBS = 200
WORKERS = 4


def _job(where: Path) -> htcondor.Submit:
    return htcondor.Submit({"executable": "/bin/true", "should_transfer_files": "YES",
                            "initialdir": str(where)})


def bench_pool(pool, label: str, where: Path) -> float:
    schedd = pool.schedd
    latencies = []
    for _ in range(10):
        began = time.time()
        cluster = schedd.submit(_job(where), count=1).cluster()
        _wait_empty(schedd, f"ClusterId == {cluster}", 60)
        latencies.append(_execute_time(pool.local_dir, cluster) - began)
    _row(f"submit -> execute, median of 10 ({label})", statistics.median(latencies) * 1000, "ms")
    began, cpu = time.perf_counter(), _tree_cpu()
    cluster = schedd.submit(_job(where), count=JOBS).cluster()
    _wait_empty(schedd, f"ClusterId == {cluster}", 600)
    rate = JOBS / (time.perf_counter() - began)
    _row(f"{JOBS} sandboxed /bin/true jobs ({label})", rate, "jobs/s", "", _tree_cpu() - cpu)
    return rate


def _started() -> float:
    began = time.time()
    subprocess.run(["/bin/true"], check=True)
    return began


def bench_raw(client) -> float:
    latencies = []
    for _ in range(10):
        began = time.time()
        latencies.append(client.submit(_started, pure=False).result() - began)
    _row("submit -> task start, median of 10 (raw Dask)", statistics.median(latencies) * 1000, "ms")
    began, cpu = time.perf_counter(), _tree_cpu()
    futures = [client.submit(subprocess.run, ["/bin/true"], pure=False) for _ in range(JOBS)]
    client.gather(futures)
    rate = JOBS / (time.perf_counter() - began)
    _row(f"{JOBS} /bin/true tasks (raw Dask, no queue or files)", rate, "jobs/s", "", _tree_cpu() - cpu)
    return rate


def main() -> None:
    from distributed import Client, LocalCluster
    print(f"| {'measure':<58} | {'ours':>20} | {'CPU':>9} | {'target':<12} |")
    print(f"|{'-' * 60}|{'-' * 22}|{'-' * 11}|{'-' * 14}|")
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as where, \
            LocalCluster(n_workers=WORKERS, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        where = Path(where)
        with PersonalPool(local_dir=where / "local", config={"NUM_CPUS": str(WORKERS)}) as pool:
            local = bench_pool(pool, f"local startd, {WORKERS} slots", where)
        with PersonalPool(local_dir=where / "dask", config={
                "DASK_SCHEDULER_ADDRESS": cluster.scheduler_address,
                "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"}) as pool:
            dask = bench_pool(pool, f"{WORKERS} Dask workers", where)
        raw = bench_raw(client)
        _row("jobs/s, pool on Dask as a share of pool on local startd", 100 * dask / local, "%")
        _row("jobs/s, pool on Dask as a share of raw Dask", 100 * dask / raw, "%")


if __name__ == "__main__":
    main()
