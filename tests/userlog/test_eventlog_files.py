"""The global event log read across rotations, in order, each event once."""

from __future__ import annotations

import os
import warnings

import pytest

from jobledger.eventcore.codecs.userlog import render
from jobledger.eventcore.codecs.userlog_eventlog import header_event, parse_header_info
from jobledger.eventcore.codecs.userlog_text_write import TextFormat
from jobledger.eventcore.errors import UserLogWarning
from jobledger.eventcore.events import JobAbortedEvent
from jobledger.tracking.eventlog_files import GlobalEventLog, rotated_files

LEGACY = TextFormat(iso_date=False)


def header(seq):
    return render(header_event(timestamp=1709633400 + seq, ctime=1709633400, log_id=f"ap.0.1.{seq}",
                               sequence=seq), "text", LEGACY)


def job(cluster, proc):
    return render(JobAbortedEvent(cluster=cluster, proc=proc, timestamp=1709633500 + proc), "text", LEGACY)


def ids(events):
    return [(e.cluster, e.proc) for e in events if e.cluster != -1]


def test_header_event_matches_htcondors_layout(oracle_dir):
    text = render(header_event(timestamp=1772705400, ctime=1709633400,
                               log_id="ap01.example.org.0.2131.1709633400.1.1709633400.123456",
                               sequence=1), "text", LEGACY)
    oracle = (oracle_dir / "userlog" / "generic_and_header.log").read_text()
    assert text == oracle[:len(text)]
    info = parse_header_info(text.split(") 03/05 10:10:00 ", 1)[1].split("\n")[0])
    assert info["sequence"] == 1 and info["creator_name"] == "<SCHEDD>"


def test_rotated_files_are_ordered_oldest_first(tmp_path):
    live = tmp_path / "EventLog"
    for name in ("EventLog.2", "EventLog.10", "EventLog.1", "EventLog.old", "EventLog.x"):
        (tmp_path / name).write_text("")
    assert [p.name for p in rotated_files(live)] == ["EventLog.10", "EventLog.2", "EventLog.1",
                                                     "EventLog.old"]


def test_reads_numbered_rotations_then_the_live_file(tmp_path):
    live = tmp_path / "EventLog"
    (tmp_path / "EventLog.2").write_text(header(1) + job(1, 0) + job(1, 1))
    (tmp_path / "EventLog.1").write_text(header(2) + job(2, 0))
    live.write_text(header(3) + job(3, 0))
    with GlobalEventLog(str(live), year=2024) as log:
        assert ids(log.events(0)) == [(1, 0), (1, 1), (2, 0), (3, 0)]


def test_follows_a_rotation_that_happens_while_reading(tmp_path):
    live = tmp_path / "EventLog"
    live.write_text(header(1) + job(1, 0))
    log = GlobalEventLog(str(live), year=2024)
    assert ids(log.events(0)) == [(1, 0)]
    with open(live, "a") as f:          # written before the rename: must not be lost
        f.write(job(1, 1))
    os.rename(live, tmp_path / "EventLog.old")
    live.write_text(header(2) + job(2, 0))
    assert ids(log.events(0)) == [(1, 1), (2, 0)]
    with open(live, "a") as f:
        f.write(job(2, 1))
    assert ids(log.events(0)) == [(2, 1)]
    log.close()


def test_a_rotation_missed_while_away_is_reported(tmp_path):
    live = tmp_path / "EventLog"
    live.write_text(header(1) + job(1, 0))
    log = GlobalEventLog(str(live), year=2024)
    assert ids(log.events(0)) == [(1, 0)]
    os.rename(live, tmp_path / "EventLog.old")
    live.write_text(header(2) + job(2, 0))
    os.rename(live, tmp_path / "EventLog.old")      # .old replaced: sequence 2 is gone
    live.write_text(header(3) + job(3, 0))
    with pytest.warns(UserLogWarning, match="sequence 2"):
        got = ids(log.events(0))
    assert got == [(3, 0)]
    log.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with GlobalEventLog(str(live), year=2024) as again:
            assert ids(again.events(0)) == [(2, 0), (3, 0)]
