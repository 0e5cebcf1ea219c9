"""The C library, for the few Linux calls Python's ``os`` lacks: ``prctl`` (a child
subreaper, a parent-death signal, a thread's name) and glibc malloc's knobs
(``daemons.heap``).  Loaded once per process; ``None`` off Linux.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["LIBC", "PR_SET_CHILD_SUBREAPER", "PR_SET_NAME", "PR_SET_PDEATHSIG", "prctl"]

PR_SET_PDEATHSIG = 1          # prctl(2) options
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36


def _load():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)    # the interpreter's own C library
    except OSError:
        return None


LIBC = _load()


def prctl(option: int, arg: int | bytes) -> bool:
    """``prctl(option, arg, 0, 0, 0)``; False where it failed or there is no such call.
    Safe in a forked child before exec (no allocation beyond ctypes' own)."""
    if LIBC is None:
        return False
    try:
        return LIBC.prctl(option, arg, 0, 0, 0) == 0
    except AttributeError:
        return False
