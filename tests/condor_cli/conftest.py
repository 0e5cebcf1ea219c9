"""Fixtures for the condor_* command tests: a pool per module, and running a command in-process."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout

import attrs
import pytest

from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import stop_and_check, wait_until  # noqa: F401  (re-exported)


@pytest.fixture(scope="package")
def pool(tmp_path_factory):
    """One running pool for all the condor_* command tests (per test worker)."""
    running = PersonalPool(local_dir=tmp_path_factory.mktemp("pool"), config={"PERIODIC_EXPR_INTERVAL": "1"})
    running.start()
    yield running
    stop_and_check(running)


@attrs.frozen
class Ran:
    status: int
    out: str
    err: str


def run(main, *argv: str, stdin: str = "") -> Ran:
    """Run a condor_* console-script ``main`` in this process; its exit status and output."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exited:
            main(list(argv))
    finally:
        sys.stdin = old_stdin
    return Ran(exited.value.code, out.getvalue(), err.getvalue())
