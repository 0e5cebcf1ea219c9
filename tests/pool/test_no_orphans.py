"""Endless inputs, transfer limits, permission bits, and no process of the pool left behind.

Real pools, real files and real processes: /dev/zero and a FIFO as inputs, inputs
and outputs over HTCondor's MAX_TRANSFER_INPUT_MB / MAX_TRANSFER_OUTPUT_MB,
condor_rm while an input is being copied, ``pool stop`` with a job whose children
daemonized, and kill -9 of a scheduler-universe starter.  After each, no process
of the pool's jobs is left (the pool's processes are found by the pool's
directory in their environment; a job's by the ``_CONDOR_SCRATCH_DIR`` its
starter gives it), and after ``pool stop`` no process of the pool at all.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import pool_processes, running_pool, stop_and_check, wait_until
from tests.pool.test_crash import daemon_pid
from tests.pool.test_transfer import finished
from jobledger.tracking.jobeventlog import JobEventLog

SCRIPT_HEAD = "#!/bin/sh\nset -e\n"


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """A pool whose transfers are limited as an admin limits them (MiB)."""
    yield from running_pool(tmp_path_factory, PERIODIC_EXPR_INTERVAL="1", MAX_TRANSFER_INPUT_MB="2",
                            MAX_TRANSFER_OUTPUT_MB="1")


def job_processes(local_dir: Path) -> list[int]:
    """The pool's processes that are (or were started by) a job."""
    found = []
    for pid in pool_processes(local_dir):
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if b"_CONDOR_SCRATCH_DIR=" in handle.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def no_job_left(pool) -> None:
    wait_until(lambda: not job_processes(pool.local_dir), 30, what="every job process to be gone")


def submit(pool, iwd: Path, script: str, **commands) -> int:
    iwd.mkdir(parents=True, exist_ok=True)
    (iwd / "job.sh").write_text(SCRIPT_HEAD + script)
    description = {"executable": "job.sh", "initialdir": str(iwd), "should_transfer_files": "YES",
                   "log": str(iwd / "job.log"), "output": "out.txt", "error": "err.txt"}
    description.update(commands)
    return pool.schedd.submit(htcondor.Submit(description)).cluster()


def test_a_device_or_a_fifo_as_input_holds_with_code_13_naming_it(pool, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)                   # no writer: a read would wait for ever
    link = tmp_path / "zeros"
    os.symlink("/dev/zero", link)     # endless, behind a link
    for i, source in enumerate(("/dev/zero", str(fifo), str(link))):
        ad = finished(pool, submit(pool, tmp_path / f"iwd{i}", "true\n", transfer_input_files=source))
        assert (ad["JobStatus"], ad["HoldReasonCode"]) == (5, 13), ad.get("HoldReason")
        assert source in ad["HoldReason"]
        assert "only regular files, directories and symbolic links to them" in ad["HoldReason"]
    no_job_left(pool)


def test_transfers_over_htcondors_limits_hold_with_codes_32_and_33(pool, tmp_path):
    """MAX_TRANSFER_INPUT_MB = 2 and MAX_TRANSFER_OUTPUT_MB = 1 (the pool's), which a
    job's max_transfer_input_mb / max_transfer_output_mb override (HTCondor's shadow)."""
    data = tmp_path / "three-mib.dat"
    data.write_bytes(b"d" * (3 << 20))
    # condor_submit sized the inputs (TransferInputSizeMB, job.sh's KiB included): the schedd
    # holds the job as the submit commits (HTCondor's qmgmt), before anything is copied.
    cluster = submit(pool, tmp_path / "in", "true\n", transfer_input_files=str(data))
    ad = pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus", "HoldReasonCode", "HoldReasonSubCode",
                                                         "HoldReason", "TransferInputSizeMB"])[0]
    assert (ad["JobStatus"], ad["HoldReasonCode"], ad["HoldReasonSubCode"]) == (5, 32, 0)
    assert ad["TransferInputSizeMB"] == 4                  # (1 KiB + 3072 KiB) rounded up to MiB
    assert ad["HoldReason"] == "TransferInputSizeMB (4) is greater than MAX_TRANSFER_INPUT_MB (2) at submit time"
    # A size condor_submit did not compute (disk_usage given): the transfer itself is bounded.
    ad = finished(pool, submit(pool, tmp_path / "in-late", "true\n", transfer_input_files=str(data),
                               disk_usage="1"))
    assert (ad["HoldReasonCode"], ad["HoldReasonSubCode"]) == (32, 0)
    assert ad["HoldReason"].startswith("Transfer input files failure")
    assert f"sending file {data}: max total upload bytes exceeded (max=2 MB, this file=3 MB)" in ad["HoldReason"]
    ad = finished(pool, submit(pool, tmp_path / "in-ok", "test $(wc -c < three-mib.dat) = 3145728\n",
                              transfer_input_files=str(data), max_transfer_input_mb="4"))
    assert ad["JobStatus"] == 4 and ad["ExitCode"] == 0
    write_two = "head -c 2097152 /dev/zero > result.dat\n"
    ad = finished(pool, submit(pool, tmp_path / "out", write_two))
    assert (ad["HoldReasonCode"], ad["HoldReasonSubCode"]) == (33, 0)
    assert "max total download bytes exceeded (max=1 MB, this file=2 MB)" in ad["HoldReason"]
    assert not (tmp_path / "out" / "result.dat").exists()
    ad = finished(pool, submit(pool, tmp_path / "out-ok", write_two, max_transfer_output_mb="-1"))
    assert ad["JobStatus"] == 4 and (tmp_path / "out-ok" / "result.dat").stat().st_size == 2 << 20
    no_job_left(pool)


def test_permission_bits_survive_the_transfer_both_ways(pool, tmp_path):
    """A wrapper that is the executable and an input (as the Snakemake plugin's job
    wrapper is without a shared file system) stays executable; an input's and an
    output's bits arrive as they left."""
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    wrapper = iwd / "wrapper.sh"
    wrapper.write_text(SCRIPT_HEAD + 'test "$(stat -c %a private.txt)" = 600\n'
                       'test "$(stat -c %a tool)" = 750\n'
                       'printf "#!/bin/sh\\necho made\\n" > made.sh; chmod 0751 made.sh\n'
                       'echo secret > secret.txt; chmod 0600 secret.txt\n')
    wrapper.chmod(0o755)
    for name, mode in (("private.txt", 0o600), ("tool", 0o750)):
        (iwd / name).write_text(name)
        (iwd / name).chmod(mode)
    cluster = pool.schedd.submit(htcondor.Submit({
        "executable": "wrapper.sh", "initialdir": str(iwd), "should_transfer_files": "YES",
        "transfer_input_files": "wrapper.sh, private.txt, tool", "log": str(iwd / "job.log"),
        "error": "err.txt"})).cluster()
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 4 and ad["ExitCode"] == 0, (ad.get("HoldReason"), (iwd / "err.txt").read_text())
    assert stat.S_IMODE((iwd / "made.sh").stat().st_mode) == 0o751
    assert stat.S_IMODE((iwd / "secret.txt").stat().st_mode) == 0o600
    assert subprocess.run([str(iwd / "made.sh")], capture_output=True, text=True).stdout == "made\n"
    no_job_left(pool)


def sandbox_file(pool, cluster: int, name: str) -> Path | None:
    ads = pool.schedd.query(f"ClusterId == {cluster}", ["ScratchDir"])
    if not ads or "ScratchDir" not in ads[0]:
        return None
    path = Path(ads[0]["ScratchDir"]) / name
    return path if path.exists() and path.stat().st_size > 0 else None


def test_condor_rm_during_an_input_transfer_ends_it(pool, tmp_path):
    """A 16 GiB input (sparse here, written out in full by the copy) over a
    generous limit: condor_rm while it is being copied ends the copy within a chunk,
    the starter and the partial file go, and the job never runs."""
    huge = tmp_path / "huge.dat"
    with open(huge, "wb") as handle:
        handle.truncate(16 << 30)
    cluster = submit(pool, tmp_path / "iwd", "touch ran\n", transfer_input_files=str(huge),
                     max_transfer_input_mb="20000", request_disk="17G")
    partial = wait_until(lambda: sandbox_file(pool, cluster, "huge.dat"), 120, 0.01,
                         what="the copy to begin")
    starter = int(pool.schedd.query(f"ClusterId == {cluster}", ["StarterPid"])[0]["StarterPid"])
    pool.schedd.act(htcondor.JobAction.Remove, f"{cluster}.0")
    wait_until(lambda: not os.path.exists(f"/proc/{starter}") or
               open(f"/proc/{starter}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", 60,
               what="the starter to exit")
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 3
    assert not partial.exists() and not partial.parent.exists()
    assert not (tmp_path / "iwd" / "ran").exists()
    kinds = [int(e.type) for e in JobEventLog(str(tmp_path / "iwd" / "job.log")).events(0)]
    assert 9 in kinds and 5 not in kinds       # aborted, never terminated
    no_job_left(pool)


def write_pid(path: Path) -> str:
    return f'sh -c \'echo $$ > {path}.tmp; mv {path}.tmp {path}; exec sleep 600\''


def pids_in(paths) -> list[int] | None:
    try:
        return [int(path.read_text()) for path in paths]
    except (OSError, ValueError):
        return None


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("frozen", [False, True], ids=["stop", "stop with its startd and starter frozen"])
def test_pool_stop_ends_a_job_whose_children_daemonized(tmp_path, frozen):
    """The job leaves: a child in a session of its own, a double-forked grandchild that
    ignores SIGTERM and SIGHUP, and one with an empty environment (no marker to find
    it by).  ``pool stop`` ends them all, and nothing of the pool is left -- also when
    the startd and the starter cannot act (SIGSTOP): the master kills the startd after
    SHUTDOWN_GRACEFUL_TIMEOUT, and then everything still below it."""
    marks = [tmp_path / name for name in ("session", "double", "bare")]
    script = (f"setsid {write_pid(marks[0])} &\n"
              f"(trap '' TERM HUP; nohup setsid {write_pid(marks[1])} > /dev/null 2>&1 &) &\n"
              f"env -i /bin/sh -c 'echo $$ > {marks[2]}.tmp; mv {marks[2]}.tmp {marks[2]}; exec sleep 600' &\n"
              "exec sleep 600\n")
    pool = PersonalPool(local_dir=tmp_path / "pool", config={"SHUTDOWN_GRACEFUL_TIMEOUT": "3"}).start()
    try:
        cluster = submit(pool, tmp_path / "iwd", script)
        pids = wait_until(lambda: pids_in(marks), 60, what="the job's daemonized children")
        assert all(not gone(pid) for pid in pids)
        if frozen:
            starter = int(pool.schedd.query(f"ClusterId == {cluster}", ["StarterPid"])[0]["StarterPid"])
            os.kill(daemon_pid(pool, "startd"), signal.SIGSTOP)
            os.kill(starter, signal.SIGSTOP)
    finally:
        pool.stop()
        pool._config_setter.unset()
    wait_until(lambda: all(gone(pid) for pid in pids), 10, what="the daemonized children to be killed")
    wait_until(lambda: not pool_processes(pool.local_dir), 10, what="every process of the pool to be gone")
    if frozen:
        assert "leftover process(es) of the pool at its stop" in (pool.local_dir / "log" / "MasterLog").read_text()


def test_kill_9_of_a_scheduler_universe_starter_takes_its_job_along(pool, tmp_path):
    """kill -9 of the starter of a scheduler-universe job (DAGMan's universe): the job
    and the child it left in a session of its own die too, and the job runs again
    (it is not held: its starter, not the job, was killed)."""
    marks = [tmp_path / name for name in ("job", "child")]
    again = tmp_path / "again"
    script = tmp_path / "local.sh"
    script.write_text(f"#!/bin/sh\ntest -e {again} && exit 0\ntouch {again}\n"
                      f"setsid {write_pid(marks[1])} &\n"
                      f"echo $$ > {marks[0]}.tmp; mv {marks[0]}.tmp {marks[0]}\nexec sleep 600\n")
    script.chmod(0o755)
    cluster = pool.schedd.submit(htcondor.Submit({
        "universe": "scheduler", "executable": str(script), "initialdir": str(tmp_path),
        "log": str(tmp_path / "local.log")})).cluster()
    pids = wait_until(lambda: pids_in(marks), 60, what="the job and its child")
    starter = int(pool.schedd.query(f"ClusterId == {cluster}", ["StarterPid"])[0]["StarterPid"])
    os.kill(starter, signal.SIGKILL)
    wait_until(lambda: all(gone(pid) for pid in pids), 30, what="the job and its child to be killed")
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 4 and ad["ExitCode"] == 0, ad.get("HoldReason")
    no_job_left(pool)



def test_a_scheduler_universe_job_whose_starter_cannot_start_it_is_held_after_three_tries(pool, tmp_path):
    """The other side of the kill test above: a starter that dies before it starts the
    job (here it cannot make the job's scratch directory: a file stands where its
    parent directory should be) is a job that cannot be started; after three such
    tries the job is held instead of being restarted for ever.  Fixed and released,
    it runs."""
    execute = Path(pool.get_config_val("SPOOL")) / "local_univ_execute"
    os.rmdir(execute)
    execute.write_text("not a directory\n")
    try:
        cluster = pool.schedd.submit(htcondor.Submit({
            "universe": "scheduler", "executable": "/bin/true", "initialdir": str(tmp_path),
            "log": str(tmp_path / "local.log")})).cluster()
        ad = finished(pool, cluster)
        assert (ad["JobStatus"], ad["HoldReasonCode"], ad["NumShadowExceptions"]) == (5, 6, 3)
        assert "cannot be started" in ad["HoldReason"]
    finally:
        execute.unlink()
        execute.mkdir()
    pool.schedd.act(htcondor.JobAction.Release, f"{cluster}.0")
    ad = finished(pool, cluster)
    assert ad["JobStatus"] == 4 and ad["ExitCode"] == 0
    no_job_left(pool)


def test_a_scheduler_universe_starter_handed_to_the_master_lives_on(tmp_path, monkeypatch):
    """kill -9 of the schedd hands its scheduler-universe starters to the master, which
    kills only a job's processes: the starter (and its job) live on and the restarted
    schedd reconnects -- also in a pool started from inside a job, whose environment
    already has the marker a job's processes are known by."""
    monkeypatch.setenv("_CONDOR_SCRATCH_DIR", str(tmp_path))
    gate = tmp_path / "gate"
    gate.touch()
    script = tmp_path / "waits.sh"
    script.write_text(f"#!/bin/sh\nwhile [ -e {gate} ]; do sleep 0.05; done\n")
    script.chmod(0o755)
    pool = PersonalPool(local_dir=tmp_path / "pool").start()
    try:
        cluster = pool.schedd.submit(htcondor.Submit({
            "universe": "scheduler", "executable": str(script), "initialdir": str(tmp_path),
            "log": str(tmp_path / "local.log")})).cluster()
        starter = wait_until(lambda: pool.schedd.query(f"ClusterId == {cluster} && JobStatus == 2",
                                                       ["StarterPid"]), 60, what="the job to run")
        starter = int(starter[0]["StarterPid"])
        schedd = daemon_pid(pool, "schedd")
        os.kill(schedd, signal.SIGKILL)
        wait_until(lambda: parent_of(starter) == pool._master_pid, 30, what="the starter to be the master's")
        wait_until(lambda: daemon_pid(pool, "schedd") != schedd, 60, what="a new schedd")

        def reconnected():
            try:
                return any(int(e.type) == 23 for e in JobEventLog(str(tmp_path / "local.log")).events(0))
            except OSError:
                return False
        wait_until(reconnected, 60, what="the schedd to reconnect")
        assert not gone(starter)
        gate.unlink()
        ad = finished(pool, cluster)
        assert ad["JobStatus"] == 4 and ad["ExitCode"] == 0
        kinds = [int(e.type) for e in JobEventLog(str(tmp_path / "local.log")).events(0)]
        assert kinds.count(1) == 1, kinds        # one run: reconnected, not started again
    finally:
        stop_and_check(pool)


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_a_job_whose_starter_and_launcher_are_killed_is_killed_by_the_master(tmp_path):
    """kill -9 of a startd's launcher, then of the starter (the startd frozen, so that
    neither it nor anything under it can act): the job and the child it left in a
    session of its own are handed up to the master, which kills them; the job then
    runs again once the startd is back, and completes."""
    marks = [tmp_path / name for name in ("job", "child")]
    again = tmp_path / "again"
    script = (f"test -e {again} && exit 0\ntouch {again}\nsetsid {write_pid(marks[1])} &\n"
              f"echo $$ > {marks[0]}.tmp; mv {marks[0]}.tmp {marks[0]}\nexec sleep 600\n")
    pool = PersonalPool(local_dir=tmp_path / "pool").start()
    try:
        cluster = submit(pool, tmp_path / "iwd", script)
        pids = wait_until(lambda: pids_in(marks), 60, what="the job and its child")
        starter = int(pool.schedd.query(f"ClusterId == {cluster}", ["StarterPid"])[0]["StarterPid"])
        launcher = parent_of(starter)
        startd = daemon_pid(pool, "startd")
        assert parent_of(launcher) == startd
        os.kill(startd, signal.SIGSTOP)
        try:
            os.kill(launcher, signal.SIGKILL)
            wait_until(lambda: parent_of(starter) == pool._master_pid, 30, what="the starter to be the master's")
            os.kill(starter, signal.SIGKILL)
            wait_until(lambda: all(gone(pid) for pid in pids), 30, what="the master to kill the job and its child")
        finally:
            os.kill(startd, signal.SIGCONT)
        ad = finished(pool, cluster, 120)
        assert ad["JobStatus"] == 4 and ad["ExitCode"] == 0, ad.get("HoldReason")
        assert "a job's process whose starter is gone" in (pool.local_dir / "log" / "MasterLog").read_text()
    finally:
        stop_and_check(pool)


SWEEP_CHECK = """
import os, signal, subprocess, sys
from jobledger.daemons import orphans
real = orphans._children
def unread():
    raise AssertionError("/proc read with no child")
orphans._children = unread
orphans.sweep_leftovers()                      # no child at all: nothing to look for
orphans._children = real
left = subprocess.Popen(["sleep", "300"], start_new_session=True)
orphans.sweep_leftovers()                      # a job's daemonized leftover: killed and reaped
try:
    os.kill(left.pid, 0)
except ProcessLookupError:
    print("swept")
"""


def test_a_sweep_reads_proc_only_when_a_child_is_left():
    """A starter sweeps after each job (``orphans.sweep_leftovers``): with no child at
    all it does not read /proc; a leftover is still killed and reaped.  (In a process
    of its own: the sweep kills every child of the process it runs in.)"""
    done = subprocess.run([sys.executable, "-c", SWEEP_CHECK], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["swept"]
