"""Crash recovery with real processes: SIGKILL the schedd or the startd while 200 jobs run.

Afterwards every job ran to completion exactly once according to its user
log (one terminated event each, none twice), every acknowledged submit is in
the history, and the journal audit finds nothing wrong.
"""

from __future__ import annotations

import collections
import os
import signal
import time

import pytest

from jobledger.daemons import ipc
from jobledger.daemons.audit import audit
from jobledger.classad import ClassAd
from tests.pool.conftest import wait_until
from jobledger.tracking.jobeventlog import JobEventLog

JOBS = 200


def daemon_pid(pool, name: str) -> int:
    status = ipc.call(ipc.sinful(str(pool.local_dir / "run" / "master.sock")), "status")
    return status[name]["pid"]


def terminated_count(log: str) -> int:
    try:
        with open(log) as handle:
            return handle.read().count("\n005 (") + 0
    except FileNotFoundError:
        return 0


def gated_job(tmp_path, log: str) -> tuple[ClassAd, object]:
    """A short job that, while the gate file exists, waits for it to go: a test closes the
    gate to keep jobs running across a kill, whatever the machine's load."""
    gate = tmp_path / "gate"
    script = tmp_path / "gated.sh"
    script.write_text('#!/bin/sh\nsleep 0.1\nwhile [ -e "$1" ]; do sleep 0.05; done\n')
    script.chmod(0o755)
    job = ClassAd({"Cmd": str(script), "Arguments": str(gate), "Iwd": str(tmp_path), "UserLog": log})
    return job, gate


def run_and_kill(pool, tmp_path, victim: str, after: int):
    log = str(tmp_path / "crash.log")
    job, gate = gated_job(tmp_path, log)
    clusters = [pool.schedd.submit(job, JOBS // 4) for _ in range(4)]
    wait_until(lambda: terminated_count(log) >= after, 120, what=f"{after} jobs to finish")
    # Kill while jobs are running, so the crash cuts through live runs: with the gate
    # closed, a running job stays running until the victim is back.
    gate.touch()
    wait_until(lambda: pool.schedd.query("JobStatus == 2", ["ProcId"]), 30, 0.001, what="a running job")
    before = daemon_pid(pool, victim)
    os.kill(before, signal.SIGKILL)
    wait_until(lambda: daemon_pid(pool, victim) != before, 30, what=f"the master to restart the {victim}")
    wait_until(lambda: _schedd_answers(pool), 30, what=f"the restarted {victim}'s pool to answer")
    gate.unlink()
    wait_until(lambda: _schedd_answers(pool) and not pool.schedd.query("true", ["ProcId"]), 180,
               what="every job to leave the queue")
    return log, clusters


def _schedd_answers(pool) -> bool:
    try:
        pool.schedd.query("false")
        return True
    except Exception:
        return False


def check_exactly_once(pool, log, clusters):
    # The user log is a projection written after the journal commit that empties the
    # queue: give the projector time to write the last events before reading.
    wait_until(lambda: terminated_count(log) >= JOBS, 30, what="the user log to catch up")
    events = list(JobEventLog(log).events(0))
    terminated = collections.Counter((e.cluster, e.proc) for e in events if int(e.type) == 5)
    expected = {(c, p) for c in clusters for p in range(JOBS // 4)}
    assert set(terminated) == expected, f"missing: {sorted(expected - set(terminated))[:5]}"
    assert max(terminated.values()) == 1, [k for k, v in terminated.items() if v > 1]
    history = pool.schedd.history(None, ["ClusterId", "ProcId", "ExitCode", "JobStatus"])
    done = {(ad["ClusterId"], ad["ProcId"]) for ad in history if ad["JobStatus"] == 4}
    assert expected <= done
    assert all(ad["ExitCode"] == 0 for ad in history if (ad["ClusterId"], ad["ProcId"]) in expected)
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")
    return events


@pytest.mark.slow
def test_schedd_sigkill_loses_nothing(fresh_pool, tmp_path):
    log, clusters = run_and_kill(fresh_pool, tmp_path, "schedd", after=40)
    events = check_exactly_once(fresh_pool, log, clusters)
    kinds = collections.Counter(int(e.type) for e in events)
    # Jobs that ran across the crash were reconnected, not restarted.
    assert kinds[22] >= 1
    assert kinds[22] == kinds[23] + kinds[24]


@pytest.mark.slow
def test_acknowledged_submits_survive_a_schedd_kill(fresh_pool, tmp_path):
    """Submits keep coming while the schedd is killed: every acknowledged one is kept."""
    import threading
    acknowledged, stop = [], threading.Event()
    job = ClassAd({"Cmd": "/bin/true", "Iwd": str(tmp_path)})
    schedd = fresh_pool.schedd

    def submitter():
        while not stop.is_set():
            try:
                acknowledged.append(schedd.submit(job, 2))
            except Exception:  # noqa: BLE001 - not acknowledged: may or may not exist
                time.sleep(0.01)
    thread = threading.Thread(target=submitter, name="submitter")
    thread.start()
    try:
        wait_until(lambda: len(acknowledged) >= 20, 60, what="some submits")
        before = daemon_pid(fresh_pool, "schedd")
        os.kill(before, signal.SIGKILL)
        wait_until(lambda: daemon_pid(fresh_pool, "schedd") != before, 30, what="a new schedd")
        count = len(acknowledged)
        wait_until(lambda: len(acknowledged) >= count + 20, 60, what="submits after the restart")
    finally:
        stop.set()
        thread.join()
    wait_until(lambda: _schedd_answers(fresh_pool) and not schedd.query("true", ["ProcId"]), 120,
               what="every job to finish")
    done = {(ad["ClusterId"], ad["ProcId"]) for ad in schedd.history(None, ["ClusterId", "ProcId"])}
    missing = [c for c in acknowledged if (c, 0) not in done or (c, 1) not in done]
    assert not missing
    assert audit(fresh_pool.local_dir).ok


@pytest.mark.slow
def test_startd_sigkill_requeues_and_reruns(fresh_pool, tmp_path):
    log, clusters = run_and_kill(fresh_pool, tmp_path, "startd", after=40)
    events = check_exactly_once(fresh_pool, log, clusters)
    kinds = collections.Counter(int(e.type) for e in events)
    # Jobs that were running when the startd died were evicted and ran again.
    assert kinds[4] + kinds[7] >= 1
    assert kinds[1] == JOBS + kinds[4] + kinds[7] + kinds[24]


@pytest.mark.slow
def test_pool_restart_keeps_the_queue_and_reruns_vacated_jobs(tmp_path):
    from jobledger.personal import PersonalPool
    from tests.pool.conftest import pool_processes, stop_and_check
    log = str(tmp_path / "restart.log")
    job = ClassAd({"Cmd": "/bin/sleep", "Arguments": "3", "Iwd": str(tmp_path), "UserLog": log})
    first = PersonalPool(local_dir=tmp_path / "pool").start()
    try:
        cluster = first.schedd.submit(job, 3)
        wait_until(lambda: first.schedd.query("JobStatus == 2", ["ProcId"]), 30, what="a running job")
    finally:
        stop_and_check(first)
    second = PersonalPool(local_dir=tmp_path / "pool").start()
    try:
        assert second.schedd.submit(job, 1) == cluster + 1      # cluster ids continue
        wait_until(lambda: not second.schedd.query("true", ["ProcId"]), 60, what="every job to finish")
        events = list(JobEventLog(log).events(0))
        terminated = collections.Counter((e.cluster, e.proc) for e in events if int(e.type) == 5)
        assert set(terminated) == {(cluster, 0), (cluster, 1), (cluster, 2), (cluster + 1, 0)}
        assert max(terminated.values()) == 1
        assert any(int(e.type) == 4 for e in events)            # vacated by the first stop
        assert audit(second.local_dir).ok
    finally:
        stop_and_check(second)


@pytest.mark.slow
def test_master_sigkill_takes_every_process_down(tmp_path):
    from jobledger.personal import PersonalPool
    from tests.pool.conftest import pool_processes
    pool = PersonalPool(local_dir=tmp_path / "pool").start()
    try:
        pool.schedd.submit(ClassAd({"Cmd": "/bin/sleep", "Arguments": "60", "Iwd": str(tmp_path)}), 2)
        wait_until(lambda: pool.schedd.query("JobStatus == 2", ["ProcId"]), 30, what="running jobs")
        os.kill(pool._master_pid, signal.SIGKILL)
        wait_until(lambda: not pool_processes(pool.local_dir), 30,
                   what="daemons, starters and jobs to follow their master")
    finally:
        pool.stop()
        pool._config_setter.unset()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        return []


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return " ".join(part.decode() for part in handle.read().split(b"\0") if part)
    except OSError:
        return ""


@pytest.mark.parametrize("continued", [False, True], ids=["first job", "a claim's second job"])
def test_a_killed_starter_takes_its_job_along_and_the_job_runs_again_once(pool, tmp_path, continued):
    """kill -9 of the starter of a running sleep: the sleep goes too (it does not run on,
    unobserved), and so does a sleep it started in a session of its own; the run ends in a
    shadow exception, and the requeued job completes once.  Also when the starter runs
    its claim's second job (the first, on the whole machine, ends at once)."""
    from jobledger.daemons.daemon import alive, process_start_time
    log = str(tmp_path / "lost.log")
    marker, first = tmp_path / "ran-once", tmp_path / "first"
    # The first run sleeps for good; the run after the kill finds the marker and ends at once.
    script = f'test -e {marker} && exec sleep 0; touch {marker}; setsid sleep 301 & exec sleep 300'
    if continued:
        script = f'test -e {first} || {{ touch {first}; exit 0; }}; {script}'
    job = ClassAd({"Cmd": "/bin/sh", "Arguments": f"-c '{script}'", "Iwd": str(tmp_path), "UserLog": log})
    if continued:
        job["RequestCpus"] = len(os.sched_getaffinity(0))    # the startd's cores: one job at a time
    cluster = pool.schedd.submit(job, 1 + continued)

    def running():
        for ad in pool.schedd.query(f"ClusterId == {cluster} && JobStatus == 2",
                                    ["ProcId", "StarterPid", "ScratchDir"]):
            if not continued or os.path.basename(ad["ScratchDir"]).startswith(f"dir_{ad['StarterPid']}_"):
                return ad["ProcId"], ad["StarterPid"]
        return None
    proc, starter = wait_until(running, 60, what="the job to run")
    sleep = wait_until(lambda: next((pid for pid in _children(starter) if _command(pid) == "sleep 300"),
                                    None), 30, what="the job's sleep")
    escaped = wait_until(lambda: next((pid for pid in _children(sleep) if _command(pid) == "sleep 301"),
                                      None), 30, what="the sleep in a session of its own")
    left = [(pid, process_start_time(pid)) for pid in (sleep, escaped)]
    assert os.getsid(escaped) == escaped != os.getsid(sleep)
    os.kill(starter, signal.SIGKILL)
    wait_until(lambda: not any(alive(pid, start) for pid, start in left), 30,
               what="the job's processes to be killed")
    wait_until(lambda: len(pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == 1 + continued, 60,
               what="the requeued job to complete")
    kinds = [int(event.type) for event in JobEventLog(log).events(0)
             if int(event.type) != 6 and event.proc == proc]
    assert kinds == [0, 1, 7, 1, 5], kinds     # submit, run, lost, run, done (image sizes aside)
    ad = pool.schedd.history(f"ClusterId == {cluster} && ProcId == {proc}",
                             ["NumShadowExceptions", "ExitCode"])[0]
    assert ad["NumShadowExceptions"] == 1 and ad["ExitCode"] == 0


def test_what_a_job_left_running_is_killed_before_its_starter_runs_the_next(pool, tmp_path):
    """A starter outlives its jobs (it runs its claim's next one, here on the whole
    machine): what a job left running in a session of its own is killed when the job
    ends, as when its starter exited.  The second job ends only once that is gone."""
    first, left = tmp_path / "first", tmp_path / "left"
    script = (f'test -e {first} || {{ touch {first}; setsid sh -c "echo \\$\\$ > {left}; exec sleep 302" & '
              f'while [ ! -s {left} ]; do sleep 0.01; done; exit 0; }}; '
              f'while kill -0 $(cat {left}) 2>/dev/null; do sleep 0.05; done')
    job = ClassAd({"Cmd": "/bin/sh", "Arguments": f"-c '{script}'", "Iwd": str(tmp_path),
                   "RequestCpus": len(os.sched_getaffinity(0))})
    cluster = pool.schedd.submit(job, 2)
    wait_until(lambda: len(pool.schedd.history(f"ClusterId == {cluster}", ["ProcId"])) == 2, 60,
               what="both jobs to complete (the second waits for the first's leftover to go)")
