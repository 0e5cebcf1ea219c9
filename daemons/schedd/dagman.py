"""What the schedd records for a DAGMan: the end of a node's POST script, and the
DAG's progress in the DAGMan job's own ad.

A DAGMan publishes its counts in its job ad as HTCondor's does
(dagman_classad.cpp: DAG_NodesTotal, DAG_NodesDone, DAG_NodesFailed, ...,
DAG_Status): condor_q's batch row of a DAG counts nodes from them, and they
stay in the history once the DAG is over (``dagman_progress``).

condor_dagman writes a POST_SCRIPT_TERMINATED event (016) for a node's job
into the nodes log when the node's POST script exits, and after a crash it
reads that event back instead of running the script again.  Here the
journal is the only writer of user logs, so DAGMan asks the schedd to
append the event (``post_script_terminated``); the projector then writes it
to the job's user log -- the nodes log -- like any other event.  The event
names the job (proc 0, as HTCondor's does) but does not move it: the job
has usually left the queue by then (``eventcore.projections.queue``).
"""

from __future__ import annotations

import time

from jobledger.daemons.storage.interfaces import ClusterLedger
from jobledger.eventcore.adwire import quote
from jobledger.eventcore.records import SetAttributes
from jobledger.eventcore.decide.runs import event
from jobledger.eventcore.errors import HTCondorException
from jobledger.eventcore.events import EventType
from jobledger.eventcore.ids import JobId


def post_script_terminated(store: ClusterLedger, cluster: int, node: str, code: int | None = None,
                           signal: int | None = None) -> int:
    """Append node ``node``'s POST script end (exit ``code``, or killed by ``signal``) for its job
    ``cluster``.0; the journal position.  A job still in the queue must be that node's; one that
    left is not looked up (the history is not indexed by job), only its id checked as used."""
    if isinstance(cluster, bool) or not isinstance(cluster, int) or cluster < 1:
        raise HTCondorException("post_script_terminated: cluster must be a positive integer")
    if not isinstance(node, str) or not node or "\n" in node or len(node) > 4096:
        raise HTCondorException("post_script_terminated: node must be a one-line name")
    if (code is None) == (signal is None) or not all(
            v is None or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255) for v in (code, signal)):
        raise HTCondorException("post_script_terminated: give an exit code or a signal (0..255)")
    job = JobId(cluster, 0)
    ad = store.job_ad(job)
    if (ad is None and cluster >= store.next_cluster_id()) or (ad is not None and ad.get("DAGNodeName") != quote(node)):
        raise HTCondorException(f"post_script_terminated: job {job} is not the job of DAG node {node!r}")
    record = event(EventType.POST_SCRIPT_TERMINATED, job, time.time(), TerminatedNormally=signal is None,
                   ReturnValue=code, TerminatedBySignal=signal, DAGNodeName=node)
    return store.append([record])


PROGRESS_ATTRS = frozenset({
    "DAG_NodesTotal", "DAG_NodesDone", "DAG_NodesPrerun", "DAG_NodesQueued", "DAG_NodesPostrun",
    "DAG_NodesReady", "DAG_NodesFailed", "DAG_NodesUnready", "DAG_NodesFutile", "DAG_Status",
    "DAG_InRecovery", "DAG_AdUpdateTime", "DAG_JobsSubmitted", "DAG_JobsIdle", "DAG_JobsHeld",
    "DAG_JobsRunning", "DAG_JobsCompleted"})
SCHEDULER_UNIVERSE = "7"


def dagman_progress(store: ClusterLedger, user: str, job: str, values: dict) -> int:
    """Set the DAG_* counts ``values`` (name -> int) on DAGMan job ``job`` (a scheduler
    universe job of ``user``, in the queue) in one record; the journal position."""
    try:
        job_id = JobId.parse(job)
    except (TypeError, ValueError):
        raise HTCondorException(f"dagman_progress: {job!r} is not a job id") from None
    if not isinstance(values, dict) or not values or not set(values) <= PROGRESS_ATTRS or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values.values()):
        raise HTCondorException("dagman_progress: values must map DAG_* count names to integers")
    ad = store.job_ad(job_id)
    if ad is None or ad.get("JobUniverse") != SCHEDULER_UNIVERSE or \
            (user != "root" and ad.get("Owner") != quote(user)):
        raise HTCondorException(f"dagman_progress: job {job_id} is not a DAGMan job of {user}")
    record = SetAttributes(job_id, set={name: str(value) for name, value in values.items()}, by="dagman")
    return store.append([record])
