"""Job attribute names as the schedd reads them: case-insensitive, ``MY.`` a scope.

``Owner``, ``OWNER`` and ``MY.owner`` name one attribute, so a check that an
attribute is protected must look at ``attr_key(name)``, never at the text
as written.  ``attr_name`` gives the name an assignment sets (the scope
dropped; ``TARGET.`` or any other scope, or a name that is not an
identifier, is refused); ``fold`` merges the spellings of one attribute in
an ad into one key (the first spelling, the last value, as a ClassAd does).
"""

from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# an octal escape of NUL (\\0, \\00, \\000) after an even number of backslashes
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\(?:000|00(?![0-7])|0(?![0-7]))")
_SCOPED = re.compile(r"(?i)(my|target|parent)\.(.*)\Z", re.DOTALL)


def attr_name(text: str) -> str:
    """The attribute ``text`` names (``MY.Owner`` -> ``Owner``); ``ValueError``
    for another scope or a name that is not an identifier."""
    scoped = _SCOPED.match(text)
    if scoped:
        if scoped.group(1).lower() != "my":
            raise ValueError(f"invalid attribute name {text!r}: only MY. may prefix a job attribute")
        text = scoped.group(2)
    if not _NAME.match(text):
        raise ValueError(f"invalid attribute name {text!r}")
    return text


def attr_key(text: str) -> str:
    """The case-folded key of an attribute name (scope dropped), for protection checks."""
    return attr_name(text).lower()


def fold(ad: dict[str, str], spellings: dict[str, str] | None = None) -> dict[str, str]:
    """``ad`` with one key per attribute: ``MY.`` dropped, case variants merged
    (spelled as in ``spellings`` (lower -> spelling), else as first seen; the last value wins)."""
    out: dict[str, str] = {}
    seen: dict[str, str] = {} if spellings is None else dict(spellings)
    for name, value in ad.items():
        plain = name if _NAME.match(name) else attr_name(name)
        out[seen.setdefault(plain.lower(), plain)] = value
    return out


def check_values(ad: dict[str, str]) -> None:
    """``ValueError`` for a value no job can ever use: text holding a NUL byte
    (it cannot reach an argument list, an environment or a file name)."""
    for name, text in ad.items():
        if "\x00" in text or ("\\0" in text and _NUL_ESCAPE.search(text)):
            raise ValueError(f"the value of {name} holds a NUL byte")


__all__ = ["attr_name", "attr_key", "fold", "check_values"]
