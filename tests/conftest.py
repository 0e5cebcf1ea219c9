"""Shared test set-up: the time zone, the oracle corpora in ../shared, no leaked threads.

Tests run in UTC unless ``JOBLEDGER_TEST_TZ`` names another zone (``make
test-zones`` runs the user-log, journal and pool suites under zones with DST
that way).  A test whose answers were recorded in UTC (the htcondor2 oracle
corpora) asks for the ``utc`` fixture, which pins UTC for its duration.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No hypothesis test is timed: an example's wall time says nothing but the machine's load
# (a 200 ms deadline failed a codec round trip at load 20).  Tests that set their own
# settings keep these unless they name them.
settings.register_profile("jobledger", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("jobledger")

TEST_TZ = os.environ.get("JOBLEDGER_TEST_TZ") or "UTC"
os.environ["TZ"] = TEST_TZ
time.tzset()

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
ORACLE = SHARED / "oracle"


@pytest.fixture(scope="session")
def oracle_dir() -> Path:
    """``../shared/oracle`` beside the project root (as in CI)."""
    if not ORACLE.is_dir():
        pytest.fail(f"the oracle corpora are missing: {ORACLE} (../shared must sit beside the project)")
    return ORACLE


@contextmanager
def local_time_zone(zone: str):
    """This process (and the processes it starts) in time zone ``zone`` for a while."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield zone
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
def utc():
    """UTC for this test, whatever JOBLEDGER_TEST_TZ says (oracle answers were recorded in UTC)."""
    with local_time_zone("UTC"):
        yield


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """A test that leaves a thread running fails (threads never hide errors)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 2.0
    while True:
        leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()
                  and not t.name.startswith(("pytest_timeout", "execnet"))]
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert not leaked, f"threads left running: {[t.name for t in leaked]}"
