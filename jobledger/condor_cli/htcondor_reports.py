"""``htcondor job status|resources`` and ``htcondor eventlog read``: what the queue and a
job event log say, in HTCondor's words (htcondor_cli/job.py, eventlog.py)."""

from __future__ import annotations

import datetime
import logging
import os
import re
from pathlib import Path

from jobledger.eventcore.status import STATUS_NAMES


def _cluster(job_id: str) -> int:
    try:
        return int(str(job_id).split(".")[0])
    except ValueError:
        raise ValueError(f"{job_id!r} is not a job id") from None


def _since(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return (f"{seconds // 3600} hour(s), {seconds // 60 % 60} minute(s), and {seconds % 60} second(s).")


def job_status(log: logging.Logger, job_id: str, **_) -> None:
    import jobledger
    ads = jobledger.Schedd().query(f"ClusterId == {_cluster(job_id)}",
                                   ["JobStartDate", "JobStatus", "EnteredCurrentStatus", "HoldReason"])
    if not ads:
        raise RuntimeError(f"No job found for ID {job_id}.")
    ad, now = ads[0], datetime.datetime.now().timestamp()
    state = ad.get("JobStatus")
    if state == 2:
        log.info(f"Job has been running for {_since(now - float(ad.get('JobStartDate', now)))}")
    elif state == 5:
        log.info(f"Job has been held for {_since(now - float(ad.get('EnteredCurrentStatus', now)))}\n"
                 f"Hold Reason: {ad.get('HoldReason', '')}")
    elif state == 4:
        log.info("Job completed.")
    else:
        log.info(f"Job is {STATUS_NAMES.get(state, str(state)).upper()}.")


def job_resources(log: logging.Logger, job_id: str, **_) -> None:
    import jobledger
    ads = jobledger.Schedd().query(f"ClusterId == {_cluster(job_id)}", ["RemoteHost"])
    if not ads:
        raise RuntimeError(f"No jobs found for ID {job_id}.")
    if "RemoteHost" not in ads[0]:
        raise RuntimeError(f"Job {job_id} is not running yet.")
    log.info(f"Job is using resource {ads[0]['RemoteHost']}")


def _clock(event) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(event.timestamp)


def _duration(start: datetime.datetime, end: datetime.datetime) -> str:
    delta = end - start
    seconds = max(0, int(delta.total_seconds()))
    return f"{seconds // 86400}+{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _usage(text) -> str:
    found = re.search(r"(\d+):(\d+):(\d+)", str(text or ""))
    return found.group() if found else ""


def eventlog_read(log: logging.Logger, log_file: str, **_) -> None:
    """One line per job of the log: where it was submitted from (or ran), when it started,
    its evictions, when it last stopped, its wall time and its CPU use."""
    import jobledger
    path = Path(log_file)
    if not path.exists():
        raise FileNotFoundError(f"Could not find file: {log_file}")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"Could not access file: {log_file}")
    kinds = jobledger.JobEventType
    jobs: dict[str, dict] = {}
    with jobledger.JobEventLog(str(path)) as events:
        for event in events.events(0):
            job = f"{event.cluster}.{event.proc}"
            if job not in jobs:
                host = re.search(r"\d+\.\d+\.\d+\.\d+", str(event.get("SubmitHost", "")))
                jobs[job] = {"Host": host.group() if host else "", "start": _clock(event), "Evictions": 0}
                continue
            row = jobs[job]
            if event.type in (kinds.JOB_EVICTED, kinds.JOB_TERMINATED):
                row["stop"] = _clock(event)
                row["Wall Time"] = _duration(row["start"], row["stop"])
                row["CPU Usage"] = _usage(event.get("RunRemoteUsage" if event.type == kinds.JOB_EVICTED
                                                    else "TotalRemoteUsage"))
                if event.type == kinds.JOB_EVICTED:
                    row["Evictions"] += 1
            elif event.type == kinds.EXECUTE and event.get("SlotName") is not None:
                row["Host"] = str(event.get("SlotName"))
    if not jobs:
        return
    def when(moment) -> str:
        return f"{moment.month}/{moment.day} {moment:%H:%M}" if moment else ""
    rows = [(job, row["Host"], when(row["start"]), str(row["Evictions"]), when(row.get("stop")),
             row.get("Wall Time", ""), row.get("CPU Usage", "")) for job, row in jobs.items()]
    header = ("Job", "Host", "Start Time", "Evictions", "Evict Time", "Wall Time", "CPU Usage")
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) + 2 for i in range(len(header))]
    for line in [header, *rows]:
        print(" ".join(f"{value:<{width}}" for value, width in zip(line, widths)).rstrip())
