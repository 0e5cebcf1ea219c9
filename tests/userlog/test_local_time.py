"""User logs in local time of each event's own instant, under zones with DST.

HTCondor writes every event header in the local time in force at that event
(summer events in summer time), and reads header times back in local time.
Every writer here -- the projector's zone, ``journal export``, ``log --to``
and audit's expectations (which share the projector's zone) -- must do the
same, so that write-then-read keeps each event's instant.  The one exception
is HTCondor's too: the hour repeated when the clocks go back has no offset in
the text, so a time there reads back as one of its two instants.

The instants are taken around every offset change of 2026 in each zone
(America/New_York: one hour; Australia/Lord_Howe: half an hour; Asia/Kolkata:
none).
"""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from jobledger.daemons.projector import local_zone
from jobledger.eventcore.codecs.userlog import TextFormat, render
from jobledger.eventcore.events import make_event
from jobledger.cli import main
from tests.conftest import local_time_zone
from jobledger.tracking.jobeventlog import JobEventLog

ZONES = ["America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]
YEAR_2026 = (1767225600, 1798761600)   # 2026-01-01 .. 2027-01-01 UTC
STEP = 600                             # an instant every 10 minutes around each change
AROUND = 3 * 3600


@pytest.fixture(params=ZONES)
def zone(request):
    with local_time_zone(request.param):
        yield request.param


def offset_changes(start: int, end: int) -> list[int]:
    """The instants in [start, end) where the local UTC offset changes."""
    changes, day = [], 86400
    for t in range(start, end, day):
        if time.localtime(t).tm_gmtoff != time.localtime(t + day).tm_gmtoff:
            low, high = t, t + day      # bisect to the second
            while high - low > 1:
                mid = (low + high) // 2
                if time.localtime(mid).tm_gmtoff == time.localtime(low).tm_gmtoff:
                    low = mid
                else:
                    high = mid
            changes.append(high)
    return changes


def instants() -> list[int]:
    """Every STEP seconds around each offset change of 2026, plus midwinter and midsummer."""
    found = {1768478400, 1784116800}    # 2026-01-15, 2026-07-15 12:00 UTC
    for change in offset_changes(*YEAR_2026):
        found.update(range(change - AROUND, change + AROUND, STEP))
    return sorted(found)


def unambiguous(t: int) -> bool:
    """True when the local wall time of ``t`` names only ``t`` (not the repeated hour)."""
    return int(time.mktime(time.localtime(t)[:6] + (0, 0, -1))) == t


def wall(t: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def events_at(times: list[int]) -> list:
    return [make_event(0, cluster=1, proc=proc, timestamp=t, attrs={"SubmitHost": "<127.0.0.1:0>"})
            for proc, t in enumerate(times)]


def test_the_zones_have_the_changes_the_test_is_about(zone):
    changes = offset_changes(*YEAR_2026)
    sizes = {abs(time.localtime(c).tm_gmtoff - time.localtime(c - 1).tm_gmtoff) for c in changes}
    assert sizes == {"America/New_York": {3600}, "Australia/Lord_Howe": {1800},
                     "Asia/Kolkata": set()}[zone]


def test_each_event_is_written_in_the_offset_of_its_own_instant(zone, tmp_path):
    times = instants()
    tz = local_zone()                       # the zone the projector and audit write with
    for fmt in ("text", "json", "xml"):
        data = "".join(render(event, fmt, TextFormat(), tz) for event in events_at(times))
        if fmt == "text":
            headers = [line.split(") ", 1)[1][:19] for line in data.splitlines() if line.startswith("000 (")]
            assert headers == [wall(t) for t in times]
        log = tmp_path / f"events.{fmt}.log"
        log.write_text(data)
        back = [e.timestamp for e in JobEventLog(str(log)).events(0)]
        assert len(back) == len(times)
        kept = [t for t, b in zip(times, back) if t == b]
        assert kept == [t for t in times if unambiguous(t)], fmt
        ambiguous = [(t, b) for t, b in zip(times, back) if t != b]
        assert all(wall(t) == wall(b) for t, b in ambiguous)   # the same wall time, the other offset


def test_export_and_log_to_write_what_the_projector_writes(zone, tmp_path):
    times = instants()
    events = events_at(times)
    source = tmp_path / "utc.log"           # unambiguous input: UTC times with a Z
    source.write_text("".join(render(e, "text", TextFormat(utc=True)) for e in events))
    projected = "".join(render(e, "text", TextFormat(), local_zone()) for e in events)
    runner = CliRunner()
    imported = runner.invoke(main, ["journal", "import", str(source), "--local-dir", str(tmp_path / "j")])
    assert imported.exit_code == 0, imported.output
    exported = runner.invoke(main, ["journal", "export", "--local-dir", str(tmp_path / "j")])
    converted = runner.invoke(main, ["log", "--to", "text", str(source)])
    assert exported.exit_code == 0 and converted.exit_code == 0
    assert exported.stdout == projected and converted.stdout == projected
    (tmp_path / "export.log").write_text(exported.stdout)
    back = [e.timestamp for e in JobEventLog(str(tmp_path / "export.log")).events(0)]
    assert [t for t, b in zip(times, back) if t == b] == [t for t in times if unambiguous(t)]
