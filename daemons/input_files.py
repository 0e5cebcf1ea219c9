"""Reading a file a user names, within bounds: the one way every command reads one.

A submit file, an include or item file, a DAG file, a history file, a ClassAd
file or standard input may be anything: ``/dev/zero`` or ``/dev/urandom``
(endless), a FIFO nobody writes (a read waits for ever), a directory, a file
of gigabytes.  Here a file is

- opened non-blocking, and refused unless it is a regular file or a
  character device (``/dev/null``, a terminal): a FIFO, socket or directory
  is an ``OSError`` (EINVAL, "not a regular file") at once;
- read a chunk at a time and refused past ``limit`` bytes (EFBIG), so an
  endless device stops after ``limit`` bytes, not when memory runs out;
- as text (``read_text``), decoded by ``eventcore.submit.text.decode_chunks``,
  which stops at the first chunk holding a NUL byte, bytes that are not
  UTF-8, or a line past ``MAX_LINE_CHARS``: ``/dev/zero`` fails after one
  chunk, with a ``SubmitError`` naming the file, line and column.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from jobledger.eventcore.submit.text import CHUNK_BYTES, MAX_FILE_BYTES, decode_chunks


def open_input(path: str) -> BinaryIO:
    """``path`` opened for reading; a FIFO, socket or directory is refused without waiting."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if stat.S_ISCHR(mode):        # a terminal read non-blocking would answer "try again"
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def chunks(stream: BinaryIO, limit: int = MAX_FILE_BYTES, name: str = "") -> Iterator[bytes]:
    """The stream's bytes a chunk at a time; an ``OSError`` (EFBIG) once past ``limit``."""
    total = 0
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            return
        total += len(chunk)
        if total > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", name or None)
        yield chunk


def read_bytes(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them."""
    with open_input(path) as stream:
        return b"".join(chunks(stream, limit, path))


def read_text(path: str, shown: str | None = None) -> str:
    """The UTF-8 text of ``path`` (``shown`` names it in errors): an ``OSError`` if it cannot
    be read, a ``SubmitError`` at the first NUL, non-UTF-8 byte or over-long line."""
    with open_input(path) as stream:
        return decode_chunks(chunks(stream, MAX_FILE_BYTES + 1, path), shown or path)


def read_stream_text(stream, shown: str) -> str:
    """``read_text`` of an open stream (standard input: its bytes, or the characters of a
    text stream that has no byte buffer)."""
    binary = getattr(stream, "buffer", None)
    if binary is None and isinstance(stream.read(0), str):
        binary = _Encoded(stream)
    return decode_chunks(chunks(binary or stream, MAX_FILE_BYTES + 1, shown), shown)


class _Encoded:
    """A text stream read as UTF-8 bytes."""

    def __init__(self, stream):
        self.stream = stream

    def read(self, size: int) -> bytes:
        return self.stream.read(size).encode("utf-8", "surrogateescape")
