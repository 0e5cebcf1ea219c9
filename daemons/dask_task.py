"""What runs inside a Dask worker for the pool: the job itself, its signals, the worker's facts.

This code is shipped to ``dask worker`` processes (which need jobledger
importable, as they need any task's code).  Jobs reach a worker through
``JobRunner``, a Dask actor the Dask startd makes on it once and then calls
directly, one call per job: the scheduler schedules no task per job, and the
worker keeps no task state for one.  The calls go through a handler of the
worker's own (``HANDLER``, added by the runner), not Dask's ``actor_execute``,
which pickles every answer: a job's outcome crosses the connection in the
reply's msgpack message as it is (``wire_safe``), pickled only when it cannot.  Nothing here assumes a file system shared
with the pool: the sandbox arrives as tar bytes, the job runs in a fresh
directory under the worker's own ``local_directory``, and what the job made or
changed there goes back as tar bytes with the exit status and usage (an empty
sandbox is no bytes at all).

Instructions reach the running job through the runner's ``signal`` (the job's
process group: SIGTERM vacate, SIGKILL kill, SIGSTOP/SIGCONT suspend and
continue) and ``cancel`` (a job not started never starts, one running is
killed).  A signal that arrives before the job started is kept and sent once
it has.  A runner that was released -- the Dask startd let it go, or its
connection went away with it -- kills its jobs: nobody waits for them.
"""

from __future__ import annotations

import errno
import io
import os
import platform
import queue
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

CHECK = 1.0   # seconds between looks at whether a job is still wanted
TEXT_BUSY_RETRIES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)   # seconds before each new try (see _popen)

HANDLER = "jobledger_runner_call"   # the worker's handler that calls its runner (``runner_call``)
WIRE_INLINE = 1 << 20   # bytes sent inside a call's or an answer's message; larger ones apart
ENDED_KEPT = 64   # claims whose ends this worker remembers (for the jobs queued behind them)
IDLE_THREAD = 60.0   # seconds a job thread waits for another job before it ends
STOPS = (signal.SIGTERM, signal.SIGKILL, signal.SIGQUIT)

# This worker's running jobs: claim -> {"pid": process group or None, "signals": not yet sent,
# "stopped": a stop signal was sent}.  ENDED: claim -> whether its job exited on its own.
RUNNING: dict[str, dict] = {}
ENDED: dict[str, bool] = {}
CANCELLED: dict[str, bool] = {}   # claims whose jobs are not to run (``cancel_job``)
HELD: set[str] = set()            # claims whose jobs this worker holds, running or queued
# Jobs queued behind another: claim -> (the claim it waits for, the event that wakes it).
# A job's end wakes only the job behind it, not every waiting thread.
WAITING: dict[str, tuple[str, threading.Event]] = {}
_RUNNING_LOCK = threading.Lock()

# Job threads (``in_job_thread``): idle ones wait on ``_HANDOFF`` for the next job.
_THREADS_LOCK = threading.Lock()
_IDLE_THREADS = 0
_HANDOFF: queue.SimpleQueue = queue.SimpleQueue()


def in_job_thread(work) -> None:
    """Run ``work()`` in a thread of its own: an idle one left by an earlier job, else a
    new one.  Every job has a thread (a job queued behind another waits in it, however
    many are queued), and starting a thread per job is most of a short job's cost here."""
    global _IDLE_THREADS
    with _THREADS_LOCK:
        if _IDLE_THREADS:
            _IDLE_THREADS -= 1
            _HANDOFF.put(work)
            return
    threading.Thread(target=_job_thread, args=(work,), name="jobledger-job", daemon=True).start()


def _job_thread(work) -> None:
    """Run ``work``, then the jobs handed over while idle, until none comes for IDLE_THREAD s."""
    global _IDLE_THREADS
    while work is not None:
        work()
        with _THREADS_LOCK:
            _IDLE_THREADS += 1
        try:
            work = _HANDOFF.get(timeout=IDLE_THREAD)
        except queue.Empty:
            with _THREADS_LOCK:     # one may have been handed over just now
                try:
                    work = _HANDOFF.get_nowait()
                except queue.Empty:
                    _IDLE_THREADS -= 1
                    work = None


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
                _wake_behind(claim)
            entry["signals"].append(signum)
            return False
        pid = entry["pid"]
    _killpg(pid, signum)
    return True


class JobRunner:
    """The pool's jobs on one worker: a Dask actor (``client.submit(JobRunner, actor=True)``)
    that the Dask startd calls directly over its connection to the worker.

    A job is one ``run`` call and its answer, not a task: the scheduler sees the actor
    made once, not each job, and the worker keeps no task state per job.  The actor
    lives while the Dask startd holds it (it is released when no claim is left on the
    worker); released, or with its client gone, the jobs it runs are killed.
    """

    def __init__(self):
        from distributed import get_worker
        self.worker = get_worker()
        self.key = self.worker.get_current_task()
        worker = self.worker

        async def jobledger_runner_call(actor: str = "", function: str = "", args=()) -> dict:
            return await runner_call(worker, actor, function, args)
        worker.handlers[HANDLER] = jobledger_runner_call

    def _gone(self) -> bool:
        return self.key not in self.worker.state.actors

    async def run(self, spec: dict, sandbox: bytes, claim: str) -> dict:
        """Run one job (``run_job``) in a thread of its own (``in_job_thread``): a job queued
        behind another waits there, and the worker's event loop is never held."""
        import asyncio
        loop = asyncio.get_running_loop()
        answer = loop.create_future()
        gone, where = self._gone, self.worker.local_directory

        def work():
            left: list[str] = []
            try:
                result = run_job(spec, sandbox, claim, where, lambda: claim in CANCELLED or gone(), left)
            except BaseException as exc:  # noqa: BLE001 - the call's answer says it
                loop.call_soon_threadsafe(_settle, answer, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, answer, result, None)
            for scratch in left:    # (once the answer is on its way: a removal may wait for the disk)
                remove_scratch(scratch)
        in_job_thread(work)
        return await answer

    async def signal(self, claim: str, signum: int) -> bool:
        return signal_job(claim, signum)

    async def cancel(self, claim: str) -> None:
        cancel_job(claim)


CALLS = ("run", "signal", "cancel")


async def runner_call(worker, actor: str = "", function: str = "", args=()) -> dict:
    """The worker's handler ``HANDLER``: ``function`` of the runner ``actor`` on ``worker``,
    called with ``args``.  ``{"status": "OK", "result": ...}`` (the result as it is when
    msgpack carries it, else serialized apart), ``{"status": "error", "exception": ...}``,
    or ``{"status": "gone"}`` when the worker holds no such runner (released, or made
    before the worker restarted)."""
    from distributed.protocol import to_serialize
    runner = worker.state.actors.get(actor)
    if not isinstance(runner, JobRunner) or function not in CALLS:
        return {"status": "gone"}
    try:
        result = await getattr(runner, function)(*args)
    except Exception as exc:  # noqa: BLE001 - the caller's to raise
        return {"status": "error", "exception": to_serialize(exc)}
    return {"status": "OK", "result": result if wire_safe(result) else to_serialize(result)}


def wire_safe(value, depth: int = 0) -> bool:
    """Whether ``value`` crosses Dask's connection in its msgpack message unchanged (the
    reader gets lists as tuples): None, bools, 64-bit ints, floats, text that encodes
    as UTF-8, bytes up to WIRE_INLINE, and lists and str-keyed dicts of those."""
    if value is None or isinstance(value, (bool, float)):
        return True
    if isinstance(value, int):
        return -2**63 <= value < 2**64
    if isinstance(value, str):
        return value.isascii() or _utf8(value)
    if isinstance(value, bytes):
        return len(value) <= WIRE_INLINE
    if depth >= 8:
        return False
    if isinstance(value, (list, tuple)):
        return all(wire_safe(item, depth + 1) for item in value)
    if isinstance(value, dict):     # (not a dict Dask's reader would take for one of its own)
        return "__Serialized__" not in value and "__Pickled__" not in value and \
            all(isinstance(key, str) and wire_safe(key) and wire_safe(item, depth + 1)
                for key, item in value.items())
    return False


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:      # (lone surrogates: file names not in UTF-8)
        return False
    return True


def _settle(answer, result, exc) -> None:
    if not answer.done():    # (not if the call was given up meanwhile)
        if exc is not None:
            answer.set_exception(exc)
        else:
            answer.set_result(result)


def held_jobs() -> list[str]:
    """The claims whose jobs this worker holds now, running or queued (``Client.run``)."""
    with _RUNNING_LOCK:
        return sorted(HELD)


def cancel_job(claim: str) -> None:
    """The job of ``claim`` is not to run here, or to run no more: one not started never
    does (nor those queued behind it), one running is killed."""
    with _RUNNING_LOCK:
        CANCELLED[claim] = True
        while len(CANCELLED) > 4 * ENDED_KEPT:
            del CANCELLED[next(iter(CANCELLED))]
        entry = RUNNING.get(claim)
        pid = entry.get("pid") if entry is not None else None
        if entry is not None:
            entry["stopped"] = True
        waiting = WAITING.get(claim)
        if waiting is not None:
            waiting[1].set()
    if pid is not None:
        _killpg(pid, signal.SIGKILL)


def run_job(spec: dict, sandbox: bytes, claim: str, where: str, released, left: list | None = None) -> dict:
    """Run one job in a fresh sandbox under ``where``; its outcome and sandbox back.

    ``spec``: ``argv`` (relative to the sandbox when not absolute), ``env``,
    ``stdin``/``stdout``/``stderr`` (sandbox file names or None), ``behind``.
    With ``behind`` (the claim of the job this one was queued behind, on this
    worker) the job runs only once that job exited on its own: one that was
    stopped, lost or never ran here leaves this one not started.  ``released()``
    says the job is no longer wanted (cancelled, or its runner gone): one not
    started is not, one running is killed.  With ``left``, the job's directory is
    put there for the caller to remove (``remove_scratch``), not removed here.
    """
    with _RUNNING_LOCK:
        HELD.add(claim)
    scratch = tempfile.mkdtemp(prefix="jobledger_", dir=where)
    ended_well = False
    result: dict
    try:
        if released() or (spec.get("behind") and not _after(spec["behind"], claim, released)):
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
        return result
    finally:
        with _RUNNING_LOCK:
            RUNNING.pop(claim, None)
            HELD.discard(claim)
            ENDED[claim] = ended_well
            while len(ENDED) > ENDED_KEPT:
                del ENDED[next(iter(ENDED))]
            _wake_behind(claim)
        if left is None:
            remove_scratch(scratch)
        else:
            left.append(scratch)


def remove_scratch(scratch: str) -> None:
    try:
        os.rmdir(scratch)        # (most jobs leave nothing behind: one call, not a walk)
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)


def _after(ahead: str, claim: str, released) -> bool:
    """Wait until the job of ``ahead`` on this worker is over; whether it exited on its
    own (False at once when the job of ``claim``, queued behind it, is released meanwhile)."""
    wake = threading.Event()
    with _RUNNING_LOCK:
        WAITING[claim] = (ahead, wake)
    try:
        while True:
            with _RUNNING_LOCK:
                if ahead in ENDED:
                    return ENDED[ahead]
            if released():
                return False
            wake.wait(CHECK)
            wake.clear()     # (the state is looked at again before the next wait)
    finally:
        with _RUNNING_LOCK:
            WAITING.pop(claim, None)


def _wake_behind(claim: str) -> None:
    """(Under the lock.)  The job of ``claim`` ended: the job waiting behind it looks."""
    for ahead, wake in WAITING.values():
        if ahead == claim:
            wake.set()


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
        if claim in CANCELLED:
            early = [*early, signal.SIGKILL]
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
