"""Submit description text -> macros and the queue statement.

Reads the text the way condor_submit (and ``htcondor2.Submit``) does:
``name = value`` assignments (names case-insensitive, first spelling kept,
last value wins), ``#`` comment lines, trailing-backslash continuation,
``name @=TAG`` here-documents, ``+Attr``/``MY.Attr`` custom attributes,
``include : file`` and ``if/elif/else/endif``, and the first ``queue``
line, which ends the description (with its inline ``(`` ... ``)`` item
block when it opens one).  Errors are ``SubmitError`` with the file and
line number.
"""

from __future__ import annotations

import re

import attrs

from jobledger.eventcore.errors import SubmitError

from .macros import Expander, MacroError

MAX_INCLUDE_DEPTH = 20
COMPAT_VERSION = (25, 14, 1)   # the HTCondor version `if version >= X` compares with

_ASSIGN_RE = re.compile(r"([+]?[A-Za-z0-9_.]+)[ \t]*=(.*)\Z", re.DOTALL)
_HEREDOC_RE = re.compile(r"([+]?[A-Za-z0-9_.]+)[ \t]*@=[ \t]*(\S+)[ \t]*\Z")
_DIRECTIVE_RE = re.compile(r"(?:(if|elif|else|endif|queue)(?=[ \t]|\Z)|(include)(?=[ \t]*:))(.*)\Z",
                           re.IGNORECASE | re.DOTALL)
_VERSION_RE = re.compile(r"version\s*(>=|<=|==|!=|>|<)\s*(\d+)\.(\d+)(?:\.(\d+))?\s*\Z",
                         re.IGNORECASE)
_DEFINED_RE = re.compile(r"(!\s*)?defined\s+(\S+)\s*\Z", re.IGNORECASE)
_TRUE = {"true", "yes", "t", "y"}
_FALSE = {"false", "no", "f", "n"}


@attrs.frozen
class Line:
    """One logical line: its text, where it starts, and in which file."""

    text: str
    number: int
    source: str


@attrs.frozen
class QueueLine:
    """The queue statement: arguments as written, and an inline block."""

    args: str = ""
    number: int = 0
    source: str = "<submit>"
    block: tuple[str, ...] | None = None    # lines of a multi-line ( ... ) list
    block_closed: bool = True


def join_at(physical: list[str], i: int) -> tuple[str, int]:
    """The logical line starting at physical line ``i`` and the index after
    it: a trailing backslash joins the next line (its leading blanks and a
    leading ``#`` dropped); a blank line ends the joining; a comment line
    is never continued."""
    line = physical[i].rstrip()
    i += 1
    n = len(physical)
    if line.lstrip(" \t").startswith("#"):
        return line, i          # a comment line never continues
    while line.endswith("\\") and i < n:
        nxt = physical[i].rstrip()
        i += 1
        if not nxt.strip():
            return line[:-1], i
        part = nxt.lstrip(" \t")
        if part.startswith("#") and part[1:].strip(" \t"):
            part = part[1:].lstrip(" \t")      # HTCondor's reading of a comment inside a continuation
        line = line[:-1] + part
    return line, i


def logical_lines(text: str):
    """Yield (line number, logical line); ``send(index)`` makes it go on
    from that physical line (after a here-document or a queue block)."""
    physical = text.split("\n")
    i = 0
    while i < len(physical):
        start = i
        line, i = join_at(physical, i)
        jump = yield (start + 1, line, i)
        if jump is not None:
            i = jump


class Parser:
    """Builds the macro table of a submit description."""

    def __init__(self, env, macros: dict | None = None, defaults: dict[str, str] | None = None):
        self.env = env
        self.defaults = defaults or {}      # automatic macros (lower-case names)
        self.macros: dict[str, tuple[str, str]] = {} if macros is None else macros
        self.queue: QueueLine | None = None
        self.lines: dict[str, tuple[int, str]] = {}   # lower-case name -> (line, source)
        self._where = (0, "<submit>")
        self._after = 0         # physical line index after the current logical line
        self._queue_end = 0     # physical line index after the queue statement (and its block)
        # condor_submit reads on after the queue statement; an if it leaves open is an
        # error there (htcondor2.Submit accepts it): kept for building jobs to raise.
        self.unclosed_if: SubmitError | None = None

    # -- macro table ------------------------------------------------------
    def assign(self, name: str, value: str) -> None:
        key = name.lower()
        if "$" in value:
            value = self._expand_self(name, value)
        old = self.macros.get(key)
        self.macros[key] = (old[0] if old else name, value)
        self.lines[key] = self._where

    def _expand_self(self, name: str, value: str) -> str:
        """``x = $(x) more``: self references take the previous value now."""
        pattern = re.compile(r"\$\(" + re.escape(name) + r"(?::([^()]*))?\)", re.IGNORECASE)
        if not pattern.search(value):
            return value
        old = self.macros.get(name.lower())
        previous = old[1] if old else ""
        return pattern.sub(lambda m: previous if previous or m.group(1) is None else m.group(1), value)

    def lookup(self, name: str) -> str | None:
        hit = self.macros.get(name.lower())
        return self.defaults.get(name.lower()) if hit is None else hit[1]

    # -- reading text -----------------------------------------------------
    def parse(self, text: str, source: str = "<submit>", depth: int = 0) -> None:
        physical = text.split("\n")
        lines = logical_lines(text)
        conditions: list[list[bool]] = []   # per open if: [active, taken, in_else]
        try:
            number, line, self._after = next(lines)
        except StopIteration:
            return
        while True:
            jump = self._line(line, number, source, physical, conditions, depth)
            if self.queue is not None:
                if conditions and not _endifs_close(physical[self._queue_end:], len(conditions)):
                    self.unclosed_if = SubmitError("endif(s) not found before end-of-file",
                                                   number, line.strip(), source)
                return
            try:
                number, line, self._after = lines.send(jump) if jump is not None else next(lines)
            except StopIteration:
                break
        if conditions:
            raise SubmitError("if without matching endif", number, line.strip(), source)

    def _line(self, line: str, number: int, source: str, physical, conditions, depth):
        stripped = line.lstrip(" \t\r\f\v")
        self._where = (number, source)
        if not stripped or stripped.startswith("#"):
            return None
        active = all(c[0] for c in conditions)
        directive = _DIRECTIVE_RE.match(stripped)
        if directive:
            word = (directive.group(1) or directive.group(2)).lower()
            rest = directive.group(3).strip()
            if word in ("if", "elif", "else", "endif"):
                self._conditional(word, rest, conditions, number, stripped, source)
                return None
            if not active:
                return None
            if word == "include":
                self._include(rest, number, stripped, source, depth)
                return None
            return self._queue(rest, number, source, physical)
        if not active:
            heredoc = _HEREDOC_RE.match(stripped)
            return self._skip_heredoc(heredoc, number, physical, stripped, source) if heredoc else None
        heredoc = _HEREDOC_RE.match(stripped)
        if heredoc:
            return self._heredoc(heredoc, number, physical, stripped, source)
        m = _ASSIGN_RE.match(stripped)
        if m is None:
            raise SubmitError("not a submit command (expected 'name = value')", number, stripped, source)
        name = m.group(1)
        if name.lower() == "queue":
            raise SubmitError("'queue' is not a valid name", number, stripped, source)
        if name.startswith("+"):
            if len(name) == 1:
                raise SubmitError("missing attribute name after '+'", number, stripped, source)
            name = "MY." + name[1:]
        self.assign(name, m.group(2).lstrip(" \t\r\f\v"))
        return None

    def _heredoc(self, m, number, physical, stripped, source):
        name, tag = m.group(1), m.group(2)
        if name.startswith("+"):
            raise SubmitError("a multi-line value needs a plain name (write MY.Attr, not +Attr)",
                              number, stripped, source)
        body, end = _heredoc_body(physical, self._after, tag)
        if end is None:
            raise SubmitError(f"no '@{tag}' ends this multi-line value", number, stripped, source)
        self.assign(name, "\n".join(body))
        return end

    def _skip_heredoc(self, m, number, physical, stripped, source):
        _, end = _heredoc_body(physical, self._after, m.group(2))
        if end is None:
            raise SubmitError(f"no '@{m.group(2)}' ends this multi-line value", number, stripped, source)
        return end

    def _include(self, rest: str, number: int, stripped: str, source: str, depth: int) -> None:
        if not rest.startswith(":"):
            raise SubmitError("include needs a colon: 'include : file'", number, stripped, source)
        path = self._expand(rest[1:].strip(), number, stripped, source)
        if not path:
            raise SubmitError("include names no file", number, stripped, source)
        if path.endswith("|"):
            raise SubmitError("'include : command |' is not supported", number, stripped, source)
        if depth >= MAX_INCLUDE_DEPTH:
            raise SubmitError("includes nested too deeply", number, stripped, source)
        try:
            text = self.env.read_file(path)
        except OSError as exc:
            raise SubmitError(f"cannot read include file {path}: {exc.strerror or exc}",
                              number, stripped, source) from None
        self.parse(text, path, depth + 1)

    def _queue(self, rest: str, number: int, source: str, physical) -> int:
        args = rest.strip()
        if not args.endswith("("):
            self.queue = QueueLine(args, number, source)
            self._queue_end = self._after
            return len(physical)
        block = []
        i = self._after
        while i < len(physical):
            raw = physical[i].rstrip("\r")
            i += 1
            if raw.lstrip(" \t").startswith(")"):
                self.queue = QueueLine(args, number, source, tuple(block), True)
                self._queue_end = i
                return len(physical)
            block.append(raw)
        self.queue = QueueLine(args, number, source, tuple(block), False)
        self._queue_end = i
        return len(physical)

    def _expand(self, text: str, number: int, stripped: str, source: str) -> str:
        expander = Expander(self.lookup, self.env)
        try:
            return expander.expand(text)
        except MacroError as exc:
            raise SubmitError(exc.message, number, stripped, source) from None

    # -- if / elif / else / endif -----------------------------------------
    def _conditional(self, word, rest, conditions, number, stripped, source) -> None:
        if word == "if":
            outer = all(c[0] for c in conditions)
            value = self._condition(rest, number, stripped, source) if outer else False
            conditions.append([value, value, False])
            return
        if not conditions:
            raise SubmitError(f"{word} without matching if", number, stripped, source)
        top = conditions[-1]
        outer = all(c[0] for c in conditions[:-1])
        if word == "endif":
            conditions.pop()
        elif top[2]:
            raise SubmitError(f"{word} after else", number, stripped, source)
        elif word == "else":
            top[0], top[2] = not top[1], True
        else:
            value = (not top[1]) and outer and self._condition(rest, number, stripped, source)
            top[0] = value
            top[1] = top[1] or value

    def _condition(self, text: str, number: int, stripped: str, source: str) -> bool:
        m = _DEFINED_RE.match(text)
        if m:
            value = self.lookup(self._expand(m.group(2), number, stripped, source).strip())
            return bool(value) != bool(m.group(1))
        expanded = self._expand(text, number, stripped, source).strip()
        m = _VERSION_RE.match(expanded)
        if m:
            wanted = tuple(int(x or 0) for x in m.group(2, 3, 4))
            op = m.group(1)
            return {">=": COMPAT_VERSION >= wanted, "<=": COMPAT_VERSION <= wanted,
                    "==": COMPAT_VERSION == wanted, "!=": COMPAT_VERSION != wanted,
                    ">": COMPAT_VERSION > wanted, "<": COMPAT_VERSION < wanted}[op]
        negate = expanded.startswith("!")
        word = expanded[1:].strip() if negate else expanded
        low = word.lower()
        if low in _TRUE:
            result = True
        elif low in _FALSE:
            result = False
        else:
            try:
                result = float(word) != 0
            except ValueError:
                raise SubmitError(f"'{text}' is not a valid if condition (complex conditionals are "
                                  "not supported)", number, stripped, source) from None
        return result != negate


def _endifs_close(physical: list[str], open_ifs: int) -> bool:
    """Whether the lines after a queue statement close ``open_ifs`` open ifs."""
    for raw in physical:
        m = _DIRECTIVE_RE.match(raw.lstrip(" \t\r\f\v"))
        word = m.group(1).lower() if m and m.group(1) else ""
        open_ifs += 1 if word == "if" else -1 if word == "endif" else 0
        if open_ifs == 0:
            return True
    return False


def _heredoc_body(physical, start: int, tag: str):
    """Lines of a here-document starting at physical line ``start`` (0-based),
    trimmed, without blank and ``#`` lines; and the index after ``@tag``."""
    body = []
    i = start
    while i < len(physical):
        line, i = join_at(physical, i)
        raw = line.strip(" \t\r\f\v")
        if raw == "@" + tag:
            return body, i
        if raw and not raw.startswith("#"):
            body.append(raw)
    return body, None
