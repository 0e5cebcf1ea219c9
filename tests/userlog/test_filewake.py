"""JobEventLog at a log's end wakes when the writer appends (inotify), as HTCondor's
reader does, and sleeps its tick where there is no inotify."""

from __future__ import annotations

import os
import threading

import pytest

from jobledger.eventcore.codecs.userlog import render
from jobledger.eventcore.events import JobAbortedEvent
from jobledger.tracking import filewake, jobeventlog
from jobledger.tracking.jobeventlog import JobEventLog

pytestmark = pytest.mark.skipif(filewake._LIBC is None or not hasattr(filewake._LIBC, "inotify_init1"),
                                reason="no inotify on this system")


def ev(proc):
    return render(JobAbortedEvent(cluster=7, proc=proc, timestamp=1709633472 + proc, reason="rm"))


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def spy_waits(monkeypatch, armed: threading.Event, woken: list):
    """Note each wait's outcome; ``armed`` is set once a wait's watch is in place."""
    real = filewake.wait_for_change

    def waiting(path, pause, changed):
        def look():
            seen = changed()
            armed.set()
            return seen
        woken.append(real(path, pause, look))
        return woken[-1]
    monkeypatch.setattr(jobeventlog, "wait_for_change", waiting)


def test_an_append_wakes_a_waiting_reader(tmp_path, monkeypatch):
    log = tmp_path / "job.log"
    log.write_text(ev(0))
    monkeypatch.setattr(jobeventlog, "_POLL", 120.0)    # only a notification ends a wait early
    armed, woken = threading.Event(), []
    spy_waits(monkeypatch, armed, woken)
    with JobEventLog(str(log)) as jel:
        assert [e.proc for e in jel.events(0)] == [0]
        writer = threading.Thread(target=lambda: armed.wait(60) and append(log, ev(1)))
        writer.start()
        got = next(iter(jel.events(stop_after=120)))
        writer.join()
    assert got.proc == 1
    assert woken and woken[-1] is True          # the wait ended for the append, not its tick


def test_a_change_before_the_watch_is_not_missed(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("")
    assert filewake.wait_for_change(str(log), 120.0, lambda: True) is True


def test_no_inotify_falls_back_to_sleeping(tmp_path, monkeypatch):
    log = tmp_path / "job.log"
    log.write_text(ev(0))

    class Refusing:          # the user's inotify instances used up
        def inotify_init1(self, flags):
            return -1
    monkeypatch.setattr(filewake, "_LIBC", Refusing())
    assert filewake.wait_for_change(str(log), 0.01, lambda: True) is False
    jel = JobEventLog(str(log))
    assert [e.proc for e in jel.events(0)] == [0]
    writer = threading.Timer(0.05, append, (log, ev(1)))
    writer.start()
    assert next(iter(jel.events(stop_after=60))).proc == 1
    writer.join()
    jel.close()


def test_waits_leave_no_descriptor_behind(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(200):
        filewake.wait_for_change(str(log), 0.001, lambda: False)
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_vanished_path_sleeps(tmp_path):
    assert filewake.wait_for_change(str(tmp_path / "gone.log"), 0.001, lambda: True) is False
