"""The pool executing on real Dask workers, side by side with raw Dask on the same workers.

``python -m bench dask [JOBS] [WORKERS...]`` (defaults: 300 jobs; 3 and 8 workers).
For each worker count, one run on this machine: a ``dask scheduler`` and that many
``dask worker`` processes (``--nthreads 1``, no nanny) on 127.0.0.1, then

- raw Dask: JOBS ``client.submit(subprocess.run, ["/bin/true"])`` tasks on those
  workers, all submitted at once, until every future is done;
- the pool with no local startd (its only machines are those workers: one slot of
  one core each), JOBS ``/bin/true`` jobs in one cluster with a user log, the
  executable not transferred (the same command as raw Dask's), from submit until
  every JOB_TERMINATED event is in the log;
- raw Dask again: its rate is the mean of the two, so that a load that moved during
  the run weighs on both sides alike.

Rows: jobs/s, CPU seconds every process of the run used (the pool's daemons, the
Dask scheduler and workers: all children of this process), CPU milliseconds per
job, and the ratio ours/theirs.  The load average is printed with each run: the
machine is shared, only the ratio of one run means much.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from bench.bench_pool import _tree_cpu, tree_ticks
from jobledger.personal import PersonalPool
from jobledger.tracking.jobeventlog import JobEventLog

JOBS = 300
WORKER_COUNTS = (3, 8)
DASK = str(Path(sys.executable).parent / "dask")


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {timeout:.0f} s")
        time.sleep(0.05)


def start_cluster(base: Path, workers: int) -> tuple[list, str]:
    """A ``dask scheduler`` and ``workers`` single-thread ``dask worker`` processes."""
    info = base / "scheduler.json"
    log = open(base / "dask.out", "wb")
    processes = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                   "--no-dashboard", "--scheduler-file", str(info)],
                                  cwd=base, stdout=log, stderr=subprocess.STDOUT)]
    _wait(lambda: info.exists() and info.stat().st_size, 60, "the Dask scheduler")
    address = json.loads(info.read_text())["address"]
    for i in range(workers):
        where = base / f"w{i}"
        where.mkdir()
        processes.append(subprocess.Popen(
            [DASK, "worker", address, "--name", f"w{i}", "--nthreads", "1", "--no-nanny",
             "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "1GiB",
             "--local-directory", str(where)], cwd=where, stdout=log, stderr=subprocess.STDOUT))
    return processes, address


def stop_cluster(processes: list) -> None:
    """The workers first, then the scheduler (``processes[0]``): a worker that closes
    while its scheduler is going away waits out its connect timeout (30 s) before it exits."""
    for batch in (processes[1:], processes[:1]):
        for process in batch:
            process.terminate()
        for process in batch:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def raw_dask(client, jobs: int) -> tuple[float, float]:
    """(tasks/s, CPU s) for ``jobs`` /bin/true tasks submitted at once."""
    began, cpu = time.perf_counter(), _tree_cpu()
    futures = [client.submit(subprocess.run, ["/bin/true"], pure=False) for _ in range(jobs)]
    client.gather(futures)
    rate = jobs / (time.perf_counter() - began)
    del futures
    return rate, _tree_cpu() - cpu


def _role(pid: int) -> str:
    """What a process of the run is: its name (the pool's daemons name themselves), or
    for the Dask processes, ``dask worker`` / ``dask scheduler``."""
    with open(f"/proc/{pid}/comm") as f:
        name = f.read().strip()
    if name.startswith(("dask worker", "dask scheduler")):   # (Dask sets its processes' titles)
        return " ".join(name.split()[:2])
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    if any(a.endswith(b"dask") for a in argv[:2]) and len(argv) > 2:
        return "dask " + next((a.decode() for a in argv[1:] if a in (b"worker", b"scheduler")), "?")
    return name


def _roles_cpu() -> dict[int, tuple[str, int]]:
    """pid -> (role, CPU ticks it and the children it reaped used) for this process's descendants."""
    found = {}
    for pid, ticks in tree_ticks().items():
        if pid != os.getpid():
            try:
                found[pid] = (_role(pid), ticks)
            except (FileNotFoundError, ProcessLookupError):
                continue   # ended meanwhile
    return found


def _by_role(before: dict, after: dict, jobs: int) -> str:
    """CPU ms a job by role between two ``_roles_cpu`` (processes that ended meanwhile
    count in their parent's reaped children; each role: its total, and its count)."""
    tick, roles = os.sysconf("SC_CLK_TCK"), {}
    for pid, (role, ticks) in after.items():
        used = ticks - before.get(pid, (role, 0))[1]
        total, count = roles.get(role, (0, 0))
        roles[role] = (total + used, count + 1)
    return ", ".join(f"{role} x{count} {1000 * total / tick / jobs:.2f}"
                     for role, (total, count) in sorted(roles.items(), key=lambda r: -r[1][0]))


def pool_on_dask(pool, where: Path, jobs: int) -> tuple[float, float]:
    """(jobs/s, CPU s) for ``jobs`` /bin/true jobs, until all their ends are in the user log."""
    log = where / f"jobs-{time.monotonic_ns()}.log"
    submit = htcondor.Submit({"executable": "/bin/true", "transfer_executable": "false",
                              "should_transfer_files": "YES", "initialdir": str(where), "log": str(log)})
    began, cpu, roles = time.perf_counter(), _tree_cpu(), _roles_cpu()
    pool.schedd.submit(submit, count=jobs)
    reader, ended = JobEventLog(str(log)), 0
    deadline = time.monotonic() + 60 + jobs
    while ended < jobs:
        for event in reader.events(1):   # (up to 1 s: left as soon as the last job ended)
            if event.type == htcondor.JobEventType.JOB_TERMINATED:
                ended += 1
                if ended == jobs:
                    break
            elif event.type == htcondor.JobEventType.JOB_HELD:
                raise RuntimeError(f"a job was held: {dict(event)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{ended} of {jobs} jobs ended")
    if os.environ.get("BENCH_DASK_ROLES"):
        print(f"CPU ms a job by process: {_by_role(roles, _roles_cpu(), jobs)}", flush=True)
    return jobs / (time.perf_counter() - began), _tree_cpu() - cpu


def _warm(pool, where: Path, workers: int) -> None:
    """One job per worker first: each worker imports jobledger's task code once."""
    pool_on_dask(pool, where, workers)


def run(workers: int, jobs: int) -> dict:
    from distributed import Client
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as base:
        base = Path(base)
        processes, address = start_cluster(base, workers)
        try:
            with Client(address, set_as_default=False) as client:
                client.wait_for_workers(workers, timeout=120)
                client.gather([client.submit(subprocess.run, ["/bin/true"], pure=False)
                               for _ in range(4 * workers)])                      # warm
                load = os.getloadavg()[0]
                raw1 = raw_dask(client, jobs)
                with PersonalPool(local_dir=base / "pool", config={
                        "DASK_SCHEDULER_ADDRESS": address,
                        "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"}) as pool:
                    _wait(lambda: len(pool.collector.query(
                        htcondor.AdTypes.Startd, "PartitionableSlot =?= true", ["Name"])) >= workers,
                          120, "the Dask workers' slots")
                    _warm(pool, base, workers)
                    ours = pool_on_dask(pool, base, jobs)
                raw2 = raw_dask(client, jobs)
                load = (load + os.getloadavg()[0]) / 2
        finally:
            stop_cluster(processes)
    return {"workers": workers, "ours": ours, "raw": ((raw1[0] + raw2[0]) / 2, (raw1[1] + raw2[1]) / 2),
            "load": load}


def _print(result: dict, jobs: int) -> None:
    n, (rate, cpu), (raw_rate, raw_cpu) = result["workers"], result["ours"], result["raw"]
    print(f"| {n} Dask workers, {jobs} /bin/true | {rate:,.1f} jobs/s | {1000 * cpu / jobs:.1f} ms "
          f"| {raw_rate:,.1f} tasks/s | {1000 * raw_cpu / jobs:.1f} ms | **{rate / raw_rate:.2f}x** "
          f"| {result['load']:.1f} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[2:] if argv is None else argv
    numbers = [int(a) for a in argv if a.isdigit()]
    jobs = numbers[0] if numbers else JOBS
    counts = numbers[1:] or list(WORKER_COUNTS)
    print("| run | pool on Dask | CPU per job | raw Dask | CPU per task | ours/theirs | load |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for workers in counts:
        _print(run(workers, jobs), jobs)


if __name__ == "__main__":
    main(sys.argv[1:])
