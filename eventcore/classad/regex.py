"""PCRE-style patterns on Python's ``re`` (the common subset), cached."""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=512)
def compile_regex(pattern: str, opts: str = "", upper_ok: bool = False):
    """Compiled pattern, or None when it is invalid.  Options: i m s x."""
    flags = 0
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
        return re.compile(_translate(pattern), flags)
    except (re.error, RecursionError, OverflowError):
        return None


def _translate(p: str) -> str:
    """PCRE spellings Python lacks: ``\\z`` -> ``\\Z``, possessive quantifiers
    and atomic groups are left to ``re`` (3.11 supports them)."""
    if "\\z" in p:
        p = re.sub(r"(?<!\\)((?:\\\\)*)\\z", r"\1\\Z", p)
    return p
