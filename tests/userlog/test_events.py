"""Event records: the catalogue, uniform access, and the versioned JSON payload."""

from __future__ import annotations

import json

import pytest

from jobledger.eventcore import events as ev
from jobledger.eventcore.ids import JobId


def test_every_enum_number_has_a_record():
    for member in ev.EventType:
        cls = ev.EVENT_CLASSES[member.value]
        assert cls.TYPE is member
        assert cls.MY_TYPE


def test_myType_oddities_match_htcondor():
    assert ev.EVENT_CLASSES[13].MY_TYPE == "JobReleaseEvent"
    for n in (29, 30, 34, 17, 39):
        assert ev.EVENT_CLASSES[n].MY_TYPE == "FutureEvent"
    assert ev.my_type(112) == "EPFutureEvent"
    assert ev.my_type(150) == "FutureEvent"


def test_uniform_parts_and_rebuild():
    held = ev.JobHeldEvent(cluster=7, proc=3, timestamp=1709633472,
                           hold_reason="via condor_hold", hold_reason_code=1)
    parts = held.parts()
    assert parts == (12, 7, 3, 0, 1709633472,
                     {"HoldReason": "via condor_hold", "HoldReasonCode": 1,
                      "HoldReasonSubCode": 0})
    assert held.job_id == JobId(7, 3)
    again = ev.make_event(parts.type, cluster=parts.cluster, proc=parts.proc,
                          timestamp=parts.timestamp, attrs=parts.attrs)
    assert again == held


def test_unknown_attribute_is_refused_where_there_is_no_extra():
    with pytest.raises(ValueError, match="HoldReasn"):
        ev.make_event(12, cluster=1, proc=0, attrs={"HoldReasn": "typo"})


@pytest.mark.parametrize("number", sorted(ev.EVENT_CLASSES) + [48, 112, 150])
def test_payload_round_trips_through_json(number):
    attrs = {}
    if number in (5, 28) or number not in ev.EVENT_CLASSES or number >= 100:
        attrs = {"CpusUsage": 0.98, "Weird": ev.Expr("MY.Cpus * 2"), "U": ev.UNDEFINED,
                 "Nested": {"a": 1, "l": [1, "x", 2.5]}, "Inf": float("inf")}
    event = ev.make_event(number, cluster=12, proc=-1, timestamp=1709633472.25, attrs=attrs)
    data = json.loads(json.dumps(ev.event_to_dict(event), allow_nan=False))
    assert data["v"] == ev.PAYLOAD_VERSION
    assert ev.event_from_dict(data) == event


def test_unknown_payload_version_is_refused():
    data = ev.event_to_dict(ev.JobAbortedEvent(cluster=1, proc=0, timestamp=0))
    data["v"] = 99
    with pytest.raises(ValueError, match="version"):
        ev.event_from_dict(data)


def test_job_id_parse_and_order():
    assert JobId.parse("12.3") == JobId(12, 3)
    assert str(JobId(12, 3)) == "12.3"
    assert JobId.parse("12") == JobId(12, -1)
    assert sorted([JobId(2, 0), JobId(1, 5), JobId(1, 2)]) == [JobId(1, 2), JobId(1, 5), JobId(2, 0)]
    with pytest.raises(ValueError):
        JobId.parse("x.y")


def test_enums_match_htcondor2():
    htcondor2 = pytest.importorskip("htcondor2")
    import jobledger
    for name in ("JobEventType", "FileTransferEventType", "CommonFilesEventType"):
        ours = [(m.name, m.value) for m in getattr(jobledger, name)]
        assert ours == [(m.name, m.value) for m in getattr(htcondor2, name)], name
