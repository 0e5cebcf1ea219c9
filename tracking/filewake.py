"""Sleep until a file changes or a pause ends: a reader at the end of a growing file.

On Linux the sleep is a ``poll`` on an inotify descriptor watching the file, so
a reader wakes as the writer appends instead of at its next tick: HTCondor's own
user-log reader waits the same way (inotify where there is one, a plain sleep
elsewhere).  The caller still re-checks the file after each wake, and the pause
stays bounded: a change inotify does not report (the path renamed to another
file, a network file system) is still seen at the next tick.

A reader that waits at the end again and again keeps its descriptor between waits
(``FileWatch``), as HTCondor's reader keeps its trigger's: closing an inotify
descriptor waits for the kernel's grace period (10-20 ms of sleep, no CPU), and a
descriptor closed after each wake put that pause between an append and the reader
seeing it.  Events that came while the reader was busy are read off before the
next wait, so a wake always means a change since the reader last looked.

A process may have at most ``fs.inotify.max_user_instances`` descriptors (128 by
default, shared by all of the user's processes): the readers of one process keep
at most ``KEPT_WATCHES`` between waits; beyond that, and for ``wait_for_change``,
a descriptor lives for one wait.  Where inotify is missing or refused, the wait is
a sleep.
"""

from __future__ import annotations

import ctypes
import os
import select
import threading
import time

__all__ = ["FileWatch", "wait_for_change"]

KEPT_WATCHES = 8     # descriptors the readers of one process keep between their waits

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
        return _wait_on(fd, pause, changed)
    finally:
        os.close(fd)


def _wait_on(fd: int, pause: float, changed) -> bool:
    if changed():
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(1, int(pause * 1000))))


def _drain(fd: int) -> None:
    """Read off the events already queued (the descriptor is non-blocking)."""
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


_kept_lock = threading.Lock()
_kept = 0


class FileWatch:
    """``wait_for_change`` for one reader of ``path``: its descriptor is made at the
    first wait and kept for the next ones, until ``close()`` (one of the process's
    ``KEPT_WATCHES``; when they are all taken, each wait makes and closes its own)."""

    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None

    def wait(self, pause: float, changed) -> bool:
        """As ``wait_for_change(path, pause, changed)``."""
        if pause <= 0:
            return False
        if self._fd is None:
            if not _take():
                return wait_for_change(self.path, pause, changed)
            self._fd = _watch(self.path)
            if self._fd is None:
                _give_back()
                time.sleep(pause)
                return False
        else:
            _drain(self._fd)
        return _wait_on(self._fd, pause, changed)

    def close(self) -> None:
        """Close the descriptor (a pause of the kernel's: not on a reader's way to an event)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            _give_back()
            os.close(fd)


def _take() -> bool:
    global _kept
    with _kept_lock:
        if _kept >= KEPT_WATCHES:
            return False
        _kept += 1
        return True


def _give_back() -> None:
    global _kept
    with _kept_lock:
        _kept -= 1
