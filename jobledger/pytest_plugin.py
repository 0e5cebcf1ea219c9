"""pytest plugin: a real, isolated HTCondor-compatible pool for the tests of any project.

Installed with jobledger (entry point ``pytest11``), so a project's tests ask for these
fixtures without a conftest line:

``personal_pool``
    one pool per test session (master, collector, negotiator, schedd, startd) in a temporary
    LOCAL_DIR, started in a few seconds and stopped, every process gone, at the end.  While it
    runs, ``CONDOR_CONFIG`` names its configuration and the ``condor_*`` commands are on
    ``PATH``, so the bindings (``htcondor2``/``htcondor`` through jobledger's alias folders, or
    ``jobledger`` itself) and programs that shell out reach it and nothing else.
``schedd``, ``collector``
    the pool's Schedd and Collector clients.
``submit_and_wait``
    ``submit_and_wait(description, count=1, timeout=120)`` submits (a dict, submit text or a
    Submit) and returns the history ads of the cluster's jobs once every one has left the queue.

Extra configuration for the pool: ``jobledger_pool_config`` in the ini file, one
``NAME = value`` per line.  Importing this module costs nothing until a fixture is used.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import time

import pytest


def pytest_addoption(parser):
    parser.addini("jobledger_pool_config", type="linelist", default=[],
                  help="NAME = value lines added to the configuration of jobledger's personal_pool")


def pool_config(lines) -> dict:
    """The ``jobledger_pool_config`` lines as a dict; ``pytest.UsageError`` naming a bad line."""
    config = {}
    for line in lines:
        name, sep, value = line.partition("=")
        if not sep or not name.strip() or not name.strip().replace("_", "").replace(".", "").isalnum():
            raise pytest.UsageError(f"jobledger_pool_config: expected 'NAME = value', got {line!r}")
        config[name.strip()] = value.strip()
    return config


@pytest.fixture(scope="session")
def personal_pool(tmp_path_factory, request):
    """A started personal pool of this session (see the module docstring)."""
    from jobledger.daemons.client.personal import PersonalPool
    config = pool_config(request.config.getini("jobledger_pool_config"))
    saved_path = os.environ.get("PATH")
    scripts = sysconfig.get_path("scripts")
    here = os.path.dirname(sys.executable)
    os.environ["PATH"] = os.pathsep.join(
        [p for p in (here, scripts) if p] + ([saved_path] if saved_path else []))
    pool = PersonalPool(local_dir=tmp_path_factory.mktemp("jobledger-pool"), config=config)
    try:
        with pool:
            yield pool
    finally:
        if saved_path is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = saved_path


@pytest.fixture
def schedd(personal_pool):
    return personal_pool.schedd


@pytest.fixture
def collector(personal_pool):
    return personal_pool.collector


@pytest.fixture
def submit_and_wait(personal_pool):
    """Submit, then wait (bounded) until every job of the cluster has left the queue."""
    from jobledger.daemons.client.submit import Submit

    def submit_and_wait(description, count: int = 1, timeout: float = 120.0, itemdata=None) -> list:
        schedd = personal_pool.schedd
        sub = description if isinstance(description, Submit) else Submit(description)
        cluster = schedd.submit(sub, count=count, itemdata=itemdata).cluster()
        deadline = time.monotonic() + timeout
        pause = 0.02
        while True:
            left = schedd.query(f"ClusterId == {cluster}", ["ProcId", "JobStatus", "HoldReason"])
            if not left:
                return sorted(schedd.history(f"ClusterId == {cluster}", []), key=lambda ad: ad["ProcId"])
            if time.monotonic() > deadline:
                states = ", ".join(f"{ad['ProcId']}: status {ad.get('JobStatus')}"
                                   + (f" ({ad['HoldReason']})" if ad.get("HoldReason") else "") for ad in left)
                pytest.fail(f"cluster {cluster} still in the queue after {timeout}s: {states}")
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    return submit_and_wait
