"""A Startd object over a fresh pool's configuration, not started: for tests that call its
commands directly (claim moves, continuations), and a slot record for its claims table."""

from __future__ import annotations

import pytest

from jobledger.daemons.client.personal import PersonalPool
from jobledger.daemons.startd import Startd


@pytest.fixture
def startd(tmp_path):
    pool = PersonalPool(local_dir=tmp_path / "pool").initialize()
    with pool.use_config():
        daemon = Startd(str(pool.config_file))
    yield daemon
    for handler in list(daemon.log.handlers):
        handler.close()


def slot(pid: int, **more) -> dict:
    """A claimed slot running job 1.0 for alice under starter ``pid``."""
    return {"name": "slot1_1@here", "resources": {"Cpus": 1, "Memory": 0, "Disk": 0}, "job": "1.0",
            "owner": "alice", "pid": pid, "start": 1, "since": 0, **more}
