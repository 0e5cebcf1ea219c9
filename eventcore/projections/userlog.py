"""What to write to user logs and the global event log, as a fold.

``LogTargets.apply(position, job, type, payload)`` follows the ``UserLog``,
``Iwd`` and ``UserLogUseXML`` attributes of cluster and proc ads and returns,
for an event record, the ``Target`` (path, format: text, xml or json) its
record goes to (or None: the job has no log).
Pure: paths are joined with ``posixpath``, nothing touches the disk.

``render(event_payload, fmt, tz)`` is the deterministic text of one event
(HTCondor's writer layout, ``eventcore.codecs.userlog_text_write``): the same
payload always gives the same bytes, which is what lets the file writer
compare a file's tail with what it should hold after a crash.

The global event log (``EVENT_LOG``): every event goes there too, in the
event log's own format (legacy ``MM/DD`` dates by default); each file starts
with a header event (``header_text``), and rotation follows HTCondor
(``rotation_names``): over ``MAX_EVENT_LOG`` bytes the file becomes
``<file>.old`` (one rotation) or ``<file>.1`` .. ``<file>.N``.
"""

from __future__ import annotations

import datetime
import posixpath
from collections import defaultdict
from typing import Iterable, Mapping, NamedTuple

from eventcore.codecs.userlog import render as render_record
from eventcore.codecs.userlog_text_write import TextFormat, render_text
from eventcore.events import event_from_dict, make_event

__all__ = ["LogTargets", "Target", "log_format", "render", "planned_writes", "header_text", "render_header", "rotation_names",
           "HEADER_WIDTH", "unquote", "EVENT_LOG_FORMAT"]

HEADER_WIDTH = 256
# EVENT_LOG_FORMAT_OPTIONS is empty by default: legacy MM/DD dates, local time.
EVENT_LOG_FORMAT = TextFormat(iso_date=False, utc=False, sub_second=False)


def unquote(text: str | None) -> str | None:
    """A ClassAd string literal's value, or None when ``text`` is not one."""
    if text is None or len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")


class Target(NamedTuple):
    """Where a job's events go: the user log's path and its format."""

    path: str
    format: str = "text"      # text | xml | json


def log_format(text: str | None) -> str:
    """``UserLogUseXML`` as a format: true -> xml, 2 -> json, else text."""
    value = (text or "").strip().lower()
    if value == "2":
        return "json"
    if value in ("true", "1"):
        return "xml"
    return "text"


class LogTargets:
    """job -> ``Target`` (user-log path and format), folded from the journal's ads."""

    def __init__(self, known: Mapping[tuple[int, int], Target] | None = None):
        self.paths: dict[tuple[int, int], Target | None] = dict(known or {})
        self.changed: dict[tuple[int, int], Target | None] = {}

    def _set(self, key, target):
        if self.paths.get(key) != target:
            self.paths[key] = target
            self.changed[key] = target

    def _target(self, ad: Mapping[str, str], inherited: Target | None,
                iwd: str | None) -> Target | None:
        log = unquote(ad.get("UserLog"))
        if log is None:
            if inherited is not None and "UserLogUseXML" in ad:
                return inherited._replace(format=log_format(ad["UserLogUseXML"]))
            return inherited
        if not posixpath.isabs(log) and iwd:
            log = posixpath.join(iwd, log)
        fmt = log_format(ad["UserLogUseXML"]) if "UserLogUseXML" in ad else (
            inherited.format if inherited is not None else "text")
        return Target(log, fmt)

    def apply(self, position: int, job, kind: str, payload: Mapping) -> Target | None:
        """Fold one record; for an event, return the user log it goes to (or None)."""
        key = (job.cluster, job.proc)
        if kind == "cluster":
            ad = payload["ad"]
            self._set(key, self._target(ad, self.paths.get(key), unquote(ad.get("Iwd"))))
        elif kind == "proc":
            ad = payload["ad"]
            self._set(key, self._target(ad, self.paths.get((job.cluster, -1)),
                                        unquote(ad.get("Iwd"))))
        elif kind == "set" and ("UserLog" in payload["set"] or "UserLogUseXML" in payload["set"]):
            self._set(key, self._target(payload["set"], self.paths.get(key), None))
        elif kind == "event":
            if payload.get("imported"):
                return None  # already in the log it came from
            return self.paths.get(key, self.paths.get((job.cluster, -1)))
        return None


def render(event_payload: Mapping, fmt: TextFormat = TextFormat(),
           tz: datetime.tzinfo = datetime.timezone.utc, log_format: str = "text") -> str:
    """The text of one event record in a user log's format (text: header, body, ``...``)."""
    event = event_from_dict(event_payload)
    if log_format == "text":
        return render_text(event, fmt, tz)
    return render_record(event, log_format, fmt, tz)


def planned_writes(entries: Iterable, targets: LogTargets, tz: datetime.tzinfo,
                   user_fmt: TextFormat, event_fmt: TextFormat | None = None):
    """What a run of journal entries writes, in journal order.

    Returns ``(per_file, global_items)``: for each user log path, its
    ``(entry, bytes)`` pairs; and the global event log's ``(entry, bytes)``
    pairs (none when ``event_fmt`` is None: no event log).  ``targets`` is
    folded along, so an edit of ``UserLog`` routes the events after it.
    The projector writes exactly this; audit compares the files with it.
    """
    per_file: dict[str, list] = defaultdict(list)
    global_items: list = []
    for e in entries:
        target = targets.apply(e.position, e.job, e.type, e.payload)
        if e.type != "event":
            continue
        event = e.payload["event"]
        if target:
            per_file[target.path].append((e, render(event, user_fmt, tz, target.format).encode("utf-8")))
        if event_fmt is not None:
            global_items.append((e, render(event, event_fmt, tz).encode("utf-8")))
    return per_file, global_items


def header_text(ctime: int, sequence: int, size: int = 0, events: int = 0,
                max_rotation: int = 1, creator: str = "SCHEDD") -> str:
    """The ``Global JobLog`` header's text, padded to 256 characters."""
    text = (f"Global JobLog: ctime={ctime} id=jobledger.{ctime}.{sequence} sequence={sequence} "
            f"size={size} events={events} offset=0 event_off=0 max_rotation={max_rotation} "
            f"creator_name=<{creator}>")
    return text.ljust(HEADER_WIDTH)


def render_header(ctime: int, sequence: int, fmt: TextFormat = EVENT_LOG_FORMAT,
                  tz: datetime.tzinfo = datetime.timezone.utc, **counts) -> str:
    """The header event an event-log file starts with (008, ids -1)."""
    event = make_event(8, cluster=-1, proc=-1, subproc=-1, timestamp=ctime,
                       attrs={"Info": header_text(ctime, sequence, **counts)})
    return render_text(event, fmt, tz)


def rotation_names(path: str, max_rotations: int) -> list[tuple[str, str]]:
    """The renames of one rotation, in order: ``[(from, to), ...]``."""
    if max_rotations <= 1:
        return [(path, path + ".old")]
    moves = [(f"{path}.{n}", f"{path}.{n + 1}") for n in range(max_rotations - 1, 0, -1)]
    return moves + [(path, path + ".1")]
