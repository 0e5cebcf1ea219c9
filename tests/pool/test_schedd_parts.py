"""The schedd's parts on their own, with a real store and no schedd daemon: Runs' claims
being started (one per job, always given back), Policy and Actions given only the store,
Runs and a callback asking for a negotiation cycle."""

from __future__ import annotations

import logging
import threading

import pytest

from jobledger.daemons.schedd.act import Actions
from jobledger.daemons.schedd.policy import Policy
from jobledger.daemons.schedd.runs import Runs
from jobledger.daemons.storage.store import Store
from jobledger.eventcore.enums import JobAction
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import ClusterAd, ProcAd, SetAttributes
from jobledger.eventcore.status import JobStatus
from tests.journal.helpers import event

JOB = JobId(7, 0)


LOG = logging.getLogger("test")


def runs(store=None) -> Runs:
    return Runs(store=store, log=LOG, startd_call=None)


@pytest.fixture
def store(tmp_path):
    """A journal with job 1.0 held (by the policy, code 3) and 1.1 idle."""
    opened = Store(tmp_path, durability="normal")
    cluster = {"Owner": '"alice"', "Cmd": '"/bin/true"', "QDate": "1700000000",
               "PeriodicRelease": "JobStatus == 5", "PeriodicRemove": "ProcId == 1 && JobStatus == 1"}
    opened.append([ClusterAd(1, cluster),
                   ProcAd(JobId(1, 0), {"JobStatus": "5", "HoldReasonCode": "3"}), event(JobId(1, 0), 0),
                   ProcAd(JobId(1, 1), {"JobStatus": "1"}), event(JobId(1, 1), 0)])
    yield opened
    opened.close()


def test_a_job_has_one_claim_being_started_at_a_time():
    parts = runs()
    barrier = threading.Barrier(8)
    claims = []

    def reserve():
        barrier.wait()
        claims.append(parts.reserve(JOB))
    threads = [threading.Thread(target=reserve) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    granted = [claim for claim in claims if claim is not None]
    assert len(granted) == 1 and parts.busy() == {JOB} and parts.is_starting(granted[0])
    assert parts.reserve(JobId(7, 1)) is not None          # another job is not held up
    parts.started(JOB, granted[0])
    assert JOB not in parts.busy() and not parts.is_starting(granted[0])
    assert parts.reserve(JOB) not in (None, granted[0])     # free again, under a new claim


def test_a_failed_start_gives_its_claim_back():
    parts = runs()
    with pytest.raises(OSError):
        with parts.starting(JOB) as claim:
            assert claim is not None and parts.busy() == {JOB}
            with parts.starting(JOB) as again:
                assert again is None                    # already being started
            raise OSError("the starter could not be spawned")
    assert parts.busy() == frozenset() and not parts.is_starting(claim)


def test_the_policy_walk_needs_no_schedd(store):
    cycles = []
    policy = Policy(store, runs(store), LOG, lambda: cycles.append("release"), interval=60)
    policy.run()
    assert store.job_status(JobId(1, 0)) == JobStatus.IDLE      # PeriodicRelease
    assert store.job_status(JobId(1, 1)) is None                # PeriodicRemove: left the queue
    assert cycles == ["release"]                                # a released job asks for a cycle


def test_actions_need_no_schedd(store, tmp_path):
    cycles = []
    actions = Actions(store, runs(store), tmp_path / "spool", lambda: cycles.append("cycle"))
    held = actions.act("alice", JobAction.Hold, ids=["1.1"], reason="wait")
    assert held["TotalSuccess"] == 1 and store.job_status(JobId(1, 1)) == JobStatus.HELD and not cycles
    released = actions.act("alice", JobAction.Release, constraint="ClusterId == 1")
    assert released["TotalSuccess"] == 2                        # held by the policy and by alice
    assert {store.job_status(JobId(1, p)) for p in (0, 1)} == {JobStatus.IDLE}
    assert cycles == ["cycle"]
    assert actions.edit("alice", "Foo", "42", ids=["1.0"]) == 1 and store.job_ad(JobId(1, 0))["Foo"] == "42"


def test_a_dag_node_end_hurries_the_user_logs(tmp_path):
    """The end of a DAG node's job (its ad names the nodes log) is told to ``node_ended``
    (the schedd's projector writes it at once: DAGMan waits for it); another job's is not."""
    opened = Store(tmp_path, durability="normal")
    try:
        for cluster, extra in ((1, {}), (2, {"DAGManNodesLog": '"/nowhere/x.dag.nodes.log"'})):
            opened.append([ClusterAd(cluster, {"Owner": '"alice"', "Cmd": '"/bin/true"', "QDate": "1700000000",
                                               **extra}),
                           ProcAd(JobId(cluster, 0), {"JobStatus": "1"}), event(JobId(cluster, 0), 0),
                           SetAttributes(JobId(cluster, 0), set={"ClaimId": f'"claim{cluster}"'}, by="schedd"),
                           event(JobId(cluster, 0), 1)])
        parts, told = runs(opened), []
        parts.node_ended = lambda: told.append("ended")
        for cluster in (1, 2):
            outcome = {"kind": "exit", "code": 0, "claim": f"claim{cluster}"}
            assert parts.record_outcome(JobId(cluster, 0), f"claim{cluster}", outcome, wait=0) == "recorded"
            assert told == ([] if cluster == 1 else ["ended"])
    finally:
        opened.close()
