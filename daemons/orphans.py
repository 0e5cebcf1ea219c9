"""A job does not outlive its starter: child subreapers and the launcher's sweep.

A starter runs its job in a process group of its own and kills that group
when the job ends.  A starter that dies first (SIGKILL, a crash) would leave
the job running, unobserved, handed to init.  Instead, the launcher (which
forks every starter) and each starter are *child subreapers*
(``PR_SET_CHILD_SUBREAPER``): a process whose parent dies is handed to the
nearest subreaper above it.  So what a job leaves behind while it runs (a
daemonized grandchild) stays with its starter, and when a starter is gone,
its job and everything left under it become children of the launcher.  Every
child of the launcher that is not a starter is therefore a leftover of a
starter that is gone: ``kill_leftovers`` kills it with its process group, as
HTCondor kills a job's whole process family.  A starter outlives its jobs (it
runs its claim's next one), so when a job ends it does the same with its own
children (``sweep_leftovers``): what the job left running is gone before the
job's outcome is reported.  The schedd, finding the starter
gone without an outcome, records a shadow exception and runs the job again.

Above them all the master is a subreaper too (``reap_adopted``,
``end_descendants``): what loses its starter and launcher both, or a
scheduler-universe starter (the schedd's child, with no launcher), comes to
the master, which kills a job's processes at once and everything at the
pool's stop.  A scheduler-universe job itself (DAGMan) does not even wait for
that: it is spawned with ``PR_SET_PDEATHSIG`` (``daemons.starter.die_with_parent``).
"""

from __future__ import annotations

import os
import signal
import time

from jobledger.daemons.libc import PR_SET_CHILD_SUBREAPER, prctl

__all__ = ["become_subreaper", "end_descendants", "kill_leftovers", "reap_adopted", "sweep_leftovers"]


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); False where that is not possible."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def _children() -> list[int]:
    """This (single-threaded) process's children, from /proc."""
    pid = os.getpid()
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        return []


def kill_leftovers(starters: set[int]) -> list[int]:
    """SIGKILL each child that is not in ``starters``, with its process group
    (never our own); the pids killed.  They are reaped by the caller's ``waitpid``."""
    own_group = os.getpgrp()
    killed = []
    for pid in _children():
        if pid in starters:
            continue
        try:
            group = os.getpgid(pid)     # our child: its group exists while it does
            if group != own_group:
                os.killpg(group, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed.append(pid)
    return killed


def sweep_leftovers(wait: float = 1.0) -> None:
    """Kill every child of this process with its process group and reap them,
    waiting up to ``wait`` seconds for the killed to die (a starter between two
    jobs: its children now are what the last job left behind).  With no child at
    all, alive or exited (``waitpid`` says so: most jobs leave nothing), /proc is
    not read."""
    try:
        os.waitpid(-1, os.WNOHANG)      # (a leftover that already exited: reaped here)
    except ChildProcessError:
        return
    killed = set(kill_leftovers(set()))
    deadline = time.monotonic() + wait
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            killed.discard(pid)
        elif not killed or time.monotonic() >= deadline:
            return
        else:
            time.sleep(0.005)


# -- the master: the pool's last subreaper -------------------------------------------------
# The master is a subreaper too: whatever of the pool loses its parent and has no nearer
# subreaper (the job of a scheduler-universe starter killed with SIGKILL, a startd's launcher
# whose startd died) becomes the master's child instead of init's, so nothing the pool
# started can leave it.  A job's processes carry ``_CONDOR_SCRATCH_DIR`` in their
# environment (daemons.starter.job_environment); daemons, launchers and starters do not.
JOB_MARKER = b"_CONDOR_SCRATCH_DIR="


def all_children() -> list[int]:
    """Children of every thread of this process, from /proc."""
    out: list[int] = []
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/children") as handle:
                out.extend(int(child) for child in handle.read().split())
        except OSError:
            continue
    return out


def _is_job(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return any(item.startswith(JOB_MARKER) for item in handle.read().split(b"\0"))
    except OSError:
        return False


def _kill_with_group(pid: int) -> bool:
    """SIGKILL our child ``pid`` and its process group (never our own); False if it is gone."""
    try:
        group = os.getpgid(pid)
        if group != os.getpgrp():
            os.killpg(group, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _reap(pid: int) -> bool:
    """Reap our child ``pid`` if it exited; True if it did (only that pid: the
    daemons' statuses stay for their Popen objects)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True


def reap_adopted(own: set[int]) -> list[int]:
    """The master's round over the children it did not start (not in ``own``): those
    that exited are reaped; a job's process among them (its starter is gone, or it would
    be the starter's) is killed with its process group.  The pids killed."""
    killed = []
    for pid in all_children():
        if pid in own or _reap(pid):
            continue
        if _is_job(pid) and _kill_with_group(pid):
            killed.append(pid)
    return killed


def end_descendants(own: set[int], timeout: float = 10.0) -> int:
    """At the pool's stop, once the daemons (``own``) are stopped: SIGKILL every other
    process below this one -- each child with its process group, and what they leave
    behind as it is handed up to us -- and reap them, until none is left or ``timeout``
    passes.  How many were killed."""
    deadline = time.monotonic() + timeout
    killed: set[int] = set()
    while True:
        left = [pid for pid in all_children() if pid not in own and not _reap(pid)]
        if not left or time.monotonic() >= deadline:
            return len(killed)
        for pid in left:
            if _kill_with_group(pid):
                killed.add(pid)
        time.sleep(0.01)
