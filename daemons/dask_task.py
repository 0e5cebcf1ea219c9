"""What runs inside a Dask worker for the pool: the job itself, its signals, the worker's facts.

These functions are shipped to ``dask worker`` processes (which need
jobledger importable, as they need any task's code).  Nothing here assumes
a file system shared with the pool: the sandbox arrives as tar bytes, the
job runs in a fresh directory under the worker's own ``local_directory``,
and what the job made or changed there goes back as tar bytes with the exit
status and usage (an empty sandbox is no bytes at all).

Instructions reach the running job through ``signal_job``, which the Dask
startd calls on the job's worker (``Client.run``): it signals the job's
process group there (SIGTERM vacate, SIGKILL kill, SIGSTOP/SIGCONT suspend
and continue).  A signal that arrives before the job started is kept and
sent once it has.  A task whose future was released -- the Dask startd, and
its connection with it, went away -- kills its job: nobody waits for it.
"""

from __future__ import annotations

import errno
import io
import os
import platform
import select
import shutil
import signal
import stat
import subprocess
import tarfile
import tempfile
import threading
import time

from jobledger.daemons.starter import exit_status

CHECK = 1.0   # seconds between looks at whether the task is still wanted
PUSH_LIMIT = 16 * 1024   # bytes of sandbox an outcome pushed to the pool may carry (see run_job)
TEXT_BUSY_RETRIES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)   # seconds before each new try (see _popen)

ENDED_KEPT = 64   # claims whose ends this worker remembers (for the jobs queued behind them)
STOPS = (signal.SIGTERM, signal.SIGKILL, signal.SIGQUIT)

# This worker's running jobs: claim -> {"pid": process group or None, "signals": not yet sent,
# "stopped": a stop signal was sent}.  ENDED: claim -> whether its job exited on its own.
RUNNING: dict[str, dict] = {}
ENDED: dict[str, bool] = {}
_RUNNING_LOCK = threading.Condition()


def stamps(directory: str) -> dict:
    """name -> (mtime_ns, size) of the top-level regular files and symlinks of ``directory``."""
    out = {}
    with os.scandir(directory) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                out[entry.name] = (info.st_mtime_ns, info.st_size, info.st_mode)
    return out


def pack(directory: str, unchanged: dict | None = None) -> bytes:
    """The files under ``directory`` as uncompressed tar bytes (modes and mtimes kept);
    ``unchanged`` (``stamps`` taken earlier) leaves out the top-level files that still
    match it.  Nothing to send is ``b""``, not an empty archive."""
    names = sorted(os.listdir(directory))
    if unchanged:
        now = stamps(directory)
        names = [name for name in names if name not in now or now[name] != unchanged.get(name)]
    if not names:
        return b""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in names:
            tar.add(os.path.join(directory, name), arcname=name)
    return buffer.getvalue()


def unpack(data: bytes, directory: str) -> None:
    """Tar bytes into ``directory``; members may not leave it (the ``data`` filter)."""
    if not data:
        return
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(directory, filter="data")


def worker_facts(dask_worker=None) -> dict:
    """The machine facts a worker reports about itself (``Client.run`` passes the worker)."""
    where = getattr(dask_worker, "local_directory", None) or tempfile.gettempdir()
    stat = os.statvfs(where)
    return {"Disk": stat.f_bavail * stat.f_frsize // 1024, "Machine": platform.node(),
            "Arch": _arch(platform.machine()), "OpSys": platform.system().upper(),
            "LocalDirectory": where, "CudaVisibleDevices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def _arch(machine: str) -> str:
    return {"x86_64": "X86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(machine, machine.upper())


def signal_job(claim: str, signum: int) -> bool:
    """Send ``signum`` to the job of ``claim`` on this worker (run by ``Client.run``);
    False when it has not started yet (it gets the signal when it does)."""
    with _RUNNING_LOCK:
        entry = RUNNING.setdefault(claim, {"pid": None, "signals": []})
        entry["stopped"] = entry.get("stopped") or signum in STOPS
        if entry["pid"] is None:
            if signum in STOPS and claim not in ENDED:
                ENDED[claim] = False     # a job queued behind this one's need not wait for it
                _RUNNING_LOCK.notify_all()
            entry["signals"].append(signum)
            return False
        pid = entry["pid"]
    _killpg(pid, signum)
    return True


def run_job(spec: dict, sandbox: bytes, claim: str) -> dict:
    """Run one job in a fresh sandbox on this worker; its outcome and sandbox back.

    ``spec``: ``argv`` (relative to the sandbox when not absolute), ``env``,
    ``stdin``/``stdout``/``stderr`` (sandbox file names or None), ``topic``, ``behind``.
    With a ``topic``, an outcome whose sandbox is small (PUSH_LIMIT) is also sent
    to the pool as an event under it (``Worker.log_event``): it reaches the Dask
    startd with the news that the task is done, without a fetch from this worker.
    With ``behind`` (the claim of the job this one was queued behind, on this
    worker) the job runs only once that job exited on its own: one that was
    stopped, lost or never ran here leaves this one not started.
    """
    from distributed import get_worker
    worker = get_worker()
    key = worker.get_current_task()
    released = lambda: _released(worker, key)   # noqa: E731
    scratch = tempfile.mkdtemp(prefix="jobledger_", dir=worker.local_directory)
    ended_well = False
    result: dict
    try:
        if spec.get("behind") and not _after(spec["behind"], released):
            now = time.time()
            result = {"kind": "evicted", "reason": "not_started", "start": now, "end": now, "usage": {},
                      "sandbox": b""}
        else:
            unpack(sandbox, scratch)
            arrived = stamps(scratch)
            result = _run(spec, scratch, claim, released)
            with _RUNNING_LOCK:
                ended_well = result["kind"] == "exit" and not RUNNING.get(claim, {}).get("stopped")
            result["sandbox"] = pack(scratch, arrived)   # what the job made or changed, not its inputs
        result["host"] = platform.node()
        topic = spec.get("topic")
        if topic and len(result["sandbox"]) <= PUSH_LIMIT:
            worker.log_event(topic, {"claim": claim, "result": result})
        return result
    finally:
        with _RUNNING_LOCK:
            RUNNING.pop(claim, None)
            ENDED[claim] = ended_well
            while len(ENDED) > ENDED_KEPT:
                del ENDED[next(iter(ENDED))]
            _RUNNING_LOCK.notify_all()
        shutil.rmtree(scratch, ignore_errors=True)


def _after(claim: str, released) -> bool:
    """Wait until the job of ``claim`` on this worker is over; whether it exited on its
    own (False at once when this task is released meanwhile).  The tasks are submitted
    in order (FIFO), so this one starts after that job's, but should it start first,
    it gives its thread back while it waits (``secede``): that job may need it."""
    from distributed import rejoin, secede
    with _RUNNING_LOCK:
        if claim in ENDED:
            return ENDED[claim]
    secede()
    try:
        with _RUNNING_LOCK:
            while claim not in ENDED:
                if released():
                    return False
                _RUNNING_LOCK.wait(CHECK)
            return ENDED[claim]
    finally:
        rejoin()


def _released(worker, key) -> bool:
    """Has the scheduler let go of this task (its client released it or went away)?"""
    task = worker.state.tasks.get(key)
    return task is None or task.state in ("cancelled", "released", "forgotten")


def _run(spec: dict, scratch: str, claim: str, released) -> dict:
    start = time.time()
    opened = []

    def stream(name, mode):
        if not name:
            return subprocess.DEVNULL
        handle = open(os.path.join(scratch, name), mode)
        opened.append(handle)
        return handle
    try:
        argv = list(spec["argv"])
        if not os.path.isabs(argv[0]):
            argv[0] = os.path.join(scratch, argv[0])
        out = stream(spec.get("stdout"), "wb")
        err = out if spec.get("stderr") and spec.get("stderr") == spec.get("stdout") \
            else stream(spec.get("stderr"), "wb")
        child = _popen(argv, cwd=scratch, stdin=stream(spec.get("stdin"), "rb"), stdout=out, stderr=err,
                       env=dict(spec["env"], _CONDOR_SCRATCH_DIR=scratch, TMPDIR=scratch))
    except (OSError, ValueError, TypeError) as exc:
        return {"kind": "spawn_failed", "errno": getattr(exc, "errno", 0) or 0,
                "message": f"cannot start the job on the Dask worker: {exc}", "start": start,
                "end": time.time()}
    finally:
        for handle in opened:
            handle.close()
    with _RUNNING_LOCK:
        entry = RUNNING.setdefault(claim, {"pid": None, "signals": []})
        entry["pid"], early = child.pid, entry["signals"]
    for signum in early:
        _killpg(child.pid, signum)
    status, usage, dropped = _reap(child.pid, released)
    _killpg(child.pid, signal.SIGKILL)   # whatever the job left behind in its group
    child.returncode = 0                 # reaped above
    outcome = {"start": start, "end": time.time(),
               "usage": {"user": usage.ru_utime, "sys": usage.ru_stime, "maxrss_kb": usage.ru_maxrss}}
    outcome.update({"kind": "evicted", "reason": "released"} if dropped else exit_status(status))
    return outcome


def _popen(argv: list, **streams) -> subprocess.Popen:
    """Start the job in its own process group.  ETXTBSY is tried again: the worker runs
    tasks in threads, and a fork for another task's job may briefly hold the write end of
    the executable just unpacked here until that child execs."""
    for delay in TEXT_BUSY_RETRIES:
        try:
            return subprocess.Popen(argv, process_group=0, close_fds=True, **streams)
        except OSError as exc:
            if exc.errno != errno.ETXTBSY:
                raise
            time.sleep(delay)
    return subprocess.Popen(argv, process_group=0, close_fds=True, **streams)


def _reap(pid: int, released) -> tuple:
    """Wait for the job (at once when it exits); kill it if its task is released.
    (wait status, rusage, whether it was killed for that)."""
    pidfd = os.pidfd_open(pid)
    dropped = False
    try:
        while not select.select([pidfd], [], [], CHECK)[0]:
            if not dropped and released():
                dropped = True
                _killpg(pid, signal.SIGKILL)
    finally:
        os.close(pidfd)
    _, status, usage = os.wait4(pid, 0)
    return status, usage, dropped


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
