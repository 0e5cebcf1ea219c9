"""Thread names the kernel shows (``top -H``, ``ps -L``, ``/proc/PID/task/TID/comm``).

Python before 3.14 keeps a thread's name to itself, so from outside every
thread of a daemon is called ``python``.  ``name_process(name)`` names the
calling thread (a process's main thread: the daemon) and makes every thread
started afterwards take its Python name, ours and libraries' alike, so a
thread that spins can be told by name from outside (tests/pool/test_idle.py).
The kernel keeps the first 15 bytes of a name.
"""

from __future__ import annotations

import re
import sys
import threading

from jobledger.daemons.libc import PR_SET_NAME, prctl

NAME_BYTES = 15       # TASK_COMM_LEN - 1
_DEFAULT = re.compile(r"Thread-\d+")   # what threading calls a thread nobody named


def name_this_thread(name: str) -> None:
    """Give the calling thread ``name`` as the kernel shows it (Linux; elsewhere nothing)."""
    prctl(PR_SET_NAME, name.encode("utf-8", "replace")[:NAME_BYTES])


def _name_on_start(frame, event, arg) -> None:
    """Profile hook of a new thread: runs once, before its target, then removes itself."""
    sys.setprofile(None)
    thread = threading.current_thread()
    if _DEFAULT.match(thread.name) and type(thread) is not threading.Thread:
        thread.name = type(thread).__name__     # a library's thread: its class says what it is
    name_this_thread(thread.name)


def name_process(name: str) -> None:
    """Name this (main) thread ``name``, and every thread started from now on by its own name."""
    name_this_thread(name)
    threading.setprofile(_name_on_start)
