"""Trackers SIGKILLed at random moments of a 2,000-job run resume exactly.

A writer process appends the run (user-log events, or journal records); a
tracker process follows it with a checkpoint and records every status change
it delivers in its durable memo.  The tracker is killed with SIGKILL at
random moments and restarted until it finishes by itself.  Then its
checkpoint must hold the planned final state of every job, and its memo
exactly the changes one uninterrupted tracker delivers: none lost, none twice.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.tracking.contract import final_of, note
from tests.tracking.workload import workload
from jobledger.tracking.journal import JournalTracker
from jobledger.tracking.userlogs import UserLogTracker

ROOT = Path(__file__).resolve().parents[2]
N_JOBS = 2000
SEED = 11
MAX_KILLS = 12


def child(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.tracking.crash_child", *map(str, args)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def memo_size(ckpt: Path) -> int:
    if not ckpt.exists():
        return 0
    db = sqlite3.connect(f"{ckpt.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return db.execute("SELECT count(*) FROM memo").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def run_with_kills(track_args, writer: subprocess.Popen, rng: random.Random) -> list[int]:
    """Start the tracker, kill it at random moments, until it exits by itself.

    Returns the checkpoint's memo size after each kill (progress at the kill).
    """
    progress = []
    while True:
        tracker = child(*track_args)
        if len(progress) < MAX_KILLS:
            tracker.stdout.readline()            # "ready": imports done, checkpoint opened
            try:
                tracker.wait(timeout=rng.uniform(0.02, 0.8))
            except subprocess.TimeoutExpired:
                tracker.send_signal(signal.SIGKILL)
                tracker.wait()
                progress.append(memo_size(Path(track_args[2])))
                continue
        out, err = tracker.communicate(timeout=180)
        assert tracker.returncode == 0, err.decode()
        writer.wait(timeout=60)
        assert writer.returncode == 0, writer.stderr.read().decode()
        return progress


def check(resumed, reference_tracker, load) -> None:
    assert {j: final_of(s) for j, s in resumed.states.items()} == load.finals
    everything = []
    reference_tracker.add_callback(lambda c: everything.append(note(c)))
    reference_tracker.step()
    while reference_tracker.step():
        pass
    memo = [list(m) for m in resumed.memo]
    duplicates = [m for m, n in Counter(map(tuple, memo)).items() if n > 1]
    assert not duplicates, f"changes delivered twice: {duplicates[:5]}"
    assert Counter(map(tuple, memo)) == Counter(map(tuple, everything))


@pytest.mark.slow
def test_userlog_tracker_killed_at_random_resumes_exactly(tmp_path):
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    logs, ckpt = tmp_path / "logs", tmp_path / "tracker.ckpt"
    logs.mkdir()
    load = workload(N_JOBS, SEED)
    writer = child("write-logs", logs, N_JOBS, SEED)
    progress = run_with_kills(("track-logs", logs, ckpt, N_JOBS, SEED), writer, rng)
    assert any(p > 0 for p in progress), f"no kill landed mid-run: {progress}"
    paths = [logs / load.log_name(c) for c in load.clusters()]
    with UserLogTracker(paths, checkpoint=ckpt) as resumed, UserLogTracker(paths) as reference:
        check(resumed, reference, load)
    print("memo size at each kill:", progress)


@pytest.mark.slow
def test_journal_tracker_killed_at_random_resumes_exactly(tmp_path):
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    pool, ckpt = tmp_path / "pool", tmp_path / "tracker.ckpt"
    load = workload(N_JOBS, SEED)
    writer = child("write-journal", pool, N_JOBS, SEED)
    progress = run_with_kills(("track-journal", pool, ckpt, N_JOBS, SEED), writer, rng)
    assert any(p > 0 for p in progress), f"no kill landed mid-run: {progress}"
    journal = pool / "journal.sqlite"
    with JournalTracker(journal, checkpoint=ckpt) as resumed, JournalTracker(journal) as reference:
        check(resumed, reference, load)
    print("memo size at each kill:", progress)
