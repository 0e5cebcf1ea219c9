"""An idle pool is quiet and still answers at once (guards of the poke-loop regression).

The schedd's poke thread once called its own ``poke_negotiator`` override,
which set the very event the loop had just cleared: the thread spun, an idle
pool burnt most of a core, and jobs waited for the negotiator's timer. Both
symptoms are checked here on a pool whose NEGOTIATOR_INTERVAL is 300 s, so
only the poke path can start a job within the test's bound. The precise idle
figure is measured in bench/RESULTS.md; this is a gross guard.
"""

from __future__ import annotations

import os
import time

import pytest

from daemons import ipc
from daemons.personal import PersonalPool
from jobledger.classad import ClassAd
from tests.pool.conftest import pool_processes, stop_and_check, wait_until

NEGOTIATOR_INTERVAL = 300
START_BOUND = 60.0    # generous, and still far below the negotiator's timer
IDLE_WINDOW = 2.0     # seconds of CPU time sampled
IDLE_LIMIT = 0.10     # share of one core


@pytest.fixture(scope="module")
def slow_pool(tmp_path_factory):
    local_dir = tmp_path_factory.mktemp("idle")
    running = PersonalPool(local_dir=local_dir, config={"NEGOTIATOR_INTERVAL": str(NEGOTIATOR_INTERVAL)})
    running.start()
    yield running
    stop_and_check(running)


def cpu_ticks(pids: list[int]) -> int:
    """utime + stime of ``pids`` (clock ticks); a process gone meanwhile counts as 0."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def negotiator_cycles(pool) -> int:
    return ipc.call(ipc.sinful(str(pool.local_dir / "run" / "negotiator.sock")), "cycles")


def test_an_idle_pool_uses_under_a_tenth_of_a_core(slow_pool):
    pids = pool_processes(slow_pool.local_dir)
    assert len(pids) >= 5  # master, collector, negotiator, schedd, startd
    before, start = cpu_ticks(pids), time.monotonic()
    time.sleep(IDLE_WINDOW)  # a CPU measurement needs a window, not a condition
    used = (cpu_ticks(pids) - before) / os.sysconf("SC_CLK_TCK")
    share = used / (time.monotonic() - start)
    assert share < IDLE_LIMIT, f"an idle pool used {share:.0%} of a core over {IDLE_WINDOW}s"


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
