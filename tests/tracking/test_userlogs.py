"""The event-based tracker beyond the contract: watches, discovery, odd files."""

from __future__ import annotations

import os

from jobledger.eventcore.ids import JobId
from tests.tracking.workload import T0, Step, event_text
from jobledger.tracking.userlogs import UserLogTracker, logs_of_jobs


def text(number, cluster, proc, t, **attrs):
    return event_text(Step(t, JobId(cluster, proc), number, attrs)).encode()


def test_one_watch_per_directory_and_notifications_wake_the_worker(tmp_path):
    logs = [tmp_path / f"c{i}.log" for i in range(12)]
    for log in logs:
        log.write_bytes(b"")
    tracker = UserLogTracker(logs, interval=3600, sweep=3600)   # only a notification can wake it
    assert tracker._watcher.directories == 1
    tracker.start()
    try:
        with open(logs[5], "ab") as f:
            f.write(text(0, 5, 0, T0))
        states = tracker.wait_until(lambda s: JobId(5, 0) in s, timeout=20)
        assert states[JobId(5, 0)].status == 1
    finally:
        tracker.stop()


def test_incomplete_event_waits_for_its_terminator(tmp_path):
    log = tmp_path / "a.log"
    whole = text(0, 1, 0, T0) + text(1, 1, 0, T0 + 5, SlotName="slot1@x")
    log.write_bytes(whole[:-4])
    with UserLogTracker([log]) as tracker:
        tracker.step()
        assert tracker.states[JobId(1, 0)].status == 1
        with open(log, "ab") as f:
            f.write(whole[-4:])
        tracker.step()
        assert tracker.states[JobId(1, 0)].status == 2


def test_a_truncated_log_is_read_again(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(text(0, 1, 0, T0) + text(1, 1, 0, T0 + 1))
    with UserLogTracker([log]) as tracker:
        tracker.step()
        log.write_bytes(text(0, 2, 0, T0 + 2))          # rewritten, shorter
        tracker.step()
        assert tracker.states[JobId(2, 0)].status == 1
        assert tracker.anomalies["log_replaced"] == 1


def test_checkpoint_of_replaced_logs_means_full_replay(tmp_path):
    log = tmp_path / "a.log"
    ckpt = tmp_path / "ckpt"
    log.write_bytes(text(0, 1, 0, T0) + text(1, 1, 0, T0 + 1))
    with UserLogTracker([log], checkpoint=ckpt) as tracker:
        tracker.step()
    os.unlink(log)
    log.write_bytes(text(0, 7, 0, T0))
    with UserLogTracker([log], checkpoint=ckpt) as tracker:
        assert tracker.replays == 1
        tracker.step()
        assert set(tracker.states) == {JobId(7, 0)}


def test_missing_log_is_followed_once_it_appears(tmp_path):
    log = tmp_path / "later.log"
    with UserLogTracker([log]) as tracker:
        assert tracker.step() == []
        log.write_bytes(text(0, 3, 1, T0))
        assert [c.job for c in tracker.step()] == [JobId(3, 1)]


class ListSchedd:
    def __init__(self, ads):
        self.ads = ads

    def query(self, constraint="true", projection=(), callback=None, limit=-1, opts=0):
        return self.ads[:2]

    def history(self, constraint=None, projection=(), match=-1, since=None):
        return self.ads[2:]


def test_logs_found_from_userlog_and_iwd(tmp_path):
    ads = [{"ClusterId": 1, "ProcId": 0, "UserLog": "job.log", "Iwd": str(tmp_path / "a")},
           {"ClusterId": 1, "ProcId": 1, "UserLog": "job.log", "Iwd": str(tmp_path / "a")},
           {"ClusterId": 2, "ProcId": 0, "UserLog": str(tmp_path / "b.log"), "Iwd": "/elsewhere"},
           {"ClusterId": 3, "ProcId": 0}]
    assert logs_of_jobs(ListSchedd(ads)) == [str(tmp_path / "a" / "job.log")]
    assert logs_of_jobs(ListSchedd(ads), "ClusterId > 0") == [str(tmp_path / "a" / "job.log"),
                                                               str(tmp_path / "b.log")]
    with UserLogTracker(schedd=ListSchedd(ads), constraint="ClusterId > 0") as tracker:
        assert len(tracker.logs) == 2


def test_events_without_a_job_are_skipped(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(text(35, 4, -1, T0) + text(0, 4, 0, T0))
    with UserLogTracker([log]) as tracker:
        tracker.step()
        assert set(tracker.states) == {JobId(4, 0)}
