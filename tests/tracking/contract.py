"""One contract for every tracker: same jobs in, same final states out.

A subclass says how to build its source (``make_source``): an object that can
``write(k)`` the first k records of a workload (user-log events, journal
appends, ...) and ``tracker(checkpoint=None)`` a tracker over it.  Every
test here then runs against that tracker.
"""

from __future__ import annotations

import threading

import pytest

from jobledger.eventcore.errors import TrackerTimeout
from jobledger.eventcore.status import JobStatus
from tests.tracking.workload import Final, workload
from jobledger.tracking.conditions import all_done

N_JOBS = 120


def final_of(state) -> Final:
    held = state.status == JobStatus.HELD
    completed = state.status == JobStatus.COMPLETED
    return Final(int(state.status),
                 exit_code=state.exit_code if completed and not state.exit_by_signal else None,
                 exit_signal=state.exit_signal if completed and state.exit_by_signal else None,
                 hold_code=state.hold_code if held else None)


def note(change):
    """A change as a durable memo entry (JSON-safe)."""
    old = None if change.old is None else int(change.old)
    return [change.job.cluster, change.job.proc, old, int(change.new), change.timestamp]


def matches(load):
    return lambda states: {j: final_of(s) for j, s in states.items()} == load.finals


def uninterrupted_changes(source, load) -> list:
    """The changes (as notes) one fresh tracker reports reading ``source`` to the end."""
    everything = []
    with source.tracker() as reference:
        reference.add_callback(lambda c: everything.append(note(c)))
        reference.wait_until(matches(load), timeout=30)
    return everything


class TrackerContract:
    """Subclass and define ``make_source(tmp_path, load)``."""

    incremental_changes = True     # every status step is seen (not a poll)

    @pytest.fixture
    def load(self):
        return workload(N_JOBS, seed=7)

    @pytest.fixture
    def source(self, tmp_path, load):
        src = self.make_source(tmp_path, load)
        yield src
        src.close()

    def test_final_states_are_the_planned_ones(self, source, load):
        source.write(None)
        with source.tracker() as tracker:
            states = tracker.wait_until(matches(load), timeout=30)
        assert {j: final_of(s) for j, s in states.items()} == load.finals

    def test_reading_in_pieces_gives_the_same_states(self, source, load):
        with source.tracker() as tracker:
            total = source.size()
            for k in (total // 3, 2 * total // 3, None):
                source.write(k)
                tracker.step()
            tracker.wait_until(matches(load), timeout=30)

    def test_changes_form_one_chain_per_job(self, source, load):
        seen = {}
        with source.tracker() as tracker:
            tracker.add_callback(lambda c: seen.setdefault(c.job, []).append((c.old, c.new)))
            total = source.size()
            for k in range(0, total, max(1, total // 7)):
                source.write(k)
                tracker.step()
            source.write(None)
            tracker.wait_until(matches(load), timeout=30)
        assert set(seen) == set(load.finals)
        for job, chain in seen.items():
            assert chain[0][0] is None
            assert all(a[1] == b[0] for a, b in zip(chain, chain[1:])), (job, chain)
            assert all(old != new for old, new in chain)
            assert chain[-1][1] == load.finals[job].status

    def test_worker_follows_a_writer(self, source, load):
        source.write(0)
        with source.tracker() as tracker:
            tracker.start()
            writer = threading.Thread(target=source.write_slowly, name="writer")
            writer.start()
            try:
                tracker.wait_until(matches(load), timeout=60)
            finally:
                writer.join()

    def test_wait_until_times_out(self, source, load):
        source.write(None)
        with source.tracker() as tracker:
            with pytest.raises(TrackerTimeout):
                tracker.wait_until(all_done(cluster=10 ** 6), timeout=0.3)

    def test_changes_iterator_yields_every_change(self, source, load):
        source.write(None)
        with source.tracker() as tracker:
            changes = list(tracker.changes(timeout=0.5))
        last = {}
        for change in changes:
            last[change.job] = change.new
        assert last == {j: f.status for j, f in load.finals.items()}

    def test_worker_error_is_raised_by_stop(self, source, load):
        source.write(None)
        tracker = source.tracker()

        def boom(change):
            raise RuntimeError("callback failed")

        tracker.add_callback(boom)
        tracker.start()
        with pytest.raises(RuntimeError, match="callback failed"):
            tracker.wait_until(lambda s: False, timeout=30)
        with pytest.raises(RuntimeError, match="callback failed"):
            tracker.stop()

    def test_a_failed_step_leaves_nothing_and_is_delivered_again(self, source, load):
        source.write(None)
        delivered = []
        fail = {"on": True}

        def callback(change):
            if fail["on"] and len(delivered) == 5:
                raise RuntimeError("not now")
            delivered.append(note(change))

        with source.tracker() as tracker:
            tracker.add_callback(callback)
            with pytest.raises(RuntimeError, match="not now"):
                tracker.step()
            assert tracker.states == {}
            fail["on"] = False
            delivered.clear()
            tracker.wait_until(matches(load), timeout=30)
        if self.incremental_changes:
            everything = uninterrupted_changes(source, load)
            assert sorted(delivered, key=str) == sorted(everything, key=str)

    def test_checkpoint_resumes_without_repeating(self, source, load, tmp_path):
        ckpt = tmp_path / "tracker.ckpt"
        total = source.size()
        source.write(total // 2)
        first = source.tracker(checkpoint=ckpt)
        first.add_callback(lambda c: first.memo.append(note(c)))
        first.step()
        first.stop()
        source.write(None)
        second = source.tracker(checkpoint=ckpt)
        assert second.states == first.states
        second.add_callback(lambda c: second.memo.append(note(c)))
        second.wait_until(matches(load), timeout=30)
        second.stop()
        third = source.tracker(checkpoint=ckpt)
        memo = third.memo
        third.stop()
        finals = {}
        for c, p, _old, new, _t in memo:
            finals[(c, p)] = new
        assert finals == {(j.cluster, j.proc): f.status for j, f in load.finals.items()}
        if self.incremental_changes:        # exactly the changes one uninterrupted read sees
            everything = uninterrupted_changes(source, load)
            assert sorted(memo, key=str) == sorted(everything, key=str)

    def test_bad_checkpoint_means_full_replay(self, source, load, tmp_path):
        ckpt = tmp_path / "tracker.ckpt"
        source.write(None)
        ckpt.write_bytes(b"this is not a checkpoint" * 100)
        with source.tracker(checkpoint=ckpt) as tracker:
            assert tracker.replays == 1
            tracker.wait_until(matches(load), timeout=30)
        assert (tmp_path / "tracker.ckpt.bad").exists()
