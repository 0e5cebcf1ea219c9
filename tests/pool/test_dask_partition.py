"""A Dask worker cut off from its scheduler, not killed: SIGSTOPped past its lease.

The pool's lease on a Dask worker is the scheduler's own: a worker silent for
``distributed.scheduler.worker-ttl`` is removed from the cluster, and its slot
leaves the pool with it.  Its jobs are evicted and requeued (they run again on
another worker), and when the worker comes back to life its stale work -- the
job it kept running meanwhile, now finished -- is never reported: each job
terminates once.  Real `dask scheduler` and `dask worker` processes on 127.0.0.1.
"""

from __future__ import annotations

import collections
import os
import signal
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons.audit import audit
from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import stop_and_check, wait_until
from tests.pool.test_dask import events, job_processes, job_sandboxes, start_scheduler, start_worker, stop_all, worker_names

pytest.importorskip("distributed")

LEASE = "8s"   # the scheduler's worker-ttl (it takes at least 10 heartbeats: 5 s)


def test_worker_stopped_past_its_lease_loses_its_jobs_once(tmp_path: Path):
    scheduler, address = start_scheduler(tmp_path, env={"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": LEASE})
    processes = [scheduler]
    try:
        stopped = start_worker(address, tmp_path / "stopped", "stopped", nthreads=2)
        processes.append(stopped)
        # a cycle every 2 s: the evicted jobs find the spare's slot soon, not a default interval later
        pool = PersonalPool(local_dir=tmp_path / "pool", config={
            "DASK_SCHEDULER_ADDRESS": address, "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD",
            "NEGOTIATOR_INTERVAL": "2"})
        pool.start()
        try:
            _partition(pool, address, stopped, processes, tmp_path)
        finally:
            if stopped.poll() is None:
                stopped.send_signal(signal.SIGCONT)
            stop_and_check(pool)
    finally:
        stop_all(processes)


def _partition(pool, address: str, stopped, processes: list, tmp_path: Path) -> None:
    wait_until(lambda: any("@dask-stopped@" in n for n in worker_names(pool)), 60, what="the worker's slot")
    iwd, gate = tmp_path / "submit", tmp_path / "gate"
    iwd.mkdir()
    gate.touch()
    runs = tmp_path / "runs.txt"     # outside every sandbox: each run, stale or not, says it ended
    (iwd / "job.sh").write_text(f'#!/bin/sh\nwhile [ -e "$1" ]; do sleep 0.05; done\n'
                                f'echo "$2" >> {runs}\necho "done $2" > result.txt\n')
    log = iwd / "jobs.log"
    pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "arguments": f"{gate} $(ProcId)", "initialdir": str(iwd),
        "should_transfer_files": "YES", "transfer_output_remaps": '"result.txt=result$(ProcId).txt"',
        "log": str(log)}), count=2)
    wait_until(lambda: len(job_sandboxes(tmp_path / "stopped")) == 2, 60, what="both jobs on the worker")

    spare = start_worker(address, tmp_path / "spare", "spare", nthreads=2)
    processes.append(spare)
    wait_until(lambda: any("@dask-spare@" in n for n in worker_names(pool)), 60, what="the spare worker's slot")
    stopped.send_signal(signal.SIGSTOP)       # the worker falls silent; its jobs go on
    wait_until(lambda: [int(e.type) for e in events(log)].count(4) == 2, 90,
               what="both jobs evicted once the lease ran out")
    assert not any("@dask-stopped@" in n for n in worker_names(pool))
    wait_until(lambda: len(job_sandboxes(tmp_path / "spare")) == 2, 60, what="both jobs again on the spare")
    gate.unlink()                             # every run may end now, the stale ones too
    wait_until(lambda: [int(e.type) for e in events(log)].count(5) == 2, 60, what="both jobs to end")
    wait_until(lambda: not job_processes(tmp_path / "stopped"), 30, what="the stale jobs to end")

    stopped.send_signal(signal.SIGCONT)       # back: it finds the cluster has let it go
    wait_until(lambda: stopped.poll() is not None, 60, what="the stale worker to shut down")
    assert sorted(runs.read_text().split()) == ["0", "0", "1", "1"]   # the stale runs did end
    seen = events(log)
    assert collections.Counter(e.proc for e in seen if int(e.type) == 5) == {0: 1, 1: 1}
    executes = [e for e in seen if int(e.type) == 1]
    assert [("@dask-stopped@" in e["SlotName"]) for e in executes].count(True) == 2
    assert all("@dask-spare@" in e["SlotName"] for e in executes[2:])
    for proc in (0, 1):
        assert (iwd / f"result{proc}.txt").read_text() == f"done {proc}\n"
    wait_until(lambda: not pool.schedd.query("true", ["ProcId"]), 30, what="the queue to empty")
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")
