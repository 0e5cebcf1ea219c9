"""Copying a job's files in and out of its sandbox (what ``eventcore.transfer`` planned).

- ``stage_input`` copies the planned inputs into the sandbox (the executable
  mode 0755) after checking that they exist and fit in ``RequestDisk``.
- ``snapshot`` / ``send_output``: after the run, the outputs are copied to
  their destinations.  Each file is written to a temporary name beside its
  destination and renamed over it, so a starter killed mid-copy never leaves
  a half-written output; a rerun of the job reuses (and renames) the same
  temporary name.  Nothing is read through a symbolic link that leads out of
  the sandbox, no destination symlink is followed, and the temporary file is
  opened with ``safe_open`` (nothing another user planted is written through).

Failures are ``TransferError``s with HTCondor's hold codes (13 input, 12
output, 34/104 disk) and a reason naming the file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from jobledger.daemons.safe_open import safe_open_fd
from jobledger.eventcore.errors import TransferError, UnsafePathError
from jobledger.eventcore.transfer import (HOLD_INPUT, HOLD_MAX_INPUT, HOLD_MAX_OUTPUT, HOLD_OUTPUT, HOLD_RESOURCES,
                                PRIVATE, SUBCODE_DISK,
                                InputPlan, Output, remap_for)

CHUNK = 1 << 20
COPY_CHUNK = 16 << 20      # bytes copied between two looks at should_stop
MB = 1 << 20


@contextlib.contextmanager
def acting_as(ids: tuple[int, int] | None):
    """Run the block with the job owner's effective uid/gid (``ids``; None: as we
    are), as a root starter must: a transfer then reads and writes only what the
    job's owner may, wherever its paths point."""
    if ids is None:
        yield
        return
    saved = os.getgroups()
    os.setgroups([ids[1]])
    os.setegid(ids[1])
    os.seteuid(ids[0])
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(saved)


def give_to(path: str, ids: tuple[int, int] | None) -> None:
    """Make the owner's (``ids``) everything under ``path``, links not followed."""
    if ids is None:
        return
    os.lchown(path, *ids)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), *ids)


def _input_error(path: str, exc: OSError) -> TransferError:
    return TransferError(HOLD_INPUT, exc.errno or 0,
                         f"reading from file {path}: (errno {exc.errno}) {exc.strerror}")


def _output_error(what: str, path: str, exc: OSError) -> TransferError:
    if isinstance(exc, UnsafePathError):
        return TransferError(HOLD_OUTPUT, errno.EPERM, f"{what} file {path}: {exc.why}")
    return TransferError(HOLD_OUTPUT, exc.errno or 0,
                         f"{what} file {path}: (errno {exc.errno}) {exc.strerror}")


class Stopped(Exception):
    """The starter was told to stop (or lost its startd) while it copied: the
    transfer ends where it is, and the job is not run."""


class Budget:
    """What one transfer may still copy: HTCondor's MAX_TRANSFER_INPUT_MB /
    MAX_TRANSFER_OUTPUT_MB (``max_mb``, a negative or None: no limit; hold code
    32 / 33) and, for inputs, the job's RequestDisk (KB; hold code 34/104).
    ``should_stop`` is asked between chunks; True ends the copy with ``Stopped``."""

    def __init__(self, direction: str, max_mb=None, disk_kb=None, should_stop=None):
        self.direction = direction                    # "upload" (input) or "download" (output)
        self.max_bytes = int(max_mb) * MB if _number(max_mb) and max_mb >= 0 else None
        self.disk_bytes = int(disk_kb * 1024) if _number(disk_kb) else None
        self.should_stop = should_stop
        self.used = 0

    def take(self, path: str, size: int) -> None:
        """Count ``size`` bytes of ``path`` in, or refuse the file (nothing of it copied)."""
        total = self.used + size
        if self.max_bytes is not None and total > self.max_bytes:
            code = HOLD_MAX_INPUT if self.direction == "upload" else HOLD_MAX_OUTPUT
            # file_transfer.cpp's DoUpload words both: the sender names its file, and the
            # limit is the download's when the receiving side set it (outputs).
            raise TransferError(code, 0, f"sending file {path}: max total {self.direction} bytes exceeded "
                                         f"(max={self.max_bytes // MB} MB, this file={size // MB} MB)")
        if self.disk_bytes is not None and total > self.disk_bytes:
            raise TransferError(HOLD_RESOURCES, SUBCODE_DISK,
                                f"the input files ({(total + 1023) // 1024} KB with {path}) do not fit "
                                f"in the job's request_disk ({self.disk_bytes // 1024} KB)")
        self.used = total

    def check(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise Stopped()


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _special(path: str, mode: int, code: int = HOLD_INPUT) -> TransferError:
    """A device, FIFO or socket: never read (it may never end, or block forever)."""
    verb = "reading from" if code == HOLD_INPUT else "writing to"
    return TransferError(code, errno.EINVAL,
                         f"{verb} file {path}: it is {_kind(mode)}; only regular files, directories "
                         "and symbolic links to them are transferred")


def tree_size(path: str) -> int:
    """Bytes a copy of ``path`` reads: a file's size, or the regular files' under a
    directory, symbolic links followed as ``_copy_in`` follows them (a directory met
    again through a link counts once; what cannot be read counts nothing)."""
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        return info.st_size
    total = 0
    seen = {(info.st_dev, info.st_ino)}
    for root, dirs, files in os.walk(path, followlinks=True):
        kept = []
        for name in dirs:
            try:
                here = os.stat(os.path.join(root, name))
            except OSError:
                continue
            if (here.st_dev, here.st_ino) not in seen:
                seen.add((here.st_dev, here.st_ino))
                kept.append(name)
        dirs[:] = kept
        for name in files:
            try:
                entry = os.stat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(entry.st_mode):
                total += entry.st_size
    return total


def input_size(plan: InputPlan) -> int:
    """Bytes the plan will copy; ``TransferError(13)`` naming the first missing input
    or the first that is not a regular file or directory (a device, a FIFO)."""
    total = 0
    for source in plan.sources:
        try:
            info = os.stat(source.path)
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                raise _special(source.path, info.st_mode)
            total += tree_size(source.path)
        except OSError as exc:
            raise _input_error(source.path, exc) from exc
    return total


def stage_input(plan: InputPlan, sandbox: str, request_disk_kb=None, max_mb=None,
                should_stop=None) -> int:
    """Copy the inputs into ``sandbox``, each file with its permission bits (the
    executable then made 0755, as HTCondor's starter does); returns the bytes copied.
    Only regular files and directories are read (links to them followed); every
    file is copied as long as it was when opened, within ``Budget``'s limits."""
    total = input_size(plan)        # every input exists and none is a device or FIFO
    if _number(request_disk_kb) and total > request_disk_kb * 1024:
        raise TransferError(HOLD_RESOURCES, SUBCODE_DISK,
                            f"the input files ({(total + 1023) // 1024} KB) do not fit in the job's "
                            f"request_disk ({int(request_disk_kb)} KB)")
    budget = Budget("upload", max_mb, request_disk_kb, should_stop)
    for source in plan.sources:
        if os.path.isdir(source.path):
            if source.contents:
                for entry in sorted(os.listdir(source.path)):
                    _copy_in(os.path.join(source.path, entry), os.path.join(sandbox, entry), budget, ())
            else:
                _copy_in(source.path, os.path.join(sandbox, source.name), budget, ())
        else:
            _copy_in(source.path, os.path.join(sandbox, source.name), budget, ())
    for source in plan.sources:
        if source.executable:
            target = os.path.join(sandbox, source.name)
            try:
                os.chmod(target, 0o755)
            except OSError as exc:
                raise _input_error(target, exc) from exc
    return budget.used


def _copy_in(src: str, dst: str, budget: Budget, seen: tuple) -> None:
    """``src`` (a file or a directory tree; symbolic links followed) to ``dst``."""
    budget.check()
    try:
        info = os.stat(src)
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            raise _special(src, info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            here = (info.st_dev, info.st_ino)
            if here in seen:
                raise TransferError(HOLD_INPUT, errno.ELOOP,
                                    f"reading from file {src}: a directory that contains itself "
                                    "(a symbolic link loop)")
            os.makedirs(dst, exist_ok=True)
            for entry in sorted(os.listdir(src)):
                _copy_in(os.path.join(src, entry), os.path.join(dst, entry), budget, seen + (here,))
            os.chmod(dst, stat.S_IMODE(info.st_mode) | stat.S_IRWXU)
            return
        source = _open_regular(src)
        try:
            size = os.fstat(source).st_size
            budget.take(src, size)
            if os.path.lexists(dst) and not os.path.isdir(dst):
                os.unlink(dst)          # an earlier input of the same name: replaced, mode and all
            target = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                _copy_exactly(source, target, size, budget)
                os.fchmod(target, stat.S_IMODE(os.fstat(source).st_mode))
            finally:
                os.close(target)
        finally:
            os.close(source)
    except OSError as exc:
        raise _input_error(exc.filename or src, exc) from exc


def _open_regular(path: str, code: int = HOLD_INPUT) -> int:
    """A descriptor of the regular file ``path`` (never blocks: a FIFO is refused, not
    waited on; a device is never read), or ``TransferError``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _special(path, mode, code)
    return fd


def _copy_exactly(src: int, dst: int, size: int, budget: Budget) -> None:
    """``size`` bytes of ``src`` to ``dst``, in chunks with ``budget.check()`` between them:
    a file that grows meanwhile is copied as it was, one that shrinks as it is."""
    left = size
    while left > 0:
        budget.check()
        try:
            done = os.copy_file_range(src, dst, min(left, COPY_CHUNK))
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
            block = os.read(src, min(left, CHUNK))
            view = memoryview(block)
            while view:
                view = view[os.write(dst, view):]
            done = len(block)
        if done == 0:
            return                      # the file got shorter
        left -= done


def snapshot(sandbox: str) -> dict:
    """name -> stamp of every top-level file and symlink of the sandbox."""
    out = {}
    with os.scandir(sandbox) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode):
                out[entry.name] = (info.st_mtime_ns, info.st_size)
            elif stat.S_ISLNK(info.st_mode):
                out[entry.name] = ("link", os.readlink(entry.path))
    return out


def disk_usage_kb(sandbox: str) -> int:
    """KB the sandbox holds (HTCondor's DiskUsage)."""
    total = 0
    for root, _dirs, files in os.walk(sandbox):
        for name in files:
            if root == sandbox and name in PRIVATE:
                continue
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return (total + 1023) // 1024


def inside(sandbox: str, name: str) -> str:
    """The real path of sandbox entry ``name``; ``TransferError(12)`` if it leads out."""
    return _inside(os.path.realpath(sandbox), name)


def _inside(root: str, name: str) -> str:
    """``inside`` with the sandbox's real path ``root`` already known."""
    path = os.path.join(root, name)
    if os.sep not in name and not os.path.islink(path):
        return path                    # a plain top-level entry: nothing to resolve
    real = os.path.realpath(path)
    if real != root and not real.startswith(root + os.sep):
        raise TransferError(HOLD_OUTPUT, errno.EPERM,
                            f"{name} is a symbolic link to {real}, outside the job's scratch "
                            "directory: refused")
    return real


def send_output(job: dict, items: list[Output], sandbox: str, tag: str, max_mb=None,
                should_stop=None) -> list[str]:
    """Copy each output to its destination with its permission bits, within
    MAX_TRANSFER_OUTPUT_MB (``max_mb``); returns the destinations written."""
    written: list[str] = []
    root = os.path.realpath(sandbox)
    budget = Budget("download", max_mb, None, should_stop)
    for item in items:
        source = _inside(root, item.name)
        try:
            info = os.stat(source)
        except OSError as exc:
            raise _output_error("reading from", os.path.join(sandbox, item.name), exc) from exc
        if stat.S_ISDIR(info.st_mode):
            if item.contents:
                for entry in sorted(os.listdir(source)):
                    _send_tree(root, source, entry, remap_for(job, entry), tag, written, budget)
            else:
                _send_tree(root, os.path.dirname(source), os.path.basename(source), item.dest, tag,
                           written, budget)
        else:
            _send_file(source, item.dest, tag, budget)
            written.append(item.dest)
    return written


def _send_tree(root: str, parent: str, entry: str, dest: str, tag: str, written: list,
               budget: Budget) -> None:
    """Entry ``entry`` of the (checked, real) sandbox directory ``parent`` to ``dest``:
    only symlinks need resolving to know they stay in the sandbox."""
    path = os.path.join(parent, entry)
    if os.path.islink(path):
        path = _inside(root, os.path.relpath(path, root))
    if not os.path.isdir(path):
        _send_file(path, dest, tag, budget)
        written.append(dest)
        return
    try:
        os.makedirs(dest, exist_ok=True)
    except OSError as exc:
        raise _output_error("writing to", dest, exc) from exc
    for name in sorted(os.listdir(path)):
        _send_tree(root, path, name, os.path.join(dest, name), tag, written, budget)


def temp_name(dest: str, tag: str) -> str:
    """The temporary name an output is written under before its rename."""
    head, tail = os.path.split(dest)
    return os.path.join(head, f".{tail}.transfer-{tag}")


def _send_file(source: str, dest: str, tag: str, budget: Budget | None = None) -> None:
    """``source`` (a regular file: a FIFO the job made is refused, never waited on) to
    ``dest`` with its permission bits, whole or not at all (temp file + rename)."""
    budget = budget or Budget("download")
    tmp = temp_name(dest, tag)
    try:
        src = _open_regular_nofollow(source)
    except OSError as exc:
        raise _output_error("reading from", source, exc) from exc
    try:
        info = os.fstat(src)
        budget.take(source, info.st_size)
        out = safe_open_fd(tmp, "wb")   # never through another user's symlink
        try:
            _copy_exactly(src, out, info.st_size, budget)
            os.fchmod(out, stat.S_IMODE(info.st_mode))
        finally:
            os.close(out)
        os.rename(tmp, dest)
    except OSError as exc:
        raise _output_error("writing to", dest, exc) from exc
    finally:
        os.close(src)


def _open_regular_nofollow(path: str) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _special(path, mode, HOLD_OUTPUT)
    return fd
