"""Sleep until a file changes or a pause ends: a reader at the end of a growing file.

On Linux the sleep is a ``poll`` on an inotify descriptor watching the file, so
a reader wakes as the writer appends instead of at its next tick: HTCondor's own
user-log reader waits the same way (inotify where there is one, a plain sleep
elsewhere).  The caller still re-checks the file after each wake, and the pause
stays bounded: a change inotify does not report (the path renamed to another
file, a network file system) is still seen at the next tick.

The descriptor lives only for one wait.  A process may have at most
``fs.inotify.max_user_instances`` of them (128 by default, shared by all of the
user's processes): a reader that kept one would take that limit from the user's
other watchers.  Where inotify is missing or refused, the wait is a sleep.
"""

from __future__ import annotations

import ctypes
import os
import select
import time

__all__ = ["wait_for_change"]

_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0o2000000)
# what a log's reader cares about: appended data, truncation, the file moved or removed
_MASK = 0x2 | 0x4 | 0x8 | 0x400 | 0x800   # IN_MODIFY IN_ATTRIB IN_CLOSE_WRITE IN_DELETE_SELF IN_MOVE_SELF


def _load_libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)    # the interpreter's own C library
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _load_libc()


def _watch(path: str) -> int | None:
    """An inotify descriptor watching ``path``, or None where there is none."""
    if _LIBC is None:
        return None
    fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
    if fd < 0:
        return None                       # the user's instance limit, or no inotify
    if _LIBC.inotify_add_watch(fd, os.fsencode(path), _MASK) < 0:
        os.close(fd)
        return None
    return fd


def wait_for_change(path: str, pause: float, changed) -> bool:
    """Sleep at most ``pause`` seconds, less if ``path`` changes meanwhile; True
    when the wait ended for a change (False: the pause ran out, or no watch).

    ``changed()`` is asked once the watch is set (a change made between the
    caller's last look and the watch is not missed): if it says True, no sleep.
    """
    if pause <= 0:
        return False
    fd = _watch(path)
    if fd is None:
        time.sleep(pause)
        return False
    try:
        if changed():
            return True
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(1, int(pause * 1000))))
    finally:
        os.close(fd)
