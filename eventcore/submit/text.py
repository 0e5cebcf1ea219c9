"""Bytes of a submit description, include file or item file -> text, within limits.

A submit description is UTF-8 text (a UTF-8 byte-order mark is dropped).
``decode_chunks`` reads the bytes a chunk at a time and stops at the first
thing that is not: a UTF-16/UTF-32 byte-order mark, a NUL byte, bytes that
are not UTF-8, a line longer than ``MAX_LINE_CHARS``, a file longer than
``MAX_FILE_BYTES``.  Each is a ``SubmitError`` naming the file and the line
(and the byte or column), so ``/dev/zero`` or ``/dev/urandom`` given as a
file fail after the first chunk instead of filling memory.

``MAX_JOBS_PER_SUBMISSION`` is HTCondor's default of the schedd setting of
that name; ``jobs.job_list`` refuses a statement that would make more jobs.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable

from jobledger.eventcore.errors import SubmitError

MAX_FILE_BYTES = 64 * 1024 * 1024      # a submit, include or item file
MAX_LINE_CHARS = 1024 * 1024           # one physical line
MAX_JOBS_PER_SUBMISSION = 20000        # HTCondor's default for the schedd setting
CHUNK_BYTES = 1024 * 1024

_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


def too_many_jobs(limit: int) -> str:
    """condor_submit's words when a submission passes the schedd's limit."""
    return ("Failed to create proc: Number of submitted jobs would exceed "
            f"MAX_JOBS_PER_SUBMISSION ({limit})")


class _Tracker:
    """Where in the text we are: line number and the current line's length."""

    def __init__(self, source: str):
        self.source = source
        self.line = 1
        self.column = 0        # characters on the current line so far

    def fail(self, message: str, extra: str = "") -> SubmitError:
        return SubmitError(f"{message}{extra}", self.line, None, self.source)

    def advance(self, piece: str) -> None:
        """Account for decoded ``piece``; raise on a NUL byte or an over-long line."""
        nul = piece.find("\x00")
        if nul >= 0:
            self._move(piece[:nul])
            raise self.fail(f"a NUL byte (column {self.column + 1}): not a text file")
        self._move(piece)

    def _move(self, piece: str) -> None:
        start = 0
        while True:
            end = piece.find("\n", start)
            length = (len(piece) if end < 0 else end) - start
            if self.column + length > MAX_LINE_CHARS:
                raise self.fail(f"line longer than {MAX_LINE_CHARS} characters")
            if end < 0:
                self.column += length
                return
            self.line += 1
            self.column = 0
            start = end + 1


def decode_chunks(chunks: Iterable[bytes], source: str) -> str:
    """The UTF-8 text of ``chunks`` (read lazily), or a ``SubmitError`` naming the place."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    where = _Tracker(source)
    parts: list[str] = []
    total = 0
    first = True
    for chunk in chunks:
        if first:
            for bom, name in _BOMS:
                if chunk.startswith(bom):
                    raise where.fail(f"{name} text (byte-order mark): save it as UTF-8")
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8):]
            first = False
        total += len(chunk)
        if total > MAX_FILE_BYTES:
            raise SubmitError(f"file larger than {MAX_FILE_BYTES} bytes", None, None, source)
        try:
            piece = decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            good = exc.object[:exc.start].decode("utf-8", "replace")
            where.advance(good)
            raise where.fail(f"not UTF-8: byte 0x{exc.object[exc.start]:02x} "
                             f"(column {where.column + 1})") from None
        where.advance(piece)
        parts.append(piece)
    try:
        tail = decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise where.fail("not UTF-8: the file ends inside a character") from None
    parts.append(tail)
    return "".join(parts)


def decode_bytes(data: bytes, source: str) -> str:
    """``decode_chunks`` over bytes already in memory."""
    return decode_chunks((data[i:i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)),
                         source)


__all__ = ["MAX_FILE_BYTES", "MAX_LINE_CHARS", "MAX_JOBS_PER_SUBMISSION", "decode_chunks",
           "decode_bytes", "too_many_jobs"]
