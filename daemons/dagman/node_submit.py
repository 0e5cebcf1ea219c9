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
import re
import time

from jobledger.daemons.dagman import submit_dag
from jobledger.daemons.client.submit import Submit, build_cluster, read_submit_file
from jobledger.eventcore.dagman.model import FINAL, JOB, SUBDAG
from jobledger.eventcore.enums import SubmitMethod
from jobledger.eventcore.projections.userlog import DAGMAN_EVENTS


def node_settings(dag, run, name: str, dagman_id: str, batch: str, nodes_log: str,
                  inherit: dict | None = None) -> tuple[list, list, list]:
    """What DAGMan sets in node ``name``'s description, as three lists of (key, value):
    before it is read (the attributes it passes on, ``inherit``: name -> expression, as
    DAGMAN_INHERIT_ATTRS names them, and its PREPEND VARS), over it (the other VARS and
    DAGMan's own macros and attributes), and defaults it may set itself (batch name,
    priority, notification)."""
    node = dag.nodes[name]
    node_run = run.nodes[name]
    before = [(f"My.{key}", value) for key, value in (inherit or {}).items()]
    before += [(key, value) for key, value, prepend in node.vars if prepend]
    over = [(key, value) for key, value, prepend in node.vars if not prepend]
    over += [("JOB", name), ("RETRY", str(node_run.retry)), ("DAG_STATUS", str(run.status)),
             ("FAILED_COUNT", str(run.failed_count)), ("+DAGManJobId", dagman_id.split(".")[0]),
             ("dag_node_name", name), ("+DAGParentNodeNames", _quote(",".join(node.parents)[:2048])),
             ("+DAGManNodeRetry", str(node_run.retry))]
    if node.kind == FINAL:
        over.append(("+DAG_Status", str(run.status)))
    over += [("submit_event_notes", f"DAG Node: {name}"),
             ("+DAGManNodesLog", _quote(nodes_log)),      # the job's own log, if any, is kept
             ("+DAGManWorkflowMask", _quote(",".join(map(str, sorted(DAGMAN_EVENTS)))))]
    defaults = [("batch_name", batch)] + ([("priority", str(node.priority))] if node.priority else [])
    defaults.append(("notification", "never"))
    return before, over, defaults


def node_description(dag, run, name: str, dagman_id: str, batch: str, nodes_log: str,
                     texts: dict | None = None, inherit: dict | None = None,
                     subdag_options: dict | None = None) -> tuple[Submit, str]:
    """(the Submit of node ``name``'s job, the directory it is submitted from).  ``texts``: the
    submit files already read for the nodes submitted at this same moment (one chunk of a
    round), by path: a file many nodes share is read once for them, not once each.  Its
    JobSubmitMethod is DAGMan's (1), as HTCondor's DAGMan records a direct submit."""
    node = dag.nodes[name]
    cwd = os.path.abspath(node.directory or ".")
    text = _node_text(dag, node, cwd, texts, subdag_options)
    # PREPEND VARS are set before the description is read (its if/else sees them, its own
    # lines override them), the others after it, as HTCondor's DAGMan submits a node
    before, over, defaults = node_settings(dag, run, name, dagman_id, batch, nodes_log, inherit)
    first = "".join(f"{key} = {value}\n" for key, value in before)
    sub = Submit(first + text if first else text)
    for key, value in over:
        sub[key] = value
    for key, value in defaults:
        if key not in sub:
            sub[key] = value
    sub.setSubmitMethod(int(SubmitMethod.DAGMan), True)
    return sub, cwd


def _node_text(dag, node, cwd: str, texts: dict | None, subdag_options: dict | None) -> str:
    """The text of ``node``'s submit description (a file read once per ``texts``)."""
    if node.kind == SUBDAG:
        return submit_dag.submit_text(node.submit, dict(subdag_options or {}), cwd)
    if node.inline:
        return dag.descriptions[node.submit]
    path = os.path.join(cwd, node.submit)
    known = texts.get(path) if texts is not None else None
    if known is None:
        known = read_submit_file(path, node.submit)
        if texts is not None:
            texts[path] = known
    return known


def condor_submit_command(dag, run, name: str, dagman_id: str, batch: str, nodes_log: str,
                          program: str, inherit: dict | None = None) -> tuple[list[str], str, str | None]:
    """(argv, directory, temporary file) to submit node ``name``'s job through condor_submit
    (DAGMAN_USE_DIRECT_SUBMIT = False, or condor_submit_dag -SubmitMethod 0), as HTCondor's
    DAGMan runs it: DAGMan's defaults and PREPEND VARS as ``name=value`` macros before the
    file, its other settings with ``-a``.  An inline description is written to
    ``<node>-inline.<pid>.temp`` in the node's directory first (the third item: the caller
    removes it)."""
    node = dag.nodes[name]
    cwd = os.path.abspath(node.directory or ".")
    temp = None
    if node.inline:
        temp = os.path.join(cwd, f"{name}-inline.{os.getpid()}.temp")
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(dag.descriptions[node.submit])
        path = temp
    else:
        path = node.submit
    before, over, defaults = node_settings(dag, run, name, dagman_id, batch, nodes_log, inherit)
    argv = [program] + [f"{key}={value}" for key, value in defaults + before]
    for key, value in over:
        argv += ["-a", f"{key} = {value}"]
    return argv + [path], cwd, temp


def node_cluster(dag, run, name: str, cluster: int, dagman_id: str, batch: str, nodes_log: str,
                 owner: str, texts: dict | None = None, inherit: dict | None = None,
                 subdag_options: dict | None = None, built: dict | None = None) -> dict:
    """The cluster a node's job becomes (``submit_many``'s item); ``subdag_options``: the
    DAGMan options a SUBDAG EXTERNAL node's DAGMan job inherits.

    ``built``: the jobs built for nodes within this second (kept by the caller, with ``texts``
    the description each was built from).  Nodes that share a description which names
    nothing DAGMan sets per node (no VARS, no $(JOB), $(RETRY), $(Cluster), random choices:
    ``_shared_key``) differ only in the attributes DAGMan adds for the node, so the submit
    language's work is done once for them within the same second and each node gets a copy
    with its own ClusterId, DAGNodeName, DAGParentNodeNames, DAGManNodeRetry and
    SubmitEventNotes.  The description's text is part of the key: a file changed meanwhile
    is built anew."""
    key = _shared_key(dag, run, name, texts, built) if built is not None else None
    if built is not None and key in built:
        return _for_node(built[key], run, name, cluster)
    sub, cwd = node_description(dag, run, name, dagman_id, batch, nodes_log, texts, inherit, subdag_options)
    cluster_ad, proc_ads, _ = build_cluster(sub, cluster, cwd=cwd, owner=owner)
    item = {"cluster": cluster, "cluster_ad": cluster_ad, "proc_ads": proc_ads}
    if built is not None and key is not None and cluster_ad == _per_node(run, name, cluster, cluster_ad):
        built[key] = item       # (its per-node attributes are as expected: copies may be made)
    return item


# What a shared description must not name (a word of its text, any case): the macros DAGMan
# sets per node, the cluster id, random choices, included files or commands (read each time).
PER_NODE_WORDS = frozenset({
    "job", "retry", "dag_status", "failed_count", "dag_node_name", "dagnodename", "submit_event_notes",
    "submiteventnotes", "dagparentnodenames", "dag_parent_names", "dagmannoderetry", "cluster", "clusterid",
    "random_choice", "random_integer", "random", "include"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN = re.compile(r"[A-Za-z0-9_.+\-]*\Z")      # node names whose ClassAd string is themselves


def _shared_key(dag, run, name: str, texts: dict | None, built: dict | None):
    """The key under which node ``name``'s job may be shared with others of the same chunk,
    or None (it is built on its own)."""
    node = dag.nodes[name]
    if built is None or texts is None or node.kind != JOB or node.vars or not _PLAIN.match(name) \
            or not all(_PLAIN.match(parent) for parent in node.parents):
        return None
    cwd = os.path.abspath(node.directory or ".")
    text = _node_text(dag, node, cwd, texts, None)
    verdict = texts.get(("shared", text))
    if verdict is None:
        verdict = texts[("shared", text)] = PER_NODE_WORDS.isdisjoint(
            word.lower() for word in _WORD.findall(text))
    return (text, cwd, node.priority, int(time.time())) if verdict else None


def _per_node(run, name: str, cluster: int, cluster_ad: dict) -> dict:
    """``cluster_ad`` with node ``name``'s own per-node attributes (as node_settings sets them)."""
    node = run.dag.nodes[name]
    return dict(cluster_ad, ClusterId=str(cluster), DAGNodeName=_quote(name),
                DAGParentNodeNames=_quote(",".join(node.parents)[:2048]),
                DAGManNodeRetry=str(run.nodes[name].retry), SubmitEventNotes=_quote(f"DAG Node: {name}"))


def _for_node(item: dict, run, name: str, cluster: int) -> dict:
    return {"cluster": cluster, "cluster_ad": _per_node(run, name, cluster, item["cluster_ad"]),
            "proc_ads": [dict(ad) for ad in item["proc_ads"]]}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
