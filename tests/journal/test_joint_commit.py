"""A run's end and the next run's start in one commit (daemons.joint_commit), with a
real store and the two threads the schedd has (the reporter and the handover's worker)."""

from __future__ import annotations

import threading

import pytest

from jobledger.daemons.joint_commit import JointCommit
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.errors import InvalidTransition, StaleDecision
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.status import JobStatus

from tests.journal.helpers import all_ads, event, submit

DONE, NEXT = JobId(1, 0), JobId(1, 1)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path, durability="group", constraint_filter=all_ads)
    s.append(submit(1, 2))
    s.append([event(DONE, 1)])          # 1.0 runs; 1.1 is idle, next on the claim
    commits: list[str] = []
    s._conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    s.commits = commits
    yield s
    s._conn.set_trace_callback(None)
    s.close()


def worker(joint: JointCommit, records: list):
    """The handover's worker in a thread; its result (position or exception) in ``out``."""
    out: list = []

    def run():
        try:
            out.append(joint.append(records))
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            out.append(exc)
    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_the_end_and_the_next_start_share_one_commit(store):
    joint = JointCommit(store)
    thread, out = worker(joint, [event(NEXT, 1)])
    assert joint.take()                                   # waits for the worker's offer
    position = joint.commit([event(DONE, 5)])
    joint.release()
    thread.join()
    assert store.commits == ["COMMIT"]
    assert out == [position + 1]      # the worker's records follow the reporter's
    assert store.job_status(DONE) is JobStatus.COMPLETED
    assert store.job_status(NEXT) is JobStatus.RUNNING


def test_a_refused_end_leaves_the_next_start_committed(store):
    joint = JointCommit(store)
    thread, out = worker(joint, [event(NEXT, 1)])
    assert joint.take()
    with pytest.raises(InvalidTransition):
        joint.commit([event(DONE, 13)])                   # release a running job: refused
    joint.release()
    thread.join()
    assert isinstance(out[0], int) and store.job_status(NEXT) is JobStatus.RUNNING
    assert store.job_status(DONE) is JobStatus.RUNNING


def test_a_stale_report_still_commits_the_taken_records(store):
    joint = JointCommit(store)
    thread, out = worker(joint, [event(NEXT, 1)])
    assert joint.take()
    joint.release()                                       # the reporter had nothing to commit
    thread.join()
    assert isinstance(out[0], int) and store.job_status(NEXT) is JobStatus.RUNNING


def test_a_refused_next_start_is_raised_to_the_worker(store):
    joint = JointCommit(store)
    thread, out = worker(joint, [event(NEXT, 5)])         # terminate an idle job: refused
    assert joint.take()
    joint.commit([event(DONE, 5)])
    joint.release()
    thread.join()
    assert isinstance(out[0], InvalidTransition)
    assert store.job_status(DONE) is JobStatus.COMPLETED and store.job_status(NEXT) is JobStatus.IDLE


def test_no_next_run_lets_the_end_go_alone(store):
    joint = JointCommit(store)
    joint.withdraw()
    assert not joint.take()
    joint.commit([event(DONE, 5)])
    joint.release()
    assert store.commits == ["COMMIT"] and store.job_status(DONE) is JobStatus.COMPLETED


def test_an_offer_nobody_takes_is_appended_alone(store):
    joint = JointCommit(store, wait=0.0)                  # the reporter never comes
    assert isinstance(joint.append([event(NEXT, 1)]), int)
    assert store.job_status(NEXT) is JobStatus.RUNNING
    assert not joint.take(timeout=0)                      # a late reporter goes alone


def test_several_batches_and_the_next_start_share_one_commit(store):
    """``commit_each``: the reporter's batches (a chain of runs on the claim) and then the
    worker's records, through ``gate``, in one commit; each batch on its own."""
    joint = JointCommit(store)
    thread, out = worker(joint, [event(NEXT, 1)])
    assert joint.take()
    gated = []
    results = joint.commit_each([[event(DONE, 5)], [event(DONE, 5)]],
                                gate=lambda records: gated.append(records) or records)
    joint.release()
    thread.join()
    assert store.commits == ["COMMIT"] and len(gated) == 1
    assert isinstance(results[1], InvalidTransition)        # (ended already: refused alone)
    assert out == [results[0] + 1]
    assert store.job_status(NEXT) is JobStatus.RUNNING


def test_a_gate_that_refuses_refuses_the_next_start_alone(store):
    joint = JointCommit(store)
    thread, out = worker(joint, [event(NEXT, 1)])
    assert joint.take()

    def closed(records):
        def decide(job_ad):
            raise StaleDecision(NEXT, "idle", "the chain before it was refused")
        return decide
    results = joint.commit_each([[event(DONE, 5)]], gate=closed)
    joint.release()
    thread.join()
    assert isinstance(out[0], InvalidTransition) and isinstance(results[0], int)
    assert store.job_status(NEXT) is JobStatus.IDLE


def test_one_thread_offers_takes_and_learns_the_result(store):
    """``offer``: the reporter's own thread found the next run; ``finish`` tells ``then``."""
    joint, told = JointCommit(store), []
    joint.offer([event(NEXT, 1)], told.append)
    assert joint.take()
    position = joint.commit([event(DONE, 5)])
    joint.release()
    joint.finish()
    joint.finish()                                        # (told once)
    assert store.commits == ["COMMIT"] and told == [position + 1]
    assert store.job_status(NEXT) is JobStatus.RUNNING


def test_an_offer_the_thread_never_took_is_committed_alone_on_finish(store):
    joint, told = JointCommit(store), []
    joint.offer([event(NEXT, 5)], told.append)            # terminate an idle job: refused
    joint.finish()                                        # (the report failed before its take)
    assert len(told) == 1 and isinstance(told[0], InvalidTransition)
    assert store.job_status(NEXT) is JobStatus.IDLE


def test_no_offer_finishes_with_nothing_to_tell(store):
    joint = JointCommit(store)
    joint.withdraw()
    joint.finish()
    with pytest.raises(RuntimeError):
        joint.offer([event(NEXT, 1)], print)              # (closed: nothing more is taken)
