"""condor_q's and condor_history's fixed-column tables (HTCondor's print masks).

A ``Column`` has a heading, a width (negative: left-aligned, 0: as wide as
its text) and a function from the job ad to its text.  Columns are joined by
one space unless a column says ``noprefix``; headings are left-aligned.
The renderers (``qdate``, ``run_time``, ...) are HTCondor's PRINTAS forms.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import attrs


def status_letter(status) -> str:
    # imported when a table is drawn: eventcore.status brings the event catalog, whose
    # classes take most of a command's start-up, which condor_q -af does without
    from jobledger.eventcore.status import STATUS_LETTER
    return STATUS_LETTER.get(status, "?")


@attrs.frozen
class Column:
    heading: str
    width: int
    render: Callable[[dict], str]
    noprefix: bool = False
    truncate: bool = False


def heading_line(columns: list[Column]) -> str:
    parts = []
    for i, col in enumerate(columns):
        if i and not col.noprefix:
            parts.append(" ")
        last = i == len(columns) - 1
        parts.append(col.heading if last else col.heading.ljust(abs(col.width)))
    return "".join(parts) + "\n"


def row_line(columns: list[Column], ad, max_width: int = 0) -> str:
    parts = []
    for i, col in enumerate(columns):
        if i and not col.noprefix:
            parts.append(" ")
        text = col.render(ad)
        width = abs(col.width)
        if col.truncate and len(text) > width:
            text = text[:width]
        parts.append(text.ljust(width) if col.width < 0 else text.rjust(width))
    line = "".join(parts)
    if max_width and len(line) > max_width:
        line = line[:max_width]
    return line + "\n"


def qdate(value) -> str:
    """HTCondor's QDATE (format_date): ``%2d/%-2d %02d:%02d`` of month, day, hour, minute."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "??"
    tm = time.localtime(value)
    return f"{tm.tm_mon:2d}/{tm.tm_mday:<2d} {tm.tm_hour:02d}:{tm.tm_min:02d}"


def duration(seconds) -> str:
    """``D+HH:MM:SS``."""
    seconds = int(seconds) if isinstance(seconds, (int, float)) else 0
    return f"{seconds // 86400}+{seconds % 86400 // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def wall_time(ad, now: float | None = None) -> int:
    """Wall-clock time of a job: earlier runs plus the current one."""
    total = ad.get("RemoteWallClockTime", 0)
    total = int(total) if isinstance(total, (int, float)) else 0
    start = ad.get("JobCurrentStartDate") or ad.get("ShadowBday")
    if ad.get("JobStatus") == 2 and isinstance(start, int):
        total += max(0, int((now or time.time()) - start))
    return total


def memory_mb(ad) -> str:
    usage = ad.get("MemoryUsage")
    if isinstance(usage, (int, float)) and not isinstance(usage, bool):
        return f"{float(usage):.1f}"
    size = ad.get("ImageSize", 0)
    return f"{(size if isinstance(size, (int, float)) else 0) / 1024.0:.1f}"


def job_description(ad) -> str:
    """``Cmd``'s base name and the arguments (HTCondor's JOB_DESCRIPTION)."""
    args = ad.get("Arguments")
    if not isinstance(args, str) or not args:
        args = ad.get("Args") if isinstance(ad.get("Args"), str) else ""
    cmd = ad.get("Cmd", "")
    cmd = os.path.basename(cmd) if isinstance(cmd, str) else ""
    return f"{cmd} {args}".rstrip() if args else cmd


def owner(ad) -> str:
    value = ad.get("Owner")
    return value if isinstance(value, str) else "??"


def _id(ad) -> str:
    return f"{ad.get('ClusterId', 0):4d}."


def _proc(ad) -> str:
    return f"{ad.get('ProcId', 0):<3d}"


ID_COLUMNS = [Column(" ID", 5, _id), Column(" ", -3, _proc, noprefix=True)]

JOB_DEFAULT = ID_COLUMNS + [
    Column("OWNER", -14, owner),
    Column("  SUBMITTED", 11, lambda ad: qdate(ad.get("QDate"))),
    Column("    RUN_TIME", 12, lambda ad: duration(wall_time(ad))),
    Column("ST", -2, lambda ad: status_letter(ad.get("JobStatus"))),
    Column("PRI", -3, lambda ad: str(ad.get("JobPrio", 0))),
    Column("SIZE", 4, memory_mb),
    Column("CMD", 0, job_description),
]

# -nobatch -dag: a DAG node's name in place of its owner, indented by its depth under the
# DAGMan jobs shown (HTCondor's jobDAG_PrintFormat; the name column is 17 wide at 80 columns).
JOB_DAG = ID_COLUMNS + [
    Column("OWNER/NODENAME", -17, lambda ad: ad.get("_dag_name") or owner(ad), truncate=True),
] + JOB_DEFAULT[3:]

JOB_RUN = ID_COLUMNS + [
    Column("OWNER", -14, owner),
    Column("  SUBMITTED", 11, lambda ad: qdate(ad.get("QDate"))),
    Column("    RUN_TIME", 12, lambda ad: duration(wall_time(ad))),
    Column("HOST(S)", 0, lambda ad: str(ad.get("RemoteHost", ""))),
]


def _hold_code(ad) -> str:
    code = ad.get("HoldReasonCode")
    return f"{code:4d}" if isinstance(code, int) else "?"


def _hold_sub(ad) -> str:
    sub = ad.get("HoldReasonSubCode")
    return f"/{sub:<3d}"[:4] if isinstance(sub, int) else " "


JOB_HOLD = ID_COLUMNS + [
    Column("OWNER", -14, owner),
    Column("HELD_SINCE", 11, lambda ad: qdate(ad.get("EnteredCurrentStatus"))),
    Column("CODE", 0, _hold_code),
    Column("/SUB", 0, _hold_sub, noprefix=True),
    Column("HOLD_REASON", 0, lambda ad: str(ad.get("HoldReason", ""))),
]

ATTRS_DEFAULT = ["ClusterId", "ProcId", "Owner", "QDate", "RemoteWallClockTime", "JobCurrentStartDate",
                 "ShadowBday", "JobStatus", "JobPrio", "ImageSize", "MemoryUsage", "Cmd", "Args",
                 "Arguments", "RemoteHost", "EnteredCurrentStatus", "HoldReasonCode",
                 "HoldReasonSubCode", "HoldReason", "JobBatchName", "DAGManJobId", "CompletionDate",
                 "ExitCode"]
