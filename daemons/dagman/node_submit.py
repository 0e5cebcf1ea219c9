"""A node's job, as condor_dagman submits it.

The node's submit file (or inline SUBMIT-DESCRIPTION), read from the node's
DIR, with its VARS as macros (PREPEND ones set before the file is read, so its
if/else sees them and its lines override them; the others override it), the DAG macros $(JOB), $(RETRY), $(DAG_STATUS) and
$(FAILED_COUNT), and the attributes DAGMan adds: DAGManJobId, DAGNodeName,
DAGParentNodeNames, JobBatchName, SubmitEventNotes "DAG Node: NAME" (the
SUBMIT event's note), and the shared nodes log as DAGManNodesLog: as in
HTCondor, the job's events go to its own ``log`` (if it has one) and those
DAGMan reads (DAGManWorkflowMask) to the nodes log.  A SUBDAG
EXTERNAL node is a DAGMan job of its own (``submit_dag``).
"""

from __future__ import annotations

import os

from jobledger.daemons.dagman import submit_dag
from jobledger.daemons.client.submit import Submit, build_cluster, read_submit_file
from jobledger.eventcore.dagman.model import FINAL, SUBDAG
from jobledger.eventcore.projections.userlog import DAGMAN_EVENTS


def node_description(dag, run, name: str, dagman_id: str, batch: str, nodes_log: str,
                     texts: dict | None = None) -> tuple[Submit, str]:
    """(the Submit of node ``name``'s job, the directory it is submitted from).  ``texts``: the
    submit files already read for the nodes submitted at this same moment (one chunk of a
    round), by path: a file many nodes share is read once for them, not once each."""
    node = dag.nodes[name]
    cwd = os.path.abspath(node.directory or ".")
    if node.kind == SUBDAG:
        text = submit_dag.submit_text(node.submit, {}, cwd)
    elif node.inline:
        text = dag.descriptions[node.submit]
    else:
        path = os.path.join(cwd, node.submit)
        known = texts.get(path) if texts is not None else None
        if known is None:
            known = read_submit_file(path, node.submit)
            if texts is not None:
                texts[path] = known
        text = known
    # PREPEND VARS are set before the description is read (its if/else sees them, its own
    # lines override them), the others after it, as HTCondor's DAGMan submits a node
    first = "".join(f"{key} = {value}\n" for key, value, prepend in node.vars if prepend)
    sub = Submit(first + text if first else text)
    for key, value, prepend in node.vars:
        if not prepend:
            sub[key] = value
    node_run = run.nodes[name]
    sub["JOB"] = name
    sub["RETRY"] = str(node_run.retry)
    sub["DAG_STATUS"] = str(run.status)
    sub["FAILED_COUNT"] = str(run.failed_count)
    sub["+DAGManJobId"] = dagman_id.split(".")[0]
    sub["+DAGNodeName"] = _quote(name)
    sub["+DAGParentNodeNames"] = _quote(",".join(node.parents)[:2048])
    sub["+DAGManNodeRetry"] = str(node_run.retry)
    if node.kind == FINAL:
        sub["+DAG_Status"] = str(run.status)
    sub["submit_event_notes"] = f"DAG Node: {name}"
    if "batch_name" not in sub:
        sub["batch_name"] = batch
    if node.priority and "priority" not in sub:
        sub["priority"] = str(node.priority)
    sub["+DAGManNodesLog"] = _quote(nodes_log)      # the job's own log, if any, is kept
    sub["+DAGManWorkflowMask"] = _quote(",".join(map(str, sorted(DAGMAN_EVENTS))))
    if "notification" not in sub:
        sub["notification"] = "never"
    return sub, cwd


def node_cluster(dag, run, name: str, cluster: int, dagman_id: str, batch: str, nodes_log: str,
                 owner: str, texts: dict | None = None) -> dict:
    """The cluster a node's job becomes (``submit_many``'s item)."""
    sub, cwd = node_description(dag, run, name, dagman_id, batch, nodes_log, texts)
    cluster_ad, proc_ads, _ = build_cluster(sub, cluster, cwd=cwd, owner=owner)
    return {"cluster": cluster, "cluster_ad": cluster_ad, "proc_ads": proc_ads}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
