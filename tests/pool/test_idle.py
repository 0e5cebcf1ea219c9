"""An idle pool is quiet, each of its threads by name, and still answers at once.

The schedd's poke thread once called its own ``poke_negotiator`` override,
which set the very event the loop had just cleared: the thread spun, an idle
pool burnt most of a core, and jobs waited for the negotiator's timer. Both
symptoms are checked here on a pool whose NEGOTIATOR_INTERVAL is 300 s, so
only the poke path can start a job within the test's bound.  Every thread of
every daemon carries a name the kernel shows (``daemons.threadnames``), so
the guard samples each thread's CPU time and names the one that spins.  The
precise idle figure is measured in bench/RESULTS.md; this is a gross guard.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.daemons.client.personal import PersonalPool
from jobledger.classad import ClassAd
from tests.pool.conftest import (pool_processes, python_processes, stat_ticks, stop_and_check, thread_ticks,
                                 unnamed_threads, wait_until)

NEGOTIATOR_INTERVAL = 300
START_BOUND = 60.0    # generous, and still far below the negotiator's timer
IDLE_WINDOW = 2.0     # seconds of CPU time sampled
IDLE_LIMIT = 0.10     # share of one core, the whole pool
THREAD_LIMIT = 0.02   # share of one core, any one thread (idle ones use <1%; a spinning one
                      # gets 2 cores / load, 10% at a load of 18)


@pytest.fixture(scope="module")
def slow_pool(tmp_path_factory):
    local_dir = tmp_path_factory.mktemp("idle")
    running = PersonalPool(local_dir=local_dir, config={"NEGOTIATOR_INTERVAL": str(NEGOTIATOR_INTERVAL)})
    running.start()
    yield running
    stop_and_check(running)


def cpu_ticks(pids: list[int]) -> int:
    """utime + stime of ``pids`` (clock ticks, their dead threads' included); a process
    gone meanwhile counts as 0."""
    total = 0
    for pid in pids:
        try:
            total += stat_ticks(Path(f"/proc/{pid}/stat").read_bytes())
        except OSError:
            continue
    return total


def wait_idle(pool) -> None:
    """Every daemon up, the negotiator's first cycle done, the queue empty, no starter left."""
    def idle():
        names = {Path(f"/proc/{pid}/comm").read_text().strip() for pid in python_processes(pool.local_dir)
                 if os.path.exists(f"/proc/{pid}/comm")}
        return ({"master", "collector", "negotiator", "schedd", "startd", "launcher"} <= names
                and "starter" not in names and negotiator_cycles(pool) >= 1
                and not pool.schedd.query(projection=["ClusterId"]))
    wait_until(idle, 60, interval=0.2, what="the pool to be idle")


def negotiator_cycles(pool) -> int:
    return ipc.call(ipc.sinful(str(pool.local_dir / "run" / "negotiator.sock")), "cycles")


def busy_threads(pids: list[int]) -> dict[str, float]:
    """Threads of ``pids`` over THREAD_LIMIT in one IDLE_WINDOW: name -> share of a core."""
    before, start = thread_ticks(pids), time.monotonic()
    time.sleep(IDLE_WINDOW)  # a CPU measurement needs a window, not a condition
    after, elapsed = thread_ticks(pids), time.monotonic() - start
    hertz = os.sysconf("SC_CLK_TCK")
    shares = {name: (ticks - before.get(key, (name, 0))[1]) / hertz / elapsed
              for key, (name, ticks) in after.items()}
    return {name: share for name, share in shares.items() if share > THREAD_LIMIT}


def test_no_thread_of_an_idle_pool_spins(slow_pool):
    wait_idle(slow_pool)
    pids = pool_processes(slow_pool.local_dir)
    assert len(pids) >= 5  # master, collector, negotiator, schedd, startd
    before, start = cpu_ticks(pids), time.monotonic()
    busy = busy_threads(pids)
    share = (cpu_ticks(pids) - before) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - start)
    if busy:   # a burst of periodic work is over by the next window; a spin is not
        again = busy_threads(pids)
        busy = {name: f"{busy[name]:.0%}, then {again[name]:.0%}" for name in busy if name in again}
    assert not busy, f"threads of an idle pool spin (share of a core in two {IDLE_WINDOW}s windows): {busy}"
    assert share < IDLE_LIMIT, f"an idle pool used {share:.0%} of a core over {IDLE_WINDOW}s"


def test_every_thread_of_the_idle_pool_has_a_name(slow_pool):
    wait_idle(slow_pool)
    names = [name for name, _ in thread_ticks(python_processes(slow_pool.local_dir)).values()]
    assert any(name.endswith("/poke-negotiator") for name in names)
    assert any(name.endswith("/projector") for name in names)
    assert not unnamed_threads(names), names


def test_a_job_starts_through_the_poke_not_the_timer(slow_pool, tmp_path):
    # The negotiator's start-up cycle is done; the next timed one is 300 s away.
    wait_until(lambda: negotiator_cycles(slow_pool) >= 1, 30, what="the negotiator's first cycle")
    cycles = negotiator_cycles(slow_pool)
    log = tmp_path / "job.log"
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
    cluster = slow_pool.schedd.submit(job, 1)
    wait_until(lambda: log.exists() and "\n001 (" in log.read_text(), START_BOUND,
               what=f"job {cluster}.0 to start (its execute event)")
    assert negotiator_cycles(slow_pool) > cycles


def test_every_thread_of_a_running_dag_has_a_name(slow_pool, tmp_path):
    """DAGMan (a scheduler-universe job, its starter the schedd's) and a node job's
    starter (the startd's): each process and thread is named while the node runs."""
    go = tmp_path / "go"
    waiter = tmp_path / "wait.sh"
    waiter.write_text(f"#!/bin/sh\nwhile [ ! -e {go} ]; do sleep 0.1; done\n")
    waiter.chmod(0o755)
    (tmp_path / "wait.sub").write_text("executable = wait.sh\nqueue\n")
    (tmp_path / "d.dag").write_text("JOB A wait.sub\n")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        cluster = slow_pool.schedd.submit(htcondor.Submit.from_dag("d.dag", {})).cluster()
    finally:
        os.chdir(old)

    def named_processes():
        pids = python_processes(slow_pool.local_dir)
        names = [name for name, _ in thread_ticks(pids).values()]
        processes = {name.split("[", 1)[0] for name in names}
        return names if {"dagman", "starter"} <= processes and \
            sum(name.endswith("]/starter") for name in names) >= 2 else None
    names = wait_until(named_processes, START_BOUND, interval=0.2,
                       what="DAGMan and its node job's starter to run")
    assert not unnamed_threads(names), names
    go.touch()
    wait_until(lambda: not slow_pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"]), START_BOUND,
               what=f"DAGMan job {cluster} to finish")


def test_a_finished_job_hands_its_claim_to_the_next_without_a_cycle(slow_pool, tmp_path):
    # Claim reuse: the schedd answers a starter's outcome only once the next idle job
    # of the same kind holds that claim, so the startd never sees the slot free and
    # nobody asks for a negotiation per job: a few cycles for the whole cluster.
    jobs = 12
    wait_until(lambda: negotiator_cycles(slow_pool) >= 1, 30, what="the negotiator's first cycle")
    cycles = negotiator_cycles(slow_pool)
    log = tmp_path / "jobs.log"
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path), "UserLog": str(log)})
    slow_pool.schedd.submit(job, jobs)
    wait_until(lambda: log.exists() and log.read_text().count("\n005 (") >= jobs, START_BOUND,
               what=f"{jobs} jobs to terminate")
    # one cycle for the submit, one per slot freed at the end (they may fold together), and
    # the accountant may ask one more while a fresh match still counts as pending: far
    # fewer than one per job, which is what claim reuse is for
    assert negotiator_cycles(slow_pool) - cycles < jobs // 2


def test_a_reused_claims_next_job_runs_under_the_same_starter(slow_pool, tmp_path):
    # A starter that finished a job offers to run its claim's next one, which the
    # schedd's answer carries: no starter is forked per job.  Each job still has a
    # scratch directory of its own, gone once its outcome is recorded.
    jobs = 6
    log = tmp_path / "jobs.log"
    script = tmp_path / "who.sh"
    script.write_text('#!/bin/sh\necho "$PPID $_CONDOR_SCRATCH_DIR"\n')
    script.chmod(0o755)
    slow_pool.schedd.submit(htcondor.Submit({"executable": str(script), "output": "out.$(Process)",
                                             "log": str(log), "initialdir": str(tmp_path)}), count=jobs)
    wait_until(lambda: log.exists() and log.read_text().count("\n005 (") >= jobs, START_BOUND,
               what=f"{jobs} jobs to terminate")
    ran = [(tmp_path / f"out.{proc}").read_text().split() for proc in range(jobs)]
    starters, scratches = {pid for pid, _ in ran}, {scratch for _, scratch in ran}
    assert len(starters) < jobs and len(scratches) == jobs, ran
    wait_until(lambda: not any(os.path.exists(scratch) for scratch in scratches), START_BOUND,
               what="the jobs' scratch directories to be removed")
