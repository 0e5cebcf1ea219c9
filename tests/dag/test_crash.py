"""DAGMan crash recovery with real processes: SIGKILL the DAGMan process, then the schedd,
then the master (the whole pool), at random points of a 200-node DAG with retries.

Afterwards the DAG has completed (DAGMan exit 0), every node job that ran
terminated exactly once by the nodes log, every node succeeded exactly once
(a flaky node: one failed attempt, then one success), no node ran after it
had succeeded, and the journal audit passes.
"""

from __future__ import annotations

import collections
import os
import random
import signal

import pytest

import jobledger as htcondor
from jobledger.daemons.audit import audit
from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import pool_processes, stop_and_check, wait_until
from tests.pool.test_crash import daemon_pid, terminated_count
from jobledger.tracking.jobeventlog import JobEventLog

LAYERS, WIDTH = 10, 20          # 200 nodes, every node of a layer a parent of every node of the next
FLAKY = 7                       # every 7th node fails its first attempt (RETRY 2)


def write_dag(directory) -> None:
    (directory / "node.sub").write_text(
        "executable = /bin/sh\narguments = \"-c 'test $(RETRY) -ge $(need)'\"\nqueue\n")
    lines = []
    for layer in range(LAYERS):
        for i in range(WIDTH):
            index = layer * WIDTH + i
            lines += [f"JOB L{layer}N{i} node.sub", f'VARS L{layer}N{i} need="{int(index % FLAKY == 0)}"']
        if layer:
            parents = " ".join(f"L{layer - 1}N{i}" for i in range(WIDTH))
            lines.append(f"PARENT {parents} CHILD " + " ".join(f"L{layer}N{i}" for i in range(WIDTH)))
    lines.append("RETRY ALL_NODES 2")
    (directory / "big.dag").write_text("\n".join(lines) + "\n")


def dagman_pid(local_dir) -> int | None:
    for pid in pool_processes(local_dir):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if is_dagman(handle.read()):
                    return pid
        except OSError:
            continue
    return None


def survivors(local_dir) -> list[str]:
    out = []
    for pid in pool_processes(local_dir):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                words = handle.read().split(b"\0")
            out.append(f"{pid}: {b' '.join(words)[:120].decode(errors='replace')}")
        except OSError:
            pass
    return out


def schedd_answers(pool) -> bool:
    try:
        pool.schedd.query("false")
        return True
    except Exception:  # noqa: BLE001 - down for now
        return False


@pytest.mark.slow
def test_dagman_recovers_from_sigkill_of_itself_the_schedd_and_the_master(tmp_path, monkeypatch):
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
        # 1. DAGMan itself: on_exit_remove puts it back in the queue and it recovers.
        wait_until(lambda: terminated_count(nodes_log) >= rnd.randrange(15, 50), 120, what="some nodes")
        victim = wait_until(lambda: dagman_pid(local_dir), 30, what="the DAGMan process")
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: dagman_pid(local_dir) not in (None, victim), 60, what="DAGMan to restart")
        # 2. The schedd: DAGMan keeps running and retries its calls; the master restarts it.
        wait_until(lambda: terminated_count(nodes_log) >= rnd.randrange(70, 110), 120, what="more nodes")
        before = daemon_pid(pool, "schedd")
        os.kill(before, signal.SIGKILL)
        wait_until(lambda: daemon_pid(pool, "schedd") != before, 30, what="a new schedd")
        # 3. The master: every process goes; a new pool on the same directory carries on.
        wait_until(lambda: terminated_count(nodes_log) >= rnd.randrange(130, 170), 120, what="more nodes")
        os.kill(pool._master_pid, signal.SIGKILL)
        try:
            wait_until(lambda: not pool_processes(local_dir), 90, what="the pool processes to go")
        except BaseException:
            raise AssertionError(f"still running: {survivors(local_dir)}") from None
        pool.stop()
        pool._config_setter.unset()
        pool = PersonalPool(local_dir=local_dir).start()
        wait_until(lambda: schedd_answers(pool) and not pool.schedd.query(f"ClusterId == {cluster}", ["JobStatus"]),
                   180, what="the DAG to finish")
        dagman = pool.schedd.history(f"ClusterId == {cluster}", ["ExitCode"])
        assert dagman[0]["ExitCode"] == 0, (tmp_path / "big.dag.dagman.out").read_text()[-3000:]
        check_nodes(pool, cluster, nodes_log)
        wait_until(lambda: audit(local_dir).ok, 30, what="a clean audit")
    finally:
        stop_and_check(pool)


def check_nodes(pool, cluster, nodes_log) -> None:
    jobs = pool.schedd.history(f"DAGManJobId == {cluster}", ["ClusterId", "DAGNodeName", "ExitCode", "JobStatus"])
    node_of = {ad["ClusterId"]: ad["DAGNodeName"] for ad in jobs}
    events = list(JobEventLog(nodes_log).events(0))
    terminated = collections.Counter(e.cluster for e in events if int(e.type) == 5)
    assert max(terminated.values()) == 1, [c for c, n in terminated.items() if n > 1]
    successes = collections.Counter()
    failures = collections.Counter()
    finished_at: dict[str, int] = {}
    for position, event in enumerate(events):
        name = node_of.get(event.cluster)
        if int(event.type) == 0 and name in finished_at:
            pytest.fail(f"node {name} was submitted again after it succeeded")
        if int(event.type) == 5:
            if event["ReturnValue"] == 0:
                successes[name] += 1
                finished_at[name] = position
            else:
                failures[name] += 1
    names = {f"L{layer}N{i}" for layer in range(LAYERS) for i in range(WIDTH)}
    assert set(successes) == names and max(successes.values()) == 1
    flaky = {f"L{i // WIDTH}N{i % WIDTH}" for i in range(LAYERS * WIDTH) if i % FLAKY == 0}
    assert set(failures) == flaky and max(failures.values()) == 1


def is_dagman(cmdline: bytes) -> bool:
    """A condor_dagman process: the console script, or python -m jobledger.daemons.dagman."""
    words = cmdline.split(b"\0")
    return words[1:3] == [b"-m", b"jobledger.daemons.dagman"] or (len(words) > 1 and words[1].endswith(b"/condor_dagman"))
