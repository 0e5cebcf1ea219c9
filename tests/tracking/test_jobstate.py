"""The tolerant status fold: oracle logs, anomalies, properties."""

from __future__ import annotations

import htcondor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import apply_event, fold, job_of
from tests.tracking.events import (Ev, aborted, evicted, execute, held, released, submit,
                                   terminated)

IDLE, RUNNING, REMOVED, COMPLETED, HELD, SUSPENDED = 1, 2, 3, 4, 5, 7


def oracle_events(path):
    """Every event the real reader returns (keeps going after stops and errors)."""
    jel = htcondor2.JobEventLog(str(path))
    out = []
    for _ in range(50):
        try:
            before = len(out)
            out.extend(jel.events(0))
            if len(out) == before:
                break
        except htcondor2.HTCondorException:
            continue
    jel.close()
    return out


EXPECTED = {
    "interleaved_multijob": {
        (2100, 0): COMPLETED, (2100, 1): COMPLETED, (2100, 2): COMPLETED, (2100, 3): COMPLETED,
        (2101, 0): COMPLETED, (2101, 1): COMPLETED, (2101, 2): COMPLETED, (2101, 3): REMOVED,
    },
    "hold_release_remove": {
        (600, 0): IDLE, (600, 1): REMOVED, (600, 2): REMOVED, (600, 3): REMOVED, (600, 4): IDLE,
    },
    "lifecycle_basic": {(101, 0): COMPLETED},
    "suspend_shadow_reconnect": {(700, 0): IDLE, (700, 1): IDLE, (700, 2): IDLE, (700, 3): IDLE},
    "xml_format": {(2600, 0): HELD},
    "truncated_tail": {(2200, 0): RUNNING},
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_oracle_logs_give_the_states_their_events_imply(oracle_dir, case):
    result = fold(oracle_events(oracle_dir / "userlog" / f"{case}.log"))
    got = {(j.cluster, j.proc): s.status for j, s in result.states.items()}
    assert got == EXPECTED[case]


def test_oracle_exit_and_hold_details(oracle_dir):
    states = fold(oracle_events(oracle_dir / "userlog" / "terminated_variants.log")).states
    assert (states[JobId(400, 0)].exit_code, states[JobId(400, 0)].exit_by_signal) == (3, False)
    assert (states[JobId(400, 1)].exit_signal, states[JobId(400, 1)].exit_by_signal) == (9, True)
    assert states[JobId(400, 1)].exit_code is None
    held_states = fold(oracle_events(oracle_dir / "userlog" / "hold_release_remove.log")).states
    # released and removed jobs keep no current hold reason; the count stays
    assert held_states[JobId(600, 0)].hold_code is None and held_states[JobId(600, 0)].holds == 1
    multi = fold(oracle_events(oracle_dir / "userlog" / "interleaved_multijob.log")).states
    assert multi[JobId(2101, 2)].starts == 2
    assert multi[JobId(2100, 1)].holds == 1


def test_oracle_held_job_keeps_reason_and_code(oracle_dir):
    events = oracle_events(oracle_dir / "userlog" / "hold_release_remove.log")
    upto_hold = [e for e in events if (e.cluster, e.proc) == (600, 1) and int(e.type) == 12]
    state = fold(upto_hold).states[JobId(600, 1)]
    assert state.status == HELD
    assert (state.hold_code, state.hold_subcode) == (6, 13)
    assert "Permission denied" in state.hold_reason


def test_big_log_folds_without_anomalies(oracle_dir):
    result = fold(oracle_events(oracle_dir / "userlog" / "big_10000.log"))
    assert len(result.states) == 1250
    assert result.anomalies == ()
    assert all(s.seen_submit for s in result.states.values())


def test_slot_and_cluster_events_belong_to_no_job(oracle_dir):
    events = oracle_events(oracle_dir / "userlog" / "ep_events.log")
    events += oracle_events(oracle_dir / "userlog" / "cluster_factory.log")
    assert all(job_of(e) is None for e in events)
    assert fold(events).skipped == len(events)


# --- anomalies: counted, never raised ---------------------------------------

def test_duplicated_events_change_nothing():
    log = [submit(1, 0, 10), execute(1, 0, 20), execute(1, 0, 20), terminated(1, 0, 30),
           terminated(1, 0, 30), submit(1, 0, 10)]
    result = fold(log)
    state = result.states[JobId(1, 0)]
    assert (state.status, state.starts, state.exit_code) == (COMPLETED, 1, 0)
    assert result.anomaly_counts() == {"duplicate": 3}
    assert [(c.old, c.new) for c in result.changes] == [(None, IDLE), (IDLE, RUNNING),
                                                        (RUNNING, COMPLETED)]


def test_terminated_then_aborted_first_end_wins():
    result = fold([submit(1, 0, 1), execute(1, 0, 2), terminated(1, 0, 3, code=7), aborted(1, 0, 4)])
    state = result.states[JobId(1, 0)]
    assert (state.status, state.exit_code) == (COMPLETED, 7)
    assert result.anomaly_counts() == {"after_end": 1}


def test_execute_before_submit():
    result = fold([execute(2, 0, 5), submit(2, 0, 4), terminated(2, 0, 9)])
    state = result.states[JobId(2, 0)]
    assert (state.status, state.submitted, state.starts) == (COMPLETED, 4, 1)
    assert result.anomaly_counts() == {"no_submit": 1, "late_submit": 1}


def test_event_of_a_job_never_submitted():
    result = fold([held(3, 1, 5, code=21)])
    state = result.states[JobId(3, 1)]
    assert (state.status, state.hold_code) == (HELD, 21)
    assert result.anomaly_counts() == {"no_submit": 1}


def test_illegal_transition_takes_the_events_status():
    result = fold([submit(1, 0, 1), terminated(1, 0, 2, signal=9)])
    state = result.states[JobId(1, 0)]
    assert (state.status, state.exit_signal, state.exit_by_signal) == (COMPLETED, 9, True)
    assert result.anomaly_counts() == {"invalid_transition": 1}
    # a release of a job that is not held implies nothing new: ignored, counted
    result = fold([submit(1, 0, 1), released(1, 0, 2)])
    assert result.states[JobId(1, 0)].status == IDLE
    assert result.anomaly_counts() == {"invalid_transition": 1}


def test_eviction_when_not_running_is_informational():
    result = fold([submit(1, 0, 1), execute(1, 0, 2), held(1, 0, 3), evicted(1, 0, 4)])
    assert result.states[JobId(1, 0)].status == HELD
    assert result.anomalies == ()


def test_fold_does_not_touch_its_input():
    first = fold([submit(1, 0, 1)])
    before = dict(first.states)
    fold([execute(1, 0, 2)], first.states)
    assert first.states == before


def test_apply_event_refuses_jobless_events():
    with pytest.raises(ValueError):
        apply_event(None, Ev(35, 5, -1, 1))


# --- properties -------------------------------------------------------------

STATUS_EVENT_NUMBERS = [0, 1, 2, 4, 5, 6, 7, 9, 10, 11, 12, 13, 22, 23, 24, 28, 33, 40]
events = st.builds(
    Ev, type=st.sampled_from(STATUS_EVENT_NUMBERS), cluster=st.integers(1, 3),
    proc=st.integers(0, 2), timestamp=st.integers(0, 50),
    attrs=st.fixed_dictionaries({}, optional={
        "TerminatedNormally": st.booleans(), "ReturnValue": st.integers(0, 3),
        "TerminatedBySignal": st.integers(1, 15), "HoldReasonCode": st.integers(0, 40),
        "TerminatedAndRequeued": st.booleans()}))


@settings(max_examples=200, deadline=None)
@given(st.lists(events, max_size=40))
def test_any_sequence_folds_without_raising(log):
    result = fold(log)
    assert set(result.states) == {JobId(e.cluster, e.proc) for e in log}
    for state in result.states.values():
        assert state.status in (IDLE, RUNNING, REMOVED, COMPLETED, HELD, SUSPENDED)


@settings(max_examples=200, deadline=None)
@given(st.lists(events, max_size=40), st.integers(0, 40))
def test_folding_in_two_parts_equals_folding_at_once(log, cut):
    whole = fold(log)
    first = fold(log[:cut])
    second = fold(log[cut:], first.states)
    assert second.states == whole.states
    assert first.changes + second.changes == whole.changes


@settings(max_examples=200, deadline=None)
@given(st.lists(events, max_size=30))
def test_repeating_every_event_keeps_the_statuses(log):
    doubled = [e for event in log for e in (event, event)]
    assert ({j: s.status for j, s in fold(doubled).states.items()}
            == {j: s.status for j, s in fold(log).states.items()})
