"""What to write to user logs and the global event log, as a fold.

``LogTargets.apply(position, job, type, payload)`` follows the ``UserLog``,
``Iwd`` and ``UserLogUseXML`` attributes of cluster and proc ads and returns,
for an event record, the ``Target`` values (path, format: text, xml or json) its
record goes to (none: the job has no log).

A DAG node's job has a second log, as in HTCondor: ``DAGManNodesLog``, the
DAG's shared ``<dag>.nodes.log``, which gets only the events DAGMan reads
(HTCondor's ``DAGManWorkflowMask``: ``DAGMAN_EVENTS``), as text; the job's
own ``log``, if it has one, gets every event as usual but DAGMan's own
POST_SCRIPT_TERMINATED.  Its target has the
format ``dagman`` and is kept under the key ``(cluster, -2)`` (cluster ad)
or ``(cluster, -3 - proc)`` beside the ``UserLog`` ones.
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

from jobledger.eventcore.codecs.userlog import render as render_record
from jobledger.eventcore.codecs.userlog_text_write import TextFormat, render_text
from jobledger.eventcore.events import event_from_dict, make_event

__all__ = ["LogTargets", "Target", "DAGMAN_EVENTS", "DAGMAN_FORMAT", "log_format", "render", "planned_writes", "header_text", "render_header", "rotation_names",
           "HEADER_WIDTH", "unquote", "EVENT_LOG_FORMAT"]

HEADER_WIDTH = 256
# EVENT_LOG_FORMAT_OPTIONS is empty by default: legacy MM/DD dates, local time.
EVENT_LOG_FORMAT = TextFormat(iso_date=False, utc=False, sub_second=False)


def unquote(text: str | None) -> str | None:
    """A ClassAd string literal's value, or None when ``text`` is not one."""
    if text is None or len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")


# HTCondor's DAGManWorkflowMask: the events DAGMan reads from its nodes log.
DAGMAN_EVENTS = frozenset({0, 1, 2, 4, 5, 7, 8, 9, 10, 11, 12, 13, 16, 17, 24, 27, 35, 36})
DAGMAN_FORMAT = "dagman"      # the nodes log's target: text, DAGMAN_EVENTS only
POST_SCRIPT_TERMINATED = 16


class Target(NamedTuple):
    """Where a job's events go: the user log's path and its format."""

    path: str
    format: str = "text"      # text | xml | json | dagman

    @property
    def render_format(self) -> str:
        return "text" if self.format == DAGMAN_FORMAT else self.format

    def takes(self, number: int) -> bool:
        """Does an event of this ULog number go to this log?"""
        return self.format != DAGMAN_FORMAT or int(number) in DAGMAN_EVENTS


# The ad attributes that give a job a log to write to (``LogTargets.apply``).
TARGET_ATTRS = ("UserLog", "UserLogUseXML", "DAGManNodesLog")


def _nodes_key(cluster: int, proc: int) -> tuple[int, int]:
    """Where the DAGMan nodes-log target of job (cluster, proc) is kept (proc -1: cluster ad)."""
    return cluster, -3 - proc if proc >= 0 else -2


def log_format(text: str | None) -> str:
    """``UserLogUseXML`` as a format: true -> xml, 2 -> json, else text."""
    value = (text or "").strip().lower()
    if value == "2":
        return "json"
    if value in ("true", "1"):
        return "xml"
    return "text"


class LogTargets:
    """job -> ``Target`` (user-log path and format), folded from the journal's ads.

    A job's target goes when the job leaves the queue (its ``leave`` record: it
    gets no more events), and its cluster's when the cluster's last job with a
    target leaves, so what is kept follows the queue, not the history.  What
    went is in ``gone`` (key -> target) until the holder clears it: the
    projector needs it to write a failed log's events again later.  A DAG
    node's nodes-log target stays: DAGMan's POST_SCRIPT_TERMINATED for the
    node's job comes after the job left.
    """

    def __init__(self, known: Mapping[tuple[int, int], Target] | None = None):
        self.paths: dict[tuple[int, int], Target | None] = dict(known or {})
        self.changed: dict[tuple[int, int], Target | None] = {}
        self.gone: dict[tuple[int, int], Target] = {}
        self._queued: dict[int, int] = {}     # cluster -> its jobs (proc >= 0) with a target
        for cluster, proc in self.paths:
            if proc >= 0:
                self._queued[cluster] = self._queued.get(cluster, 0) + 1

    def _set(self, key, target):
        before = self.paths.get(key)
        if before != target:
            self.paths[key] = target
            self.changed[key] = target
            if key[1] >= 0 and (before is None) != (target is None):
                self._queued[key[0]] = self._queued.get(key[0], 0) + (1 if before is None else -1)

    def _drop(self, key) -> None:
        target = self.paths.pop(key, None)
        if target is not None:
            self.changed[key] = None
            self.gone[key] = target

    def _leave(self, cluster: int, proc: int) -> None:
        if self.paths.get((cluster, proc)) is None:
            self.paths.pop((cluster, proc), None)
            return
        self._drop((cluster, proc))
        left = self._queued.get(cluster, 0) - 1
        if left > 0:
            self._queued[cluster] = left
        else:
            self._queued.pop(cluster, None)
            self._drop((cluster, -1))

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

    @staticmethod
    def _nodes_target(ad: Mapping[str, str], iwd: str | None) -> Target | None:
        log = unquote(ad.get("DAGManNodesLog"))
        if log is None:
            return None
        if not posixpath.isabs(log) and iwd:
            log = posixpath.join(iwd, log)
        return Target(log, DAGMAN_FORMAT)

    def of(self, cluster: int, proc: int, gone: bool = False) -> list[Target]:
        """The logs of job (cluster, proc): its own, then its DAG's nodes log (one per path);
        with ``gone``, a job that left still has the own log it had (see ``gone``)."""
        own = None
        for key in ((cluster, proc), (cluster, -1)):
            if key in self.paths or (gone and key in self.gone):
                own = self.paths[key] if key in self.paths else self.gone[key]
                break
        nodes = self.paths.get(_nodes_key(cluster, proc), self.paths.get((cluster, -2)))
        if nodes is None or (own is not None and own.path == nodes.path):
            return [own] if own is not None else []
        return [own, nodes] if own is not None else [nodes]

    def apply(self, position: int, job, kind: str, payload: Mapping) -> list[Target]:
        """Fold one record; for an event, return the user logs it goes to."""
        key = (job.cluster, job.proc)
        if kind in ("cluster", "proc"):
            ad = payload["ad"]
            parent = key if kind == "cluster" else (job.cluster, -1)
            iwd = unquote(ad.get("Iwd"))
            self._set(key, self._target(ad, self.paths.get(parent), iwd))
            if "DAGManNodesLog" in ad:     # procs without it take the cluster's (of())
                self._set(_nodes_key(*key), self._nodes_target(ad, iwd))
        elif kind == "set" and ("UserLog" in payload["set"] or "UserLogUseXML" in payload["set"]):
            self._set(key, self._target(payload["set"], self.paths.get(key), None))
        elif kind == "leave":
            self._leave(job.cluster, job.proc)
        elif kind == "event":
            if payload.get("imported"):
                return []  # already in the log it came from
            return self.for_event(job.cluster, job.proc, int(payload["event"]["type"]))
        return []

    def silent_block(self, cluster: int, payload: Mapping) -> bool:
        """True when no entry of a ``procs`` block of ``cluster`` (``payload`` as journaled)
        changes a target or has a log to go to: the cluster has no log of its own nor a
        nodes log, and no proc ad of the block names one.  Its entries are then no-ops
        here (a proc's target is its cluster's, None; its SUBMIT event goes nowhere), so
        a follower without an event log may pass over the block unexpanded."""
        if self.paths.get((cluster, -1)) is not None or self.paths.get((cluster, -2)) is not None:
            return False
        if any(name in payload["common"] for name in TARGET_ATTRS):
            return False
        return not any(name in ad for ad in payload["ads"] for name in TARGET_ATTRS)

    def for_event(self, cluster: int, proc: int, number: int, gone: bool = False) -> list[Target]:
        """The logs an event of job (cluster, proc) with ULog ``number`` goes to.  DAGMan's
        POST_SCRIPT_TERMINATED goes to the nodes log only (HTCondor's DAGMan writes it there)."""
        logs = [t for t in self.of(cluster, proc, gone) if t.takes(number)]
        if number == POST_SCRIPT_TERMINATED and any(t.format == DAGMAN_FORMAT for t in logs):
            return [t for t in logs if t.format == DAGMAN_FORMAT]
        return logs


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
        logs = targets.apply(e.position, e.job, e.type, e.payload)
        if e.type != "event":
            continue
        event = e.payload["event"]
        for target in logs:
            per_file[target.path].append((e, render(event, user_fmt, tz, target.render_format).encode("utf-8")))
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
