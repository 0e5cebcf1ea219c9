"""Every record the journal writes validates against its versioned JSON Schema."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given, settings

from jobledger.eventcore.codecs.journal import record_to_payload
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import MemoryJournal
from jobledger.eventcore.records import RECORD_TYPES

from tests.journal.helpers import event, life, submit
from tests.journal.schema_check import check_payload, check_row, validator
from tests.journal.strategies import records


def test_every_record_type_has_a_schema():
    for kind in RECORD_TYPES:
        validator(f"{kind}.v1.json")


@settings(max_examples=200)
@given(records())
def test_generated_records_validate(record):
    check_payload(record.type, record_to_payload(record))


def test_rows_validate():
    j = MemoryJournal()
    j.append(submit(1, 3, log="/tmp/x.log"), time=1.0)
    j.append(life(JobId(1, 0)) + [event(JobId(1, 1), 12)], time=2.0)
    for row in j.rows():
        check_row(row)


def test_schemas_reject_bad_payloads():
    with pytest.raises(jsonschema.ValidationError):
        check_payload("proc", {"v": 1, "ad": {"A": 1}})        # values are expression text
    with pytest.raises(jsonschema.ValidationError):
        check_payload("set", {"v": 1, "set": {}, "delete": [], "extra": 1})
    with pytest.raises(jsonschema.ValidationError):
        check_payload("event", {"v": 1, "event": {"v": 1, "type": 1}})
