"""The text reader on edge cases: crash fragments at every cut point, CRLF, bad bodies."""

from __future__ import annotations

import pytest

from jobledger.eventcore.codecs.userlog import Garbled, Parsed, Skipped, TextReaderState, render, scan
from jobledger.eventcore.events import ExecuteEvent, JobHeldEvent, JobTerminatedEvent, SubmitEvent

A_EVENTS = [
    ExecuteEvent(cluster=5, proc=0, timestamp=1709633472, execute_host="<10.0.0.1:9618>",
                 slot_name="slot1@ep", execute_props={"Cpus": 1, "Memory": 2048}),
    JobTerminatedEvent(cluster=5, proc=1, timestamp=1709633473, terminated_normally=True,
                       return_value=0, extra={"CpusUsage": 0.5, "RequestCpus": 1, "Cpus": 1}),
    SubmitEvent(cluster=5, proc=2, timestamp=1709633474, submit_host="<10.0.0.2:9618>"),
]
B = JobHeldEvent(cluster=6, proc=0, timestamp=1709633480, hold_reason="why", hold_reason_code=3)


def items_of(data: bytes):
    items, end = scan("text", data, 0, TextReaderState())
    return items, end


@pytest.mark.parametrize("a", A_EVENTS, ids=lambda e: type(e).__name__)
def test_a_fragment_cut_anywhere_never_swallows_the_next_event(a):
    text_a, text_b = render(a), render(B)
    for cut in range(1, len(text_a)):
        data = (text_a[:cut] + text_b).encode()
        items, end = items_of(data)
        parsed = [i for i in items if isinstance(i, Parsed)]
        assert [(p.header.cluster, p.header.number) for p in parsed] == [(6, 12)], cut
        assert parsed[0].text == text_b and end == len(data), cut
        assert all(isinstance(i, (Garbled, Skipped)) for i in items if i is not parsed[0])


@pytest.mark.parametrize("a", A_EVENTS, ids=lambda e: type(e).__name__)
def test_an_unfinished_last_event_is_held_back_at_every_cut(a):
    text = render(a).encode()
    for cut in range(0, len(text)):
        items, end = items_of(text[:cut])
        assert items == [] and end == 0, cut
    items, end = items_of(text)
    assert [type(i) for i in items] == [Parsed] and end == len(text)


def test_crlf_line_endings_are_read():
    text = render(A_EVENTS[0]) + render(B)
    items, _ = items_of(text.replace("\n", "\r\n").encode())
    lf, _ = items_of(text.encode())
    assert [i.attrs for i in items] == [i.attrs for i in lf]
    assert [i.header for i in items] == [i.header for i in lf]


def test_job_ad_information_with_a_line_that_is_no_attribute_is_unreadable():
    good = "028 (1.0.0) 2024-03-05 10:00:00 Job ad information event triggered.\nA = 1\n...\n"
    bad = "028 (1.0.0) 2024-03-05 10:00:00 Job ad information event triggered.\nA = 1 +\n...\n"
    assert [type(i) for i in items_of(good.encode())[0]] == [Parsed]
    assert [type(i) for i in items_of(bad.encode())[0]] == [Garbled]


def test_four_digit_numbers_are_foreign_text_not_events():
    data = ("1234 (1.0.0) 2024-03-05 10:00:06 not a header\n...\n" + render(B)).encode()
    items, _ = items_of(data)
    assert [type(i) for i in items] == [Skipped, Parsed]


def test_non_ascii_text_keeps_byte_offsets():
    first = render(JobHeldEvent(cluster=1, proc=0, timestamp=0, hold_reason="café → ok"))
    data = (first + render(B)).encode()
    items, end = items_of(data)
    assert items[0].attrs["HoldReason"] == "café → ok"
    assert items[1].offset == len(first.encode()) and end == len(data)


@pytest.mark.parametrize("fmt", ["json", "xml"])
@pytest.mark.parametrize("a", A_EVENTS, ids=lambda e: type(e).__name__)
def test_structured_formats_survive_a_fragment_at_every_cut(fmt, a):
    text_a, text_b = render(a, fmt), render(B, fmt)
    for cut in range(1, len(text_a) - 1):
        data = (text_a[:cut] + text_b).encode()
        items, _ = items_of_fmt(fmt, data)
        parsed = [i for i in items if isinstance(i, Parsed)]
        assert [(p.header.cluster, p.header.number) for p in parsed] == [(6, 12)], cut
    for cut in range(0, len(text_a) - 1):
        items, end = items_of_fmt(fmt, text_a[:cut].encode())
        assert not [i for i in items if isinstance(i, Parsed)], cut


def items_of_fmt(fmt, data):
    return scan(fmt, data, 0, TextReaderState())


@pytest.mark.parametrize("date", ["2026-11-29", "2026-11-30", "2026-12-31", "2024-02-29", "2023-02-29",
                                  "2024-02-30", "2024-04-31", "2024-03-28"])
@pytest.mark.parametrize("zone", ["utc", "local"])
def test_a_header_on_any_day_reads_as_htcondors_reader_reads_it(date, zone):
    """The reader's header path (an hour's start cached per date and hour) and HTCondor's
    field-by-field reading (``parse_header_time``) agree on the month's last days and on a
    day past the month's end (normalised as mktime does); a real date's hour is cached."""
    from jobledger.eventcore.codecs.userlog_time import UTC_ZONE, parse_header_time
    from jobledger.tracking.localzone import LOCAL_ZONE
    state = TextReaderState(UTC_ZONE if zone == "utc" else LOCAL_ZONE, 2026)
    line = f"000 (7.0.0) {date} 10:11:12 Job submitted from host: <10.0.0.2:9618>\n...\n"
    items, _ = scan("text", line.encode(), 0, state)
    epoch, _, event_time, _ = parse_header_time(f"{date} 10:11:12 Job", state.zone, 2026)
    assert (items[0].header.epoch, items[0].header.event_time) == (epoch, event_time)
    real = date not in ("2023-02-29", "2024-02-30", "2024-04-31")
    assert bool(state._hours.get(date + "10")) is real
