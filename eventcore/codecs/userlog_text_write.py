"""Write events in HTCondor's text user-log layout, byte for byte.

``render_text(event, fmt=TextFormat(), tz=timezone.utc)`` returns one whole
event: header line, body lines, and the ``...`` terminator line, each ending
in ``\\n``, exactly as HTCondor's writer lays them out.
``render_event_text(...)`` is the same without the terminator (what
``str(htcondor2.JobEvent)`` prints).

Pure: the time zone is an argument (a ``datetime.tzinfo``; the pool passes
its local zone, tests use UTC).  ``TextFormat`` holds HTCondor's format
options (``ISO_DATE`` on by default, ``UTC``, ``SUB_SECOND``);
``TextFormat.from_options("ISO_DATE,UTC")`` reads HTCondor's option string.

Known writer facts reproduced here: events 041..045 put their first field on
the line after the header (HTCondor's own reader rejects that layout; ours
reads it); 000 prints the warning prefix before ``Warnings``; the usage table
of 005/015 is column-aligned from the values; 004's table is not written
(the reader never keeps one).
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Callable, Mapping

import attrs

from jobledger.eventcore.codecs.userlog_values import sorted_ci, unparse
from jobledger.eventcore.events import Event

__all__ = ["TextFormat", "render_text", "render_event_text", "render_parts",
           "format_time", "usage_text", "FILE_TRANSFER_TEXT", "COMMON_FILES_TEXT"]

UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)


@attrs.frozen
class TextFormat:
    """HTCondor's user-log format options for the text layout."""

    iso_date: bool = True
    utc: bool = False
    sub_second: bool = False

    @classmethod
    def from_options(cls, text: str) -> "TextFormat":
        """Parse e.g. ``"ISO_DATE, UTC, !SUB_SECOND"`` or ``"LEGACY"``."""
        iso, utc, sub = False, False, False
        for raw in text.replace(",", " ").split():
            neg = raw.startswith("!")
            word = raw.lstrip("!").upper()
            if word == "ISO_DATE":
                iso = not neg
            elif word == "UTC":
                utc = not neg
            elif word == "SUB_SECOND":
                sub = not neg
            elif word == "LEGACY":
                if neg:
                    iso = True
                else:
                    iso = utc = sub = False
        return cls(iso_date=iso, utc=utc, sub_second=sub)


_HEADS: dict[tuple, str] = {}     # (second, fmt, tz, zone's state) -> text to the second
_HEADS_LIMIT = 64


def format_time(timestamp: int | float, fmt: TextFormat = TextFormat(),
                tz: datetime.tzinfo = UTC) -> str:
    """The header timestamp for ``timestamp`` (epoch seconds).

    The text to the second is worked out once for each second (a stream of
    events shares a few): for a fixed-offset ``tz``, or one whose offsets
    depend on the process's zone and that names that state in ``zone_key()``
    (``tracking.localzone.LocalTimezone``); any other is asked every time."""
    secs = math.floor(timestamp)
    zone = UTC if fmt.utc else tz
    state = zone.zone_key() if hasattr(zone, "zone_key") else None
    key = (secs, fmt.iso_date, zone, state)
    text = _HEADS.get(key) if state is not None or type(zone) is datetime.timezone else None
    if text is None:
        text = _second_text(secs, fmt.iso_date, zone)
        if state is not None or type(zone) is datetime.timezone:
            if len(_HEADS) >= _HEADS_LIMIT:
                _HEADS.clear()
            _HEADS[key] = text
    if fmt.sub_second:
        micros = int(round((timestamp - secs) * 1_000_000))
        text += ".%03d" % min(micros // 1000, 999)
    if fmt.utc:
        text += "Z"
    return text


def _second_text(secs: int, iso_date: bool, zone: datetime.tzinfo) -> str:
    dt = (_EPOCH + datetime.timedelta(seconds=secs)).astimezone(zone)
    if iso_date:
        return "%04d-%02d-%02d %02d:%02d:%02d" % (dt.year, dt.month, dt.day,
                                                 dt.hour, dt.minute, dt.second)
    return "%02d/%02d %02d:%02d:%02d" % (dt.month, dt.day, dt.hour, dt.minute, dt.second)


def usage_text(seconds_usr: int, seconds_sys: int) -> str:
    """``Usr d hh:mm:ss, Sys d hh:mm:ss`` for two CPU times in seconds."""
    def split(t):
        d, t = divmod(int(t), 86400)
        h, t = divmod(t, 3600)
        m, s = divmod(t, 60)
        return d, h, m, s
    return "Usr %d %02d:%02d:%02d, Sys %d %02d:%02d:%02d" % (split(seconds_usr) + split(seconds_sys))


def _num(value) -> str:
    """A byte count as the writer prints it (no fraction)."""
    if isinstance(value, float):
        return "%.0f" % value
    return "%d" % value


FILE_TRANSFER_TEXT = {
    1: "Entered queue to transfer input files",
    2: "Started transferring input files",
    3: "Finished transferring input files",
    4: "Entered queue to transfer output files",
    5: "Started transferring output files",
    6: "Finished transferring output files",
}
COMMON_FILES_TEXT = {
    "TransferQueued": "Entered queue to transfer common files",
    "TransferStarted": "Started transferring common files",
    "TransferFinished": "Finished transferring common files",
    "WaitStarted": "Started waiting for previous job to transfer common files",
    "WaitFinished": "Finished waitiing for previous job to transfer common files",
}
_EXEC_ERRORS = {0: "Job file not executable.", 1: "Job not properly linked for Condor."}
_WARNING_PREFIX = "WARNING: Committed job submission into the queue with the following warning(s): "
_TABLE_LABELS = {"Memory": "Memory (MB)", "Disk": "Disk (KB)", "Gpus": "Gpus (Average)",
                 "GpusMemory": "GpusMemory (MB)", "TimeExecute": "TimeExecute (s)",
                 "TimeSlotBusy": "TimeSlotBusy (s)"}


# ------------------------------------------------------------ body writers --
# Each takes the attribute dict (HTCondor names) and the hidden fields and
# returns the lines after the header's timestamp (first = header text).

def _submit(a, h, cluster_level=False):
    what = "Cluster submitted" if cluster_level else "Job submitted"
    lines = [f"{what} from host: {a.get('SubmitHost', '')}"]
    notes = a.get("StructuredNotes")
    log_notes = a.get("LogNotes", h.get("log_notes"))
    if notes is not None:
        lines.append("    " + unparse(notes, new_syntax=True))
    elif log_notes:
        lines.append("    " + log_notes)
    user_notes = a.get("UserNotes", h.get("user_notes"))
    if user_notes:
        lines.append("    " + user_notes)
    if a.get("Warnings"):
        lines.append("    " + _WARNING_PREFIX + a["Warnings"])
    return lines


def _execute(a, h, node=False):
    host = a.get("ExecuteHost", "")
    lines = [f"Node {a.get('Node', 0)} executing on host: {host}" if node
             else f"Job executing on host: {host}"]
    if a.get("SlotName"):
        lines.append(f"\tSlotName: {a['SlotName']}")
    props = a.get("ExecuteProps") or {}
    for key in sorted_ci(props.keys()):
        lines.append(f"\t{key} = {unparse(props[key])}")
    return lines


def _termination(a, core=True):
    if a.get("TerminatedNormally"):
        return [f"\t(1) Normal termination (return value {a.get('ReturnValue', 0)})"]
    lines = [f"\t(0) Abnormal termination (signal {a.get('TerminatedBySignal', 0)})"]
    if core:
        lines.append(f"\t(1) Corefile in: {a['CoreFile']}" if a.get("CoreFile")
                     else "\t(0) No core file")
    return lines


_TERM_KNOWN = {"TerminatedNormally", "ReturnValue", "TerminatedBySignal", "CoreFile",
               "RunLocalUsage", "RunRemoteUsage", "TotalLocalUsage", "TotalRemoteUsage",
               "SentBytes", "ReceivedBytes", "TotalSentBytes", "TotalReceivedBytes", "Node"}


def _table_cells(extra: Mapping[str, Any]):
    """Group usage-table attributes by resource tag: tag -> {col: value}."""
    tags: dict[str, dict] = {}
    names = [k for k in extra if k not in _TERM_KNOWN]
    for k in names:
        if k.endswith("Usage") and len(k) > 5:
            tags.setdefault(k[:-5], {})["use"] = extra[k]
    for k in names:
        if k.startswith("Request") and len(k) > 7:
            tags.setdefault(k[7:], {})["req"] = extra[k]
        elif k.startswith("Assigned") and len(k) > 8:
            tags.setdefault(k[8:], {})["assigned"] = extra[k]
    for k in names:
        if k in tags:
            tags[k]["alloc"] = extra[k]
        elif (not k.startswith(("Request", "Assigned")) and not k.endswith("Usage")
              and isinstance(extra[k], (int, float)) and not isinstance(extra[k], bool)):
            tags[k] = {"alloc": extra[k]}   # a row with only an Allocated value (GPUs : 0)
    return tags


def _usage_table(extra: Mapping[str, Any]) -> list[str]:
    tags = _table_cells(extra)
    if not tags:
        return []
    cols = ("use", "req", "alloc", "assigned")
    frac = dict.fromkeys(cols, False)
    cells: dict[str, dict[str, str]] = {}
    for tag, vals in tags.items():
        row = {}
        for c in cols:
            v = vals.get(c)
            if v is None:
                row[c] = ""
            elif isinstance(v, float) and not isinstance(v, bool):
                if math.isfinite(v) and v != int(v):
                    row[c] = "%.2f" % v
                    frac[c] = True
                else:
                    row[c] = "%d" % int(v) if math.isfinite(v) else unparse(v)
            else:
                row[c] = unparse(v)
        cells[tag] = row
    for row in cells.values():
        for c in cols:
            if frac[c] and row[c].isdigit():
                row[c] += "   "
    w_tag = max([len("Memory (MB)") + 1] + [len(t) for t in cells])
    w_use = max([8] + [len(r["use"]) for r in cells.values()])
    w_req = max([8] + [len(r["req"]) for r in cells.values()])
    w_alloc = max([0] + [len(r["alloc"]) for r in cells.values()])
    w_asg = max([0] + [len(r["assigned"]) for r in cells.values()])
    out = ["\tPartitionable Resources : %*s %*s %*s %s" % (
        w_use, "Usage", w_req, "Request", max(w_alloc, 9),
        "Allocated" if w_alloc else "", "Assigned" if w_asg else "")]
    for tag in sorted_ci(cells.keys()):
        r = cells[tag]
        out.append("\t   %-*s : %*s %*s %*s %s" % (
            w_tag + 8, _TABLE_LABELS.get(tag, tag), w_use, r["use"], w_req, r["req"],
            max(w_alloc, 9), r["alloc"], r["assigned"]))
    return out


def _terminated(a, h, node=False):
    who = "Node" if node else "Job"
    lines = [f"Node {a.get('Node', 0)} terminated." if node else "Job terminated."]
    lines += _termination(a)
    lines += [f"\t\t{a.get('RunRemoteUsage', '')}  -  Run Remote Usage",
              f"\t\t{a.get('RunLocalUsage', '')}  -  Run Local Usage",
              f"\t\t{a.get('TotalRemoteUsage', '')}  -  Total Remote Usage",
              f"\t\t{a.get('TotalLocalUsage', '')}  -  Total Local Usage",
              f"\t{_num(a.get('SentBytes', 0))}  -  Run Bytes Sent By {who}",
              f"\t{_num(a.get('ReceivedBytes', 0))}  -  Run Bytes Received By {who}",
              f"\t{_num(a.get('TotalSentBytes', 0))}  -  Total Bytes Sent By {who}",
              f"\t{_num(a.get('TotalReceivedBytes', 0))}  -  Total Bytes Received By {who}"]
    table = _usage_table(a)
    return lines + table + (_toe_lines(h.get("toe"), table) if not node else [])


def _toe_lines(toe, table) -> list:
    """HTCondor's ToE tag line after the usage table (a blank line between them)."""
    if not isinstance(toe, Mapping) or toe.get("How") != "OF_ITS_OWN_ACCORD" or "When" not in toe:
        return []
    when = datetime.datetime.fromtimestamp(int(toe["When"]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if toe.get("ExitBySignal"):
        how = f"signal {int(toe.get('ExitSignal', 0))}"
    else:
        how = f"exit-code {int(toe.get('ExitCode', 0))}"
    return ([""] if table else []) + [f"\tJob terminated of its own accord at {when} with {how}."]


def _evicted(a, h):
    first = "Job was evicted."
    if a.get("ReasonCode"):
        first += f" Code {a['ReasonCode']} Subcode {a.get('ReasonSubCode', 0)}"
    requeued = a.get("TerminatedAndRequeued")
    if requeued:
        second = "\t(0) Job terminated and was requeued"
    elif a.get("Checkpointed"):
        second = "\t(1) Job was checkpointed."
    else:
        second = "\t(0) CPU times"
    lines = [first, second,
             f"\t\t{a.get('RunRemoteUsage', '')}  -  Run Remote Usage",
             f"\t\t{a.get('RunLocalUsage', '')}  -  Run Local Usage",
             f"\t{_num(a.get('SentBytes', 0))}  -  Run Bytes Sent By Job",
             f"\t{_num(a.get('ReceivedBytes', 0))}  -  Run Bytes Received By Job"]
    if requeued:
        lines += _termination(a)
    if a.get("Reason"):
        lines.append(("\t%s" if requeued else "\tReason: %s") % a["Reason"])
    return lines


def _image_size(a, h):
    lines = [f"Image size of job updated: {a.get('Size', 0)}"]
    if a.get("MemoryUsage") is not None:
        lines.append(f"\t{a['MemoryUsage']}  -  MemoryUsage of job (MB)")
    lines.append(f"\t{a.get('ResidentSetSize', 0)}  -  ResidentSetSize of job (KB)")
    if a.get("ProportionalSetSize") is not None:
        lines.append(f"\t{a['ProportionalSetSize']}  -  ProportionalSetSize of job (KB)")
    return lines


def _shadow_exception(a, h):
    return ["Shadow exception!", f"\t{a.get('Message', '')}",
            f"\t{_num(a.get('SentBytes', 0))}  -  Run Bytes Sent By Job",
            f"\t{_num(a.get('ReceivedBytes', 0))}  -  Run Bytes Received By Job"]


def _with_reason(first):
    def write(a, h):
        return [first] + ([f"\t{a['Reason']}"] if a.get("Reason") else [])
    return write


def _held(a, h):
    return ["Job was held.", f"\t{a.get('HoldReason') or 'Reason unspecified'}",
            f"\tCode {a.get('HoldReasonCode', 0)} Subcode {a.get('HoldReasonSubCode', 0)}"]


def _post_script(a, h):
    lines = ["POST Script terminated."] + _termination(a, core=False)
    if a.get("DAGNodeName"):
        lines.append(f"    DAG Node: {a['DAGNodeName']}")
    return lines


def _remote_error(a, h):
    kind = "Message" if a.get("CriticalError", 1) == 0 else "Error"
    lines = [f"{kind} from {a.get('Daemon', '')} on {a.get('ExecuteHost', '')}:"]
    if a.get("ErrorMsg"):
        lines += [f"\t{line}" for line in a["ErrorMsg"].split("\n")]
    if a.get("HoldReasonCode"):
        lines.append(f"\tCode {a['HoldReasonCode']} Subcode {a.get('HoldReasonSubCode', 0)}")
    return lines


def _future(a, h, indent=""):
    lines = [a.get("EventHead", "")]
    if h.get("payload") is not None:
        payload = h["payload"]
        return lines + (payload.split("\n") if payload else [])
    for key in a:
        if key != "EventHead":
            lines.append(f"{indent}{key} = {unparse(a[key])}")
    return lines


def _job_ad_info(a, h):
    return ["Job ad information event triggered."] + [
        f"{k} = {unparse(a[k])}" for k in sorted_ci(a.keys())]


def _attribute_update(a, h):
    name, value = a.get("Attribute", ""), a.get("Value", "")
    if h.get("old_value") is not None:
        return [f"Changing job attribute {name} from {h['old_value']} to {value}"]
    return [f"Setting job attribute {name} to {value}"]


def _cluster_remove(a, h):
    completion = a.get("Completion", 0)
    word = {1: "Complete", 2: "Paused", 0: "Incomplete"}.get(completion)
    if word is None:
        word = f"Error {completion}"
    lines = ["Cluster removed",
             f"\tMaterialized {a.get('NextProcId', 0)} jobs from {a.get('NextRow', 0)} items.\t{word}"]
    if a.get("Notes"):
        lines.append(f"\t{a['Notes']}")
    return lines


def _factory_paused(a, h):
    lines = ["Job Materialization Paused"]
    if a.get("Reason") or a.get("PauseCode"):
        lines.append(f"\t{a.get('Reason') or ''}")
    if a.get("PauseCode"):
        lines.append(f"\tPauseCode {a['PauseCode']}")
    if a.get("HoldCode"):
        lines.append(f"\tHoldCode {a['HoldCode']}")
    return lines


def _file_transfer(a, h):
    lines = [FILE_TRANSFER_TEXT.get(a.get("Type", 0), "")]
    if a.get("QueueingDelay") is not None:
        lines.append(f"\tSeconds spent in queue: {a['QueueingDelay']}")
    if a.get("Host"):
        lines.append(f"\tTransferring to host: {a['Host']}")
    return lines


def _common_files(a, h):
    kind = a.get("Type", "")
    lines = [f"Common files event: {kind}"]
    if kind in COMMON_FILES_TEXT:
        lines.append(f"\t{COMMON_FILES_TEXT[kind]}")
    return lines


def _fields(*spec):
    """041..045: empty header text, then one ``\\t<label>: <value>`` per field."""
    def write(a, h):
        return [""] + [f"\t{label}: {a.get(name, '')}" for label, name in spec]
    return write


def _labelled(a, names):
    """Grid events: one ``    Name: value`` line per name (empty when absent)."""
    return [f"    {name}: {a.get(name) or ''}" for name in names]


def _fixed(*lines):
    return lambda a, h: list(lines)


_WRITERS: dict[int, Callable[[Mapping, Mapping], list]] = {
    0: _submit,
    1: _execute,
    2: lambda a, h: ["(%d) %s" % (a.get("ExecuteErrorType", -1),
                                  _EXEC_ERRORS.get(a.get("ExecuteErrorType", -1),
                                                   "[Bad error number.]"))],
    3: lambda a, h: ["Job was checkpointed.",
                     f"\t{a.get('RunRemoteUsage', '')}  -  Run Remote Usage",
                     f"\t{a.get('RunLocalUsage', '')}  -  Run Local Usage",
                     f"\t{_num(a.get('SentBytes', 0))}  -  Run Bytes Sent By Job For Checkpoint"],
    4: _evicted,
    5: _terminated,
    6: _image_size,
    7: _shadow_exception,
    8: lambda a, h: [a.get("Info", "")],
    9: _with_reason("Job was aborted."),
    10: lambda a, h: ["Job was suspended.",
                      f"\tNumber of processes actually suspended: {a.get('NumberOfPIDs', 0)}"],
    11: _fixed("Job was unsuspended."),
    12: _held,
    13: _with_reason("Job was released."),
    14: lambda a, h: _execute(a, h, node=True),
    15: lambda a, h: _terminated(a, h, node=True),
    16: _post_script,
    21: _remote_error,
    22: lambda a, h: ["Job disconnected, attempting to reconnect",
                      f"    {a.get('DisconnectReason', '')}",
                      f"    Trying to reconnect to {a.get('StartdName', '')} {a.get('StartdAddr', '')}"],
    23: lambda a, h: [f"Job reconnected to {a.get('StartdName', '')}",
                      f"    startd address: {a.get('StartdAddr', '')}",
                      f"    starter address: {a.get('StarterAddr', '')}"],
    24: lambda a, h: ["Job reconnection failed", f"    {a.get('Reason', '')}",
                      f"    Can not reconnect to {a.get('StartdName', '')}, rescheduling job"],
    25: lambda a, h: ["Grid Resource Back Up"] + _labelled(a, ("GridResource",)),
    26: lambda a, h: ["Detected Down Grid Resource"] + _labelled(a, ("GridResource",)),
    27: lambda a, h: ["Job submitted to grid resource"] + _labelled(a, ("GridResource",
                                                                       "GridJobId")),
    28: _job_ad_info,
    29: _fixed("The job's remote status is unknown"),
    30: _fixed("The job's remote status is known again"),
    33: _attribute_update,
    34: lambda a, h: ["PRE script return value is PRE_SKIP value",
                      f"    {a.get('SkipEventLogNotes', '')}"],
    35: lambda a, h: _submit(a, h, cluster_level=True),
    36: _cluster_remove,
    37: _factory_paused,
    38: _with_reason("Job Materialization Resumed"),
    40: _file_transfer,
    41: _fields(("Bytes reserved", "ReservedSpace"), ("Reservation Expiration", "ExpirationTime"),
                ("Reservation UUID", "UUID"), ("Tag", "Tag")),
    42: _fields(("Reservation UUID", "UUID")),
    43: _fields(("Bytes", "Size"), ("Checksum Value", "Checksum"),
                ("Checksum Type", "ChecksumType"), ("UUID", "UUID")),
    44: _fields(("Checksum Value", "Checksum"), ("Checksum Type", "ChecksumType"), ("Tag", "Tag")),
    45: _fields(("Bytes", "Size"), ("Checksum Value", "Checksum"),
                ("Checksum Type", "ChecksumType"), ("Tag", "Tag")),
    46: _with_reason("Dataflow job was skipped."),
    47: _common_files,
}


def render_parts(number: int, cluster: int, proc: int, subproc: int, timestamp: int | float,
                 attributes: Mapping[str, Any], hidden: Mapping[str, Any] | None = None,
                 fmt: TextFormat = TextFormat(), tz: datetime.tzinfo = UTC,
                 time_text: str | None = None) -> str:
    """Header + body lines (no terminator) from an event's parts."""
    writer = _WRITERS.get(number)
    hidden = hidden or {}
    if writer is None:
        lines = _future(attributes, hidden, "  " if number >= 100 else "")
    else:
        lines = writer(attributes, hidden)
    when = time_text if time_text is not None else format_time(timestamp, fmt, tz)
    head = "%03d (%03d.%03d.%03d) %s %s\n" % (number, cluster, proc, subproc, when, lines[0])
    if len(lines) == 1:
        return head
    return head + "\n".join(lines[1:]) + "\n"


def render_event_text(event: Event, fmt: TextFormat = TextFormat(),
                      tz: datetime.tzinfo = UTC) -> str:
    """The event as HTCondor's writer lays it out, without the ``...`` line."""
    return render_parts(int(event.type), event.cluster, event.proc, event.subproc,
                        event.timestamp, event.attributes(), event.hidden(), fmt, tz)


def render_text(event: Event, fmt: TextFormat = TextFormat(),
                tz: datetime.tzinfo = UTC) -> str:
    """One complete event record (header, body, ``...`` terminator)."""
    return render_event_text(event, fmt, tz) + "...\n"
