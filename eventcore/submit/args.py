"""``arguments`` and ``environment`` values: HTCondor's V1 and V2 syntaxes.

V2 is a double-quoted string: blanks separate words, ``'...'`` groups a
word (``''`` inside is one quote), ``""`` is one double quote.  The job ad
keeps the canonical V2 text (words joined by a space, quoted with ``'``
when they hold blanks or quotes).  V1 environment is ``A=1;B=2``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from jobledger.eventcore.errors import SubmitError


def split_v2(text: str, command: str) -> list[str]:
    """Words of a V2 string (given with its outer double quotes)."""
    raw = text.strip()
    if len(raw) < 2 or not raw.endswith('"'):
        raise SubmitError(f"{command} = {text}: a V2 value must end with a double quote")
    raw = raw[1:-1]
    words: list[str] = []
    word: list[str] = []
    in_word = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == '"':
            if raw[i + 1:i + 2] != '"':
                raise SubmitError(f"{command} = {text}: a double quote inside must be doubled (\"\")")
            word.append('"')
            in_word = True
            i += 2
            continue
        if c == "'":
            end = i + 1
            piece = []
            while True:
                close = raw.find("'", end)
                if close < 0:
                    raise SubmitError(f"{command} = {text}: unterminated single quote")
                piece.append(raw[end:close])
                if raw[close + 1:close + 2] == "'":
                    piece.append("'")
                    end = close + 2
                    continue
                break
            word.append("".join(piece))
            in_word = True
            i = close + 1
            continue
        if c in " \t\n\r":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            i += 1
            continue
        word.append(c)
        in_word = True
        i += 1
    if in_word:
        words.append("".join(word))
    return words


def join_v2(words: list[str]) -> str:
    """Canonical V2 text of ``words`` (without the outer double quotes)."""
    out = []
    for word in words:
        if word == "" or any(c in word for c in " \t\n\r'\""):
            out.append("'" + word.replace("'", "''") + "'")
        else:
            out.append(word)
    return " ".join(out)


def parse_arguments(text: str, command: str = "arguments") -> str:
    return join_v2(split_v2(text, command))


def _environment_pairs(text: str) -> list[tuple[str, str]]:
    if text.lstrip().startswith('"'):
        words = split_v2(text, "environment")
    else:
        words = [w for w in text.split(";") if w.strip()]
    pairs = []
    for word in words:
        name, eq, value = word.partition("=")
        if not eq or not name.strip():
            raise SubmitError(f"ERROR: Missing '=' after environment variable '{word}'.\n"
                              f"The environment you specified was: '{text}'")
        pairs.append((name.strip(), value))
    return pairs


def getenv_matches(names: str, source: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``source`` a ``getenv`` list takes, as HTCondor's environment filter
    reads it: names separated by commas, semicolons or blanks, each matched without regard
    to case and with ``*`` standing for any text; a name after ``!`` is left out even when
    another matches it.  A value holding a newline is never taken."""
    take, leave = [], []
    for word in re.split(r"[,;\s]+", names):
        if word.startswith("!"):
            if word[1:]:
                leave.append(_wildcard(word[1:]))
        elif word:
            take.append(_wildcard(word))
    return {name: value for name, value in source.items()
            if "\n" not in value and any(p.fullmatch(name) for p in take)
            and not any(p.fullmatch(name) for p in leave)}


def _wildcard(word: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in word.split("*")), re.IGNORECASE)


def environment_v2(environment: str | None, getenv: str | None, env) -> str:
    """The job's Environment attribute text from ``environment`` and ``getenv``."""
    merged: dict[str, str] = {}
    if getenv is not None:
        low = getenv.strip().lower()
        if low in ("true", "yes", "t", "y", "1"):
            merged.update(env.environ())
        elif low not in ("false", "no", "f", "n", "0"):
            merged.update(getenv_matches(getenv, env.environ()))
    if environment is not None:
        merged.update(_environment_pairs(environment))
    return join_v2([f"{name}={value}" for name, value in merged.items()])
