"""The job status table (schedd.md section 2)."""

from __future__ import annotations

import pytest

from jobledger.eventcore.errors import InvalidTransition
from jobledger.eventcore.status import (
    TRANSITIONS, JobStatus, implied_status, next_status, state_diagram,
)

I, R, X, C, H, S = (JobStatus.IDLE, JobStatus.RUNNING, JobStatus.REMOVED, JobStatus.COMPLETED,
                    JobStatus.HELD, JobStatus.SUSPENDED)

# (before, ULog event, after) straight from schedd.md section 2
SPEC_ROWS = [
    (None, 0, I), (I, 1, R), (R, 5, C), (R, 4, I), (R, 12, H), (R, 9, X), (R, 10, S),
    (S, 11, R), (I, 12, H), (I, 9, X), (H, 13, I), (H, 9, X), (X, 12, H),
]


def test_enum_matches_htcondor2():
    import htcondor2
    assert {m.name: m.value for m in JobStatus} == {m.name: m.value for m in htcondor2.JobStatus}


@pytest.mark.parametrize("before,event,after", SPEC_ROWS)
def test_spec_rows(before, event, after):
    assert next_status(before, event) is after
    assert TRANSITIONS[(before, event)] is after


@pytest.mark.parametrize("before,event", [
    (C, 1), (None, 1), (None, 6), (I, 5), (I, 13), (X, 13), (X, 1), (C, 12), (H, 1), (S, 1),
    (I, 11), (R, 13), (C, 5),
])
def test_illegal_transitions_raise_with_data(before, event):
    with pytest.raises(InvalidTransition) as info:
        next_status(before, event, job="3.1")
    assert info.value.status is before and info.value.event == event and info.value.job == "3.1"
    assert "3.1" in str(info.value)


def test_removed_only_goes_to_removed_or_held():
    targets = {after for (before, _), after in TRANSITIONS.items() if before is X}
    assert targets <= {X, H}


def test_only_idle_or_held_at_birth():
    assert {after for (before, _), after in TRANSITIONS.items() if before is None} <= {I, H}


@pytest.mark.parametrize("status", list(JobStatus))
def test_informational_events_keep_status(status):
    for event in (2, 3, 6, 8, 22, 23, 28, 33, 40):
        assert next_status(status, event) is status


def test_implied_status_guidance():
    assert implied_status(1) is R and implied_status(5) is C and implied_status(12) is H
    assert implied_status(6) is None


def test_diagram_is_drawn_from_the_table():
    diagram = state_diagram()
    assert diagram.startswith("stateDiagram-v2")
    assert diagram.count("-->") == len(TRANSITIONS) + 2
    assert "IDLE --> RUNNING: 001" in diagram
