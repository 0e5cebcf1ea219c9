"""Every tracker against a real personal pool: same jobs, same final states.

Jobs with different fates run in a pool of real daemons (exit 0, exit 3,
killed by a signal, held by the user, removed).  The event tracker finds their
logs with one schedd query, the poll tracker asks the schedd, the journal
tracker reads the pool's journal, the combined one does logs plus checks.
"""

from __future__ import annotations

import pytest

import jobledger as htcondor
from jobledger.eventcore.status import JobStatus
from jobledger.classad import ClassAd
from tests.pool.conftest import stop_and_check
from jobledger.tracking.combined import CombinedTracker
from jobledger.tracking.conditions import all_done
from jobledger.tracking.journal import JournalTracker
from jobledger.tracking.poll import PollTracker
from jobledger.tracking.userlogs import UserLogTracker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    from jobledger.daemons.client.personal import PersonalPool
    running = PersonalPool(local_dir=tmp_path_factory.mktemp("pool"))
    running.start()
    yield running
    stop_and_check(running)


def submit(schedd, tmp_path, name, command, count=1, **extra):
    ad = ClassAd({"Cmd": "/bin/sh", "Arguments": f"-c '{command}'", "Iwd": str(tmp_path),
                  "UserLog": f"{name}.log", **extra})
    return schedd.submit(ad, count)


def outcome(state):
    status = JobStatus(state.status)
    return (status,
            state.exit_code if status == JobStatus.COMPLETED and not state.exit_by_signal else None,
            state.exit_signal if status == JobStatus.COMPLETED and state.exit_by_signal else None,
            state.hold_code if status == JobStatus.HELD else None)


def test_all_trackers_agree_on_a_real_pool(pool, tmp_path):
    schedd = pool.schedd
    ok = submit(schedd, tmp_path, "ok", "exit 0", 3)
    bad = submit(schedd, tmp_path, "bad", "exit 3", 2)
    killed = submit(schedd, tmp_path, "killed", "kill -9 $$")
    slow = submit(schedd, tmp_path, "slow", "sleep 60", 2)
    onhold = submit(schedd, tmp_path, "onhold", "exit 0", JobStatus=5, HoldReasonCode=15,
                    HoldReason="submitted on hold at user's request")
    clusters = [ok, bad, killed, slow, onhold]
    constraint = " || ".join(f"ClusterId == {c}" for c in clusters)

    trackers = {
        "userlog": UserLogTracker(schedd=schedd, constraint=constraint, interval=0.1),
        "poll": PollTracker(schedd, constraint, min_interval=0.2),
        "journal": JournalTracker(pool.local_dir / "journal.sqlite", interval=0.1),
        "combined": CombinedTracker(schedd=schedd, constraint=constraint, discover=True,
                                    check_interval=1.0, confirm_after=5.0, interval=0.1),
    }
    for tracker in trackers.values():
        tracker.start()
    try:
        journal = trackers["journal"]
        journal.wait_until(lambda s: all(s.get(j) is not None and s[j].status == JobStatus.RUNNING
                                         for j in s if j.cluster == slow)
                           and sum(1 for j in s if j.cluster == slow) == 2, timeout=60)
        held, removed = f"{slow}.0", f"{slow}.1"
        schedd.act(htcondor.JobAction.Hold, held, "tracker test")
        schedd.act(htcondor.JobAction.Remove, removed)

        def settled(states):
            mine = {j: s for j, s in states.items() if j.cluster in clusters}
            return (len(mine) == 9 and all_done(expected=0)({j: s for j, s in mine.items()
                                                            if str(j) != held and j.cluster != onhold})
                    and mine.get(htcondor_id(held)) is not None
                    and mine[htcondor_id(held)].status == JobStatus.HELD)

        finals = {}
        for name, tracker in trackers.items():
            states = tracker.wait_until(settled, timeout=60)
            finals[name] = {j: outcome(s) for j, s in states.items() if j.cluster in clusters}
    finally:
        errors = []
        for tracker in trackers.values():
            try:
                tracker.stop()
            except Exception as exc:           # report every tracker's failure, not the first
                errors.append(exc)
        assert not errors, errors
    expected = {}
    for p in range(3):
        expected[(ok, p)] = (JobStatus.COMPLETED, 0, None, None)
    for p in range(2):
        expected[(bad, p)] = (JobStatus.COMPLETED, 3, None, None)
    expected[(killed, 0)] = (JobStatus.COMPLETED, None, 9, None)
    expected[(slow, 0)] = (JobStatus.HELD, None, None, 1)
    expected[(slow, 1)] = (JobStatus.REMOVED, None, None, None)
    expected[(onhold, 0)] = (JobStatus.HELD, None, None, 15)      # its log says only "submitted"
    for name, got in finals.items():
        assert {(j.cluster, j.proc): o for j, o in got.items()} == expected, name
    assert trackers["combined"].discrepancies == []


def htcondor_id(text):
    from jobledger.eventcore.ids import JobId
    return JobId.parse(text)


def test_watch_command_against_the_pool(pool, tmp_path):
    import json

    from click.testing import CliRunner

    from jobledger.cli import main
    cluster = submit(pool.schedd, tmp_path, "cli", "exit 2", 2)
    result = CliRunner().invoke(main, ["watch", str(cluster), "--exit", "all-done", "--json",
                                       "--timeout", "60"])
    assert result.exit_code == 0, result.output
    got = [(d["cluster"], d["proc"], d["JobStatus"], d["ExitCode"])
           for d in map(json.loads, result.stdout.splitlines())]
    assert got == [(cluster, 0, 4, 2), (cluster, 1, 4, 2)]


def test_watch_command_follows_the_journal_for_jobs_without_logs(pool, tmp_path):
    import json

    from click.testing import CliRunner

    from jobledger.cli import main
    ad = ClassAd({"Cmd": "/bin/sh", "Arguments": "-c 'exit 4'", "Iwd": str(tmp_path)})
    cluster = pool.schedd.submit(ad, 1)
    result = CliRunner().invoke(main, ["watch", str(cluster), "--exit", "all-done", "--json",
                                       "--timeout", "60", "--poll-interval", "3600"])
    assert result.exit_code == 0, result.output
    assert [(d["cluster"], d["JobStatus"], d["ExitCode"])
            for d in map(json.loads, result.stdout.splitlines())] == [(cluster, 4, 4)]
