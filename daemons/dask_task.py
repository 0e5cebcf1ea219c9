"""What runs inside a Dask worker for the pool: the job itself, and the worker's facts.

These functions are shipped to ``dask worker`` processes (which need
jobledger importable, as they need any task's code).  Nothing here assumes
a file system shared with the pool: the sandbox arrives as tar bytes, the
job runs in a fresh directory under the worker's own ``local_directory``,
and the sandbox goes back as tar bytes with the exit status and usage.

A job is stopped by setting the Dask ``Event`` named ``kill_event``: the
task polls it, kills the job's process group and reports the stop.
"""

from __future__ import annotations

import io
import os
import platform
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time

from daemons.starter import exit_status

POLL = 0.2   # seconds between looks at the job and its kill event


def pack(directory: str) -> bytes:
    """The files under ``directory`` as uncompressed tar bytes (modes and mtimes kept)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in sorted(os.listdir(directory)):
            tar.add(os.path.join(directory, name), arcname=name)
    return buffer.getvalue()


def unpack(data: bytes, directory: str) -> None:
    """Tar bytes into ``directory``; members may not leave it (the ``data`` filter)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(directory, filter="data")


def worker_facts(dask_worker=None) -> dict:
    """The machine facts a worker reports about itself (``Client.run`` passes the worker)."""
    where = getattr(dask_worker, "local_directory", None) or tempfile.gettempdir()
    stat = os.statvfs(where)
    return {"Disk": stat.f_bavail * stat.f_frsize // 1024, "Machine": platform.node(),
            "Arch": _arch(platform.machine()), "OpSys": platform.system().upper(),
            "LocalDirectory": where}


def _arch(machine: str) -> str:
    return {"x86_64": "X86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(machine, machine.upper())


def run_job(spec: dict, sandbox: bytes, kill_event: str) -> dict:
    """Run one job in a fresh sandbox on this worker; its outcome and sandbox back.

    ``spec``: ``argv`` (relative to the sandbox when not absolute), ``env``,
    ``stdin``/``stdout``/``stderr`` (sandbox file names or None).
    """
    from distributed import Event, get_worker
    base = get_worker().local_directory
    scratch = tempfile.mkdtemp(prefix="jobledger_", dir=base)
    try:
        unpack(sandbox, scratch)
        result = _run(spec, scratch, Event(kill_event))
        result["sandbox"] = pack(scratch)
        result["host"] = platform.node()
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(spec: dict, scratch: str, kill) -> dict:
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
        child = subprocess.Popen(argv, cwd=scratch, stdin=stream(spec.get("stdin"), "rb"),
                                 stdout=out, stderr=err, env=dict(spec["env"], _CONDOR_SCRATCH_DIR=scratch,
                                                                  TMPDIR=scratch),
                                 process_group=0, close_fds=True)
    except (OSError, ValueError, TypeError) as exc:
        return {"kind": "spawn_failed", "errno": getattr(exc, "errno", 0) or 0,
                "message": f"cannot start the job on the Dask worker: {exc}", "start": start,
                "end": time.time()}
    finally:
        for handle in opened:
            handle.close()
    killed = None
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if killed is None and kill.wait(POLL):
            killed = "kill"
            _killpg(child.pid, signal.SIGKILL)
    _killpg(child.pid, signal.SIGKILL)   # whatever the job left behind in its group
    child.returncode = 0                 # reaped above
    outcome = {"start": start, "end": time.time(),
               "usage": {"user": usage.ru_utime, "sys": usage.ru_stime, "maxrss_kb": usage.ru_maxrss}}
    outcome.update({"kind": "evicted", "reason": killed} if killed else exit_status(status))
    return outcome


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
