"""Open files without being tricked by another user (HTCondor's safe_open, ssh's StrictModes).

A personal pool has one owner, but a job's user log or output file may be in
a directory other users can write (mode 0777, or a sticky /tmp on a kernel
that does not protect symlinks).  There another user can plant, under the
name the pool is about to open, a symlink to a file of the owner's (the pool
would overwrite it) or a file of their own (they would read the output).

``safe_open(path, "ab" | "wb" | "rb", owner=uid)`` opens like ``open`` when
the directory is the owner's (or root's) and no one else can write it.  In a
directory others can write it refuses, with ``UnsafePathError``:

- a symlink the owner does not own (the final component is opened with
  ``O_NOFOLLOW``, so one planted after the check fails too);
- an existing file the owner does not own, or one with other hard links;

and it truncates ("wb") only after those checks, so a planted hard link to
the owner's file is never emptied.  ``check_owned_dir`` is the StrictModes
check of a directory the pool keeps its state in (LOCAL_DIR).
"""

from __future__ import annotations

import errno
import os
import stat

from jobledger.eventcore.errors import UnsafePathError

_FLAGS = {
    "rb": os.O_RDONLY,
    "r": os.O_RDONLY,
    "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "a": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "wb": os.O_WRONLY | os.O_CREAT,          # truncated after the checks
    "w": os.O_WRONLY | os.O_CREAT,
    "r+b": os.O_RDWR,
}


def others_can_write(st: os.stat_result, owner: int) -> bool:
    """Whether someone other than ``owner`` (or root) can change entries of a directory."""
    return bool(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)) or st.st_uid not in (owner, 0)


def safe_open_fd(path: str, mode: str = "ab", owner: int | None = None, perms: int = 0o644) -> int:
    """A file descriptor for ``path`` opened as ``mode`` (see the module docstring)."""
    owner = os.geteuid() if owner is None else owner
    flags = _FLAGS[mode] | os.O_CLOEXEC
    directory = os.path.dirname(os.path.abspath(path))
    shared = others_can_write(os.stat(directory), owner)
    if shared:
        try:
            link = os.lstat(path)
        except FileNotFoundError:
            link = None
        if link is not None and stat.S_ISLNK(link.st_mode) and link.st_uid not in (owner, 0):
            raise UnsafePathError(path, f"a symlink owned by uid {link.st_uid} in {directory}, "
                                        "a directory others can write: not followed")
        if link is None or not stat.S_ISLNK(link.st_mode):
            flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, perms)
    except OSError as exc:
        if exc.errno == errno.ELOOP and shared:
            raise UnsafePathError(path, f"became a symlink in {directory}, a directory others "
                                        "can write: not followed") from None
        raise
    try:
        if shared:
            _check_opened(fd, path, directory, owner)
        if mode.startswith("w"):
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_opened(fd: int, path: str, directory: str, owner: int) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return              # /dev/null and other devices are no one's to plant
    if st.st_uid not in (owner, 0):
        raise UnsafePathError(path, f"owned by uid {st.st_uid} in {directory}, a directory others "
                                    "can write: not used")
    if st.st_nlink > 1:
        raise UnsafePathError(path, f"has {st.st_nlink} hard links in {directory}, a directory "
                                    "others can write: not used")


def safe_open(path: str, mode: str = "ab", owner: int | None = None, perms: int = 0o644):
    """``safe_open_fd`` as a file object (binary for "ab"/"wb"/"rb", text otherwise)."""
    fd = safe_open_fd(path, mode, owner, perms)
    return os.fdopen(fd, mode)


def check_owned_dir(path: str, owner: int | None = None, what: str = "directory") -> None:
    """StrictModes for a directory the pool keeps state in: it must not be a
    symlink, must be owned by ``owner`` (or root) and writable by no one else."""
    owner = os.geteuid() if owner is None else owner
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(path, f"the {what} is a symlink")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(path, f"the {what} is not a directory")
    if st.st_uid not in (owner, 0):
        raise UnsafePathError(path, f"the {what} is owned by uid {st.st_uid}, not by uid {owner}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafePathError(path, f"the {what} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})")


__all__ = ["safe_open", "safe_open_fd", "check_owned_dir", "others_can_write"]


def private_layout(local_dir, subdirs, files=(), owner: int | None = None) -> None:
    """Make LOCAL_DIR and ``subdirs`` in it (mode 0700 when new), then refuse
    (``UnsafePathError``) the layout if LOCAL_DIR or any of them is a symlink,
    another user's or writable by others, or if any of ``files`` that exists
    is a symlink or another user's.  An existing LOCAL_DIR is never chmod'ed
    into shape: what someone else could have touched is refused, not trusted."""
    local_dir = os.fspath(local_dir)
    owner = os.geteuid() if owner is None else owner
    if not os.path.lexists(local_dir):
        os.makedirs(local_dir, mode=0o700, exist_ok=True)
        os.chmod(local_dir, 0o700)
    check_owned_dir(local_dir, owner, "LOCAL_DIR")
    for sub in subdirs:
        path = os.path.join(local_dir, sub)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        check_owned_dir(path, owner, f"LOCAL_DIR's {sub}/")
    for name in files:
        path = os.path.join(local_dir, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePathError(path, f"LOCAL_DIR's {name} is a symlink")
        if st.st_uid not in (owner, 0):
            raise UnsafePathError(path, f"LOCAL_DIR's {name} is owned by uid {st.st_uid}, not by uid {owner}")
