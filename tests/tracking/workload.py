"""A reproducible batch of jobs, and writers that record it as a real pool would.

``workload(n, seed)`` plans ``n`` jobs (clusters of ``per_cluster`` procs)
whose lifecycles interleave in time: submit, sometimes a hold and release,
execute, sometimes an eviction and a second execute, then an exit (code 0
or not, or a signal), a removal, or still held / running / idle at the end.
Each job's final state is what the plan says, not what a fold computes: the
expected answer is independent of the code under test.

Writers turn the plan into HTCondor user-log text (one log per cluster, as
``log = cluster.$(Cluster).log`` would) or into journal records (``Store``).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import attrs

from jobledger.eventcore.codecs.userlog_text_write import render_text
from jobledger.eventcore.events import event_to_dict, make_event
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, EventRecord, LeaveQueue, ProcAd
from jobledger.tracking.localzone import LOCAL_TZINFO

IDLE, RUNNING, REMOVED, COMPLETED, HELD = 1, 2, 3, 4, 5
T0 = 1_700_000_000


@attrs.frozen
class Final:
    status: int
    exit_code: int | None = None
    exit_signal: int | None = None
    hold_code: int | None = None


@attrs.frozen
class Step:
    time: int
    job: JobId
    number: int
    attrs: dict


@attrs.frozen
class Workload:
    steps: list[Step]
    finals: dict[JobId, Final]
    per_cluster: int

    def clusters(self) -> list[int]:
        return sorted({j.cluster for j in self.finals})

    def log_name(self, cluster: int) -> str:
        return f"cluster.{cluster}.log"


def _terminated(code=None, signal=None):
    if signal is None:
        return {"TerminatedNormally": True, "ReturnValue": code}
    return {"TerminatedNormally": False, "TerminatedBySignal": signal}


def _lifecycle(rng: random.Random, job: JobId, t: int) -> tuple[list[tuple[int, int, dict]], Final]:
    steps = [(t, 0, {"SubmitHost": "<127.0.0.1:9618?sock=schedd>"})]

    def later(number, attrs=None):
        nonlocal t
        t += rng.randint(1, 30)
        steps.append((t, number, attrs or {}))

    if rng.random() < 0.1:
        later(12, {"HoldReason": "via condor_hold (by user alice)", "HoldReasonCode": 1,
                   "HoldReasonSubCode": 0})
        if rng.random() < 0.3:
            return steps, Final(HELD, hold_code=1)
        later(13, {"Reason": "via condor_release (by user alice)"})
    fate = rng.random()
    if fate < 0.05:
        return steps, Final(IDLE)
    later(1, {"ExecuteHost": "<127.0.0.1:9619?sock=startd>", "SlotName": "slot1_1@localhost"})
    if rng.random() < 0.1:
        later(4, {"Checkpointed": False, "TerminatedAndRequeued": False, "TerminatedNormally": False})
        later(1, {"ExecuteHost": "<127.0.0.1:9619?sock=startd>", "SlotName": "slot1_2@localhost"})
    if fate < 0.1:
        return steps, Final(RUNNING)
    if fate < 0.15:
        later(12, {"HoldReason": "Error from slot1_1@localhost: out of memory",
                   "HoldReasonCode": 34, "HoldReasonSubCode": 102})
        return steps, Final(HELD, hold_code=34)
    if fate < 0.22:
        later(9, {"Reason": "via condor_rm (by user alice)"})
        return steps, Final(REMOVED)
    if fate < 0.27:
        later(5, _terminated(signal=9))
        return steps, Final(COMPLETED, exit_signal=9)
    code = 0 if fate < 0.9 else rng.randint(1, 3)
    later(5, _terminated(code))
    return steps, Final(COMPLETED, exit_code=code)


def workload(n: int, seed: int = 1, per_cluster: int = 10, first_cluster: int = 1) -> Workload:
    rng = random.Random(seed)
    steps: list[Step] = []
    finals: dict[JobId, Final] = {}
    for i in range(n):
        job = JobId(first_cluster + i // per_cluster, i % per_cluster)
        t = T0 + i // 4
        job_steps, final = _lifecycle(rng, job, t)
        finals[job] = final
        steps.extend(Step(ts, job, number, attrs) for ts, number, attrs in job_steps)
    steps.sort(key=lambda s: (s.time, s.job))
    return Workload(steps, finals, per_cluster)


def event_text(step: Step) -> str:
    """The step's event as a pool writes it: in local time, which the trackers read back."""
    event = make_event(step.number, cluster=step.job.cluster, proc=step.job.proc,
                       timestamp=step.time, attrs=step.attrs)
    return render_text(event, tz=LOCAL_TZINFO)


def userlog_chunks(load: Workload, directory: Path) -> list[tuple[Path, bytes]]:
    """(log path, event bytes) in write order."""
    return [(directory / load.log_name(s.job.cluster), event_text(s).encode()) for s in load.steps]


def write_userlogs(load: Workload, directory: Path, limit: int | None = None) -> list[Path]:
    """Append the plan's events (the first ``limit``) to one log per cluster."""
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[Path, object] = {}
    try:
        for path, data in userlog_chunks(load, directory)[:limit]:
            f = files.get(path)
            if f is None:
                f = files[path] = open(path, "ab")
            f.write(data)
    finally:
        for f in files.values():
            f.close()
    paths = [directory / load.log_name(c) for c in load.clusters()]
    for p in paths:
        p.touch()
    return paths


def journal_records(load: Workload, log_dir: Path | None = None) -> list[list]:
    """Journal record groups (one append each) that tell the plan's story."""
    groups: list[list] = []
    seen: set[int] = set()
    for step in load.steps:
        job = step.job
        group = []
        if step.number == 0:
            if job.cluster not in seen:
                seen.add(job.cluster)
                ad = {"Owner": '"alice"', "Cmd": '"/bin/true"'}
                if log_dir is not None:
                    ad["Iwd"] = f'"{log_dir}"'
                    ad["UserLog"] = f'"{log_dir / load.log_name(job.cluster)}"'
                group.append(ClusterAd(job.cluster, ad))
            group.append(ProcAd(job, {"JobStatus": "1", "QDate": str(step.time)}))
        event = make_event(step.number, cluster=job.cluster, proc=job.proc,
                           timestamp=step.time, attrs=step.attrs)
        group.append(EventRecord(job, event_to_dict(event)))
        if step.number in (5, 9):                  # ended: the job leaves the queue
            group.append(LeaveQueue(job))
        groups.append(group)
    return groups


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
