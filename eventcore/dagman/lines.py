"""DAG input text -> logical lines with their place, INCLUDE and SUBMIT-DESCRIPTION resolved.

DAGMan reads one command per line; ``#`` starts a comment line; keywords
are case-insensitive.  ``INCLUDE file`` inlines another file (same scope);
``SUBMIT-DESCRIPTION name {`` (or ``JOB name {``, and FINAL, SERVICE and
PROVISIONER nodes) opens an inline submit description that ends at a line
holding only ``}``; ``@=TAG`` in place of ``{`` opens one that ends at a line
``@TAG``, as HTCondor's DAG parser reads them (dag_parser.cpp).  In the body,
blank lines and ``#`` or ``//`` comments are dropped; the closing line may
carry a node's options (``} DIR d NOOP``, ``@TAG DONE``).
"""

from __future__ import annotations

import posixpath
from typing import Callable, Iterator, NamedTuple

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


# The commands DAGMan reads in its first pass (they make nodes or hold a submit description).
FIRST_PASS = frozenset({"JOB", "NODE", "FINAL", "PROVISIONER", "SERVICE", "SUBDAG", "SPLICE",
                        "SUBMIT-DESCRIPTION"})
_OPENS = frozenset({"SUBMIT-DESCRIPTION", "JOB", "NODE", "FINAL", "SERVICE", "PROVISIONER"})
# Keywords as written most often, to their upper case (one shared string, not one per line).
KEYWORDS = {spelling: word for word in ("JOB", "NODE", "FINAL", "PARENT", "VARS", "RETRY", "SCRIPT",
                                        "PRIORITY", "CATEGORY", "INCLUDE", "SPLICE", "DONE")
            for spelling in (word, word.lower(), word.title())}
# What a first-pass keyword, INCLUDE or a comment begins with: any other line is kept whole.
_LEADS = frozenset("#" + "".join(word[0] + word[0].lower() for word in FIRST_PASS | {"INCLUDE"}))

Command = tuple[str, str, int, "list[str] | None"]   # a second-pass command: text, source, line, its words
FirstPass = Callable[[str, Line], None]
Now = Callable[[str, str, int, list], bool]          # text, source, line, words -> applied?


def scan(read: Reader, path: str, first: FirstPass, rest: list[Command], now: Now | None = None,
         where: Where | None = None, depth: int = 0, directory: str = "") -> None:
    """DAGMan's first pass over ``path``, INCLUDEs inlined: a first-pass command goes to
    ``first(keyword, line)``; any other is applied at once by ``now`` if it can be (the
    nodes it names are made, and no line before it waits), else appended to ``rest``.

    Applying a line at once is what the second pass would do with it: the nodes it names
    exist and every line before it is applied, in order; once one line waits (its node
    is not made yet, or it is not one ``now`` takes), every later line waits too.  So a
    DAG written nodes before the lines that name them is read in one pass.  One loop with
    as little per line as can be: a DAG of 10^5 nodes has 4 * 10^5 lines."""
    if depth > MAX_DEPTH:
        assert where is not None
        raise DagError(f"INCLUDE/SPLICE nested deeper than {MAX_DEPTH}", where.source, where.line)
    text = read_text(read, posixpath.join(directory, path) if directory else path, where)
    lines = enumerate(text.splitlines(), 1)
    append, keywords, new, leads, long = rest.append, KEYWORDS, tuple.__new__, _LEADS, len(text) > MAX_LINE
    for index, stripped in lines:
        stripped = stripped.strip()
        if not stripped:
            continue
        if long and len(stripped) > MAX_LINE:
            raise DagError(f"line longer than {MAX_LINE} characters", path, index)
        if stripped[0] not in leads:          # no first-pass keyword, no INCLUDE, no comment
            if rest or now is None:
                append((stripped, path, index, None))
            else:
                words = stripped.split()
                if not now(stripped, path, index, words):
                    append((stripped, path, index, words))
            continue
        if stripped[0] == "#":
            continue
        words = stripped.split()
        keyword = keywords.get(words[0]) or words[0].upper()
        if keyword not in FIRST_PASS:
            if keyword == "INCLUDE":
                if len(words) != 2:
                    raise DagError("INCLUDE takes one file name", path, index)
                scan(read, words[1], first, rest, now, Where(path, index), depth + 1, directory)
            elif rest or now is None or not now(stripped, path, index, words):
                append((stripped, path, index, words))
            continue
        if '"' in stripped:
            words = quoted_words(stripped, path, index)
        body = None
        if keyword in _OPENS:
            end = _inline_end(words)
            if end is not None:
                body, after = _inline_body(lines, end, Where(path, index))
                words = words[:2] + after
            elif words[-1][-1:] == "{":           # ``name{``: the brace against the name
                body, after = _inline_body(lines, "}", Where(path, index))
                last = words[-1][:-1]
                words = words[:-1] + ([last] if last else []) + after
        first(keyword, new(Line, (tuple(words), stripped, path, index, body)))


def quoted_words(text: str, path: str, index: int) -> list[str]:
    """The words of a node line whose submit file or DIR is in double quotes (as BPS writes
    ``JOB name "jobs/label/name.sub"``): HTCondor's DAGMan takes a word that starts with a
    quote up to the next quote, spaces and all, without the quotes."""
    words: list[str] = []
    rest = text
    while True:
        rest = rest.lstrip()
        if not rest:
            return words
        if rest[0] == '"':
            end = rest.find('"', 1)
            if end < 0:
                raise DagError("a quoted file name has no closing quote", path, index)
            words.append(rest[1:end])
            rest = rest[end + 1:]
        else:
            word = rest.split(None, 1)
            words.append(word[0])
            rest = word[1] if len(word) > 1 else ""


def _inline_end(words: list[str]) -> str | None:
    """The line that closes the inline description the third word opens: ``}`` for ``{``,
    ``@TAG`` for ``@=TAG``; None when the line opens none."""
    if len(words) < 3:
        return None
    opener = words[2]
    if opener[:1] == "{":
        return "}"
    if opener[:2] == "@=":
        return "@" + opener[2:]
    return None


def _inline_body(lines: Iterator[tuple[int, str]], end: str, where: Where) -> tuple[str, list[str]]:
    """The lines up to the closing line ``end`` (taken from ``lines``), and the words after
    ``end`` on that line."""
    if end == "@":
        raise DagError("no inline description closing token given (@=TOKEN)", where.source, where.line)
    body = []
    for _, text in lines:
        text = text.strip()
        if not text or text[0] == "#" or text[:2] == "//":
            continue
        if text == end or text.startswith(end + " ") or text.startswith(end + "\t"):
            return "\n".join(body) + "\n", text[len(end):].split()
        body.append(text)
    raise DagError(f"inline submit description has no closing {end!r}", where.source, where.line)
