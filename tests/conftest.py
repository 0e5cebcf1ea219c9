"""Shared test set-up: UTC, the oracle corpora in ../shared, no leaked threads."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

os.environ["TZ"] = "UTC"
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
