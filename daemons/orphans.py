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
"""

from __future__ import annotations

import ctypes
import os
import signal
import time

__all__ = ["become_subreaper", "kill_leftovers", "sweep_leftovers"]

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); False where that is not possible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


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
    jobs: its children now are what the last job left behind)."""
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
