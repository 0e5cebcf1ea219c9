"""Event bodies of the text user log: one reader per event number.

``parse_body(number, first, lines)`` takes the header line's text after the
timestamp (``first``) and the body lines (no newlines, no terminator) and
returns ``(attrs, hidden)``: the event's HTCondor attributes as HTCondor's
reader exposes them (without the common ones) and writer-only fields the
records keep for re-rendering.  A body HTCondor cannot read raises
``BadBody`` with the reason.

The rules follow HTCondor's reader (shared/spec/userlog.md §5-6), including
its quirks, except where tests/userlog/test_deviations.py names a fix.
"""

from __future__ import annotations

import calendar
import datetime
import re

from jobledger.eventcore.codecs.userlog_values import NOT_A_VALUE, parse_value
from jobledger.eventcore.codecs.userlog_text_write import FILE_TRANSFER_TEXT

__all__ = ["BadBody", "Deferred", "parse_body", "parse_body_lazily", "parse_attribute_line", "FIRST_LINE_PREFIX"]


class BadBody(ValueError):
    """The event's text does not parse (HTCondor's ULOG_RD_ERROR)."""


_INT = r"[+-]?\d+"
_USAGE_RE = re.compile(r"\s*Usr (-?\d+) (-?\d+):(-?\d+):(-?\d+), Sys (-?\d+) (-?\d+):(-?\d+):(-?\d+)")
_BYTES_RE = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*-\s*(Run|Total)\s*Bytes\s*"
                       r"(Sent|Received)\s*By\s*(\w+)")
_PAREN_NUM = re.compile(r"\s*\(\s*(" + _INT + r")\)\s*(.*)")
_NORMAL_LINE = re.compile(r"\s*\(\s*" + _INT + r"\)\s*Normal\s*termination\s*\(return\s*value\s*("
                          + _INT + r")")
_ABNORMAL_LINE = re.compile(r"\s*\(\s*" + _INT + r"\)\s*Abnormal\s*termination\s*\(signal\s*("
                            + _INT + r")")
# sscanf-style: a blank in the pattern matches any run of blanks, or none.
_CODE_SUBCODE = re.compile(r"\s*Code\s*(" + _INT + r")(?:\s*Subcode\s*(" + _INT + r"))?")
_IMAGE_LINE = re.compile(r"\s*(" + _INT + r")\s+-\s+(\w+)")
_MATERIALIZED = re.compile(r"Materialized\s*(" + _INT + r")(?:\s*jobs\s*from\s*(" + _INT
                          + r")(\s*items\.)?)?")
_CODE_LINE = re.compile(r"Code\s*(" + _INT + r")\s*Subcode\s*(" + _INT + r")")
_PAUSE_CODE = re.compile(r"PauseCode\s*(" + _INT + r")")
_HOLD_CODE = re.compile(r"HoldCode\s*(" + _INT + r")")
_ERROR_WORD = re.compile(r"error\s*(" + _INT + r")", re.I)

#: Prefix each event's first-line text must start with (exact bytes).
FIRST_LINE_PREFIX = {
    0: "Job submitted from host:", 1: "Job executing on host:", 3: "Job was checkpointed.",
    4: "Job was evicted.", 5: "Job terminated.", 6: "Image size of job updated:",
    7: "Shadow exception!", 9: "Job was aborted", 10: "Job was suspended.",
    11: "Job was unsuspended.", 12: "Job was held.", 13: "Job was released.",
    16: "POST Script terminated.",
    25: "Grid Resource Back Up", 26: "Detected Down Grid Resource",
    27: "Job submitted to grid resource", 28: "Job ad information event triggered.",
    29: "The job's remote status is unknown", 30: "The job's remote status is known again",
    35: "Cluster submitted from host:", 46: "Dataflow job was skipped.",
}


# ----------------------------------------------------------- shared bits --

_CANONICAL_USAGE = re.compile(
    r"\s*(Usr (?:0|[1-9][0-9]*) (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9], "
    r"Sys (?:0|[1-9][0-9]*) (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])(?![0-9])")


def _usage(line: str | None) -> str:
    m = _CANONICAL_USAGE.match(line or "")
    if m is not None:            # already in the form the reader re-renders
        return m.group(1)
    m = _USAGE_RE.match(line or "")
    if not m:
        raise BadBody(f"expected a CPU usage line, got {line!r}")
    v = [int(x) for x in m.groups()]
    u = v[0] * 86400 + v[1] * 3600 + v[2] * 60 + v[3]
    s = v[4] * 86400 + v[5] * 3600 + v[6] * 60 + v[7]
    return "Usr %s, Sys %s" % (_dhms(u), _dhms(s))


def _dhms(t: int) -> str:
    """``d hh:mm:ss`` with C's integer division (negative parts stay negative)."""
    def cdiv(a, b):
        q = abs(a) // b
        return q if a >= 0 else -q
    def crem(a, b):
        return a - cdiv(a, b) * b
    return "%d %02d:%02d:%02d" % (cdiv(t, 86400), cdiv(crem(t, 86400), 3600),
                                  cdiv(crem(t, 3600), 60), crem(t, 60))


def _termination(lines, i, attrs, normal_if_nonzero=True, core=True, keep_negative=False):
    """Termination (and core) lines at ``lines[i]``; returns the next index.

    The number in parentheses says which form the line must have; the words
    are matched like sscanf does (blanks are flexible, letters exact).  A
    negative return value or signal is no attribute (015 keeps them).
    """
    line = lines[i] if i < len(lines) else None
    m = _PAREN_NUM.match(line or "")
    if not m:
        raise BadBody(f"expected a termination line, got {line!r}")
    n = int(m.group(1))
    normal = n != 0 if normal_if_nonzero else n == 1
    attrs["TerminatedNormally"] = normal
    if normal:
        rv = _NORMAL_LINE.match(line)
        if not rv:
            raise BadBody(f"expected '(1) Normal termination (return value N)', got {line!r}")
        if int(rv.group(1)) >= 0 or keep_negative:
            attrs["ReturnValue"] = int(rv.group(1))
        return i + 1
    sig = _ABNORMAL_LINE.match(line)
    if not sig:
        raise BadBody(f"expected '(0) Abnormal termination (signal N)', got {line!r}")
    if int(sig.group(1)) >= 0 or keep_negative:
        attrs["TerminatedBySignal"] = int(sig.group(1))
    if not core:
        return i + 1
    if i + 1 >= len(lines):
        raise BadBody("missing core file line")
    core_line = lines[i + 1].strip()
    if core_line.startswith("(1) Corefile in: "):
        attrs["CoreFile"] = core_line[len("(1) Corefile in: "):]
    elif not core_line.startswith("(0)"):
        raise BadBody(f"expected a core file line, got {lines[i + 1]!r}")
    return i + 2


def parse_attribute_line(line: str, whole: bool = False):
    """``Name = value`` -> (name, value) or None when the line is no assignment.

    ``whole``: the value must be one expression with nothing after it (001's
    slot properties); otherwise trailing words are ignored as HTCondor does.
    """
    eq = line.find("=")
    if eq <= 0:
        return None
    name = line[:eq].strip()          # HTCondor takes any text before '=' as the name
    if not name:
        return None
    value = parse_value(line[eq + 1:], whole=whole)
    if value is NOT_A_VALUE:
        return None
    return name, value


# ------------------------------------------------------------- the events --

def _submit(first, lines, cluster_level=False):
    prefix = FIRST_LINE_PREFIX[35 if cluster_level else 0]
    rest = first[len(prefix):]
    if rest.startswith(" "):
        rest = rest[1:]
    attrs, hidden = {}, {}
    if rest.startswith("..."):
        return attrs, hidden
    if rest:
        attrs["SubmitHost"] = rest
    structured_seen = False
    for n, raw in enumerate(lines, 1):
        line = raw.strip(" \t\r\n\v\f")
        if line.startswith("["):
            value = parse_value(line, new_syntax=True)
            if isinstance(value, dict) and not structured_seen:
                attrs["StructuredNotes"] = value
                structured_seen = True
            attrs["LogNotes"] = line
        elif line.startswith("DAG Node: "):
            attrs["LogNotes"] = line
            attrs["StructuredNotes"] = {"DAGNodeName": line[len("DAG Node: "):].strip()}
        elif line.startswith("WARNING: ") and not cluster_level:
            attrs["Warnings"] = line
        elif n == 1 and line:
            attrs["LogNotes"] = line
        elif n == 2 and line:
            attrs["UserNotes"] = line
    if cluster_level:
        for src, dst in (("LogNotes", "log_notes"), ("UserNotes", "user_notes")):
            if src in attrs:
                hidden[dst] = attrs.pop(src)
    return attrs, hidden


def _execute(first, lines, node=False):
    attrs = {}
    if node:
        m = re.match(r"Node (" + _INT + r")", first)
        if not m:
            raise BadBody(f"expected 'Node <n> executing on host:', got {first!r}")
        attrs["Node"] = int(m.group(1))
        colon = first.find(":")
        host = first[colon + 1:].strip() if colon >= 0 else ""
    else:
        host = first[len("Job executing on host:"):].lstrip()     # trailing blanks kept
    if host:
        attrs["ExecuteHost"] = host
    props = {}
    for k, line in enumerate(lines):
        if k == 0 and line.startswith("\tSlotName:"):
            slot = line[len("\tSlotName:"):].strip()
            if len(slot) >= 2 and slot[0] == '"' and slot[-1] == '"':
                slot = slot[1:-1]
            attrs["SlotName"] = slot
            continue
        pair = parse_attribute_line(line, whole=True)
        if pair:
            props[pair[0]] = pair[1]
    if props:
        attrs["ExecuteProps"] = props
    return attrs, {}


def _executable_error(first, lines):
    m = _PAREN_NUM.match(first)
    if not m:
        raise BadBody(f"expected '(<n>) <text>', got {first!r}")
    n = int(m.group(1))
    return ({"ExecuteErrorType": n} if n >= 0 else {}), {}


def _checkpointed(first, lines):
    attrs = {"RunRemoteUsage": _usage(lines[0] if lines else None),
             "RunLocalUsage": _usage(lines[1] if len(lines) > 1 else None),
             "SentBytes": 0.0}
    if len(lines) > 2:
        sent = _leading_number(lines[2])
        if sent is None:
            raise BadBody(f"expected the checkpoint's byte count, got {lines[2]!r}")
        attrs["SentBytes"] = sent
    return attrs, {}


def _bytes_line(line):
    m = _BYTES_RE.match(line)
    return m.groups() if m else None


_NUMBER = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def _leading_number(line: str | None):
    """The number a ``sscanf("%lf ...")`` reads at the start of the line, or None
    (HTCondor keeps it whatever words follow: ``0  -  run bytes sent``)."""
    m = _NUMBER.match(line or "")
    return float(m.group(1)) if m else None


def _evicted(first, lines):
    attrs = {"Checkpointed": False, "TerminatedAndRequeued": False, "TerminatedNormally": False}
    rest = first[len("Job was evicted."):]
    m = _CODE_SUBCODE.match(rest)
    if m:                                   # sscanf: what matched is kept
        if int(m.group(1)):
            attrs["ReasonCode"] = int(m.group(1))
        if m.group(2) is not None and int(m.group(2)):
            attrs["ReasonSubCode"] = int(m.group(2))
    m = _PAREN_NUM.match(lines[0]) if lines else None
    if not m:
        raise BadBody("expected '(<n>) <words>' after 'Job was evicted.'")
    attrs["Checkpointed"] = int(m.group(1)) != 0
    requeued = m.group(2).startswith("Job terminated and was requeued")
    attrs["TerminatedAndRequeued"] = requeued
    attrs["RunRemoteUsage"] = _usage(lines[1] if len(lines) > 1 else None)
    attrs["RunLocalUsage"] = _usage(lines[2] if len(lines) > 2 else None)
    attrs["SentBytes"] = 0.0
    attrs["ReceivedBytes"] = 0.0
    sent = _leading_number(lines[3]) if len(lines) > 3 else None
    if sent is None:
        return attrs, {}
    attrs["SentBytes"] = sent
    recv = _leading_number(lines[4]) if len(lines) > 4 else None
    if recv is None:
        return attrs, {}
    attrs["ReceivedBytes"] = recv
    i = 5
    if requeued:
        i = _termination(lines, i, attrs)
    if i < len(lines):
        line = lines[i]
        if line.startswith("\tReason: "):
            attrs["Reason"] = line[len("\tReason: "):]
        elif not line.startswith("\tPartitionable Resources"):
            reason = line.strip()
            if reason:
                attrs["Reason"] = reason
    return attrs, {}


_ROW_TAG = re.compile(r"[ \t]*([^ :]+)[^:]*:")
_LAYOUTS: dict = {}     # resources table header -> its column ends
_CELLS: dict = {}       # cell text -> value (requests and allocations repeat in every event)


def _layout(header: str):
    """(Usage end, Request end, Allocated end or None, Assigned start or None), or None."""
    got = _LAYOUTS.get(header)
    if got is None:
        t = header[header.find(":") + 1:]
        u = t.find("Usage")
        r = t.find("Request")
        if u < 0 or r < 0:
            got = False
        else:
            use_end, req_end = u + 6, r + 8
            a = t.find("Allocated", req_end - 1)
            alloc_end = a + 9 if a >= 0 else None
            s = t.find("Assigned", alloc_end) if alloc_end is not None else -1
            got = (use_end, req_end, alloc_end, s if s >= 0 else None)
        if len(_LAYOUTS) > 64:
            _LAYOUTS.clear()
        _LAYOUTS[header] = got
    return got


def _cell(text: str):
    value = _CELLS.get(text)
    if value is None:
        value = parse_value(text)
        if len(text) <= 64:
            if len(_CELLS) > 4096:
                _CELLS.clear()
            _CELLS[text] = value
    return value


def _table(header: str, rows, attrs):
    layout = _layout(header)
    if not layout:
        return
    use_end, req_end, alloc_end, asg_start = layout
    for row in rows:
        if ":" not in row:
            break
        m = _ROW_TAG.match(row)
        if m is None:
            continue
        tag = m.group(1)
        r_text = row[m.end():]
        value = _cell(r_text[:use_end])
        if value is not NOT_A_VALUE:
            attrs[tag + "Usage"] = value
        value = _cell(r_text[use_end:req_end])
        if value is not NOT_A_VALUE:
            attrs["Request" + tag] = value
        if alloc_end is not None:
            value = _cell(r_text[req_end:alloc_end])
            if value is not NOT_A_VALUE:
                attrs[tag] = value
        if asg_start is not None:
            value = _cell(r_text[asg_start:])
            if value is not NOT_A_VALUE:
                attrs["Assigned" + tag] = value


_BYTE_ATTRS = {("Run", "Sent"): "SentBytes", ("Run", "Received"): "ReceivedBytes",
               ("Total", "Sent"): "TotalSentBytes", ("Total", "Received"): "TotalReceivedBytes"}


def _terminated(first, lines, node=False):
    attrs, i = _terminated_head(first, lines, node)
    return _terminated_tail(lines, i, attrs, node), ({} if node else toe_hidden(lines))


# The ToE ("termination of execution") tag HTCondor writes after a job's usage table:
# a blank line, then "\tJob terminated of its own accord at <UTC ISO time> with exit-code N."
# (or "with signal N.").  HTCondor 24's reader makes it the ``ToE`` sub-ad of the event and
# reads it only there (after a table); htcondor2 25 leaves it out of the event's ad.
_TOE_LINE = re.compile(r"\tJob terminated of its own accord at "
                       r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z "
                       r"with (exit-code|signal) ([0-9]{1,9})\.\Z")


def toe_hidden(lines) -> dict:
    """{"toe": the ToE tag as HTCondor 24's sub-ad} when the body ends with one after a table."""
    if len(lines) < 3 or lines[-2] != "" or not lines[-1].startswith("\tJob terminated "):
        return {}
    m = _TOE_LINE.match(lines[-1])
    if m is None or not any(line.startswith(("\tPartitionable ", "\tResources")) for line in lines):
        return {}
    y, mo, d, hh, mm, ss = (int(g) for g in m.groups()[:6])
    try:
        when = calendar.timegm((y, mo, d, hh, mm, ss, 0, 0, 0))
        datetime.datetime(y, mo, d, hh, mm, ss)
    except ValueError:
        return {}
    by_signal = m.group(7) == "signal"
    tag = {"How": "OF_ITS_OWN_ACCORD", "Who": "itself", "When": when, "HowCode": 0}
    tag["ExitSignal" if by_signal else "ExitCode"] = int(m.group(8))
    tag["ExitBySignal"] = by_signal
    return {"toe": tag}


def _terminated_head(first, lines, node):
    """The part of a termination body that can be unreadable (through the usage lines)."""
    attrs = {}
    if node:
        m = re.match(r"Node (" + _INT + r") terminated\.", first)
        if not m:
            raise BadBody(f"expected 'Node <n> terminated.', got {first!r}")
        attrs["ReturnValue"] = -1
        attrs["TerminatedBySignal"] = -1
        if int(m.group(1)) >= 0:
            attrs["Node"] = int(m.group(1))
    i = _termination(lines, 0, attrs, keep_negative=node)
    for name in ("RunRemoteUsage", "RunLocalUsage", "TotalRemoteUsage", "TotalLocalUsage"):
        attrs[name] = _usage(lines[i] if i < len(lines) else None)
        i += 1
    return attrs, i


def _terminated_tail(lines, i, attrs, node):
    """The byte counts and the resources table (never unreadable: a line that
    does not fit ends them)."""
    for name in _BYTE_ATTRS.values():
        attrs[name] = 0.0
    who = "Node" if node else "Job"
    n = len(lines)
    while i < n:
        got = _bytes_line(lines[i])
        if not got or got[3] != who:
            break
        attrs[_BYTE_ATTRS[got[1], got[2]]] = float(got[0])
        i += 1
    if i < n and (lines[i].startswith("\tPartitionable ") or lines[i].startswith("\tResources")):
        _table(lines[i], lines[i + 1:], attrs)
    return attrs


_IMAGE_LABELS = (("memoryusage", "MemoryUsage"), ("residentsetsize", "ResidentSetSize"),
                 ("proportionalsetsize", "ProportionalSetSize"))


def _image_size(first, lines):
    return _image_size_tail(lines, _image_size_head(first)), {}


def _image_size_head(first):
    """The part of an image size body that can be unreadable (the first line)."""
    text = first[26:].strip()             # after "Image size of job updated:"
    if text.isdigit():
        size = int(text)
    else:
        m = re.match(_INT, text)
        if not m:
            raise BadBody(f"no image size in {first!r}")
        size = int(m.group())
    return {"Size": size, "ResidentSetSize": 0}


def _image_size_tail(lines, attrs):
    """The usage lines (never unreadable: a line that does not fit ends them)."""
    for line in lines:
        parts = line.split(None, 3)
        if len(parts) < 3 or parts[1] != "-":
            break
        try:
            value = int(parts[0])
        except ValueError:
            break
        label = parts[2].lower()
        for low, name in _IMAGE_LABELS:
            if label.startswith(low):
                attrs[name] = value
                break
        else:
            break
    for name in ("MemoryUsage", "ResidentSetSize", "ProportionalSetSize"):
        if attrs.get(name, 0) < 0:          # HTCondor publishes these only when >= 0
            del attrs[name]
    return attrs


def _shadow_exception(first, lines):
    attrs = {"Message": lines[0].strip() if lines else "", "SentBytes": 0.0,
             "ReceivedBytes": 0.0}
    sent = _leading_number(lines[1]) if len(lines) > 1 else None
    if sent is not None:
        attrs["SentBytes"] = sent
        recv = _leading_number(lines[2]) if len(lines) > 2 else None
        if recv is not None:
            attrs["ReceivedBytes"] = recv
    return attrs, {}


def _generic(first, lines):
    return ({"Info": first} if first else {}), {}


def _optional_reason(name="Reason"):
    def parse(first, lines):
        reason = lines[0].strip() if lines else ""
        return ({name: reason} if reason else {}), {}
    return parse


def _suspended(first, lines):
    m = re.match(r"\s*Number\s*of\s*processes\s*actually\s*suspended:\s*(" + _INT + ")",
                 lines[0]) if lines else None
    if not m:
        raise BadBody("missing 'Number of processes actually suspended' line")
    return {"NumberOfPIDs": int(m.group(1))}, {}


def _held(first, lines):
    attrs = {"HoldReasonCode": 0, "HoldReasonSubCode": 0}
    if lines:
        reason = lines[0].strip()
        if reason and reason != "Reason unspecified":
            attrs["HoldReason"] = reason
    if len(lines) > 1:
        m = _CODE_SUBCODE.match(lines[1])
        if m and m.group(2) is not None:    # both numbers, or neither is kept
            attrs["HoldReasonCode"] = int(m.group(1))
            attrs["HoldReasonSubCode"] = int(m.group(2))
    return attrs, {}


def _post_script(first, lines):
    attrs = {}
    i = _termination(lines, 0, attrs, normal_if_nonzero=False, core=False)
    if i < len(lines):
        line = lines[i].strip()
        if line.startswith("DAG Node: "):
            attrs["DAGNodeName"] = line[len("DAG Node: "):]
    return attrs, {}


def _remote_error(first, lines):
    text = first.strip()
    k = text.find(" from ")
    if k < 0:
        raise BadBody(f"expected '<kind> from <daemon> on <host>:', got {first!r}")
    kind, rest = text[:k], text[k + 6:]
    attrs = {}
    on = rest.find(" on ")
    if on >= 0:
        attrs["Daemon"] = rest[:on]
        host = rest[on + 4:]
        if host.endswith(":"):
            host = host[:-1]
        attrs["ExecuteHost"] = host
    else:
        attrs["Daemon"] = rest
    if kind in ("Warning", "Message"):     # HTCondor's reader forgets "Message" (its
        attrs["CriticalError"] = 0          # own writer's word): test_deviations.py
    msg = ""
    for line in lines:
        text = line[1:] if line.startswith("\t") else line     # one TAB removed
        m = _CODE_LINE.match(text)
        if m:
            if int(m.group(1)):
                attrs["HoldReasonCode"] = int(m.group(1))
                attrs["HoldReasonSubCode"] = int(m.group(2))
            break
        msg = msg + "\n" + text if msg else text     # HTCondor's way of joining
    if msg:
        attrs["ErrorMsg"] = msg
    return attrs, {}


def _labelled(line, label):
    if line is None or label not in line:
        raise BadBody(f"expected a line with {label.strip()!r}")
    return line.replace(label, "", 1)


def _reason_line(lines, i):
    line = lines[i] if i < len(lines) else ""
    if not line.startswith("    ") or not line[4:]:
        raise BadBody("expected a reason line indented by four spaces")
    return line[4:]


def _disconnected(first, lines):
    reason = _reason_line(lines, 0)
    rest = _labelled(lines[1] if len(lines) > 1 else None, "    Trying to reconnect to ")
    name, _, addr = rest.partition(" ")
    if not name:
        raise BadBody("no startd name in 'Trying to reconnect to' line")
    return {"DisconnectReason": reason, "StartdName": name, "StartdAddr": addr,
            "EventDescription": "Job disconnected, attempting to reconnect"}, {}


def _reconnected(first, lines):
    return {"StartdName": _labelled(first, "Job reconnected to "),
            "StartdAddr": _labelled(lines[0] if lines else None, "    startd address: "),
            "StarterAddr": _labelled(lines[1] if len(lines) > 1 else None, "    starter address: "),
            "EventDescription": "Job reconnected"}, {}


def _reconnect_failed(first, lines):
    reason = _reason_line(lines, 0)
    rest = _labelled(lines[1] if len(lines) > 1 else None, "    Can not reconnect to ")
    if not rest.split(",", 1)[0]:
        raise BadBody("no startd name in 'Can not reconnect to' line")
    return {"Reason": reason, "StartdName": rest.split(",", 1)[0],
            "EventDescription": "Job reconnect impossible: rescheduling job"}, {}


def _grid(*labels):
    """025..027: every labelled line is required; an empty value is no attribute."""
    def parse(first, lines):
        attrs = {}
        if len(lines) < len(labels):
            raise BadBody("missing grid resource lines")
        for (label, name), line in zip(labels, lines):
            if not line.startswith(label):
                raise BadBody(f"expected {label.strip()!r}, got {line!r}")
            if line[len(label):]:
                attrs[name] = line[len(label):]
        return attrs, {}
    return parse


def _job_ad_info(first, lines):
    attrs = {}
    for line in lines:
        pair = parse_attribute_line(line)
        if pair is None:
            raise BadBody(f"not an attribute line: {line!r}")
        attrs[pair[0]] = pair[1]
    if not attrs:
        raise BadBody("a job ad information event needs at least one attribute")
    return attrs, {}


def _future(first, lines):
    attrs = {"EventHead": first}
    for line in lines:
        pair = parse_attribute_line(line)
        if pair:
            attrs[pair[0]] = pair[1]
    return attrs, {"payload": "\n".join(lines)}


def _attribute_update(first, lines):
    if not first:
        raise BadBody("empty attribute update")
    attrs = {"Attribute": "", "Value": ""}
    hidden = {}
    words = first.split()
    if first.startswith("Changing job attribute"):
        toks = words[3:]
        if toks:
            attrs["Attribute"] = toks[0]
        if len(toks) >= 3 and toks[1] == "from":
            hidden["old_value"] = toks[2]
            if len(toks) >= 5 and toks[3] == "to":
                attrs["Value"] = toks[4]
    return attrs, hidden


def _pre_skip(first, lines):
    note = lines[0].strip() if lines else ""
    if not note:
        raise BadBody("missing PRE_SKIP notes line")
    return {"SkipEventLogNotes": note}, {}


def _cluster_remove(first, lines):
    attrs = {"NextProcId": 0, "NextRow": 0, "Completion": 0}
    if ("remove" in first or "Remove" in first) and lines:
        line = lines[0].lstrip()
        m = _MATERIALIZED.match(line)
        if m:                       # sscanf: whatever part matched is kept
            attrs["NextProcId"] = int(m.group(1))
            if m.group(2) is not None:
                attrs["NextRow"] = int(m.group(2))
            if m.group(3) is not None:
                line = line[m.end():].lstrip()
        low = line.lower()
        e = _ERROR_WORD.match(line)
        if e:
            code = int(e.group(1))
            attrs["Completion"] = code if code < 0 else -1
        elif low.startswith("complete"):
            attrs["Completion"] = 1
        elif low.startswith("paused"):
            attrs["Completion"] = 2
        if len(lines) > 1 and lines[1].lstrip():
            attrs["Notes"] = lines[1].lstrip()
    return attrs, {}


def _factory_paused(first, lines):
    attrs = {"PauseCode": 0, "HoldCode": 0}
    if ("pause" in first or "Pause" in first) and lines:
        reason = lines[0].lstrip()
        if reason:
            attrs["Reason"] = reason
        for line in lines[1:]:
            p, h = _PAUSE_CODE.search(line), _HOLD_CODE.search(line)
            if not p and not h:
                break
            if p:
                attrs["PauseCode"] = int(p.group(1))
            if h:
                attrs["HoldCode"] = int(h.group(1))
    return attrs, {}


def _factory_resumed(first, lines):
    if ("resume" in first or "Resume" in first) and lines and lines[0].lstrip():
        return {"Reason": lines[0].lstrip()}, {}
    return {}, {}


_FT_TYPES = {text: n for n, text in FILE_TRANSFER_TEXT.items()}


def _file_transfer(first, lines):
    kind = _FT_TYPES.get(first)
    if kind is None:
        raise BadBody(f"unknown file transfer text {first!r}")
    attrs = {"Type": kind}
    i = 0                                   # optional lines, in this order only
    if lines and lines[0].startswith("\tSeconds spent in queue: "):
        text = lines[0][len("\tSeconds spent in queue: "):]
        if not re.fullmatch(_INT, text):
            raise BadBody(f"bad queueing delay {text!r}")
        attrs["QueueingDelay"] = int(text)
        i = 1
    if i < len(lines) and lines[i].startswith("\tTransferring to host: "):
        attrs["Host"] = lines[i][len("\tTransferring to host: "):]
    return attrs, {}


def _fields(*spec):
    """041..045: labelled fields, first one on the header line (HTCondor's
    reader) or, as HTCondor's writer lays them out, on the next line."""
    def parse(first, lines):
        values = ([first] if first.strip() else []) + list(lines)
        if len(values) < len(spec):
            raise BadBody("missing data-reuse fields")
        attrs = {}
        for (label, name, kind), line in zip(spec, values):
            text = line.strip()
            if not text.startswith(label + ":"):
                raise BadBody(f"expected {label!r}, got {line!r}")
            value = text[len(label) + 1:].strip()
            if kind is int:
                if not re.fullmatch(_INT, value):
                    raise BadBody(f"{label}: not an integer: {value!r}")
                value = int(value)
            attrs[name] = value
        return attrs, {}
    return parse


def _common_files(first, lines):
    k = first.find("Common files event: ")
    if k < 0:
        raise BadBody("expected 'Common files event: <type>'")
    return {"Type": first[k + len("Common files event: "):]}, {}


def _no_body(first, lines):
    return {}, {}


_PARSERS = {
    0: _submit, 1: _execute, 2: _executable_error, 3: _checkpointed, 4: _evicted,
    5: _terminated, 6: _image_size, 7: _shadow_exception, 8: _generic,
    9: _optional_reason(), 10: _suspended, 11: _no_body, 12: _held,
    13: _optional_reason(), 14: lambda f, ls: _execute(f, ls, node=True),
    15: lambda f, ls: _terminated(f, ls, node=True), 16: _post_script,
    21: _remote_error, 22: _disconnected, 23: _reconnected, 24: _reconnect_failed,
    25: _grid(("    GridResource: ", "GridResource")),
    26: _grid(("    GridResource: ", "GridResource")),
    27: _grid(("    GridResource: ", "GridResource"), ("    GridJobId: ", "GridJobId")),
    28: _job_ad_info, 29: _no_body, 30: _no_body, 33: _attribute_update, 34: _pre_skip,
    35: lambda f, ls: _submit(f, ls, cluster_level=True), 36: _cluster_remove,
    37: _factory_paused, 38: _factory_resumed, 40: _file_transfer,
    41: _fields(("Bytes reserved", "ReservedSpace", int),
                ("Reservation Expiration", "ExpirationTime", int),
                ("Reservation UUID", "UUID", str), ("Tag", "Tag", str)),
    42: _fields(("Reservation UUID", "UUID", str)),
    43: _fields(("Bytes", "Size", int), ("Checksum Value", "Checksum", str),
                ("Checksum Type", "ChecksumType", str), ("UUID", "UUID", str)),
    44: _fields(("Checksum Value", "Checksum", str), ("Checksum Type", "ChecksumType", str),
                ("Tag", "Tag", str)),
    45: _fields(("Bytes", "Size", int), ("Checksum Value", "Checksum", str),
                ("Checksum Type", "ChecksumType", str), ("Tag", "Tag", str)),
    46: _optional_reason(), 47: _common_files,
}


def parse_body(number: int, first: str, lines: list[str]):
    """(attrs, hidden) for one event's text; ``BadBody`` if unreadable."""
    prefix = FIRST_LINE_PREFIX.get(number)
    if prefix is not None and not first.startswith(prefix):
        raise BadBody(f"event {number:03d} must start with {prefix!r}")
    parser = _PARSERS.get(number, _future)
    return parser(first, lines)


class Deferred:
    """Attributes of a body whose unreadable-or-not part was read: ``value()``
    reads the rest (which cannot fail) on first use.  ``read()`` builds a new
    dict each time, so two threads that race here just read it twice."""

    __slots__ = ("_read", "_value")

    def __init__(self, read):
        self._read = read
        self._value = None

    def value(self) -> dict:
        v = self._value
        if v is None:
            v = self._value = self._read()
        return v


def _terminated_lazily(first, lines):
    attrs, i = _terminated_head(first, lines, False)
    return Deferred(lambda: _terminated_tail(lines, i, dict(attrs), False))


def _image_size_lazily(first, lines):
    attrs = _image_size_head(first)
    return Deferred(lambda: _image_size_tail(lines, dict(attrs)))


# The bulky bodies that rarely repeat: only their head is read at once.
_HEADS = {5: _terminated_lazily, 6: _image_size_lazily}


def parse_body_lazily(number: int, first: str, lines: list[str]):
    """``parse_body``, except that for a termination (005) or image size (006)
    event only the part that can be unreadable is read now (so ``BadBody`` is
    raised just the same) and ``attrs`` is a ``Deferred`` for the rest."""
    head = _HEADS.get(number)
    if head is None:
        return parse_body(number, first, lines)
    prefix = FIRST_LINE_PREFIX[number]
    if not first.startswith(prefix):
        raise BadBody(f"event {number:03d} must start with {prefix!r}")
    return head(first, lines), (toe_hidden(lines) if number == 5 else {})


# ------------------------------------------------- the common layouts, fast --
# The termination and image size bodies HTCondor writes, in one regex match
# each; any other text (extra blanks, negative or huge numbers, other words,
# CRs) goes the general way, which gives the same attributes or the error.
_U = (r"(Usr (?:0|[1-9][0-9]*) (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9], "
      r"Sys (?:0|[1-9][0-9]*) (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])")
_TERMINATED_FAST = re.compile(
    r"\t\(1\) Normal termination \(return value ([0-9]{1,9})\)\n"
    r"\t\t" + _U + r"  -  Run Remote Usage\n"
    r"\t\t" + _U + r"  -  Run Local Usage\n"
    r"\t\t" + _U + r"  -  Total Remote Usage\n"
    r"\t\t" + _U + r"  -  Total Local Usage\n"
    r"\t([0-9]{1,15})  -  Run Bytes Sent By Job\n"
    r"\t([0-9]{1,15})  -  Run Bytes Received By Job\n"
    r"\t([0-9]{1,15})  -  Total Bytes Sent By Job\n"
    r"\t([0-9]{1,15})  -  Total Bytes Received By Job\n")
_IMAGE_FIRST_FAST = re.compile(r"Image size of job updated: ([0-9]{1,18})\Z")
_IMAGE_FAST = re.compile(
    r"\t([0-9]{1,18})  -  MemoryUsage of job \(MB\)\n"
    r"\t([0-9]{1,18})  -  ResidentSetSize of job \(KB\)\n"
    r"\t([0-9]{1,18})  -  ProportionalSetSize of job \(KB\)\n\Z")


def _terminated_fast(first: str, body: str):
    m = _TERMINATED_FAST.match(body)
    if m is None or not first.startswith("Job terminated."):
        return None
    rest = body[m.end():]
    table = None
    if rest:
        if not (rest.startswith("\tPartitionable ") or rest.startswith("\tResources")):
            return None                         # whatever it is, the general reader decides
        table = rest.split("\n")
        table.pop()                             # the body ends with a newline
    rv, rr, rl, tr, tl, sent, recv, tsent, trecv = m.groups()
    attrs = {"TerminatedNormally": True, "ReturnValue": int(rv), "RunRemoteUsage": rr,
             "RunLocalUsage": rl, "TotalRemoteUsage": tr, "TotalLocalUsage": tl,
             "SentBytes": float(sent), "ReceivedBytes": float(recv),
             "TotalSentBytes": float(tsent), "TotalReceivedBytes": float(trecv)}
    if table:
        _table(table[0], table[1:], attrs)
        return attrs, toe_hidden(table)
    return attrs, {}


def _image_size_fast(first: str, body: str):
    m = _IMAGE_FAST.match(body)
    f = _IMAGE_FIRST_FAST.match(first) if m is not None else None
    if f is None:
        return None
    mem, rss, pss = m.groups()
    return {"Size": int(f.group(1)), "ResidentSetSize": int(rss), "MemoryUsage": int(mem),
            "ProportionalSetSize": int(pss)}, {}


_FAST = {5: _terminated_fast, 6: _image_size_fast}


def parse_body_fast(number: int, first: str, body: str):
    """(attrs, hidden) for a termination or image size body in the layout
    HTCondor writes (``body``: the lines after the header, each ending in a
    newline, no CR), or None: then ``parse_body`` reads it (the same result)."""
    fast = _FAST.get(number)
    return fast(first, body) if fast is not None else None
