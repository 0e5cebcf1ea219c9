"""Runs' claims being started (daemons/schedd_runs.py): one per job, always given back."""

from __future__ import annotations

import logging
import threading

import pytest

from daemons.schedd_runs import Runs
from eventcore.ids import JobId

JOB = JobId(7, 0)


def runs() -> Runs:
    return Runs(store=None, log=logging.getLogger("test"), startd_call=None)


def test_a_job_has_one_claim_being_started_at_a_time():
    parts = runs()
    barrier = threading.Barrier(8)
    claims = []

    def reserve():
        barrier.wait()
        claims.append(parts.reserve(JOB))
    threads = [threading.Thread(target=reserve) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    granted = [claim for claim in claims if claim is not None]
    assert len(granted) == 1 and parts.busy() == {JOB} and parts.is_starting(granted[0])
    assert parts.reserve(JobId(7, 1)) is not None          # another job is not held up
    parts.started(JOB, granted[0])
    assert JOB not in parts.busy() and not parts.is_starting(granted[0])
    assert parts.reserve(JOB) not in (None, granted[0])     # free again, under a new claim


def test_a_failed_start_gives_its_claim_back():
    parts = runs()
    with pytest.raises(OSError):
        with parts.starting(JOB) as claim:
            assert claim is not None and parts.busy() == {JOB}
            with parts.starting(JOB) as again:
                assert again is None                    # already being started
            raise OSError("the starter could not be spawned")
    assert parts.busy() == frozenset() and not parts.is_starting(claim)
