"""The trackers' job table: a dict of job states, finished jobs on disk, always exact."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import JobState
from jobledger.eventcore.status import JobStatus
from jobledger.tracking.jobtable import JobTable

T0 = 1_700_000_000
_times = st.one_of(st.none(), st.integers(T0 - 10, T0 + 10**6), st.sampled_from([0, -1, 2**40, -(2**63)]))
_ints = st.one_of(st.none(), st.integers(-3, 300), st.sampled_from([2**31 - 1, -(2**31), 2**31, 2**70]))
_texts = st.one_of(st.none(), st.sampled_from(["slot1@ep01", "slot2@ep01", "", "why ö"]))
_flags = st.one_of(st.none(), st.booleans(), st.just(1))
_jobs = st.builds(JobId, st.integers(0, 5), st.one_of(st.integers(0, 40), st.just(10**9)))


@st.composite
def states(draw):
    return JobState(
        job=draw(_jobs), status=draw(st.sampled_from(list(JobStatus) + [4])),
        last_status=draw(st.one_of(st.none(), st.sampled_from(list(JobStatus)))),
        entered_status=draw(_times), submitted=draw(_times), first_start=draw(_times),
        last_start=draw(_times), completed=draw(_times), exit_code=draw(_ints),
        exit_signal=draw(_ints), exit_by_signal=draw(_flags), hold_reason=draw(_texts),
        hold_code=draw(_ints), hold_subcode=draw(_ints), starts=draw(st.integers(0, 5)),
        holds=draw(st.one_of(st.integers(0, 3), st.sampled_from([2**31, 2**70]))), evictions=draw(st.integers(0, 3)),
        host=draw(_texts), seen_submit=draw(st.booleans()), last_event=draw(_ints),
        last_event_time=draw(_times), events=draw(st.integers(0, 2**33)))


def _same(a: JobState, b: JobState) -> bool:
    """Equal, field by field, with the same types (a bool stays a bool, an int an int)."""
    import attrs
    for f in attrs.fields(JobState):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x != y or (type(x) is bool) != (type(y) is bool) or (x is None) != (y is None):
            return False
    return True


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["set", "set", "set", "del"]), states()), max_size=60))
def test_the_table_is_a_dict_of_states(ops):
    table, model = JobTable(), {}
    for op, state in ops:
        if op == "set":
            table[state.job] = model[state.job] = state
        elif state.job in model:
            del table[state.job], model[state.job]
        else:
            assert state.job not in table
    assert len(table) == len(model) and set(table) == set(model)
    assert table == model and dict(table.items()) == model
    for job, state in model.items():
        assert job in table and _same(table[job], state) and _same(table.get(job), state)
    copy = table.copy()
    assert copy == model
    for job in list(model):
        del copy[job]
    assert not copy and table == model


def test_finished_jobs_go_to_disk_and_read_back_equal():
    table = JobTable()
    done = [JobState(JobId(7, p), JobStatus.COMPLETED, JobStatus.RUNNING, T0 + p, T0, T0 + 1, T0 + 1,
                     T0 + p, p % 3, None, False, None, None, None, 1, 0, 0, "slot1@ep01", True, 5,
                     T0 + p, 3) for p in range(1000)]
    running = JobState(JobId(7, 1000), JobStatus.RUNNING, entered_status=T0)
    for s in done + [running]:
        table[s.job] = s
    assert table.finished() == 1000 and len(table) == 1001 and table.live() == [running]
    assert all(_same(table[s.job], s) for s in done) and table[running.job] is running
    table[JobId(7, 3)] = JobState(JobId(7, 3), JobStatus.IDLE)        # back in the queue: live again
    assert table.finished() == 999 and table[JobId(7, 3)].status == JobStatus.IDLE
    table[JobId(7, 3)] = done[3]
    assert table.finished() == 1000 and _same(table[JobId(7, 3)], done[3])


@settings(max_examples=40, deadline=None)
@given(st.lists(states(), max_size=40), st.one_of(st.none(), st.integers(0, 5)), st.integers(0, 30))
def test_conditions_read_a_table_as_they_read_a_dict(items, cluster, expected):
    from jobledger.tracking.conditions import all_done, any_failed, any_held
    table, model = JobTable(), {}
    for state in items:
        table[state.job] = model[state.job] = state
    for condition in (all_done(cluster, expected), any_held(cluster), any_failed(cluster)):
        assert condition(table) == condition(model)


@settings(max_examples=30, deadline=None)
@given(st.lists(states(), max_size=40))
def test_batch_summaries_of_a_table_are_those_of_a_dict(items):
    from jobledger.tracking.summary import summarize
    table, model = JobTable(), {}
    for state in items:
        table[state.job] = model[state.job] = state
    key = lambda b: (b.cluster, b.idle, b.running, b.held, b.completed, b.removed, b.failed, sorted(b.procs))
    assert [key(b) for b in summarize(table)] == [key(b) for b in summarize(model)]


def _done(job: JobId, code: int) -> JobState:
    return JobState(job, JobStatus.COMPLETED, JobStatus.RUNNING, T0, T0, T0, T0, T0, code, None, False,
                    None, None, None, 1, 0, 0, "slot1@ep01", True, 5, T0, 3)


def test_a_copy_keeps_what_it_saw_while_the_table_goes_on():
    table = JobTable({JobId(1, p): _done(JobId(1, p), 0) for p in range(5)})
    copy = table.copy()
    table[JobId(1, 0)] = _done(JobId(1, 0), 7)                   # rewritten
    del table[JobId(1, 1)]                                      # gone
    table[JobId(1, 2)] = JobState(JobId(1, 2), JobStatus.IDLE)    # back in the queue
    table[JobId(1, 9)] = _done(JobId(1, 9), 0)                   # new
    assert len(copy) == 5 and copy[JobId(1, 0)].exit_code == 0 and JobId(1, 9) not in copy
    assert sorted(copy) == [JobId(1, p) for p in range(5)] and copy.finished(1) == 5
    assert sorted(j.proc for j in table) == [0, 2, 3, 4, 9] and table[JobId(1, 0)].exit_code == 7
    assert [f for *_, f in table.outcomes(1)] == [True, False, False, False]
    disk = table._disk
    rows = lambda: disk._db.execute("SELECT count(*) FROM done").fetchone()[0]
    assert rows() > table.finished()               # the copy's rows are kept while it lives
    del copy
    table[JobId(1, 3)] = _done(JobId(1, 3), 1)
    table[JobId(1, 3)] = _done(JobId(1, 3), 2)
    assert table[JobId(1, 3)].exit_code == 2 and len(table) == 5


def test_a_copy_can_be_read_while_the_table_is_written():
    import threading
    table = JobTable({JobId(c, p): _done(JobId(c, p), 0) for c in range(3) for p in range(3000)})
    copy = table.copy()
    stop = threading.Event()

    def writer():
        k = 0
        while not stop.is_set():
            job = JobId(k % 3, k % 3000)
            table[job] = _done(job, k % 5)
            k += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(2):
            assert [s.exit_code for _, s in copy.items()] == [0] * 9000
    finally:
        stop.set()
        thread.join()


def test_a_scratch_file_that_cannot_be_written_keeps_the_states_in_memory(monkeypatch):
    import sqlite3

    from jobledger.tracking import jobtable
    table, model = JobTable(), {}
    for p in range(10):
        table[JobId(1, p)] = model[JobId(1, p)] = _done(JobId(1, p), 0)
    real_put, calls = jobtable._Finished.put, []

    def full(self, *args, **kwargs):
        calls.append(args)
        if len(calls) > 3:
            raise sqlite3.OperationalError("database or disk is full")
        return real_put(self, *args, **kwargs)

    monkeypatch.setattr(jobtable._Finished, "put", full)
    for p in range(5, 15):
        table[JobId(1, p)] = model[JobId(1, p)] = _done(JobId(1, p), p)
    del table[JobId(1, 0)], model[JobId(1, 0)]
    assert table == model and len(table) == 14 and sorted(table) == sorted(model)
    assert table.finished(1) + len(table.live(1)) == 14 and len(calls) == 4
