"""A node job's logs, as HTCondor's DAGMan has them: the job's own ``log`` (if its submit
file names one) gets all of its events, and the DAG's shared nodes log gets those DAGMan
reads (DAGManWorkflowMask) plus DAGMan's POST_SCRIPT_TERMINATED, which the job's log does
not get."""

from __future__ import annotations

from jobledger.eventcore.events import event_to_dict, make_event
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.journal import Entry
from jobledger.eventcore.projections.userlog import DAGMAN_EVENTS, LogTargets, planned_writes
from tests.dag.test_dagman import run_dag, script, write
from jobledger.tracking.jobeventlog import JobEventLog


def _entry(position, job, kind, payload):
    return Entry(position, 0.0, job, kind, payload, None)


def _event(position, job, number):
    return _entry(position, job, "event", {"event": event_to_dict(
        make_event(number, cluster=job.cluster, proc=job.proc, timestamp=0, attrs={}))})


def test_the_nodes_log_gets_dagmans_events_and_the_jobs_log_all_of_them():
    import datetime
    from jobledger.eventcore.codecs.userlog_text_write import TextFormat
    job, plain = JobId(5, 0), JobId(6, 0)
    entries = [
        _entry(1, JobId(5, -1), "cluster", {"ad": {"UserLog": '"own.log"', "Iwd": '"/w"',
                                                    "DAGManNodesLog": '"/w/d.dag.nodes.log"'}}),
        _entry(2, job, "proc", {"ad": {}}),
        _entry(3, JobId(6, -1), "cluster", {"ad": {"UserLog": '"/w/plain.log"'}}),
        _entry(4, plain, "proc", {"ad": {}}),
    ] + [_event(10 + i, job, n) for i, n in enumerate((0, 1, 6, 5, 16))] + [_event(20, plain, 16)]
    files, _ = planned_writes(entries, LogTargets(), datetime.timezone.utc, TextFormat())
    numbers = {path: [int(e.payload["event"]["type"]) for e, _ in items] for path, items in files.items()}
    assert numbers == {"/w/own.log": [0, 1, 6, 5], "/w/d.dag.nodes.log": [0, 1, 5, 16],
                       "/w/plain.log": [16]}
    assert 6 not in DAGMAN_EVENTS and {0, 1, 4, 5, 9, 12, 13, 16} <= DAGMAN_EVENTS


def test_a_node_jobs_own_log_is_written_beside_the_nodes_log(pool, tmp_path):
    write(tmp_path / "logged.sub", "executable = /bin/true\nlog = $(JOB).log\nqueue\n")
    write(tmp_path / "plain.sub", "executable = /bin/true\nqueue\n")
    script(tmp_path / "post.sh", "exit 0\n")
    cluster, ad = run_dag(pool, tmp_path, "JOB A logged.sub\nJOB B plain.sub\nPARENT A CHILD B\n"
                                          "SCRIPT POST A post.sh\n")
    assert ad["ExitCode"] == 0
    jobs = {j["DAGNodeName"]: j["ClusterId"] for j in pool.schedd.history(
        f"DAGManJobId == {cluster}", ["ClusterId", "DAGNodeName", "UserLog", "DAGManNodesLog"])}
    own = [(e.cluster, int(e.type)) for e in JobEventLog(str(tmp_path / "A.log")).events(0)]
    assert own[0] == (jobs["A"], 0) and own[-1] == (jobs["A"], 5)
    assert {c for c, _ in own} == {jobs["A"]} and (jobs["A"], 16) not in own
    nodes = [(e.cluster, int(e.type)) for e in JobEventLog(str(tmp_path / "d.dag.nodes.log")).events(0)]
    assert [n for n in nodes if n[0] == jobs["A"]] == [(jobs["A"], 0), (jobs["A"], 1), (jobs["A"], 5),
                                                        (jobs["A"], 16)]
    assert (jobs["B"], 5) in nodes and not (tmp_path / "B.log").exists()
    ads = pool.schedd.history(f"ClusterId == {jobs['A']}", ["UserLog", "DAGManNodesLog", "DAGManWorkflowMask"])
    assert ads[0]["UserLog"].endswith("A.log") and ads[0]["DAGManNodesLog"].endswith("d.dag.nodes.log")
    assert ads[0]["DAGManWorkflowMask"].startswith("0,1,2,4,5")
