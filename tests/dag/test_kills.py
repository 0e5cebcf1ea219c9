"""DAGMan killed by a signal, again and again: it is restarted and recovers, never held.

Ten kill -9 at random points of a 200-node DAG (with retries), each of DAGMan, of
its scheduler-universe starter, or of both (in a random order).  A starter that
started DAGMan and was killed is no sign that DAGMan cannot start: the job is
put back and started again each time (only a starter that dies before it starts
the job counts towards the hold after repeated failures).  At the end the DAG
has exited 0, every node succeeded exactly once (a flaky node: one failed
attempt, then one success), the DAGMan job was never held, no DAGMan ran beside
another (its job dies with its starter), and the audit passes.
"""

from __future__ import annotations

import os
import random
import signal

import pytest

import jobledger as htcondor
from jobledger.daemons.audit import audit
from jobledger.daemons.client.personal import PersonalPool
from tests.dag.test_crash import check_nodes, dagman_pid, is_dagman, write_dag
from tests.pool.conftest import pool_processes, stop_and_check, wait_until
from tests.pool.test_crash import terminated_count
from jobledger.tracking.jobeventlog import JobEventLog

KILLS = 10


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def dagmen(local_dir) -> list[int]:
    """Every DAGMan process of the pool (there must never be two)."""
    found = []
    for pid in pool_processes(local_dir):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if is_dagman(handle.read()):
                    found.append(pid)
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_ten_kills_of_dagman_and_its_starter_restart_it_and_the_dag_completes(tmp_path, monkeypatch):
    seed = random.randrange(1 << 30)
    rnd = random.Random(seed)
    print(f"seed {seed}")
    write_dag(tmp_path)
    monkeypatch.chdir(tmp_path)
    nodes_log = str(tmp_path / "big.dag.nodes.log")
    local_dir = tmp_path / "pool"
    pool = PersonalPool(local_dir=local_dir).start()
    try:
        cluster = pool.schedd.submit(htcondor.Submit.from_dag("big.dag")).cluster()
        for after in sorted(rnd.sample(range(3, 170), KILLS)):
            wait_until(lambda: terminated_count(nodes_log) >= after, 180, what=f"{after} nodes to finish")
            victim = wait_until(lambda: dagman_pid(local_dir), 60, what="the DAGMan process")
            starter = parent_of(victim)
            how = rnd.choice(["dagman", "starter", "dagman then starter", "starter then dagman"])
            targets = {"dagman": [victim], "starter": [starter]}.get(how) or (
                [victim, starter] if how.startswith("dagman") else [starter, victim])
            print(f"after {after} nodes: kill -9 {how} ({targets})")
            for pid in targets:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            def restarted_or_held():
                held = pool.schedd.query(f"ClusterId == {cluster} && JobStatus == 5", ["HoldReason"])
                return held or dagman_pid(local_dir) not in (None, victim)
            held = wait_until(restarted_or_held, 60, what="DAGMan to restart")
            assert held is True, f"held after killing the {how}: {held[0]['HoldReason']}"
            assert len(dagmen(local_dir)) == 1, f"two DAGMen after killing the {how}"
        wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"]), 300,
                   what="the DAG to finish")
        dagman = pool.schedd.history(f"ClusterId == {cluster}", ["ExitCode", "NumShadowExceptions"])
        assert dagman[0]["ExitCode"] == 0, (tmp_path / "big.dag.dagman.out").read_text()[-3000:]
        check_nodes(pool, cluster, nodes_log)
        dag_log = [int(e.type) for e in JobEventLog(str(tmp_path / "big.dag.dagman.log")).events(0)] \
            if (tmp_path / "big.dag.dagman.log").exists() else []
        assert 12 not in dag_log            # never held
        wait_until(lambda: audit(local_dir).ok, 30, what="a clean audit")
    finally:
        stop_and_check(pool)
