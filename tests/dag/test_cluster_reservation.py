"""Cluster ids reserved ahead (DAGMan's spare ids, a submit whose reply was lost) across a
schedd killed with SIGKILL while a DAG runs: the restarted schedd hands out none of
them again, the holder of one can still commit it (once), and no cluster id is ever
in the journal twice."""

from __future__ import annotations

import collections
import os
import signal

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.daemons.audit import audit
from jobledger.eventcore.errors import HTCondorException
from tests.pool.conftest import wait_until
from tests.pool.test_crash import daemon_pid, terminated_count
from tests.pool.test_idempotent_submit import _clusters


def test_ids_reserved_before_a_schedd_sigkill_are_never_handed_out_again(fresh_pool, tmp_path, monkeypatch):
    pool = fresh_pool
    gate = tmp_path / "gate"
    gate.touch()
    (tmp_path / "node.sub").write_text(
        f"executable = /bin/sh\narguments = \"-c 'while [ -e {gate} ]; do sleep 0.05; done'\"\nqueue\n")
    (tmp_path / "chain.dag").write_text("JOB A node.sub\nJOB B node.sub\nJOB C node.sub\n"
                                        "PARENT A CHILD B\nPARENT B CHILD C\n")
    monkeypatch.chdir(tmp_path)
    nodes_log = str(tmp_path / "chain.dag.nodes.log")
    dag = pool.schedd.submit(htcondor.Submit.from_dag("chain.dag")).cluster()
    # Node A runs (held at the gate): DAGMan has its cluster and spare ids reserved ahead.
    wait_until(lambda: pool.schedd.query(f"DAGManJobId == {dag} && JobStatus == 2", ["ClusterId"]),
               120, what="node A to run")
    address = pool.schedd._address
    lost = ipc.call(address, "new_cluster", count=2)   # a submit whose reply the kill will lose
    victim = daemon_pid(pool, "schedd")
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: daemon_pid(pool, "schedd") != victim, 30, what="a new schedd")
    plain = pool.schedd.submit(htcondor.Submit({"executable": "/bin/true", "initialdir": str(tmp_path)}))
    assert plain.cluster() > lost + 1, (plain.cluster(), lost)   # past every id reserved before
    # The holder sends its submit again (its token): the reserved id is still its own, once.
    item = dict(cluster=lost, cluster_ad={"Cmd": '"/bin/true"', "Iwd": f'"{tmp_path}"'},
                proc_ads=[{"ProcId": "0"}])
    assert ipc.call(address, "submit", token="lost-1", **item)["cluster"] == lost
    assert ipc.call(address, "submit", token="lost-1", **item)["cluster"] == lost
    with pytest.raises(HTCondorException, match="not reserved"):   # another submit of it
        ipc.call(address, "submit", token="another", **item)
    gate.unlink()
    wait_until(lambda: terminated_count(nodes_log) == 3 and not pool.schedd.query(
        f"ClusterId == {dag}", ["JobStatus"]), 120, what="the DAG to finish")
    assert pool.schedd.history(f"ClusterId == {dag}", ["ExitCode"])[0]["ExitCode"] == 0
    ids = _clusters(pool.local_dir)
    assert not [c for c, n in collections.Counter(ids).items() if n > 1], ids
    nodes = {ad["DAGNodeName"]: ad["ClusterId"] for ad in pool.schedd.history(
        f"DAGManJobId == {dag}", ["DAGNodeName", "ClusterId"])}
    assert sorted(nodes) == ["A", "B", "C"]
    assert not set(nodes.values()) & {plain.cluster(), lost}
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")
