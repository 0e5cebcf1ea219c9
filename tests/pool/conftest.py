"""Pools for tests: real daemons in a temporary LOCAL_DIR, and proof none outlives its test."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from daemons.personal import PersonalPool


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
