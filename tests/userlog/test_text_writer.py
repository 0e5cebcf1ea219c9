"""The text writer lays out events exactly as HTCondor does.

Reference: the ``text`` field of every oracle event (``str(htcondor2.JobEvent)``,
HTCondor's own writer).  Here the events are built from the oracle's
attributes; tests/userlog/test_oracle.py also checks parse -> render.
"""

from __future__ import annotations

import datetime
import json

import pytest

from jobledger.eventcore.codecs.userlog_text_write import TextFormat, format_time, render_event_text, render_text
from jobledger.eventcore.events import JobTerminatedEvent, decode_value, make_event

COMMON = {"MyType", "EventTypeNumber", "EventTime", "Cluster", "Proc", "Subproc"}
LIFECYCLE = {0, 1, 4, 5, 6, 7, 9, 10, 11, 12, 13, 21, 22, 23, 24, 40}
CASES = ["lifecycle_basic", "submit_variants", "execute_variants", "terminated_variants",
         "terminated_legacy_tails", "evicted_variants", "hold_release_remove",
         "suspend_shadow_reconnect", "image_size_variants", "file_transfer_all",
         "interleaved_multijob"]


def oracle_events(oracle_dir, name):
    for rec in json.loads((oracle_dir / "userlog" / f"{name}.json").read_text("utf-8")):
        if "outcome" not in rec and rec["type"] in LIFECYCLE:
            yield rec


@pytest.mark.parametrize("name", CASES)
def test_lifecycle_events_render_like_htcondor(oracle_dir, name):
    for rec in oracle_events(oracle_dir, name):
        attrs = {k: decode_value(v) for k, v in rec["attrs"].items() if k not in COMMON}
        event = make_event(rec["type"], cluster=rec["attrs"]["Cluster"], proc=rec["attrs"]["Proc"],
                           subproc=rec["attrs"]["Subproc"], timestamp=rec["timestamp"], attrs=attrs)
        assert render_event_text(event) == rec["text"]


def test_time_formats():
    ts = 1709633472.345
    utc = datetime.timezone.utc
    assert format_time(ts) == "2024-03-05 10:11:12"
    assert format_time(ts, TextFormat(utc=True, sub_second=True)) == "2024-03-05 10:11:12.345Z"
    assert format_time(ts, TextFormat(iso_date=False)) == "03/05 10:11:12"
    east = datetime.timezone(datetime.timedelta(hours=2))
    assert format_time(ts, TextFormat(), east) == "2024-03-05 12:11:12"
    assert format_time(ts, TextFormat(utc=True), east) == "2024-03-05 10:11:12Z"
    assert TextFormat.from_options("LEGACY") == TextFormat(False, False, False)
    assert TextFormat.from_options("iso_date, UTC ,SUB_SECOND") == TextFormat(True, True, True)
    assert TextFormat.from_options("!LEGACY") == TextFormat(True, False, False)
    del utc


def test_render_text_ends_with_terminator():
    event = JobTerminatedEvent(cluster=1, proc=0, timestamp=0, terminated_normally=True,
                               return_value=0)
    text = render_text(event)
    assert text.endswith("\t0  -  Total Bytes Received By Job\n...\n")
    assert text.startswith("005 (001.000.000) 1970-01-01 00:00:00 Job terminated.\n")
