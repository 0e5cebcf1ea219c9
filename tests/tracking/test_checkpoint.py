"""Checkpoints: atomic saves, and anything unusable means a full replay."""

from __future__ import annotations

import sqlite3

from jobledger.eventcore.ids import JobId
from jobledger.eventcore.projections.jobstate import JobState
from jobledger.eventcore.status import JobStatus
from jobledger.tracking.checkpoint import Checkpoint


def state(c, p, status=JobStatus.IDLE):
    return JobState(JobId(c, p), status)


def test_round_trip(tmp_path):
    ckpt = Checkpoint(tmp_path / "c", "kind")
    assert ckpt.open().states == {}
    ckpt.save([state(1, 0), state(1, 1, JobStatus.HELD)], {"a": [3, 1, 2]}, ["m1"], {"duplicate": 2})
    ckpt.save([state(1, 0, JobStatus.RUNNING)], {"b": [1, 1, 1]}, ["m1", "m2"], {})
    ckpt.close()
    saved = Checkpoint(tmp_path / "c", "kind").open()
    assert saved.states == {JobId(1, 0): state(1, 0, JobStatus.RUNNING),
                            JobId(1, 1): state(1, 1, JobStatus.HELD)}
    assert saved.positions == {"a": [3, 1, 2], "b": [1, 1, 1]}
    assert saved.memo == ["m1", "m2"]
    assert saved.counters == {"duplicate": 2}


def test_other_kind_is_set_aside(tmp_path):
    first = Checkpoint(tmp_path / "c", "journal:/a")
    first.open()
    first.save([state(1, 0)], {}, [], {})
    first.close()
    other = Checkpoint(tmp_path / "c", "journal:/b")
    assert other.open().states == {}
    assert "journal:/a" in other.discarded
    assert (tmp_path / "c.bad").exists()
    other.close()


def test_unreadable_state_is_set_aside(tmp_path):
    ckpt = Checkpoint(tmp_path / "c", "k")
    ckpt.open()
    ckpt.save([state(1, 0)], {}, [], {})
    ckpt.close()
    db = sqlite3.connect(tmp_path / "c")
    db.execute("UPDATE jobs SET state = ?", ('{"job": [1, 0], "status": 99}',))
    db.commit()
    db.close()
    again = Checkpoint(tmp_path / "c", "k")
    assert again.open().states == {}
    assert again.discarded.startswith("ValueError")
    again.close()


def test_save_is_all_or_nothing(tmp_path):
    ckpt = Checkpoint(tmp_path / "c", "k")
    ckpt.open()
    ckpt.save([state(1, 0)], {"a": [1, 0, 0]}, [], {})
    try:
        ckpt.save([state(1, 0, JobStatus.RUNNING)], {"a": [2, 0, 0]}, [object()], {})
    except TypeError:
        pass
    ckpt.close()
    saved = Checkpoint(tmp_path / "c", "k").open()
    assert saved.states[JobId(1, 0)].status == JobStatus.IDLE
    assert saved.positions == {"a": [1, 0, 0]}
