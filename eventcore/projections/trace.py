"""A picture as Chrome trace JSON (Perfetto, chrome://tracing, speedscope read it).  Pure.

``chrome_trace(snapshot)`` turns ``Picture.snapshot()`` into the Trace
Event Format's JSON object: one process per execute host, one thread per
slot (metadata events ``process_name``/``thread_name``), one complete
event (``ph: "X"``) per part of a run attempt (queue wait, input transfer,
execution, output transfer, suspension) named for the job and its DAG node,
holds on the slot they were held on (or a "queue" process when held
idle), and a counter (``ph: "C"``) of the jobs by state over time.
Timestamps are microseconds since the run's first event.
"""

from __future__ import annotations

__all__ = ["chrome_trace"]

_PART_NAMES = {"wait": "queue wait", "in": "input transfer", "exec": "execution",
               "out": "output transfer", "suspended": "suspended"}


def _us(t: float, t0: float) -> int:
    return int(round((t - t0) * 1_000_000))


class _Ids:
    """pid per host, tid per slot, and their metadata events."""

    def __init__(self):
        self.pids: dict[str, int] = {}
        self.tids: dict[tuple[int, str], int] = {}
        self.meta: list[dict] = []

    def of(self, host: str, slot: str) -> tuple[int, int]:
        pid = self.pids.get(host)
        if pid is None:
            pid = self.pids[host] = len(self.pids) + 1
            self.meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                              "args": {"name": host}})
        tid = self.tids.get((pid, slot))
        if tid is None:
            tid = self.tids[(pid, slot)] = len(self.tids) + 1
            self.meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                              "args": {"name": slot}})
        return pid, tid


def _host_of(slot: str | None) -> str:
    return slot.split("@", 1)[1] if slot and "@" in slot else (slot or "queue")


def _job_events(job: dict, ids: _Ids, t0: float, end: float) -> list[dict]:
    out = []
    label = job["id"] + (f" ({job['node']})" if job.get("node") else "")
    args = {"job": job["id"], "node": job.get("node"), "status": job["st"]}
    for number, run in enumerate(job["runs"], 1):
        slot = run["slot"] or "unknown slot"
        pid, tid = ids.of(_host_of(run["slot"]), slot)
        parts = ([["wait", run["wait"], run["start"]]] if run["wait"] is not None else []) + run["parts"]
        for kind, a, b in parts:
            b = end if b is None else b
            out.append({"ph": "X", "name": f"{label} {_PART_NAMES.get(kind, kind)}", "cat": kind,
                        "pid": pid, "tid": tid, "ts": _us(a, t0), "dur": max(0, _us(b, t0) - _us(a, t0)),
                        "args": dict(args, attempt=number, outcome=run["outcome"])})
    for hold in job["holds"]:
        slot = hold["slot"] or "held while idle"
        pid, tid = ids.of(_host_of(hold["slot"]), slot)
        b = end if hold["t1"] is None else hold["t1"]
        out.append({"ph": "X", "name": f"{label} held", "cat": "held", "pid": pid, "tid": tid,
                    "ts": _us(hold["t0"], t0), "dur": max(0, _us(b, t0) - _us(hold["t0"], t0)),
                    "args": dict(args, reason=hold["reason"], code=hold["code"])})
    return out


def chrome_trace(snapshot: dict) -> dict:
    """The Trace Event Format object of a picture (see the module docstring)."""
    header = snapshot["header"]
    t0 = header["start"] or 0.0
    end = header["time"] or t0
    ids = _Ids()
    events: list[dict] = []
    for job in sorted(snapshot["jobs"], key=lambda j: (j["c"], j["p"])):
        events += _job_events(job, ids, t0, end)
    states = header["states"]
    counter_pid = len(ids.pids) + 1
    for point in snapshot["series"]:
        events.append({"ph": "C", "name": "jobs by state", "pid": counter_pid, "tid": 0,
                       "ts": _us(point[1], t0), "args": dict(zip(states, point[2:]))})
    ids.meta.append({"ph": "M", "name": "process_name", "pid": counter_pid, "tid": 0,
                     "args": {"name": "queue"}})
    return {"traceEvents": ids.meta + events, "displayTimeUnit": "ms",
            "otherData": {"journal_position": header["position"], "jobs": header["total"],
                          "start": t0}}
