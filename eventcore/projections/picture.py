"""A run as a picture: the fold behind ``jobledger web``'s panels.  Pure.

``Picture`` folds journal entries through the same ``QueueFold`` as
``jobledger replay`` (a job's state is the queue's, and a job that left
keeps the terminal state it left in) and keeps, beside it, what the
panels draw:

- **header**: counts by state, journal position, throughput (completions in
  the last minute of event time, and overall);
- **timeline**: per job, its run attempts, each on the slot that ran it, with
  its parts (``wait`` in the queue before it, ``in`` input transfer, ``exec``,
  ``out`` output transfer, ``suspended``) and its outcome (``exit N``,
  ``signal N``, ``evicted``, ``held``, ``removed``, ``exception``), and its
  holds (reason, code, the slot it was held on when held running);
- **counts over time**: one point ``[position, time, idle, running, held,
  completed, removed, transferring, suspended]`` per entry that changed them;
- **DAG**: each job's ``DAGNodeName`` and ``DAGManJobId``, a POST script's
  return value, and the DAGMan jobs' DAG files (``dags``: cluster -> iwd,
  file) so a reader can draw the edges.

Times are event times (``replay.effective_time``); a record that is no event (an ad,
an edit, leaving the queue) takes the time of the event before it.  ``snapshot()`` is the
whole picture (JSON-ready); ``delta(since)`` is what changed after journal
position ``since``: the jobs whose rows changed, the series points, the
header.  Every job row carries ``ch``, the position that last changed it,
so a follower that saw up to ``since`` and applies ``delta(since)`` holds
exactly ``snapshot()``.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from jobledger.eventcore.projections.queue import QueueFold, merged_ad
from jobledger.eventcore.projections.replay import effective_time
from jobledger.eventcore.projections.userlog import unquote
from jobledger.eventcore.status import STATUS_NAMES

__all__ = ["Picture", "JobTrack", "STATES", "picture", "MAX_SERIES"]

# series columns after [position, time], by JobStatus number
STATES = STATUS_NAMES
_ORDER = (1, 2, 5, 4, 3, 6, 7)
MAX_SERIES = 600          # points a snapshot sends (the last of each time bucket)

SUBMIT, EXECUTE, EVICTED, TERMINATED, SHADOW_EXCEPTION, ABORTED = 0, 1, 4, 5, 7, 9
SUSPENDED, UNSUSPENDED, HELD, RELEASED, POST_SCRIPT = 10, 11, 12, 13, 16
RECONNECT_FAILED, FILE_TRANSFER = 24, 40


def _attr(event: Mapping, name: str):
    value = event.get("attrs", {}).get(name)
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


class JobTrack:
    """One job's row in the picture."""

    __slots__ = ("cluster", "proc", "status", "node", "dagman", "universe", "cmd", "owner",
                 "submitted", "runs", "holds", "wait", "exit", "post", "left", "changed",
                 "hold_reason", "hold_code", "events")

    def __init__(self, cluster: int, proc: int):
        self.cluster, self.proc = cluster, proc
        self.status = 1
        self.node = self.dagman = self.universe = self.cmd = self.owner = None
        self.submitted = self.wait = self.exit = self.post = None
        self.runs: list[dict] = []
        self.holds: list[dict] = []
        self.left = False
        self.changed = 0
        self.hold_reason = self.hold_code = None
        self.events = 0

    def row(self) -> dict:
        """The JSON row the page draws."""
        out = {"id": f"{self.cluster}.{self.proc}", "c": self.cluster, "p": self.proc,
               "st": self.status, "sub": self.submitted, "runs": self.runs, "holds": self.holds,
               "wait": self.wait, "ch": self.changed, "n": self.events}
        for key, value in (("node", self.node), ("dag", self.dagman), ("u", self.universe),
                           ("cmd", self.cmd), ("owner", self.owner), ("exit", self.exit),
                           ("post", self.post), ("hr", self.hold_reason), ("hc", self.hold_code)):
            if value is not None:
                out[key] = value
        if self.left:
            out["left"] = True
        return out

    # ----------------------------------------------------------- events --
    def open_run(self) -> dict | None:
        return self.runs[-1] if self.runs and self.runs[-1]["end"] is None else None

    def _start_run(self, t: float, position: int) -> dict:
        run = self.open_run()
        if run is None:
            run = {"slot": None, "host": None, "wait": self.wait, "start": t, "end": None,
                   "outcome": None, "parts": [], "at": position}
            self.runs.append(run)
            self.wait = None
        return run

    @staticmethod
    def _close_parts(run: dict, t: float, kind: str | None = None) -> None:
        for part in run["parts"]:
            if part[2] is None and (kind is None or part[0] == kind):
                part[2] = t

    def _end_run(self, t: float, outcome: str) -> dict | None:
        run = self.open_run()
        if run is not None:
            self._close_parts(run, t)
            run["end"], run["outcome"] = t, outcome
        return run

    def event(self, number: int, event: Mapping, t: float, position: int) -> None:
        """Move the row by one user-log event."""
        self.events += 1
        if number == SUBMIT:
            self.submitted = self.wait = t
        elif number == EXECUTE:
            run = self._start_run(t, position)
            run["slot"] = _attr(event, "SlotName") or run["slot"]
            run["host"] = _attr(event, "ExecuteHost") or run["host"]
            self._close_parts(run, t, "in")
            run["parts"].append(["exec", t, None])
        elif number == FILE_TRANSFER:
            self._transfer(int(_attr(event, "Type") or 0), t, position)
        elif number == TERMINATED:
            code, signal = _attr(event, "ReturnValue"), _attr(event, "TerminatedBySignal")
            normal = _attr(event, "TerminatedNormally")
            outcome = f"exit {code}" if normal or signal is None else f"signal {signal}"
            self.exit = code if normal or signal is None else None
            self._end_run(t, outcome)
        elif number in (EVICTED, SHADOW_EXCEPTION, RECONNECT_FAILED):
            self._end_run(t, "evicted" if number == EVICTED else "exception")
            self.wait = t
        elif number == HELD:
            self._held(event, t)
        elif number == RELEASED:
            self._close_hold(t)
            self.wait = t
        elif number == ABORTED:
            self._end_run(t, "removed")
            self._close_hold(t)
            self.wait = None
        elif number in (SUSPENDED, UNSUSPENDED):
            run = self.open_run()
            if run is not None:
                self._close_parts(run, t)
                run["parts"].append(["suspended" if number == SUSPENDED else "exec", t, None])
        elif number == POST_SCRIPT:
            self.post = _attr(event, "ReturnValue")

    def _transfer(self, kind: int, t: float, position: int) -> None:
        if kind in (1, 2):                        # input queued / started
            run = self._start_run(t, position)
            if not any(p[0] == "in" for p in run["parts"]):
                run["parts"].append(["in", t, None])
        elif kind == 3:                           # input finished
            run = self.open_run()
            if run is not None:
                self._close_parts(run, t, "in")
        elif kind in (4, 5):                      # output queued / started
            run = self.open_run()
            if run is not None and not any(p[0] == "out" for p in run["parts"]):
                self._close_parts(run, t, "exec")
                run["parts"].append(["out", t, None])
        elif kind == 6:
            run = self.open_run()
            if run is not None:
                self._close_parts(run, t, "out")

    def _held(self, event: Mapping, t: float) -> None:
        run = self._end_run(t, "held")
        self.hold_reason = _attr(event, "HoldReason")
        self.hold_code = _attr(event, "HoldReasonCode")
        self.holds.append({"t0": t, "t1": None, "reason": self.hold_reason, "code": self.hold_code,
                           "slot": run["slot"] if run is not None else None})
        self.wait = None

    def _close_hold(self, t: float) -> None:
        if self.holds and self.holds[-1]["t1"] is None:
            self.holds[-1]["t1"] = t


class Picture:
    """The fold (see the module docstring).  ``apply(entry)`` in journal order."""

    def __init__(self) -> None:
        self.queue = QueueFold()
        self.jobs: dict[tuple[int, int], JobTrack] = {}
        self.counts = {s: 0 for s in _ORDER}
        self.series: list[list] = []
        self.completions: list[float] = []
        self.dags: dict[int, dict] = {}
        self.position = 0
        self.first_time: float | None = None
        self.time: float | None = None
        self._untimed: list[list] = []

    def apply_all(self, entries: Iterable) -> "Picture":
        for entry in entries:
            self.apply(entry)
        self.queue.take_changes()
        return self

    def apply(self, entry) -> None:
        """Fold one journal entry (``eventcore.journal.Entry``)."""
        self.queue.apply(entry.position, entry.time, entry.job, entry.type, entry.payload)
        self.position = entry.position
        t = self._moment(entry)
        cluster, proc = entry.job.cluster, entry.job.proc
        if proc < 0 or cluster < 0:
            return
        track = self.jobs.get((cluster, proc))
        born = track is None
        if born:
            if entry.type not in ("proc", "event"):
                return
            track = self.jobs[(cluster, proc)] = JobTrack(cluster, proc)
            self.counts[1] += 1
            self._describe(track)
        if entry.type == "event":
            event = entry.payload["event"]
            if int(event["type"]) < 100:
                track.event(int(event["type"]), event, t, entry.position)
        elif entry.type == "leave":
            track.left = True
        elif entry.type == "proc":
            self._describe(track)
        track.changed = entry.position
        if self._restate(track, t) or born:
            self.series.append([entry.position, t] + [self.counts[s] for s in _ORDER])
            if t is None:
                self._untimed.append(self.series[-1])

    def _moment(self, entry) -> float | None:
        """The entry's event time; for other records the last event's (an ad's append
        time may be far from the run's, as for imported logs), or, before any event,
        the next event's (points waiting for it are in ``_untimed``)."""
        if entry.type != "event":
            return self.time
        t = effective_time(entry)
        if self.first_time is None or t < self.first_time:
            self.first_time = t
        if self.time is None or t > self.time:
            self.time = t
        for point in self._untimed:
            point[1] = t
        self._untimed.clear()
        return t

    def _describe(self, track: JobTrack) -> None:
        row = self.queue.proc(track.cluster, track.proc)
        if row is None:
            return
        ad = merged_ad(self.queue.cluster(track.cluster), row.ad)
        track.node = unquote(ad.get("DAGNodeName"))
        dagman = ad.get("DAGManJobId")
        track.dagman = int(dagman) if dagman and dagman.strip().isdigit() else None
        universe = ad.get("JobUniverse")
        track.universe = int(universe) if universe and universe.isdigit() else None
        cmd = unquote(ad.get("Cmd"))
        track.cmd = cmd.rsplit("/", 1)[-1] if cmd else None
        track.owner = unquote(ad.get("Owner"))
        args = unquote(ad.get("Arguments")) or ""
        if track.universe == 7 and "-Dag " in args:
            words = args.split()
            name = words[words.index("-Dag") + 1].strip("'\"")
            self.dags[track.cluster] = {"iwd": unquote(ad.get("Iwd")), "dag": name}

    def _restate(self, track: JobTrack, t: float) -> bool:
        """Take the job's state from the queue fold; True when the counts changed."""
        row = self.queue.proc(track.cluster, track.proc)
        status = row.status if row is not None else track.status
        if status == track.status:
            return False
        self.counts[track.status] -= 1
        self.counts[status] = self.counts.get(status, 0) + 1
        if status == 4 and t is not None:
            self.completions.append(t)
        track.status = status
        return True

    # ---------------------------------------------------------- readers --
    def header(self) -> dict:
        now = self.time or 0.0
        recent = sum(1 for t in self.completions[-5000:] if now - 60 < t <= now)
        span = (now - self.first_time) if self.first_time is not None else 0
        overall = (len(self.completions) / span * 60) if span > 0 else 0.0
        return {"position": self.position, "time": self.time, "start": self.first_time,
                "counts": {STATES[s]: self.counts[s] for s in _ORDER}, "total": len(self.jobs),
                "throughput": {"last_minute": recent, "per_minute": round(overall, 2)},
                "states": [STATES[s] for s in _ORDER]}

    def snapshot(self) -> dict:
        """The whole picture as of ``self.position``."""
        timed = self.series if not self._untimed else [p for p in self.series if p[1] is not None]
        return {"header": self.header(), "series": thin(timed, MAX_SERIES),
                "jobs": [t.row() for t in self.jobs.values()],
                "dags": {str(k): v for k, v in self.dags.items()}}

    def delta(self, since: int) -> dict:
        """What changed after position ``since`` (see the module docstring)."""
        start = len(self.series)
        while start > 0 and self.series[start - 1][0] > since:
            start -= 1
        return {"header": self.header(), "series": [p for p in self.series[start:] if p[1] is not None],
                "jobs": [t.row() for t in self.jobs.values() if t.changed > since],
                "dags": {str(k): v for k, v in self.dags.items()}}


def thin(series: list[list], most: int) -> list[list]:
    """At most ``most`` points: the last of each equal stretch of time (first and last
    kept).  Event times may step back a little (a log's events are in log order), so a
    stretch only ever moves forward."""
    if len(series) <= most:
        return list(series)
    t0 = min(p[1] for p in series)
    t1 = max(p[1] for p in series)
    width = (t1 - t0) / max(most - 2, 1) or 1.0
    out, bucket = [series[0]], -1
    for point in series[1:-1]:
        b = int((point[1] - t0) / width)
        if b <= bucket:
            out[-1] = point
        else:
            out.append(point)
            bucket = b
    out.append(series[-1])
    if len(out) > most:
        stride = len(out) / (most - 1)
        out = [out[int(i * stride)] for i in range(most - 1)] + [out[-1]]
    return out


def picture(entries: Iterable, position: int | None = None, as_of: float | None = None) -> Picture:
    """The picture at a cut, as ``replay.replay`` cuts: up to ``position`` (inclusive), or
    the entries that had happened by ``as_of``."""
    fold = Picture()
    for e in entries:
        if position is not None and e.position > position:
            break
        if as_of is not None and effective_time(e) > as_of:
            continue
        fold.apply(e)
    fold.queue.take_changes()
    return fold
