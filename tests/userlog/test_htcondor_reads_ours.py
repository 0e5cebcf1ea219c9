"""Logs our writer produces read in the real htcondor2.JobEventLog into our events.

Test-only use of the venv's htcondor2.  Known HTCondor reader bugs are
allowed for, each named: 041..045 in HTCondor's own text layout are
unreadable to it (quirk 13), it rounds 005/015 byte counts to 32-bit floats
(quirk 6, text only) and reads a non-critical 021 'Message from' as critical (quirk 10).
"""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.eventcore.codecs.userlog import TextFormat, render
from tests.userlog.oracle import event_record, read_all, typed
from tests.userlog.strategies import events

htcondor2 = pytest.importorskip("htcondor2")
classad2 = pytest.importorskip("classad2")

pytestmark = pytest.mark.oracle
FORMATS = [("text", TextFormat()), ("text", TextFormat(utc=True, sub_second=True)),
           ("json", TextFormat()), ("xml", TextFormat())]
BYTES = ("SentBytes", "ReceivedBytes", "TotalSentBytes", "TotalReceivedBytes")


def their_json(value):
    if isinstance(value, classad2.ClassAd):
        return {k: their_json(value[k]) for k in sorted(value.keys())}
    if isinstance(value, classad2.ExprTree):
        return {"$expr": str(value)}
    if isinstance(value, classad2.Value):
        return {"$undefined": True} if value == classad2.Value.Undefined else {"$error": True}
    if isinstance(value, list):
        return [their_json(v) for v in value]
    return value


def their_events(path):
    jel = htcondor2.JobEventLog(str(path))
    out = []
    while True:
        try:
            for e in jel.events(0):
                out.append({"type": e["EventTypeNumber"], "cluster": e.cluster, "proc": e.proc,
                            "timestamp": e.timestamp,
                            "attrs": {k: their_json(v) for k, v in sorted(e.items())}})
            break
        except htcondor2.HTCondorException:
            out.append("error")
    jel.close()
    return out


def allow_known_bugs(mine, theirs, fmt):
    n = mine["type"]
    if n in (5, 15) and fmt == "text":
        for name in BYTES:
            mine["attrs"][name] = struct.unpack("f", struct.pack("f", mine["attrs"][name]))[0]
    if n == 21 and fmt == "text" and mine["attrs"].get("CriticalError") == 0:
        del mine["attrs"]["CriticalError"]
    return mine


@pytest.mark.parametrize("fmt,options", FORMATS, ids=["text", "text-utc-subsecond", "json", "xml"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(batch=st.data())
def test_htcondor_reads_what_we_write(tmp_path, fmt, options, batch):
    drawn = events(sub_second=options.sub_second)
    if fmt == "text":    # 041..045: see test_htcondor_rejects_its_own_data_reuse_layout
        drawn = drawn.filter(lambda e: not 41 <= int(e.type) <= 45)
    many = batch.draw(st.lists(drawn, min_size=1, max_size=25))
    path = tmp_path / f"ours.{fmt}.log"
    path.write_text("".join(render(e, fmt, options) for e in many), encoding="utf-8")
    ours = [event_record(e, with_text=False) for e in read_all(path, 2026)]
    for rec in ours:
        rec.pop("end_offset")
    assert len(ours) == len(many)
    theirs = their_events(path)
    expected = [allow_known_bugs(json.loads(json.dumps(m)), None, fmt) for m in ours]
    theirs = json.loads(json.dumps(theirs))
    assert [typed(x) for x in theirs] == [typed(x) for x in expected]


def test_htcondor_rejects_its_own_data_reuse_layout(tmp_path):
    """Quirk 13: we write 041 as HTCondor's writer does; its reader cannot read that
    (one ULOG_RD_ERROR, and a one-second sleep inside htcondor2).  Ours reads it."""
    from jobledger.eventcore.events import ReserveSpaceEvent, SubmitEvent
    events_ = [ReserveSpaceEvent(cluster=1, proc=0, timestamp=1709633472, reserved_space=10,
                                 expiration_time=1709640000, uuid="u-1", tag="alice"),
               SubmitEvent(cluster=1, proc=0, timestamp=1709633473, submit_host="<h>")]
    path = tmp_path / "reuse.log"
    path.write_text("".join(render(e) for e in events_))
    theirs = their_events(path)
    assert theirs[0] == "error" and theirs[1]["type"] == 0
    assert [int(e.type) for e in read_all(path, 2026)] == [41, 0]


def test_escapes_and_non_ascii_read_and_print_like_htcondor(tmp_path):
    """Old-syntax lines keep bytes and backslashes raw; the [ ... ] notes line is new
    syntax (octal escapes, printed back that way: quirk 18)."""
    path = tmp_path / "u.log"
    path.write_bytes(
        b'000 (001.000.000) 2024-03-05 10:00:00 Job submitted from host: <h>\n'
        b'    [ DAGNodeName = "caf\xc3\xa9"; B = "x\\303\\251y\\\\z" ]\n...\n'
        b'001 (001.000.000) 2024-03-05 10:00:00 Job executing on host: <h>\n'
        b'\tA = "caf\xc3\xa9"\n\tB = "x\\303\\251y"\n...\n'
        b'028 (001.000.000) 2024-03-05 10:00:00 Job ad information event triggered.\n'
        b'A = "caf\xc3\xa9"\nB = "x\\303y"\nC = "a\\\\b"\nD = "q\\"q"\n...\n')
    theirs = [dict(r, text=str(e)) for r, e in zip(their_events(path), htcondor2.JobEventLog(str(path)).events(0))]
    ours = [event_record(e) for e in read_all(path, 2026)]
    for rec in ours:
        rec.pop("end_offset")
    assert [typed(r) for r in ours] == [typed(json.loads(json.dumps(r))) for r in theirs]
