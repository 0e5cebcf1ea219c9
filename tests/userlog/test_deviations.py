"""Where we deliberately read better than htcondor2.JobEventLog: one test per fix.

Each test names the HTCondor reader bug (shared/spec/userlog.md, quirks
checklist) and why we do not copy it.
"""

from __future__ import annotations

import struct
import warnings

import pytest

from jobledger.eventcore.errors import UserLogWarning
from tests.userlog.oracle import event_record, oracle_events, read_all, typed
from jobledger.tracking.jobeventlog import JobEventLog

pytestmark = pytest.mark.usefixtures("utc")  # the oracle answers were recorded in UTC

YEAR = 2026
BYTES = ("SentBytes", "ReceivedBytes", "TotalSentBytes", "TotalReceivedBytes")


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def test_byte_counts_are_not_rounded_to_32_bit_floats(oracle_dir):
    """Quirk 6: HTCondor parses 005/015 byte counts as C floats (123456789 -> 123456792).

    We keep the exact count; it is a count of bytes, not a measurement."""
    got = read_all(oracle_dir / "userlog" / "terminated_variants.log", YEAR)
    want = oracle_events(oracle_dir, "terminated_variants")
    assert len(got) == len(want)
    big = got[5]
    assert (big["SentBytes"], big["ReceivedBytes"], big["TotalSentBytes"]) == (
        123456789.0, 16777217.0, 9876543210.0)
    for ours, theirs in zip(got, want):
        mine = event_record(ours)
        for name in BYTES:
            assert _float32(mine["attrs"][name]) == theirs["attrs"][name]
            mine["attrs"][name] = theirs["attrs"][name]
        mine["text"] = theirs["text"] if ours is big else mine["text"]
        assert typed(mine) == typed({k: theirs[k] for k in mine})


def test_a_crashed_writers_fragment_does_not_swallow_the_next_event(oracle_dir):
    """Quirk (7.2): HTCondor merges a cut-off event with the next writer's event
    up to its '...', losing the complete held event.  We report the fragment as
    garbled and read the held event."""
    path = oracle_dir / "userlog" / "crash_then_append.log"
    with pytest.warns(UserLogWarning, match="at byte 155"):
        with JobEventLog(str(path), year=YEAR) as jel:
            events = list(jel.events(0))
    assert [(int(e.type), e.cluster, e.proc) for e in events] == [(0, 2203, 0), (12, 2203, 0),
                                                                  (13, 2203, 0)]
    assert events[1]["HoldReason"] == "lost in the crash"
    assert events[1].offset == 155 + len("001 (2203.000.000) 2024-03-05 10:00:05 Job executing on host: "
                                         "<10.0.5.21:9618?addrs=10.0.5.21-9618&alias=ep01.example.org"
                                         "&noUDP&sock=startd_2141_7a1f>\n\tSlotName: slot1_1@ep01"
                                         ".example.org\n\tCpus = 1\n\tMem")
    theirs = oracle_events(oracle_dir, "crash_then_append")
    for mine, oracle in ((events[0], theirs[0]), (events[2], theirs[2])):
        assert typed(event_record(mine)) == typed({k: oracle[k] for k in event_record(mine)})


def test_data_reuse_events_in_htcondors_own_writer_layout_are_read(oracle_dir):
    """Quirk 13: HTCondor's writer puts 041..045's first field on the next line,
    and its own reader rejects that.  We read both layouts (and write HTCondor's)."""
    events = read_all(oracle_dir / "userlog" / "data_reuse_as_written.log", YEAR, errors="raise")
    assert [int(e.type) for e in events] == [0, 41, 1]
    reserve = events[1]
    assert {k: reserve[k] for k in ("ReservedSpace", "ExpirationTime", "UUID", "Tag")} == {
        "ReservedSpace": 1000, "ExpirationTime": 1744934400,
        "UUID": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "Tag": "bob"}
    theirs = oracle_events(oracle_dir, "data_reuse_as_written")
    assert typed(event_record(events[0])) == typed({k: theirs[0][k] for k in event_record(events[0])})
    assert typed(event_record(events[2])) == typed({k: theirs[1][k] for k in event_record(events[2])})


def _write(tmp_path, text):
    path = tmp_path / "x.log"
    path.write_text(text)
    return path


def test_ids_do_not_wrap_at_32_bits(tmp_path):
    """Quirk 5: HTCondor stores ids in a C int (4294967297 -> 1).  Python ints
    don't overflow; a wrapped id would name a different job."""
    path = _write(tmp_path, "011 (4294967297.2147483648.0) 2024-03-05 10:00:00 Job was unsuspended.\n...\n")
    (event,) = read_all(path, YEAR)
    assert (event.cluster, event.proc) == (4294967297, 2147483648)


def test_terminator_with_trailing_blanks_ends_the_event(tmp_path):
    """Quirk 19: '... ' is no terminator for HTCondor, so the event swallows the
    next one.  A writer never adds the blank; a hand-edited log should not lose events."""
    path = _write(tmp_path, "009 (1.0.0) 2024-03-05 10:00:00 Job was aborted.\n... \n"
                            "012 (1.1.0) 2024-03-05 10:00:01 Job was held.\n\tx\n\tCode 1 Subcode 0\n...\n")
    assert [int(e.type) for e in read_all(path, YEAR)] == [9, 12]


def test_long_header_lines_are_not_cut_at_1023_bytes(tmp_path):
    """Quirk 4: HTCondor's 1024-byte header buffer splits a long submit host and
    turns the rest into LogNotes.  We keep the line whole."""
    host = "<" + "h" * 1500 + ">"
    path = _write(tmp_path, f"000 (1.0.0) 2024-03-05 10:00:00 Job submitted from host: {host}\n...\n")
    (event,) = read_all(path, YEAR)
    assert event["SubmitHost"] == host and "LogNotes" not in event


def test_stop_after_takes_fractions_of_a_second(tmp_path):
    """htcondor2 wants an int; a poll every 0.2 s is a normal need."""
    path = _write(tmp_path, "")
    with JobEventLog(str(path)) as jel:
        assert list(jel.events(stop_after=0.2)) == []
    with pytest.raises(TypeError):
        JobEventLog(str(path)).events(stop_after="1")


def test_a_file_that_is_no_event_log_is_reported(oracle_dir):
    """htcondor2 silently yields nothing, forever, for such a file."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with JobEventLog(str(oracle_dir / "userlog" / "not_a_log.log")) as jel:
            assert list(jel.events(0)) == []
    assert any("not a job event log" in str(w.message) for w in caught)


def test_a_non_critical_remote_error_reads_back_as_non_critical(tmp_path):
    """Quirk 10: HTCondor writes a non-critical 021 as 'Message from ...' but its
    reader only knows 'Warning from ...', so its own events come back critical."""
    path = _write(tmp_path, "021 (1.0.0) 2024-03-05 10:00:00 Message from condor_starter on slot1@ep:\n"
                            "\ttransient problem\n...\n")
    (event,) = read_all(path, YEAR)
    assert event["CriticalError"] == 0 and event["ErrorMsg"] == "transient problem"


def test_an_unfinished_last_xml_event_is_held_back(tmp_path):
    """Quirk 16: HTCondor builds a bogus event from an unfinished last <c> element
    (with the current time if EventTime was not reached).  We wait for </c>, as
    both readers do for JSON."""
    complete = ('<c>\n    <a n="MyType"><s>JobAbortedEvent</s></a>\n'
                '    <a n="EventTypeNumber"><i>9</i></a>\n'
                '    <a n="EventTime"><s>2024-03-05T10:00:00</s></a>\n'
                '    <a n="Cluster"><i>1</i></a>\n    <a n="Proc"><i>0</i></a>\n'
                '    <a n="Subproc"><i>0</i></a>\n</c>\n')
    path = _write(tmp_path, complete + complete[:90])
    with JobEventLog(str(path)) as jel:
        assert [e.proc for e in jel.events(0)] == [0]
        with open(path, "a") as f:
            f.write(complete[90:])
        assert [(e.cluster, e.proc) for e in jel.events(0)] == [(1, 0)]


def test_a_file_ending_inside_an_event_number_loses_nothing(tmp_path):
    """Quirk 20: HTCondor consumes 1-3 bytes of a header it sees at end of file as
    a foreign line, so the event is lost once the writer completes it.  We hold
    the bytes back like any incomplete event."""
    text = "012 (1.0.0) 2024-03-05 10:00:00 Job was held.\n\tx\n\tCode 1 Subcode 0\n...\n"
    path = _write(tmp_path, "")
    with JobEventLog(str(path)) as jel:
        with open(path, "a") as f:
            f.write(text[:2])
        assert list(jel.events(0)) == []
        with open(path, "a") as f:
            f.write(text[2:])
        assert [int(e.type) for e in jel.events(0)] == [12]
