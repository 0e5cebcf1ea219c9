"""Write then read gives the event back, for every event type and format."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.eventcore.codecs.userlog import TextFormat, TextReaderState, read_events, render
from jobledger.eventcore.events import event_to_dict
from tests.userlog.strategies import NUMBERS, event_of, events

FORMATS = {
    "text-iso": ("text", TextFormat()),
    "text-iso-utc-subsecond": ("text", TextFormat(utc=True, sub_second=True)),
    "json": ("json", TextFormat()),
    "xml": ("xml", TextFormat(utc=True)),
}


def comparable(event):
    d = event_to_dict(event)
    d.pop("hidden", None)
    return d


def round_trip(event, fmt, options):
    data = render(event, fmt, options).encode("utf-8")
    (back,) = read_events(data, TextReaderState())
    return back


@pytest.mark.parametrize("number", NUMBERS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_type_round_trips_in_every_format(number, data):
    sub = data.draw(st.booleans())
    for name, (fmt, options) in FORMATS.items():
        event = data.draw(event_of(number, sub_second=sub and options.sub_second))
        assert comparable(round_trip(event, fmt, options)) == comparable(event), name


@settings(max_examples=150, deadline=None)
@given(many=st.lists(events(), min_size=1, max_size=20))
def test_a_log_of_many_events_reads_back_in_order(many):
    data = "".join(render(e) for e in many).encode("utf-8")
    assert [comparable(e) for e in read_events(data)] == [comparable(e) for e in many]


def test_a_string_that_reads_like_an_expression_stays_a_string():
    """HTCondor's JSON writes an expression "\\/Expr(<text>)\\/" and a string as it is;
    its reader takes only the escaped form for an expression (classad2 agrees)."""
    import classad2
    from jobledger.eventcore.events import Expr, make_event
    attrs = {"Note": "/Expr(RequestMemory * 2)/", "Want": Expr("RequestMemory * 2"),
             "Items": ["/Expr(x)/", 1], "Tail": "a\\/Expr(b)/"}
    event = make_event(28, cluster=7, proc=0, subproc=0, timestamp=1709633472, attrs=attrs)
    for name, (fmt, options) in FORMATS.items():
        back = round_trip(event, fmt, options)
        assert comparable(back) == comparable(event), name
        got = event_to_dict(back)["attrs"]
        assert got["Note"] == "/Expr(RequestMemory * 2)/" and got["Want"] == {"$expr": "RequestMemory * 2"}
    text = render(event, "json")
    assert '"Note": "/Expr(RequestMemory * 2)/"' in text
    assert '"Want": "\\/Expr(RequestMemory * 2)\\/"' in text
    ad = next(classad2.parseAds(text, classad2.ParserType.JSON))
    assert ad["Note"] == "/Expr(RequestMemory * 2)/" and ad["Items"][0] == "/Expr(x)/"
    assert isinstance(ad["Want"], classad2.ExprTree) and str(ad["Want"]) == "RequestMemory * 2"


def test_legacy_dates_read_back_with_the_year_supplied():
    from jobledger.eventcore.events import JobAbortedEvent
    event = JobAbortedEvent(cluster=3, proc=1, timestamp=1709633472, reason="gone")
    data = render(event, "text", TextFormat(iso_date=False)).encode()
    assert data.startswith(b"009 (003.001.000) 03/05 10:11:12 Job was aborted.\n")
    (back,) = read_events(data, TextReaderState(year=2024))
    assert back == event


def test_local_time_zone_is_an_argument():
    from jobledger.eventcore.codecs.userlog_time import Zone  # noqa: F401 (protocol)
    from jobledger.eventcore.events import JobAbortedEvent
    east = datetime.timezone(datetime.timedelta(hours=5))
    event = JobAbortedEvent(cluster=3, proc=1, timestamp=1709633472)
    assert render(event, "text", TextFormat(), east).startswith("009 (003.001.000) 2024-03-05 15:11:12 ")
