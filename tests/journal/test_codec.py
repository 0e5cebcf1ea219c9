"""Rows, checksums and payload versions (eventcore.codecs.journal)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from jobledger.eventcore.codecs import journal as codec
from jobledger.eventcore.errors import JournalCorrupt
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import MemoryJournal
from jobledger.eventcore.records import ActionRecord, LeaveQueue, SetAttributes

from tests.journal.helpers import event, submit
from tests.journal.strategies import records


def sample_rows():
    j = MemoryJournal()
    j.append(submit(1, 3), time=10.0)
    j.append([event(JobId(1, 0), 1)], time=11.0)
    return j.rows()


def test_clean_rows_verify():
    assert codec.verify_rows(sample_rows()) == []


def test_a_flipped_byte_is_reported_at_its_position():
    rows = sample_rows()
    bad = rows[3]
    flipped = bad.payload.replace('"1"', '"2"', 1)
    assert flipped != bad.payload
    rows[3] = bad._replace(payload=flipped)
    assert [p for p, _ in codec.verify_rows(rows)] == [bad.position]


def test_a_removed_row_breaks_continuity_and_the_chain():
    rows = sample_rows()
    del rows[2]
    findings = codec.verify_rows(rows)
    assert [p for p, _ in findings] == [4, 4]
    assert "gap" in findings[0][1] and "checksum" in findings[1][1]


def test_upcasting_chain(monkeypatch):
    monkeypatch.setitem(codec.RECORD_VERSIONS, "set", 2)
    monkeypatch.setitem(codec.UPCASTERS, ("set", 1),
                        lambda p: {**p, "v": 2, "set": {k.lower(): v for k, v in p["set"].items()}})
    payload = codec.decode_payload("set", '{"v":1,"set":{"A":"1"},"delete":[]}')
    assert payload == {"v": 2, "set": {"a": "1"}, "delete": []}


def test_newer_or_unknown_payloads_are_corrupt():
    with pytest.raises(JournalCorrupt):
        codec.decode_payload("set", '{"v":9,"set":{},"delete":[]}', 7)
    with pytest.raises(JournalCorrupt) as info:
        codec.decode_payload("nonsense", '{"v":1}', 8)
    assert info.value.position == 8
    with pytest.raises(JournalCorrupt):
        codec.decode_payload("set", "{not json", 9)


def test_canonical_json_is_one_spelling():
    assert codec.canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'


@settings(max_examples=200)
@given(records())
def test_record_round_trip(record):
    payload = codec.record_to_payload(record)
    text = codec.canonical_json(payload)
    back = codec.record_from_payload(record.type, record.job,
                                     codec.decode_payload(record.type, text), record.key)
    assert back == record


def test_other_records_round_trip():
    for record in (SetAttributes(JobId(1, 0), {"A": "1"}, ("B",), by="bob"),
                   ActionRecord(JobId(1, 0), "hold", "why", "bob"), LeaveQueue(JobId(2, 3))):
        payload = codec.record_to_payload(record)
        assert codec.record_from_payload(record.type, record.job, payload) == record
