"""Pools for tests: real daemons in a temporary LOCAL_DIR, and proof none outlives its test."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from jobledger.daemons.client.personal import PersonalPool

UNNAMED = re.compile(r"^(python.*|Thread-\d+.*)$")   # what a thread nobody named is called


def pool_processes(local_dir: Path) -> list[int]:
    """Pids of processes that belong to the pool at ``local_dir`` (daemons, starters, jobs)."""
    marker = str(local_dir).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != b"Z":
            found.append(int(entry))
    return found


def thread_ticks(pids: list[int]) -> dict[tuple[int, int], tuple[str, int]]:
    """(pid, tid) -> ("process/thread" as the kernel names them, utime + stime) of every
    live thread of ``pids``."""
    out = {}
    for pid in pids:
        try:
            process = Path(f"/proc/{pid}/comm").read_text().strip()
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_bytes()
            except OSError:
                continue
            name = stat[stat.index(b"(") + 1:stat.rindex(b")")].decode(errors="replace")
            out[(pid, int(tid))] = (f"{process}[{pid}]/{name}", stat_ticks(stat))
    return out


def stat_ticks(stat: bytes) -> int:
    """utime + stime (clock ticks) of a /proc stat line."""
    fields = stat.rsplit(b")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def python_processes(local_dir: Path) -> list[int]:
    """The pool's processes that run our code (daemons, launcher, starters, DAGMan), not jobs."""
    ours = os.path.realpath(sys.executable)
    found = []
    for pid in pool_processes(local_dir):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") == ours:
                found.append(pid)
        except OSError:
            continue
    return found


def unnamed_threads(names: list[str]) -> list[str]:
    """Of ``thread_ticks`` names, those of threads nobody named (the interpreter's defaults)."""
    return [name for name in names if UNNAMED.match(name.rsplit("/", 1)[1])]


def wait_until(condition, timeout: float = 30.0, interval: float = 0.05, what: str = "condition"):
    """Poll ``condition`` until it returns something true; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def stop_and_check(pool: PersonalPool) -> None:
    pool.stop()
    pool._config_setter.unset()
    wait_until(lambda: not pool_processes(pool.local_dir), 15, what="the pool's processes to exit")


def running_pool(tmp_path_factory, **config):
    """A started pool in a new directory; the caller's fixture yields from this."""
    running = PersonalPool(local_dir=tmp_path_factory.mktemp("pool"), config=config)
    running.start()
    yield running
    stop_and_check(running)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """One running pool per test module, stopped (every process gone) afterwards."""
    yield from running_pool(tmp_path_factory, PERIODIC_EXPR_INTERVAL="1")


@pytest.fixture
def fresh_pool(tmp_path):
    """A pool of the test's own (for crash tests)."""
    running = PersonalPool(local_dir=tmp_path / "pool")
    running.start()
    yield running
    if running.state.name == "READY":
        stop_and_check(running)
