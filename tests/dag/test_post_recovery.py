"""A POST script on recovery, as HTCondor's DAGMan does it: a POST script that finished is
recorded by a POST_SCRIPT_TERMINATED event in the nodes log and is not run again after a
crash; one that was running when DAGMan was SIGKILLed is run again."""

from __future__ import annotations

import os
import signal

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from jobledger.daemons.audit import audit
from jobledger.eventcore.errors import HTCondorException
from tests.dag.test_crash import dagman_pid
from tests.dag.test_dagman import script, wait_dagman, write
from tests.pool.conftest import wait_until
from jobledger.tracking.jobeventlog import JobEventLog

# B's POST waits for the file "go"; it gives up when its DAGMan dies (as HTCondor's
# scripts die with their DAGMan), so only the new DAGMan's run can finish.
POST = """echo "start $1" >> runs.txt
if [ "$1" = B ]; then
  while [ ! -e go ] && kill -0 $PPID 2>/dev/null; do sleep 0.02; done
  kill -0 $PPID 2>/dev/null || exit 9
fi
echo "end $1" >> runs.txt
exit $2
"""


def lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_sigkill_during_post_runs_that_post_again_and_no_finished_one(pool, tmp_path, monkeypatch):
    write(tmp_path / "node.sub", "executable = /bin/sh\narguments = \"-c 'exit 4'\"\nqueue\n")
    script(tmp_path / "post.sh", POST)
    write(tmp_path / "d.dag", "JOB A node.sub\nJOB B node.sub\nJOB C node.sub\n"
          "SCRIPT POST A post.sh A 0\nSCRIPT POST B post.sh B 0\nSCRIPT POST C post.sh C 0\n"
          "PARENT A CHILD B\nPARENT B CHILD C\n")
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs.txt"
    cluster = pool.schedd.submit(htcondor.Submit.from_dag("d.dag")).cluster()
    wait_until(lambda: "start B" in lines(runs), 60, what="B's POST script to start")
    first = wait_until(lambda: dagman_pid(pool.local_dir), 10, what="the DAGMan process")
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: lines(runs).count("start B") == 2, 60, what="B's POST script to run again")
    assert dagman_pid(pool.local_dir) not in (None, first)
    (tmp_path / "go").touch()
    ad = wait_dagman(pool, cluster)
    assert ad["ExitCode"] == 0, (tmp_path / "d.dag.dagman.out").read_text()[-3000:]
    # A's POST ran once (recorded before the kill); B's twice, finishing once; C's once.
    assert lines(runs) == ["start A", "end A", "start B", "start B", "end B", "start C", "end C"]
    events = list(JobEventLog(str(tmp_path / "d.dag.nodes.log")).events(0))
    jobs = {ad["DAGNodeName"]: ad["ClusterId"] for ad in pool.schedd.history(
        f"DAGManJobId == {cluster}", ["ClusterId", "DAGNodeName"])}
    posts = [(e.cluster, e.get("DAGNodeName"), e.get("ReturnValue")) for e in events
             if e.type == htcondor.JobEventType.POST_SCRIPT_TERMINATED]
    assert posts == [(jobs["A"], "A", 0), (jobs["B"], "B", 0), (jobs["C"], "C", 0)]
    terminated = [e.cluster for e in events if e.type == htcondor.JobEventType.JOB_TERMINATED]
    assert sorted(terminated) == sorted(jobs.values())        # every node's job ran once
    assert "Running in RECOVERY mode" in (tmp_path / "d.dag.dagman.out").read_text()
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")


def test_the_schedd_records_a_post_result_only_for_that_nodes_job(pool):
    address = ipc.sinful(str(pool.local_dir / "run" / "schedd.sock"))
    plain = pool.schedd.submit(htcondor.Submit({"executable": "/bin/true", "hold": "true"})).cluster()
    for bad in ({"cluster": plain, "node": "A", "code": 0},            # not a DAG node's job
                {"cluster": plain + 1000, "node": "A", "code": 0},     # no such cluster yet
                {"cluster": plain, "node": "A"},                       # neither code nor signal
                {"cluster": plain, "node": "A", "code": 0, "signal": 9},
                {"cluster": "1", "node": "A", "code": 0},
                {"cluster": plain, "node": "A\nB", "code": 0},
                {"cluster": plain, "node": "A", "code": 300}):
        with pytest.raises(HTCondorException, match="post_script_terminated"):
            ipc.call(address, "post_script_terminated", timeout=10, **bad)
    assert pool.schedd.query(f"ClusterId == {plain}", ["JobStatus"])[0]["JobStatus"] == 5
