"""Files written whole or not at all: a temporary file beside the target, synced, then
renamed over it, so a reader or a crash sees the old contents or the new, never part."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_whole(path: Path, data: bytes, mode: int = 0o666) -> None:
    """``path`` holds ``data`` whole, or is left as it was and ``OSError`` says why (the
    temporary file is removed).  A new file gets ``mode`` less the umask; the temporary
    is never opened through a symbolic link."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
