"""Reading a ``job_queue.log`` (HTCondor's text transaction log of a job queue) back into
ads.  Pure.

The records are those ``queuelog_live`` writes: ``107`` (the file's header), ``101 KEY
MyType TargetType`` (new ad), ``102 KEY`` (destroy), ``103 KEY NAME VALUE`` (set),
``104 KEY NAME`` (delete), ``105`` / ``106`` (begin / end of a transaction).  As
HTCondor's ClassAdLog reads it, the changes of a transaction apply at its ``106``; a
transaction the file ends in the middle of never happened.  Keys: ``0.0`` the header ad,
``0<c>.-1`` (or ``<c>.-1``) a cluster ad, ``<c>.<p>`` a proc ad.

``read_queue_log(text, source)`` -> {(cluster, proc): {name: expression text}} (proc -1
for a cluster ad, (0, 0) for the header ad).  Anything else is a ``QueueLogError``
naming the source and the line.
"""

from __future__ import annotations

import re

from jobledger.eventcore.errors import JobledgerError

__all__ = ["QueueLogError", "read_queue_log", "MAX_LINES"]

MAX_LINES = 5_000_000
_KEY = re.compile(r"^0*(\d+)\.(-1|\d+)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


class QueueLogError(JobledgerError, ValueError):
    """A job queue log that cannot be read: where and why."""

    def __init__(self, source: str, line: int, why: str):
        super().__init__(f"{source}, line {line}: {why}")
        self.source, self.line, self.why = source, line, why


def _key(text: str, source: str, number: int) -> tuple[int, int]:
    found = _KEY.match(text)
    if found is None:
        raise QueueLogError(source, number, f"{text!r} is not a job key (cluster.proc)")
    return int(found.group(1)), int(found.group(2))


def _apply(ads: dict, op: tuple) -> None:
    kind, key, *rest = op
    if kind == "new":
        ads.setdefault(key, {})
    elif kind == "destroy":
        ads.pop(key, None)
    elif kind == "set":
        ads.setdefault(key, {})[rest[0]] = rest[1]
    elif kind == "delete" and key in ads:
        ads[key].pop(rest[0], None)


def _parse(line: str, source: str, number: int) -> tuple | None:
    code, _, rest = line.partition(" ")
    if code in ("105", "106", "107"):
        return (code,)
    if code == "101":
        fields = rest.split()
        if not fields:
            raise QueueLogError(source, number, "a new ad (101) names no key")
        return ("new", _key(fields[0], source, number))
    if code == "102":
        return ("destroy", _key(rest.strip(), source, number))
    if code in ("103", "104"):
        parts = rest.split(" ", 2) if code == "103" else rest.split()
        if len(parts) < 2 or (code == "103" and len(parts) < 3):
            raise QueueLogError(source, number, f"a {code} record needs a key, a name"
                                + (" and a value" if code == "103" else ""))
        if not _NAME.match(parts[1]):
            raise QueueLogError(source, number, f"{parts[1]!r} is not an attribute name")
        key = _key(parts[0], source, number)
        return ("set", key, parts[1], parts[2]) if code == "103" else ("delete", key, parts[1])
    raise QueueLogError(source, number, f"unknown record {code!r}")


def read_queue_log(text: str, source: str = "job_queue.log") -> dict[tuple[int, int], dict[str, str]]:
    """The ads ``text`` (a whole job_queue.log) leaves, by (cluster, proc)."""
    if "\x00" in text:
        raise QueueLogError(source, text[:text.index("\x00")].count("\n") + 1, "a NUL byte")
    ads: dict[tuple[int, int], dict[str, str]] = {}
    pending: list | None = None
    for number, line in enumerate(text.split("\n"), 1):
        if number > MAX_LINES:
            raise QueueLogError(source, number, f"more than {MAX_LINES} lines")
        if not line.strip():
            continue
        op = _parse(line.rstrip("\r"), source, number)
        if op is None or op[0] == "107":
            continue
        if op[0] == "105":
            if pending is not None:
                raise QueueLogError(source, number, "a transaction begins (105) inside another")
            pending = []
        elif op[0] == "106":
            if pending is None:
                raise QueueLogError(source, number, "a transaction ends (106) that never began")
            for change in pending:
                _apply(ads, change)
            pending = None
        elif pending is not None:
            pending.append(op)
        else:
            _apply(ads, op)
    return ads
