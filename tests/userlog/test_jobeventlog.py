"""JobEventLog's API: htcondor2's meaning, and where it is safer."""

from __future__ import annotations

import os
import pickle
import threading
import time

import pytest

from jobledger.eventcore.codecs.userlog import render
from jobledger.eventcore.errors import HTCondorException, UserLogFileChanged
from jobledger.eventcore.events import JobAbortedEvent, JobHeldEvent
from jobledger.tracking.jobeventlog import JobEventLog
from jobledger.tracking.localzone import LOCAL_TZINFO


def ev(proc):
    return render(JobAbortedEvent(cluster=7, proc=proc, timestamp=1709633472 + proc, reason="rm"))


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "job.log"
    path.write_text(ev(0) + ev(1))
    return path


def procs(events):
    return [e.proc for e in events]


def test_constructor_errors(tmp_path):
    with pytest.raises(TypeError):
        JobEventLog(tmp_path / "x.log")
    with pytest.raises(ValueError):
        JobEventLog("")
    with pytest.raises(HTCondorException, match="Could not initialize JobEventLog: No such file"):
        JobEventLog(str(tmp_path / "missing.log"))


def test_poll_a_growing_file(log):
    jel = JobEventLog(str(log))
    assert procs(jel.events(stop_after=0)) == [0, 1]
    assert procs(jel.events(stop_after=0)) == []        # StopIteration leaves it usable
    append(log, ev(2))
    assert procs(jel.events(stop_after=0)) == [2]
    jel.close()
    assert list(jel.events(0)) == [] and list(jel) == []


def test_partial_last_event_is_held_back_until_complete(log):
    text = ev(2)
    jel = JobEventLog(str(log))
    append(log, text[:25])
    assert procs(jel.events(0)) == [0, 1]
    append(log, text[25:-2])
    assert procs(jel.events(0)) == []
    assert jel.offset == len(ev(0) + ev(1))
    append(log, text[-2:])
    assert procs(jel.events(0)) == [2]
    jel.close()


def test_stop_after_waits_for_new_events(log):
    jel = JobEventLog(str(log))
    list(jel.events(0))
    timer = threading.Timer(0.2, append, (log, ev(5)))
    timer.start()
    got = []
    for event in jel.events(stop_after=3):   # blocks until the event arrives
        got.append(event.proc)
        break
    timer.join()
    assert got == [5]
    start = time.monotonic()
    assert procs(jel.events(stop_after=0.3)) == []
    assert 0.25 <= time.monotonic() - start < 2.0
    jel.close()


def test_blocking_readers_in_threads_do_not_serialise(tmp_path):
    """htcondor2 holds a process-wide lock while waiting; two waits would add up."""
    paths = [tmp_path / f"{i}.log" for i in range(2)]
    for p in paths:
        p.write_text("")
    results = []

    def wait(p):
        with JobEventLog(str(p)) as jel:
            results.append(list(jel.events(stop_after=0.5)))

    threads = [threading.Thread(target=wait, args=(p,)) for p in paths]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - start < 0.95 and results == [[], []]


def test_context_manager_closes(log):
    with JobEventLog(str(log)) as jel:
        first = next(jel)
    assert first.proc == 0
    assert list(jel.events(0)) == []


def test_pickle_resumes_where_it_left_off(log):
    jel = JobEventLog(str(log)).events(0)
    assert next(jel).proc == 0
    again = pickle.loads(pickle.dumps(jel))
    append(log, ev(2))
    assert procs(again.events(0)) == [1, 2]
    assert procs(jel.events(0)) == [1, 2]
    jel.close()
    closed = pickle.loads(pickle.dumps(jel))          # htcondor2 crashes here
    assert list(closed.events(0)) == []
    again.close()


def test_resuming_a_pickle_on_a_replaced_file_is_reported(log, tmp_path):
    jel = JobEventLog(str(log)).events(0)
    next(jel)
    saved = pickle.dumps(jel)
    jel.close()
    os.replace(log, tmp_path / "moved.log")
    log.write_text(ev(9))
    with pytest.raises(UserLogFileChanged, match="replaced"):
        next(pickle.loads(saved).events(0))


def test_truncated_file_is_reported_not_read_as_empty(log):
    jel = JobEventLog(str(log))
    assert procs(jel.events(0)) == [0, 1]
    log.write_text("")
    with pytest.raises(UserLogFileChanged, match="truncated") as info:
        list(jel.events(0))
    assert info.value.path == str(log)
    jel.close()


def test_replaced_file_is_reported_after_its_last_event(log, tmp_path):
    jel = JobEventLog(str(log))
    assert procs(jel.events(0)) == [0, 1]
    append(log, ev(2))
    os.rename(log, tmp_path / "job.log.old")
    log.write_text(ev(3))
    got = []
    with pytest.raises(UserLogFileChanged, match="another file"):
        for e in jel.events(0):
            got.append(e.proc)
    assert got == [2]
    jel.close()


def test_event_extras_and_mapping(log):
    append(log, render(JobHeldEvent(cluster=7, proc=3, timestamp=1709633480, hold_reason="why",
                                    hold_reason_code=1), tz=LOCAL_TZINFO))
    with JobEventLog(str(log)) as jel:
        events = list(jel.events(0))
    held = events[-1]
    assert held.raw_text.startswith("012 (007.003.000)") and held.raw_text.endswith("...\n")
    assert held.offset == len(ev(0) + ev(1)) and held.end_offset == os.path.getsize(log)
    assert held["holdreason"] == "why" and "HOLDREASON" in held and held.get("nope", 5) == 5
    assert repr(held) == "JobEvent(type=12, cluster=7, proc=3, timestamp=1709633480)"
    assert held.event == JobHeldEvent(cluster=7, proc=3, timestamp=1709633480, hold_reason="why",
                                      hold_reason_code=1)
    assert str(held) == held.raw_text[:-4]


def test_resume_at_a_saved_offset(log, tmp_path):
    jel = JobEventLog(str(log)).events(0)
    next(jel)
    offset, ident = jel.offset, jel.ident
    jel.close()
    again = JobEventLog.resume(str(log), offset, ident=ident)
    assert procs(again.events(0)) == [1]
    again.close()
    os.replace(log, tmp_path / "moved.log")
    log.write_text(ev(4))
    with pytest.raises(UserLogFileChanged):
        next(JobEventLog.resume(str(log), offset, ident=ident).events(0))


@pytest.mark.parametrize("name", ["interleaved_multijob", "json_format", "xml_format",
                                  "terminated_variants", "garbage_between_events"])
@pytest.mark.parametrize("chunk", [7, 64, 300])
def test_chunk_boundaries_change_nothing(oracle_dir, name, chunk):
    """Reads go in chunks; records cut by a chunk end are re-read whole."""
    import warnings
    path = str(oracle_dir / "userlog" / f"{name}.log")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with JobEventLog(path, year=2026) as whole:
            want = [(e.offset, e.end_offset, dict(e.items()).keys()) for e in whole.events(0)]
        small = JobEventLog(path, year=2026)
        small._chunk = chunk
        got = [(e.offset, e.end_offset, dict(e.items()).keys()) for e in small.events(0)]
        small.close()
    assert got == want and want
