"""One job's story up to a journal position: the drawer of ``jobledger web``.  Pure.

``job_story(entries, cluster, proc, position=None, tz=UTC)`` folds the
job's own entries (and its cluster ad's) through a ``QueueFold``, as
``jobledger replay`` does, and says for each of them what it was (a user-log
event as the user log has its text, an action and its reason, an edit, the
job leaving the queue) and how the job's ad changed: ``{attribute: [before,
after]}`` (``None`` for absent).  It ends with the ad as of the cut, the
hold reason and code when held, and the user-log excerpt: the events' text
in order, as the job's user log holds it.
"""

from __future__ import annotations

import datetime
from typing import Iterable, Mapping

from jobledger.eventcore.events import EventType
from jobledger.eventcore.projections.queue import QueueFold, merged_ad
from jobledger.eventcore.projections.replay import effective_time
from jobledger.eventcore.projections.userlog import render, unquote

__all__ = ["job_story", "MAX_STEPS"]

MAX_STEPS = 2000          # a job's steps a story holds (the last ones)
_NOT_EVENTS = {"left the queue", "attributes set", "cluster ad", "job ad"}


def _diff(before: Mapping[str, str], after: Mapping[str, str]) -> dict:
    return {name: [before.get(name), after.get(name)]
            for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)}


def _what(entry, tz) -> tuple[str, str | None]:
    payload = entry.payload
    if entry.type == "event":
        number = int(payload["event"]["type"])
        try:
            name = EventType(number).name
        except ValueError:
            name = f"EVENT_{number}"
        return name, render(payload["event"], tz=tz)
    if entry.type == "action":
        reason = payload.get("reason")
        return f"action {payload.get('action')}", (f"reason: {reason}" if reason else None)
    if entry.type == "leave":
        return "left the queue", None
    if entry.type == "set":
        return "attributes set", None
    return ("cluster ad" if entry.job.proc < 0 else "job ad"), None


def job_story(entries: Iterable, cluster: int, proc: int, position: int | None = None,
              tz: datetime.tzinfo = datetime.timezone.utc) -> dict | None:
    """The job's story (see the module docstring); None when the journal has no such job."""
    fold = QueueFold()
    steps: list[dict] = []
    ad: dict = {}
    last: dict = {}
    for e in entries:
        if position is not None and e.position > position:
            break
        if e.job.cluster != cluster or e.job.proc not in (proc, -1):
            continue
        fold.apply(e.position, e.time, e.job, e.type, e.payload)
        row = fold.proc(cluster, proc)
        if row is not None:
            ad = merged_ad(fold.cluster(cluster), row.ad)
        if e.job.proc < 0:
            continue
        name, text = _what(e, tz)
        steps.append({"position": e.position, "time": effective_time(e), "what": name,
                      "text": text, "changes": _diff(last, ad)})
        last = dict(ad)
    fold.take_changes()
    if not steps:
        return None
    excerpt = "".join(s["text"] for s in steps
                      if s["text"] and s["what"] not in _NOT_EVENTS and not s["what"].startswith("action"))
    out = {"id": f"{cluster}.{proc}", "steps": steps[-MAX_STEPS:], "ad": last,
           "left": steps[-1]["what"] == "left the queue", "userlog": excerpt,
           "truncated": max(0, len(steps) - MAX_STEPS)}
    if last.get("JobStatus") == "5":
        out["hold_reason"] = unquote(last.get("HoldReason"))
        code = last.get("HoldReasonCode")
        out["hold_code"] = int(code) if code and code.lstrip("-").isdigit() else code
    return out
