"""Jobs queued on a Dask worker behind the one its claim runs (``DASK_QUEUE_DEPTH``).

A real ``dask scheduler`` and one single-thread ``dask worker``: one slot, whose
starter queues the claim's next jobs on the worker behind the running one.  What
HTCondor users see must not change: a job's EXECUTE only once the one before it
ended, a queued job removed or held never starts, a stopped job's queue never runs
after it, and every job ends once.
"""

from __future__ import annotations

import collections
import os
import signal
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.daemons.audit import audit
from jobledger.daemons.client.personal import PersonalPool
from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.ids import JobId
from tests.pool.conftest import stop_and_check, wait_until
from tests.pool.test_crash import daemon_pid
from tests.pool.test_dask import events, start_scheduler, start_worker, stop_all, worker_names

pytest.importorskip("distributed")   # the [dask] extra; part of [test]

EXECUTE, TERMINATED, ABORTED, EVICTED, HELD = 1, 5, 9, 4, 12


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("dask")
    scheduler, address = start_scheduler(base)
    processes = [scheduler]
    try:
        processes.append(start_worker(address, base / "w0", "w0", nthreads=1))
        yield {"address": address, "base": base}
    finally:
        stop_all(processes)


@pytest.fixture(scope="module")
def pool(cluster, tmp_path_factory):
    running = PersonalPool(local_dir=tmp_path_factory.mktemp("pool"),
                           config={"DASK_SCHEDULER_ADDRESS": cluster["address"], "DASK_QUEUE_DEPTH": "4",
                                   "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"})
    running.start()
    wait_until(lambda: len(worker_names(running)) >= 1, 60, what="the Dask worker's slot")
    yield running
    stop_and_check(running)


@pytest.fixture(autouse=True)
def _nothing_left_behind(request, tmp_path):
    """Whatever a test's end, its jobs leave the shared pool and the worker: a failed test must
    not leave gated jobs holding the worker's slot for the tests after it."""
    yield
    if "pool" not in request.fixturenames:
        return
    pool, cluster = request.getfixturevalue("pool"), request.getfixturevalue("cluster")
    (tmp_path / "gate").unlink(missing_ok=True)
    live = "JobStatus != 3 && JobStatus != 4"
    if pool.schedd.query(live, ["ProcId"]):
        pool.schedd.act(htcondor.JobAction.Remove, live)
    wait_until(lambda: not pool.schedd.query(live, ["ProcId"]), 60, what="the test's jobs to go")
    wait_until(lambda: tasks_on_worker(cluster) == 0, 60, what="the worker to hold no job")


def tasks_on_worker(cluster) -> int:
    """How many of the pool's jobs the worker holds (running or queued), as it says itself."""
    from distributed import Client
    from jobledger.daemons.dask_task import held_jobs
    with Client(cluster["address"], set_as_default=False, timeout=30) as client:
        return sum(len(claims) for claims in client.run(held_jobs).values())


def gated_jobs(pool, tmp_path: Path, count: int) -> tuple[Path, int, Path, Path]:
    """``count`` jobs that leave ``ran/<proc>.<pid>`` as they start (outside their sandbox:
    the worker is on this machine), wait while ``gate`` exists, then write their proc to
    ``out``."""
    iwd, gate, ran = tmp_path / "submit", tmp_path / "gate", tmp_path / "ran"
    iwd.mkdir()
    ran.mkdir()
    gate.touch()
    (iwd / "job.sh").write_text(f'#!/bin/sh\ntouch "{ran}/$1.$$"\nwhile [ -e "{gate}" ]; do sleep 0.05; done\n'
                                f'echo "$1" > out\n')
    log = iwd / "job.log"
    cluster_id = pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "arguments": "$(Process)", "initialdir": str(iwd),
        "should_transfer_files": "YES", "transfer_output_remaps": '"out = out.$(Process)"',
        "log": str(log)}), count=count).cluster()
    return log, cluster_id, gate, ran


def runs(ran: Path) -> dict:
    """proc -> how many times it started (its markers)."""
    out: dict = {}
    for marker in ran.iterdir():
        proc = int(marker.name.split(".")[0])
        out[proc] = out.get(proc, 0) + 1
    return out


def by_job(log: Path) -> dict:
    seen: dict = {}
    for event in events(log):
        seen.setdefault(event.proc, []).append(int(event.type))
    return seen


def test_queued_jobs_start_in_turn_and_a_removed_or_held_one_never_does(pool, cluster, tmp_path):
    log, cluster_id, gate, ran = gated_jobs(pool, tmp_path, 6)
    wait_until(lambda: tasks_on_worker(cluster) == 5, 60, what="the running job and four queued behind it")
    started = [proc for proc, kinds in by_job(log).items() if EXECUTE in kinds]
    assert len(started) == 1, by_job(log)        # the queued ones are not EXECUTE'd
    wait_until(lambda: runs(ran), 30, what="the running job's marker")
    assert runs(ran) == {started[0]: 1}          # nor started
    # Nor idle to the negotiator or to Dask's adapt() (which sizes the cluster by the
    # idle jobs): of the six, only the one neither running nor queued is.
    schedd = pool.collector.locate(htcondor.DaemonType.Schedd)["MyAddress"]
    idle = [JobId(int(ad["ClusterId"]), int(ad["ProcId"])) for jobs in
            ipc.call(schedd, "idle_by_submitter", limit=100).values() for ad in jobs]
    assert len([job for job in idle if job.cluster == cluster_id]) == 1, idle
    assert all(job.proc != started[0] for job in idle), idle
    queued = [proc for proc in range(6) if proc not in started]
    removed, held = queued[1], queued[2]
    pool.schedd.act(htcondor.JobAction.Remove, f"{cluster_id}.{removed}")
    pool.schedd.act(htcondor.JobAction.Hold, f"{cluster_id}.{held}")
    wait_until(lambda: {ABORTED, HELD} <= {k for kinds in by_job(log).values() for k in kinds}, 30,
               what="the aborted and held events")
    gate.unlink()
    done = [proc for proc in range(6) if proc not in (removed, held)]
    wait_until(lambda: all(TERMINATED in by_job(log).get(proc, []) for proc in done), 120,
               what="the other jobs to end")
    seen = by_job(log)
    for proc in done:
        kinds = [k for k in seen[proc] if k in (EXECUTE, TERMINATED)]
        assert kinds == [EXECUTE, TERMINATED], (proc, seen[proc])
        assert (tmp_path / "submit" / f"out.{proc}").read_text() == f"{proc}\n"
    for proc in (removed, held):
        assert EXECUTE not in seen[proc] and TERMINATED not in seen[proc], (proc, seen[proc])
    assert runs(ran) == {proc: 1 for proc in done}     # the two never started
    pool.schedd.act(htcondor.JobAction.Remove, f"{cluster_id}.{held}")
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster_id}", ["ProcId"]), 30,
               what="the cluster to leave the queue")
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")


def test_a_vacated_job_takes_its_queue_with_it(pool, cluster, tmp_path):
    """The running job vacated: the jobs queued behind it never run after it there; each
    job runs again later, and ends once."""
    log, cluster_id, gate, ran = gated_jobs(pool, tmp_path, 4)
    wait_until(lambda: tasks_on_worker(cluster) == 4, 60, what="the running job and three queued")
    # the worker may hold the jobs before the user log shows the first one's EXECUTE (the
    # projector writes after the commit, gathering a stream of commits for up to 0.2 s)
    wait_until(lambda: any(EXECUTE in kinds for kinds in by_job(log).values()), 30,
               what="the running job's EXECUTE in the log")
    running = next(proc for proc, kinds in by_job(log).items() if EXECUTE in kinds)
    pool.schedd.act(htcondor.JobAction.Vacate, f"{cluster_id}.{running}")
    wait_until(lambda: EVICTED in by_job(log).get(running, []), 30, what="the eviction")
    # None of the queued ones started behind it: every start so far is one the log shows. The
    # vacated job itself is idle again and may already have started anew (its second EXECUTE),
    # and so may a queued job matched afresh after the eviction; a start with no EXECUTE is
    # what must never happen. A queued job's EXECUTE is logged once the startd hears that the
    # job before it ended, which may be just after it started: so wait for the log to catch up.
    started = runs(ran)
    wait_until(lambda: all(by_job(log).get(proc, []).count(EXECUTE) >= count
                           for proc, count in started.items()), 30,
               what=f"an EXECUTE for every start so far {started}")
    assert started.get(running, 0) >= 1, started
    gate.unlink()
    wait_until(lambda: all(TERMINATED in by_job(log).get(proc, []) for proc in range(4)), 120,
               what="every job to end")
    seen = by_job(log)
    for proc in range(4):
        assert seen[proc].count(TERMINATED) == 1, (proc, seen[proc])
        assert seen[proc].count(EXECUTE) == (2 if proc == running else 1), (proc, seen[proc])
        assert (tmp_path / "submit" / f"out.{proc}").read_text() == f"{proc}\n"
    assert runs(ran) == {proc: seen[proc].count(EXECUTE) for proc in range(4)}
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster_id}", ["ProcId"]), 30,
               what="the cluster to leave the queue")
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")


def test_short_queued_jobs_log_their_transfers_in_order(pool, tmp_path):
    """Jobs that end before their starter reports their input transfer (it waits for a
    first word that the job still runs) have it reported with the outcome: each job's log
    still reads EXECUTE, input started and finished, output started and finished,
    TERMINATED, each once, and the job ad has its TransferInputSizeMB."""
    iwd = tmp_path / "short"
    iwd.mkdir()
    (iwd / "in.txt").write_text("x" * 3000)
    (iwd / "job.sh").write_text('#!/bin/sh\nwc -c < in.txt > out\n')
    log = iwd / "job.log"
    cluster_id = pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "initialdir": str(iwd), "transfer_input_files": "in.txt",
        "should_transfer_files": "YES", "transfer_output_remaps": '"out = out.$(Process)"',
        "leave_in_queue": "JobStatus == 4", "log": str(log)}), count=8).cluster()
    wait_until(lambda: sum(TERMINATED in kinds for kinds in by_job(log).values()) == 8, 120,
               what="the eight jobs to end")
    for proc, kinds in by_job(log).items():
        transfers = [e["Type"] for e in events(log) if e.proc == proc and int(e.type) == 40]
        assert [k for k in kinds if k not in (0, 40)] == [EXECUTE, TERMINATED], (proc, kinds)
        assert kinds.index(EXECUTE) < kinds.index(40) and kinds[-1] == TERMINATED, (proc, kinds)
        assert transfers == [2, 3, 5, 6], (proc, transfers)
        assert (iwd / f"out.{proc}").read_text().strip() == "3000"
    for ad in pool.schedd.query(f"ClusterId == {cluster_id}", ["TransferInputSizeMB", "JobStatus"]):
        assert ad["JobStatus"] == 4 and ad["TransferInputSizeMB"] == 1, ad
    pool.schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster_id}")
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster_id}", ["ProcId"]), 30,
               what="the cluster to leave the queue")
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")


def test_schedd_sigkill_while_jobs_are_queued_on_the_worker(pool, cluster, tmp_path):
    """The schedd SIGKILLed while one job runs and four are queued behind it, and the
    running one ends while it is down (the worker runs the queue meanwhile): the new
    schedd reserves the queued jobs again from the startd's claims before it matches
    anything, so every job ends once with its output, no job starts on the worker
    without its EXECUTE in the log, and the audit is clean.  (Before, the queued jobs
    ran unrecorded and then again: two starts each.)"""
    log, cluster_id, gate, ran = gated_jobs(pool, tmp_path, 6)
    wait_until(lambda: tasks_on_worker(cluster) == 5, 60, what="the running job and four queued behind it")
    before = daemon_pid(pool, "schedd")
    os.kill(before, signal.SIGKILL)
    gate.unlink()      # the running job ends while the schedd is down
    wait_until(lambda: daemon_pid(pool, "schedd") != before, 30, what="the schedd to restart")
    wait_until(lambda: sum(TERMINATED in kinds for kinds in by_job(log).values()) == 6, 120,
               what="every job to terminate")
    seen = by_job(log)
    terminated = collections.Counter(proc for proc, kinds in seen.items() for k in kinds if k == TERMINATED)
    assert terminated == {proc: 1 for proc in range(6)}, seen
    for proc in range(6):
        assert (tmp_path / "submit" / f"out.{proc}").read_text() == f"{proc}\n"
    executed = {proc: kinds.count(EXECUTE) for proc, kinds in seen.items()}
    assert runs(ran) == executed, (runs(ran), seen)
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster_id}", ["ProcId"]), 30,
               what="the cluster to leave the queue")
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")


def test_a_starter_asks_for_its_queue_in_one_call_and_a_bad_count_is_refused(pool):
    """``starter_lookahead`` with a ``count`` gives a list (up to that many jobs, each queued
    behind the one before): a starter filling its queue asks once, not once a job.  A count
    that is not a whole number of jobs is refused, naming it; a claim the schedd does not
    run gives none."""
    schedd = pool.collector.locate(htcondor.DaemonType.Schedd)["MyAddress"]
    for bad in ("4", 0, -1, True, 2.5):
        with pytest.raises(HTCondorException, match="count must be a whole number of jobs"):
            ipc.call(schedd, "starter_lookahead", claim="no-such-claim", job="1.0", count=bad)
    assert ipc.call(schedd, "starter_lookahead", claim="no-such-claim", job="1.0", count=4) == []
    assert ipc.call(schedd, "starter_lookahead", claim="no-such-claim", job="1.0") is None
