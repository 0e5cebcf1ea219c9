"""The per-job cost of a pool beside Dask, one run: 2,000 /bin/true jobs on 2 slots.

- Dask: a LocalCluster of 2 single-threaded worker processes runs
  ``subprocess.run(["/bin/true"])`` 2,000 times (``client.submit`` each,
  then ``gather``); run once before and once after the pool, the mean of
  the two rates is the peer's figure;
- the pool: a personal pool with NUM_CPUS = 2 (2 slots) takes one cluster of
  2,000 /bin/true jobs with a user log; timed from the submit call until the
  user log holds every job's terminated event.  The log is then checked:
  every job has its submit, execute and terminated events in that order.

Rows: jobs/s of each, ours/theirs, and the CPU milliseconds per job each
pool process spent during the run, read from /proc/PID/stat before and
after (user + system).  "starters + jobs" is the launcher's children: the
reaped ones (cutime + cstime) and the live ones (their own and reaped CPU):
the forked starters and the jobs they waited for.  The client is this
process (submit, reading the log).

``python -m bench.bench_jobcost 1000 10000 50000``: the pool alone (no Dask)
at each size, one cluster each in a fresh pool, with the load average at the
start and end of each (issue 17: how the end-to-end rate grows).

``python -m bench.bench_jobcost --dask [--slots=2,4] 1000 10000``: the run
beside Dask at each size, and the pool once per slot count at each (``NUM_CPUS``
beyond the 2 cores, HTCondor's way to give a machine more slots than cores
where jobs mostly wait); Dask keeps 2 single-threaded workers (the 2 cores).

``python -m bench.bench_jobcost --timeline [--slots=2] 1000``: where a run's
time goes that does not grow with its jobs: the moments of one run from the
submit call (the client's clock) and the journal's append times of its events
(the schedd's: the same machine's clock), the steady rate between the tenth and
the ninetieth end, and the client's CPU (the reader's first creation, reading).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from bench.bench_pool import _row, _tree_cpu
from jobledger.daemons.storage.reader import Reader
from jobledger.eventcore.events import EventType
from jobledger.personal import PersonalPool

JOBS = 2000
SLOTS = 2
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, int, int, str]:
    """(ppid, own ticks, reaped children's ticks, name) of a live process."""
    with open(f"/proc/{pid}/stat") as handle:
        head, _, rest = handle.read().rpartition(")")
    fields = rest.split()
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]), head


def pool_processes(local_dir: Path) -> dict[int, str]:
    """pid -> role of the live processes of the pool at ``local_dir`` (daemons, launcher)."""
    marker, found = str(local_dir).encode(), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if marker not in handle.read():
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if b"-m" in argv and argv.index(b"-m") + 1 < len(argv):
            module = argv[argv.index(b"-m") + 1].decode()
            if module.startswith("jobledger.daemons."):
                found[int(entry)] = module[len("jobledger.daemons."):]
    parents = {}
    for pid in found:
        try:
            parents[pid] = _stat(pid)[0]
        except OSError:
            continue
    roles = {pid: found[pid] for pid, parent in parents.items() if found.get(parent) != found[pid]}
    for pid, parent in parents.items():   # the launcher: the startd's fork (starters: its forks)
        if roles.get(parent) == "startd" and found[pid] == "startd":
            roles[pid] = "launcher"
    return roles


def cpu_by_role(roles: dict[int, str]) -> dict[str, float]:
    """CPU seconds so far of each role (the launcher's reaped children as "starters + jobs")."""
    out: dict[str, float] = {}
    for pid, role in roles.items():
        try:
            _, own, reaped, _ = _stat(pid)
        except OSError:
            continue
        out[role] = out.get(role, 0.0) + own / TICK
        if role == "launcher":
            out["starters + jobs"] = out.get("starters + jobs", 0.0) + (reaped + _live_children(pid)) / TICK
    return out


def _live_children(pid: int) -> int:
    """Ticks so far of ``pid``'s live children (a starter runs its claim's successive
    jobs: its own CPU and its reaped jobs' reach the launcher only when it exits)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            children = [int(child) for child in handle.read().split()]
    except OSError:
        return 0
    ticks = 0
    for child in children:
        try:
            _, own, reaped, _ = _stat(child)
        except OSError:
            continue        # exited meanwhile: its ticks are in the launcher's reaped ones
        ticks += own + reaped
    return ticks


def run_dask(client, jobs: int = JOBS) -> tuple[float, float]:
    """(tasks/s, CPU seconds of this process tree) for ``jobs`` /bin/true subprocesses."""
    client.gather([client.submit(subprocess.run, ["/bin/true"], pure=False) for _ in range(20)])
    began, cpu = time.perf_counter(), _tree_cpu()
    futures = [client.submit(subprocess.run, ["/bin/true"], pure=False) for _ in range(jobs)]
    client.gather(futures)
    return jobs / (time.perf_counter() - began), _tree_cpu() - cpu


def dask_round(jobs: int = JOBS) -> tuple[float, float]:
    import dask
    from distributed import Client, LocalCluster
    # Under a loaded machine Dask's default connect timeouts (30 s) end the run midway.
    with dask.config.set({"distributed.comm.timeouts.connect": "120s",
                          "distributed.comm.timeouts.tcp": "300s"}), \
            LocalCluster(n_workers=SLOTS, threads_per_worker=1, dashboard_address=None,
                         processes=True, host="127.0.0.1") as cluster, Client(cluster) as client:
        return run_dask(client, jobs)


def check_log(path: Path, cluster: int) -> tuple[int, dict]:
    """(jobs of ``cluster`` with exactly submit, execute, terminated in the log in that
    order, {proc: event types} of the others)."""
    seen: dict[int, list[int]] = {}
    for ev in htcondor.JobEventLog(str(path)).events(0):
        if ev.cluster == cluster:
            seen.setdefault(ev.proc, []).append(int(ev.type))
    wanted = [int(htcondor.JobEventType.SUBMIT), int(htcondor.JobEventType.EXECUTE),
              int(htcondor.JobEventType.JOB_TERMINATED)]
    others = {proc: types for proc, types in seen.items() if types != wanted}
    return len(seen) - len(others), others


def run_pool(where: Path, jobs: int = JOBS, slots: int = SLOTS,
             marks: dict | None = None) -> tuple[float, dict[str, float], float]:
    """(jobs/s, CPU seconds by role, this process's CPU seconds) for ``jobs`` jobs on ``slots``
    slots; ``marks`` (a dict) gets the client's moments (``time.time()``) and the cluster."""
    marks = {} if marks is None else marks
    log = where / "jobs.log"
    config = {"NUM_CPUS": str(slots), "MAX_JOBS_PER_SUBMISSION": str(max(jobs, 20_000))}
    with PersonalPool(local_dir=where / "pool", config=config) as pool:
        schedd = pool.schedd
        warm = schedd.submit(htcondor.Submit({"executable": "/bin/true"}), count=10).cluster()
        while schedd.query(f"ClusterId == {warm}", ["ProcId"], limit=1):
            time.sleep(0.05)
        roles = pool_processes(pool.local_dir)
        before, mine = cpu_by_role(roles), time.process_time()
        began, marks["submit call"] = time.perf_counter(), time.time()
        job = htcondor.Submit({"executable": "/bin/true", "log": str(log), "initialdir": str(where)})
        cluster = marks["cluster"] = schedd.submit(job, count=jobs).cluster()
        marks["submit returned"], made = time.time(), time.process_time()
        done, events = 0, htcondor.JobEventLog(str(log))
        marks["reader made, CPU"] = time.process_time() - made
        budget = 900 + jobs * 0.2         # 5 jobs/s at the least, on a loaded machine
        deadline = time.monotonic() + budget
        while done < jobs:
            # (stopped at the last terminated event: the reader would wait out its second)
            for ev in events.events(stop_after=1):
                if ev.type == htcondor.JobEventType.JOB_TERMINATED:
                    done += 1
                    if done == 1:
                        marks["reader: first terminated"] = time.time()
                    if done == jobs:
                        marks["reader: last terminated"] = time.time()
                        break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{done} of {jobs} jobs terminated after {budget:.0f} s")
        rate = jobs / (time.perf_counter() - began)
        after, mine = cpu_by_role(roles), time.process_time() - mine
        clean, others = check_log(log, cluster)
        if clean + len(others) != jobs or any(t[-1] != int(htcondor.JobEventType.JOB_TERMINATED)
                                              for t in others.values()):
            raise AssertionError(f"user log: {clean} clean jobs; others {others}")
        if others:
            print(f"jobs with more events than submit, execute, terminated: {len(others)}, e.g. "
                  f"{dict(list(others.items())[:3])}")
    return rate, {role: after[role] - before.get(role, 0.0) for role in after}, mine


def timeline(jobs: int, slots: int) -> None:
    """One run's moments, in ms from the submit call (see the module docstring)."""
    load = _load()
    marks: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-jobcost-") as where:
        rate, cpu, client = run_pool(Path(where), jobs, slots, marks)
        with Reader(Path(where) / "pool" / "journal.sqlite") as reader:
            times = reader.event_times([EventType.SUBMIT, EventType.EXECUTE, EventType.JOB_TERMINATED],
                                       marks["cluster"])
    kinds = {number: sorted(at for _, _, n, at in times if n == number)
             for number in (EventType.SUBMIT, EventType.EXECUTE, EventType.JOB_TERMINATED)}
    ends, starts = kinds[EventType.JOB_TERMINATED], kinds[EventType.EXECUTE]
    moments = {"submit committed (journal)": kinds[EventType.SUBMIT][0], "first EXECUTE": starts[0],
               "second EXECUTE": starts[1] if len(starts) > 1 else starts[0], "first end": ends[0],
               "last end": ends[-1], **{k: v for k, v in marks.items() if isinstance(v, float) and "CPU" not in k}}
    zero = marks["submit call"]
    print(f"{jobs:,} jobs, {slots} slots, load {load} at start, {_load()} at end")
    for name, at in sorted(moments.items(), key=lambda item: item[1]):
        print(f"  {1000 * (at - zero):9.1f} ms  {name}")
    tenth, ninetieth = ends[len(ends) // 10], ends[9 * len(ends) // 10]
    steady = (9 * len(ends) // 10 - len(ends) // 10) / (ninetieth - tenth) if ninetieth > tenth else rate
    print(f"  steady rate (10th to 90th end) {steady:.1f} jobs/s; whole run {rate:.1f} jobs/s: "
          f"{1000 * (jobs / rate - jobs / steady):.0f} ms more than {jobs:,} jobs at the steady rate")
    print(f"  client CPU {1000 * client:.1f} ms (the reader's creation {1000 * marks['reader made, CPU']:.1f}); "
          f"schedd {1000 * cpu.get('schedd', 0.0):.0f} ms, starters + jobs {1000 * cpu.get('starters + jobs', 0.0):.0f} ms")


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def scaling(sizes: list[int]) -> None:
    """The pool alone at each size (a fresh pool each): jobs/s and CPU per job."""
    print(f"| {'measure':<58} | {'ours':>20} | {'CPU':>9} | {'target':<12} |")
    print(f"|{'-' * 60}|{'-' * 22}|{'-' * 11}|{'-' * 14}|")
    for jobs in sizes:
        load = _load()
        with tempfile.TemporaryDirectory(prefix="bench-jobcost-") as where:
            began = time.perf_counter()
            rate, cpu, client = run_pool(Path(where), jobs)
            wall = time.perf_counter() - began
        total = sum(cpu.values()) + client
        _row(f"pool, {jobs:,} /bin/true jobs, {SLOTS} slots, user log", rate, "jobs/s", "", total)
        _row(f"  CPU per job, all pool processes + client ({wall:,.0f} s wall)",
             1000 * total / jobs, "ms")
        print(f"load average (1 / 5 / 15 min): {load} at start, {_load()} at end", flush=True)


def beside_dask(sizes: list[int], slot_counts: list[int]) -> None:
    """At each size: Dask, the pool with each slot count, Dask again; the ratios of
    each pool run to the mean of the two Dask runs (one run: the same load)."""
    print(f"| jobs | Dask before / after, tasks/s | pool slots | pool jobs/s | pool / Dask "
          f"| CPU ms/job: pool (schedd / starters + jobs / startd) | Dask CPU ms/task | load start / end |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for jobs in sizes:
        load = f"{os.getloadavg()[0]:.1f}"
        first, first_cpu = dask_round(jobs)
        runs = []
        for slots in slot_counts:
            with tempfile.TemporaryDirectory(prefix="bench-jobcost-") as where:
                rate, cpu, client = run_pool(Path(where), jobs, slots)
            runs.append((slots, rate, cpu, client))
        second, second_cpu = dask_round(jobs)
        dask = (first + second) / 2
        for slots, rate, cpu, client in runs:
            parts = " / ".join(f"{1000 * cpu.get(r, 0.0) / jobs:.1f}"
                               for r in ("schedd", "starters + jobs", "startd"))
            print(f"| {jobs:,} | {first:.1f} / {second:.1f} | {slots} | {rate:.1f} | "
                  f"**{rate / dask:.2f}x** | {1000 * (sum(cpu.values()) + client) / jobs:.1f} ({parts}) | "
                  f"{1000 * (first_cpu + second_cpu) / 2 / jobs:.1f} | {load} / {os.getloadavg()[0]:.1f} |",
                  flush=True)


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.bench_jobcost [--dask | --timeline] [--slots=A,B] [N ...]``: with
    sizes, the pool alone at each (``scaling``), beside Dask with ``--dask`` (``beside_dask``)
    or one run's moments with ``--timeline``; without, the run beside Dask at JOBS jobs."""
    args = sys.argv[1:] if argv is None else argv
    sizes = [int(a) for a in args if a.isdigit()]
    slot_counts = [int(n) for a in args if a.startswith("--slots=") for n in a[8:].split(",")]
    if "--timeline" in args:
        for jobs in sizes or [JOBS]:
            for slots in slot_counts or [SLOTS]:
                timeline(jobs, slots)
        return
    if sizes and "--dask" in args:
        beside_dask(sizes, slot_counts or [SLOTS])
        return
    if sizes:
        scaling(sizes)
        return
    print(f"load average at start: {_load()}")
    print(f"| {'measure':<58} | {'ours':>20} | {'CPU':>9} | {'target':<12} |")
    print(f"|{'-' * 60}|{'-' * 22}|{'-' * 11}|{'-' * 14}|")
    first, first_cpu = dask_round()
    _row(f"Dask LocalCluster ({SLOTS} workers x 1 thread), {JOBS:,} /bin/true, before", first,
         "tasks/s", "", first_cpu)
    with tempfile.TemporaryDirectory(prefix="bench-jobcost-") as where:
        rate, cpu, client = run_pool(Path(where))
    _row(f"pool, {JOBS:,} /bin/true jobs, {SLOTS} slots, user log", rate, "jobs/s", "", sum(cpu.values()) + client)
    second, second_cpu = dask_round()
    _row(f"Dask LocalCluster ({SLOTS} workers x 1 thread), {JOBS:,} /bin/true, after", second,
         "tasks/s", "", second_cpu)
    _row("pool / Dask (mean of the two Dask runs)", rate / ((first + second) / 2), "x", ">= 0.5")
    for role in sorted(cpu, key=lambda r: -cpu[r]):
        _row(f"CPU per job: {role}", 1000 * cpu[role] / JOBS, "ms")
    _row("CPU per job: client (submit, reading the user log)", 1000 * client / JOBS, "ms")
    _row("CPU per job: all pool processes + client", 1000 * (sum(cpu.values()) + client) / JOBS, "ms")
    _row("Dask: CPU per task, whole tree (mean of the two runs)", 1000 * (first_cpu + second_cpu) / 2 / JOBS, "ms")
    print(f"load average at end: {_load()}")


if __name__ == "__main__":
    sys.exit(main())
