"""``Schedd.watch`` and ``jobledger watch --since`` against real pools: the schedd's
filtered stream of journal events, resumed by position with nothing missed or
repeated -- across a kill -9 of the schedd in the middle of the stream too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.classad import ClassAd
from jobledger.daemons import ipc
from jobledger.daemons.storage.reader import Reader
from jobledger.eventcore.journal import entries_of_rows
from jobledger.tracking.jobeventlog import JobEventLog
from tests.pool.conftest import wait_until

JOBS = 30


def _daemon_pid(pool, name: str) -> int:
    return ipc.call(ipc.sinful(str(pool.local_dir / "run" / "master.sock")), "status")[name]["pid"]


def _journal_events(pool, cluster: int, upto: int) -> list[int]:
    """Positions of the journal's event entries of ``cluster`` up to ``upto``."""
    with Reader(pool.local_dir / "journal.sqlite") as reader:
        return [e.position for e in entries_of_rows(reader.iter_rows())
                if e.type == "event" and e.job.cluster == cluster and e.position <= upto]


def _gated(tmp_path, log: str) -> tuple[ClassAd, Path]:
    """A short job that waits while the gate file exists (keeps jobs running across the kill)."""
    gate = tmp_path / "gate"
    script = tmp_path / "gated.sh"
    script.write_text('#!/bin/sh\nwhile [ -e "$1" ]; do sleep 0.05; done\n')
    script.chmod(0o755)
    return ClassAd({"Cmd": str(script), "Arguments": str(gate), "Iwd": str(tmp_path), "UserLog": log}), gate


def _take(stream, until, seen: list, limit: float = 180.0) -> None:
    deadline = time.monotonic() + limit
    while not until(seen):
        assert time.monotonic() < deadline, f"stream stalled after {len(seen)} events"
        seen.append(next(stream))


def _terminated(events) -> int:
    return sum(1 for e in events if e.type == htcondor.JobEventType.JOB_TERMINATED)


@pytest.mark.slow
def test_watch_resumes_across_a_schedd_kill_with_no_gap_and_no_duplicate(fresh_pool, tmp_path):
    pool = fresh_pool
    log = str(tmp_path / "jobs.log")
    job, gate = _gated(tmp_path, log)
    watched = pool.schedd.submit(job, JOBS)
    other = pool.schedd.submit(job, 5)                  # filtered out by the schedd
    stream = pool.schedd.watch(f"ClusterId == {watched}", since=0)
    seen: list = []
    _take(stream, lambda s: _terminated(s) >= 5, seen)
    gate.touch()                                        # jobs now stay running through the kill
    wait_until(lambda: pool.schedd.query("JobStatus == 2", ["ProcId"]), 60, 0.01, what="a running job")
    before = _daemon_pid(pool, "schedd")
    os.kill(before, signal.SIGKILL)
    wait_until(lambda: _daemon_pid(pool, "schedd") != before, 60, what="the master to restart the schedd")
    gate.unlink()
    _take(stream, lambda s: _terminated(s) >= JOBS, seen)

    positions = [e.position for e in seen]
    assert stream.reconnects >= 1 and stream.repeated == 0
    assert positions == _journal_events(pool, watched, stream.position)      # no gap, no duplicate
    assert {e.cluster for e in seen} == {watched}
    assert sorted(e.proc for e in seen if e.type == htcondor.JobEventType.SUBMIT) == list(range(JOBS))
    # each event is the record the job's user log holds for it; the user log is a
    # projection written after the journal commits, which the stream reads, so it
    # may trail the stream by an event or two: wait for it to hold as many
    def logged() -> list[str]:
        return [e.raw_text for e in JobEventLog(log).events(0) if e.cluster == watched]
    wait_until(lambda: len(logged()) >= len(seen), 60, what="the user log to catch up with the stream")
    assert [e.raw_text for e in seen] == logged()[:len(seen)]
    # a token resumes where it was taken
    again = pool.schedd.watch(f"ClusterId == {watched}", since=positions[9])
    resumed: list = []
    _take(again, lambda s: len(s) >= len(positions) - 10, resumed)
    assert [e.position for e in resumed] == positions[10:]
    stream.close()
    again.close()
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {other}")


def test_watch_arguments(pool):
    head = ipc.call(pool.schedd._address, "head")
    with pytest.raises(htcondor.HTCondorValueError):
        next(pool.schedd.watch(None, since=head + 1000))
    with pytest.raises(TypeError):
        pool.schedd.watch(None, since="3")
    with pytest.raises(htcondor.HTCondorValueError):
        pool.schedd.watch(None, since=-1)
    with pytest.raises(htcondor.HTCondorException):
        next(pool.schedd.watch("ClusterId == ", since=0))


def test_jobledger_watch_since(pool, tmp_path):
    cluster = pool.schedd.submit(htcondor.Submit({"executable": "/bin/true", "initialdir": str(tmp_path)}),
                                 count=3).cluster()
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    jobledger_cli = str(Path(sys.executable).parent / "jobledger")

    def watch(*args) -> list[dict]:
        done = subprocess.run([jobledger_cli, "watch", str(cluster), "--json", *args], env=env,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, (done.stdout, done.stderr)
        return [json.loads(line) for line in done.stdout.splitlines()]

    events = watch("--since", "0", "--exit", "all-done", "--timeout", "120")
    assert [e["type"] for e in events].count("JOB_TERMINATED") == 3
    assert {(e["cluster"], e["proc"]) for e in events} == {(cluster, 0), (cluster, 1), (cluster, 2)}
    positions = [e["position"] for e in events]
    assert positions == sorted(set(positions))
    # resumed from the position of its third event, following for a while: the rest, nothing twice
    assert [e["position"] for e in watch("--since", str(positions[2]), "--timeout", "10")] == positions[3:]
