"""DAG input text -> logical lines with their place, INCLUDE and SUBMIT-DESCRIPTION resolved.

DAGMan reads one command per line; ``#`` starts a comment line; keywords
are case-insensitive.  ``INCLUDE file`` inlines another file (same scope);
``SUBMIT-DESCRIPTION name {`` (or ``JOB name {``) opens an inline submit
description that ends at a line holding only ``}``.
"""

from __future__ import annotations

import posixpath
from typing import Callable, NamedTuple

from jobledger.eventcore.errors import DagError

from .model import Where

Reader = Callable[[str], bytes]    # path -> bytes; raises OSError
MAX_DEPTH = 20                     # INCLUDE / SPLICE nesting
MAX_LINE = 1 << 20                 # characters in one line


class Line(NamedTuple):
    """One command.  A tuple, and its own place: ``source`` and ``line`` as in a ``Where``
    (a DAG of 10^5 nodes has several 10^5 lines; the ``Where`` is made only when asked for)."""
    words: tuple[str, ...]
    text: str                      # the whole line, stripped
    source: str
    line: int
    body: str | None = None        # the inline submit description a line opened

    @property
    def where(self) -> Where:
        return Where(self.source, self.line)


def read_text(read: Reader, path: str, where: Where | None) -> str:
    """The file's text; a missing or non-UTF-8 file is a DagError at ``where``."""
    source, line = (where.source, where.line) if where else (path, None)
    try:
        data = read(path)
    except OSError as exc:
        raise DagError(f"cannot read {path!r}: {exc.strerror or exc}", source, line) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DagError(f"not UTF-8 text at byte {exc.start}", path, None) from None


def split_words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def logical_lines(read: Reader, path: str, where: Where | None = None, depth: int = 0,
                  directory: str = "") -> list[Line]:
    """Every command line of ``path`` with INCLUDEs inlined, in order."""
    if depth > MAX_DEPTH:
        raise DagError(f"INCLUDE/SPLICE nested deeper than {MAX_DEPTH}", where.source, where.line)
    text = read_text(read, posixpath.join(directory, path) if directory else path, where)
    raw = text.splitlines()
    out: list[Line] = []
    append, opens = out.append, ("SUBMIT-DESCRIPTION", "JOB", "NODE")
    index, count = 0, len(raw)
    while index < count:          # one pass, no per-line work beyond the split: 10^5 nodes
        stripped = raw[index].strip()
        index += 1
        if not stripped or stripped[0] == "#":
            continue
        if len(stripped) > MAX_LINE:
            raise DagError(f"line longer than {MAX_LINE} characters", path, index)
        words = tuple(stripped.split())
        keyword = words[0].upper()
        if keyword == "INCLUDE":
            if len(words) != 2:
                raise DagError("INCLUDE takes one file name", path, index)
            out += logical_lines(read, words[1], Where(path, index), depth + 1, directory)
            continue
        body = None
        if words[-1][-1] == "{" and keyword in opens:
            body, index = _inline_body(raw, index, Where(path, index))
            last = words[-1][:-1]
            words = words[:-1] + ((last,) if last else ())
        append(Line(words, stripped, path, index, body))
    return out


def _inline_body(raw: list[str], index: int, where: Where) -> tuple[str, int]:
    """The lines up to a line holding only ``}``; the index after it."""
    body = []
    while index < len(raw):
        if raw[index].strip() == "}":
            return "\n".join(body) + "\n", index + 1
        body.append(raw[index])
        index += 1
    raise DagError("inline submit description has no closing '}'", where.source, where.line)
