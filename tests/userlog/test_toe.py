"""The ToE tag of a termination: "\\tJob terminated of its own accord at <UTC> with exit-code N."
after the usage table.  HTCondor 24's reader (the v1 bindings) makes it the event's ``ToE``
sub-ad, htcondor2 25.14.1 leaves it out; both behaviours are pinned here from the wheels'
answers (24.0.24 on shared/oracle/userlog/terminated_legacy_tails.log, where only the first
event, whose tag follows a table, has one)."""

from __future__ import annotations

import importlib

import pytest

import jobledger
import jobledger.v1
from jobledger.eventcore.codecs.userlog_text_bodies import toe_hidden
from jobledger.eventcore.codecs.userlog_text_write import render_text
from jobledger.eventcore.events import make_event

# What htcondor 24.0.24's JobEventLog answers for the three events of the corpus file.
V1_TOE = [{"How": "OF_ITS_OWN_ACCORD", "Who": "itself", "When": 1634052096, "HowCode": 0, "ExitCode": 0,
           "ExitBySignal": False}, None, None]


def _toes(module, path):
    return [None if e.get("ToE") is None else dict(e["ToE"])
            for e in module.JobEventLog(str(path)).events(stop_after=0)]


def test_v1_reads_the_tag_as_htcondor_24(oracle_dir):
    assert _toes(jobledger.v1, oracle_dir / "userlog" / "terminated_legacy_tails.log") == V1_TOE


def test_v2_leaves_it_out_as_htcondor2(oracle_dir):
    path = oracle_dir / "userlog" / "terminated_legacy_tails.log"
    assert _toes(jobledger, path) == [None, None, None]
    try:
        htcondor2 = importlib.import_module("htcondor2")
    except ImportError:
        return
    assert _toes(htcondor2, path) == [None, None, None]
    theirs = [str(e) for e in htcondor2.JobEventLog(str(path)).events(stop_after=0)]
    assert [str(e) for e in jobledger.JobEventLog(str(path)).events(stop_after=0)] == theirs


def _terminated(toe, memory=True):
    attrs = {"TerminatedNormally": not toe.get("ExitBySignal"), "RunRemoteUsage": "Usr 0 00:00:01, Sys 0 00:00:00"}
    if toe.get("ExitBySignal"):
        attrs["TerminatedBySignal"] = toe["ExitSignal"]
    else:
        attrs["ReturnValue"] = toe["ExitCode"]
    if memory:
        attrs.update(MemoryUsage=1, RequestMemory=128, Memory=128)
    return make_event(5, cluster=7, proc=0, timestamp=1739469607, attrs=attrs, hidden={"toe": toe})


def test_the_writer_puts_the_tag_after_the_table_and_the_reader_takes_it_back():
    toe = dict(V1_TOE[0], When=1739469607, ExitCode=3)
    text = render_text(_terminated(toe))
    lines = text.split("\n")
    assert lines[-3:] == ["\tJob terminated of its own accord at 2025-02-13T18:00:07Z with exit-code 3.", "...", ""]
    assert lines[-4] == ""
    assert toe_hidden(lines[1:-2]) == {"toe": toe}
    by_signal = {"How": "OF_ITS_OWN_ACCORD", "Who": "itself", "When": 1739469607, "HowCode": 0, "ExitSignal": 9,
                 "ExitBySignal": True}
    lines = render_text(_terminated(by_signal)).split("\n")
    assert lines[-3] == "\tJob terminated of its own accord at 2025-02-13T18:00:07Z with signal 9."
    assert toe_hidden(lines[1:-2]) == {"toe": by_signal}


@pytest.mark.parametrize("tail", [
    "\tJob terminated of its own accord at 2025-02-30T18:00:07Z with exit-code 3.",   # no such day
    "\tJob terminated of its own accord at 2025-02-13T18:00:07Z with exit-code 3",    # no full stop
    "\tJob terminated by the startd at 2025-02-13T18:00:07Z with exit-code 3.",
    "\tJob terminated of its own accord at 2025-02-13T18:00:07Z with exit-code 99999999999.",
])
def test_a_tag_it_cannot_read_is_left_out(tail):
    lines = ["\tPartitionable Resources :    Usage  Request Allocated", "\t   Cpus   :   0   1   1", "", tail]
    assert toe_hidden(lines) == {}
