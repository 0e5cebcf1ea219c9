"""JobEventLog at a log's end wakes when the writer appends (inotify), as HTCondor's
reader does, and sleeps its tick where there is no inotify."""

from __future__ import annotations

import os
import threading

import pytest

from jobledger.eventcore.codecs.userlog import render
from jobledger.eventcore.events import JobAbortedEvent
from jobledger.tracking import filewake, jobeventlog
from jobledger.tracking.filewake import FileWatch
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
    real = filewake.FileWatch.wait

    def waiting(self, pause, changed):
        def look():
            seen = changed()
            armed.set()
            return seen
        woken.append(real(self, pause, look))
        return woken[-1]
    monkeypatch.setattr(filewake.FileWatch, "wait", waiting)


def inotify_descriptors() -> int:
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify"
        except OSError:
            pass
    return count


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


def test_a_reader_keeps_one_watch_across_its_waits(tmp_path, monkeypatch):
    """Closing an inotify descriptor waits for the kernel (10-20 ms): a reader keeps its
    own between waits, as HTCondor's keeps its trigger's, and lets it go at close()."""
    log = tmp_path / "job.log"
    log.write_text(ev(0))
    before = inotify_descriptors()
    jel = JobEventLog(str(log))
    assert [e.proc for e in jel.events(0)] == [0]
    for proc in range(1, 4):
        writer = threading.Timer(0.01, append, (log, ev(proc)))
        writer.start()
        assert next(iter(jel.events(stop_after=60))).proc == proc
        writer.join()
        assert inotify_descriptors() == before + 1
    jel.close()
    assert inotify_descriptors() == before


def test_events_read_while_busy_do_not_end_the_next_wait(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("")
    watch = FileWatch(str(log))
    assert watch.wait(0.001, lambda: False) is False     # the watch is made and kept
    append(log, ev(0))                                    # notified while nobody waits
    assert watch.wait(0.01, lambda: False) is False       # read off: no change since the look
    watch.close()


def test_readers_keep_at_most_kept_watches(tmp_path, monkeypatch):
    monkeypatch.setattr(filewake, "KEPT_WATCHES", 1)
    log = tmp_path / "job.log"
    log.write_text("")
    before = inotify_descriptors()
    first, second = FileWatch(str(log)), FileWatch(str(log))
    first.wait(0.001, lambda: False)
    second.wait(0.001, lambda: False)                     # one wait, one descriptor of its own
    assert inotify_descriptors() == before + 1
    first.close()
    second.wait(0.001, lambda: False)                     # now kept
    assert inotify_descriptors() == before + 1
    second.close()
    assert inotify_descriptors() == before


def test_readers_left_to_the_collector_give_their_watches_back(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(ev(0))
    before = inotify_descriptors()
    for _ in range(2 * filewake.KEPT_WATCHES):
        jel = JobEventLog(str(log))
        assert [e.proc for e in jel.events(stop_after=0.001)] == [0]
        del jel
    assert inotify_descriptors() == before
    assert filewake._kept == 0
