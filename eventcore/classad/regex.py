"""PCRE-style patterns (HTCondor's regular expressions) on Python's ``re``.

``compile_regex(pattern, opts)`` translates the PCRE spellings Python lacks
and returns a compiled pattern, or None when the pattern is invalid:

* POSIX classes inside brackets (``[[:alpha:]]``, ``[[:digit:][:upper:]]``);
  a ``[`` that opens no class inside brackets is a plain ``[``;
* ``(?<name>...)`` named groups, ``(?|`` branch resets, ``\\Q...\\E``
  quoting, ``\\h \\H \\v \\V \\e \\z \\Z \\R \\N \\G \\K \\cX``, a literal ``{,n}``,
  the common properties ``\\p{L} \\p{N} \\p{Lu} \\p{Ll}`` (and ``\\P``), on ASCII only;
* PCRE2's refusals (``\\u``, ``\\U``, ``\\l``, ``\\L``, collating elements).
* ASCII semantics for ``\\w \\d \\s`` and case folding, as PCRE on bytes.

Options: ``i`` caseless, ``m`` multi-line, ``s`` dot-all, ``x`` extended.

Bounded like PCRE2's match limit: patterns run on the ``regex`` package
(``re``'s syntax; it also cuts the classic nested-quantifier blow-ups such
as ``(a+)+$`` short), and a match that still runs past ``MATCH_LIMIT_SECONDS``
of CPU time raises ``RegexLimit``, which the functions turn into ERROR, as
HTCondor's do when PCRE2 gives up.  Python's engines count no steps, so the
bound is CPU time (the package's timeout; a loaded machine does not shorten
it); it is far above what any reasonable pattern needs.  Matching releases
the GIL, so a long match does not stall a daemon's other threads.
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex

MATCH_LIMIT_SECONDS = 0.5


def _regex_flags(flags: int) -> int:
    """``re`` flags as the ``regex`` package spells them (its ASCII bit differs)."""
    out = regex.VERSION0
    for name in ("ASCII", "IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE"):
        if flags & getattr(re, name):
            out |= getattr(regex, name)
    return out


class RegexLimit(Exception):
    """A match ran past ``MATCH_LIMIT_SECONDS`` (PCRE2_ERROR_MATCHLIMIT)."""


class BoundedPattern:
    """A compiled pattern whose matching stops at the limit (``search``, ``finditer``)."""

    __slots__ = ("rx",)

    def __init__(self, rx):
        self.rx = rx

    @property
    def groups(self) -> int:
        return self.rx.groups

    def search(self, text: str, pos: int = 0):
        try:
            return self.rx.search(text, pos, concurrent=True, timeout=MATCH_LIMIT_SECONDS)
        except TimeoutError:
            raise RegexLimit(self.rx.pattern) from None

    def finditer(self, text: str):
        try:
            return list(self.rx.finditer(text, concurrent=True, timeout=MATCH_LIMIT_SECONDS))
        except TimeoutError:
            raise RegexLimit(self.rx.pattern) from None

_POSIX = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9A-Fa-f", "word": "\\w",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "cntrl": "\\x00-\\x1f\\x7f",
    "print": "\\x20-\\x7e", "graph": "\\x21-\\x7e",
}
_OUTSIDE = {"h": "[ \\t]", "H": "[^ \\t]", "v": "[\\n\\x0b\\f\\r]", "V": "[^\\n\\x0b\\f\\r]",
            "e": "\\x1b", "z": "\\Z", "Z": "(?=\\n?\\Z)", "R": "(?:\\r\\n|\\n|\\r)", "N": "[^\\n]",
            "G": "\\A", "K": ""}
_UNSUPPORTED = frozenset("uULl")
# Character properties, approximated on ASCII (HTCondor's patterns rarely use them)
_PROPERTIES = {"L": "[A-Za-z]", "N": "[0-9]", "Nd": "[0-9]", "Lu": "[A-Z]", "Ll": "[a-z]"}


@lru_cache(maxsize=512)
def compile_regex(pattern: str, opts: str = "", upper_ok: bool = False):
    """Compiled pattern, or None when it is invalid."""
    flags = re.ASCII                    # byte semantics: \\w, \\d, \\s and case folding are ASCII
    for ch in opts:
        c = ch.lower() if upper_ok else ch
        if c == "i":
            flags |= re.IGNORECASE
        elif c == "m":
            flags |= re.MULTILINE
        elif c == "s":
            flags |= re.DOTALL
        elif c == "x":
            flags |= re.VERBOSE
    try:
        text = translate(pattern)
        re.compile(text, flags)         # what re refuses stays refused
        return BoundedPattern(regex.compile(text, _regex_flags(flags)))
    except (re.error, regex.error, RecursionError, OverflowError, ValueError):
        return None


_FLAG_GROUP = re.compile(r"\(\?([imsx]*(?:-[imsx]*)?)\)")


def _escape(p: str, i: int, out: list) -> int:
    """Translate the escape at ``p[i]`` (a backslash) into ``out``; the index after it."""
    n = len(p)
    if i + 1 >= n:
        raise ValueError("trailing backslash")
    d = p[i + 1]
    if d in _UNSUPPORTED:
        raise ValueError(f"\\{d} is not supported")
    if d in "pP" and p.startswith("{", i + 2):
        end = p.find("}", i + 3)
        prop = _PROPERTIES.get(p[i + 3:end]) if end > 0 else None
        if prop is None:
            raise ValueError("unknown character property")
        out.append(prop if d == "p" else "[^" + prop[1:])
        return end + 1
    if d == "c" and i + 2 < n:
        out.append(re.escape(chr(ord(p[i + 2].upper()) ^ 0x40)))
        return i + 3
    if d == "Q":
        end = p.find("\\E", i + 2)
        end = n if end < 0 else end
        out.append(re.escape(p[i + 2:end]))
        return end + 2
    out.append(_OUTSIDE.get(d, p[i:i + 2]))
    return i + 2


def translate(p: str) -> str:
    """The Python spelling of PCRE pattern ``p`` (raises ValueError if malformed)."""
    out = []
    pending = [0]      # per open group: scoped-flag groups to close with it
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            i = _escape(p, i, out)
            continue
        if c == "[":
            i = _bracket(p, i, out)
            continue
        if p.startswith("(?<", i) and i + 3 < n and p[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        if c == "(":
            m = _FLAG_GROUP.match(p, i)
            if m is not None and i > 0 and m.group(1):
                # "(?i)" in mid-pattern: PCRE applies it to the rest of the group
                out.append("(?" + m.group(1) + ":")
                pending[-1] += 1
                i = m.end()
                continue
            pending.append(0)
        elif c == ")":
            if len(pending) > 1:
                out.append(")" * pending.pop())
        if p.startswith("(?|", i):        # branch reset: numbering differs, matching does not
            out.append("(?:")
            i += 3
            continue
        if c == "{" and p.startswith("{,", i):
            out.append("\\{")            # PCRE reads "{,n}" literally
            i += 1
            continue
        out.append(c)
        i += 1
    out.append(")" * pending[0])
    return "".join(out)


def _bracket(p: str, i: int, out: list) -> int:
    """Copy the bracket expression starting at ``p[i] == '['``; returns the index after it."""
    n = len(p)
    j = i + 1
    parts = ["["]
    if j < n and p[j] == "^":
        parts.append("^")
        j += 1
    if j < n and p[j] == "]":
        parts.append("\\]")
        j += 1
    while j < n and p[j] != "]":
        c = p[j]
        if c == "[" and (p.startswith("[.", j) or p.startswith("[=", j)):
            raise ValueError("POSIX collating elements are not supported")
        if c == "[" and p.startswith("[:", j):
            end = p.find(":]", j + 2)
            name = p[j + 2:end] if end > 0 else None
            if name in _POSIX:
                parts.append(_POSIX[name])
                j = end + 2
                continue
        if c == "\\" and j + 1 < n:
            parts.append(p[j:j + 2])
            j += 2
            continue
        if c in "[&~|":
            parts.append("\\" + c)      # literal in PCRE; Python would warn about set operations
        elif c == "-" and parts[-1] == "-":
            parts[-1] = "\\-"            # "--" -> "\--": same range, no warning
            parts.append(c)
        else:
            parts.append(c)
        j += 1
    if j >= n:
        raise ValueError("unterminated bracket expression")
    parts.append("]")
    out.append("".join(parts))
    return j + 1
