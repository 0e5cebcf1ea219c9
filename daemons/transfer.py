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
import shutil
import stat

from daemons.safe_open import safe_open_fd
from eventcore.errors import TransferError, UnsafePathError
from eventcore.transfer import (HOLD_INPUT, HOLD_OUTPUT, HOLD_RESOURCES, PRIVATE, SUBCODE_DISK,
                                InputPlan, Output, remap_for)

CHUNK = 1 << 20


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


def tree_size(path: str) -> int:
    """Bytes of a file, or of the regular files under a directory (links followed at the top only)."""
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        return info.st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def input_size(plan: InputPlan) -> int:
    """Bytes the plan will copy; ``TransferError(13)`` naming the first missing input."""
    total = 0
    for source in plan.sources:
        try:
            total += tree_size(source.path)
        except OSError as exc:
            raise _input_error(source.path, exc) from exc
    return total


def stage_input(plan: InputPlan, sandbox: str, request_disk_kb=None) -> int:
    """Copy the inputs into ``sandbox``; returns the bytes copied."""
    total = input_size(plan)
    if isinstance(request_disk_kb, (int, float)) and total > request_disk_kb * 1024:
        raise TransferError(HOLD_RESOURCES, SUBCODE_DISK,
                            f"the input files ({(total + 1023) // 1024} KB) do not fit in the job's "
                            f"request_disk ({int(request_disk_kb)} KB)")
    for source in plan.sources:
        try:
            if os.path.isdir(source.path):
                if source.contents:
                    for entry in os.listdir(source.path):
                        _copy_any(os.path.join(source.path, entry), os.path.join(sandbox, entry))
                else:
                    _copy_any(source.path, os.path.join(sandbox, source.name))
            else:
                target = os.path.join(sandbox, source.name)
                shutil.copyfile(source.path, target)
                os.chmod(target, 0o755 if source.executable else 0o644)
        except OSError as exc:
            raise _input_error(exc.filename or source.path, exc) from exc
    return total


def _copy_any(src: str, dst: str) -> None:
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dst)


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


def send_output(job: dict, items: list[Output], sandbox: str, tag: str) -> list[str]:
    """Copy each output to its destination; returns the destinations written."""
    written: list[str] = []
    root = os.path.realpath(sandbox)
    for item in items:
        source = _inside(root, item.name)
        try:
            info = os.stat(source)
        except OSError as exc:
            raise _output_error("reading from", os.path.join(sandbox, item.name), exc) from exc
        if stat.S_ISDIR(info.st_mode):
            if item.contents:
                for entry in sorted(os.listdir(source)):
                    _send_tree(root, source, entry, remap_for(job, entry), tag, written)
            else:
                _send_tree(root, os.path.dirname(source), os.path.basename(source), item.dest, tag,
                           written)
        else:
            _send_file(source, item.dest, tag)
            written.append(item.dest)
    return written


def _send_tree(root: str, parent: str, entry: str, dest: str, tag: str, written: list) -> None:
    """Entry ``entry`` of the (checked, real) sandbox directory ``parent`` to ``dest``:
    only symlinks need resolving to know they stay in the sandbox."""
    path = os.path.join(parent, entry)
    if os.path.islink(path):
        path = _inside(root, os.path.relpath(path, root))
    if not os.path.isdir(path):
        _send_file(path, dest, tag)
        written.append(dest)
        return
    try:
        os.makedirs(dest, exist_ok=True)
    except OSError as exc:
        raise _output_error("writing to", dest, exc) from exc
    for name in sorted(os.listdir(path)):
        _send_tree(root, path, name, os.path.join(dest, name), tag, written)


def temp_name(dest: str, tag: str) -> str:
    """The temporary name an output is written under before its rename."""
    head, tail = os.path.split(dest)
    return os.path.join(head, f".{tail}.transfer-{tag}")


def _send_file(source: str, dest: str, tag: str) -> None:
    """``source`` to ``dest``, whole or not at all (temp file + rename)."""
    tmp = temp_name(dest, tag)
    try:
        src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise _output_error("reading from", source, exc) from exc
    try:
        out = safe_open_fd(tmp, "wb")   # never through another user's symlink
        try:
            _copy_fd(src, out)
        finally:
            os.close(out)
        os.rename(tmp, dest)
    except OSError as exc:
        raise _output_error("writing to", dest, exc) from exc
    finally:
        os.close(src)


def _copy_fd(src: int, dst: int) -> None:
    try:
        while os.copy_file_range(src, dst, 1 << 30):
            pass
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
        os.lseek(src, 0, os.SEEK_SET)
        os.lseek(dst, 0, os.SEEK_SET)
        os.ftruncate(dst, 0)
        _copy_plain(src, dst)


def _copy_plain(src: int, dst: int) -> None:
    while block := os.read(src, CHUNK):
        view = memoryview(block)
        while view:
            view = view[os.write(dst, view):]
