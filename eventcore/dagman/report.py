"""What DAGMan writes about a run: the rescue DAG, the metrics, the status table.

Pure text and dicts from a ``DagRun``; the DAGMan process writes them.
"""

from __future__ import annotations

import re
import time

from jobledger.eventcore.dags.nodestatus import NodeStatus

from .model import FINAL, PROVISIONER, SERVICE
from .run import DAG_ABORT, DAG_RM, DONE, FAILED, FUTILE, POST, PRE, QUEUED, READY, WAITING, DagRun

RESCUE_RE = re.compile(r"\.rescue(\d{3})\Z")


def rescue_name(dag_file: str, number: int) -> str:
    return f"{dag_file}.rescue{number:03d}"


def rescue_text(run: DagRun, dag_file: str, created: str) -> str:
    """A partial rescue DAG (HTCondor's default): statistics, then one DONE line per done node."""
    nodes = run.dag.nodes
    failed = [n for n, r in run.nodes.items() if r.status == FAILED]
    premarked = sum(1 for node in nodes.values() if node.done)
    lines = ["# Rescue DAG file, created after running", f"#   the {dag_file} DAG file",
             f"# Created {created}", "# Rescue DAG version: 2.0.1 (partial)", "#",
             f"# Total number of Nodes: {len(nodes)}", f"# Nodes premarked DONE: {premarked}",
             f"# Nodes that failed: {len(failed)}", f"#   {','.join(failed[:20])}{',' if failed else ''}<ENDLIST>",
             ""]
    for name, r in run.nodes.items():           # (HTCondor writes it before FINAL runs)
        if nodes[name].kind in (SERVICE, PROVISIONER, FINAL):
            continue
        if r.status == DONE:
            lines.append(f"DONE {name}")
        elif r.status == FAILED and nodes[name].children and \
                all((name, child) in run.dag.weak for child in nodes[name].children):
            # it ran, and every child waited only for it to end (Dag::WriteRescue)
            lines += ["# Failed node with only weak child dependencies:", f"DONE {name}"]
    return "\n".join(lines) + "\n"


def metrics(run: DagRun, *, dagman_id: str, start: float, end: float, rescue_number: int,
            version: str) -> dict:
    """The ``<dag>.metrics`` JSON object in HTCondor 25's default layout (dagman_metrics.cpp
    DagmanMetricsV2, DAGMAN_METRICS_FILE_VERSION 2), keys in its order.  ``dagman_id`` is the
    DAGMan job's cluster; ``rescue_number`` the rescue DAG this run started from (0: none).
    Node counts: "nodes" are all but SUBDAG and SERVICE nodes (FINAL and PROVISIONER included),
    each counted succeeded or failed once it ended so; SERVICE nodes removed at the end count as
    succeeded; "total_nodes" sums the three kinds.  "jobs_*" count node job procs: submitted,
    left the queue ("jobs_succeeded", whatever their exit), and the difference."""
    kinds = {name: SERVICE if node.kind == SERVICE else "SUBDAG" if run.is_subdag(name) else "NODE"
             for name, node in run.dag.nodes.items()}

    def count(kind: str, status: str | None = None) -> int:
        return sum(1 for n, k in kinds.items() if k == kind and (status is None or run.nodes[n].status == status))

    totals = {kind: (count(kind), count(kind, FAILED), count(kind, DONE)) for kind in ("NODE", "SUBDAG", SERVICE)}
    return {
        "client": "condor_dagman", "version": version, "type": "metrics", "metrics_version": 2,
        "start_time": round(start, 3), "end_time": round(end, 3), "duration": round(end - start, 3),
        "exitcode": run.exit_code, "dagman_id": dagman_id.split(".")[0], "parent_dagman_id": "",
        "rescue_dag_number": rescue_number, "has_final_node": run.dag.final is not None,
        "nodes": totals["NODE"][0], "nodes_failed": totals["NODE"][1], "nodes_succeeded": totals["NODE"][2],
        "dag_nodes": totals["SUBDAG"][0], "dag_nodes_failed": totals["SUBDAG"][1],
        "dag_nodes_succeeded": totals["SUBDAG"][2], "provisioner_nodes": len(run.dag.of_kind(PROVISIONER)),
        "service_nodes": totals[SERVICE][0], "service_nodes_failed": totals[SERVICE][1],
        "service_nodes_succeeded": totals[SERVICE][2],
        "total_nodes": sum(t[0] for t in totals.values()),
        "total_nodes_run": sum(t[1] + t[2] for t in totals.values()),
        "jobs_submitted": run.jobs_submitted, "jobs_succeeded": run.jobs_completed,
        "jobs_failed": run.jobs_submitted - run.jobs_completed,
        "DagStatus": run.status,
    }


def status_table(run: DagRun) -> list[str]:
    """The "Of N nodes total" table condor_dagman prints to dagman.out."""
    counts = run.counts()
    head = " Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile"
    row = (f"{counts[DONE]:>5} {counts[PRE]:>7} {counts[QUEUED]:>8} {counts[POST]:>7} {counts[READY]:>7} "
           f"{counts[WAITING]:>10} {counts[FAILED]:>8} {counts[FUTILE]:>8}")
    return [f"Of {len(run.reported())} nodes total:", head, " ===     ===      ===     ===     ===        ===      ===      ===",
            row]


# A node's run state as the node status file numbers it (one table: the reader's NodeStatus).
NODE_STATUS = {WAITING: NodeStatus.NOT_READY, READY: NodeStatus.READY, PRE: NodeStatus.PRERUN,
               QUEUED: NodeStatus.SUBMITTED, POST: NodeStatus.POSTRUN, DONE: NodeStatus.DONE,
               FAILED: NodeStatus.ERROR, FUTILE: NodeStatus.FUTILE}


STATUS_NAMES = {NodeStatus.NOT_READY: "STATUS_NOT_READY", NodeStatus.READY: "STATUS_READY",
                NodeStatus.PRERUN: "STATUS_PRERUN", NodeStatus.SUBMITTED: "STATUS_SUBMITTED",
                NodeStatus.POSTRUN: "STATUS_POSTRUN", NodeStatus.DONE: "STATUS_DONE",
                NodeStatus.ERROR: "STATUS_ERROR", NodeStatus.FUTILE: "STATUS_FUTILE"}


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _when(seconds: int) -> str:
    return _quoted(time.ctime(seconds))


def _dag_state(run: DagRun, held: bool, removed: bool) -> tuple[NodeStatus, str, bool]:
    """The DAG's own line of the status file: (status, note, are unfinished nodes errors now?),
    as dag.cpp DumpNodeStatus judges it: done ("success") when the DAG succeeded -- every node
    done, or a FINAL node that succeeded whatever failed before it (HTCondor's
    job_dagman_final-L and job_dagman_abort-final-B expect DagStatus 5 then) -- failed when it is
    over otherwise."""
    has_final = bool(run.dag.of_kind(FINAL))
    over = run.exit_code is not None
    if run.succeeded():       # a FINAL node that succeeded after a failure included (dag.cpp DoneSuccess)
        return NodeStatus.DONE, "success", True
    if over and run.status != DAG_RM:
        return NodeStatus.ERROR, "aborted" if run.status == DAG_ABORT else "failed", True
    if held:
        return NodeStatus.SUBMITTED, "held", False
    if removed or run.status == DAG_RM:
        if has_final and not over:
            return NodeStatus.SUBMITTED, "removed", False
        return NodeStatus.ERROR, "removed", True
    return NodeStatus.SUBMITTED, "", False


def _node_error(run: DagRun, name: str) -> str:
    node, node_run = run.dag.nodes[name], run.nodes[name]
    if node_run.pre_code not in (None, 0) and node_run.cluster is None:
        return f"PRE Script failed with status {node_run.pre_code}"
    if node_run.cluster is None:
        return "Job submit failed"
    if "POST" in node.scripts and node_run.result not in (None, 0):
        return f"POST script failed with status {node_run.result}"
    if node_run.code < 0:
        return f"Job proc ({node_run.cluster}.0.0) failed with signal {-node_run.code}"
    return f"Job proc ({node_run.cluster}.0.0) failed with status {node_run.code}"


def node_status_text(run: DagRun, now: int, dag_files: tuple = (), min_update: int = 0,
                     held: bool = False, removed: bool = False) -> str:
    """NODE_STATUS_FILE contents as HTCondor's DAGMan writes them (dag.cpp, DumpNodeStatus):
    the DAG's ad (its files, when, its state in node-status numbers with a note, the counts,
    held and idle job procs), one ad per node (state, details, retries, its queued and held
    procs), then the end ad with the next update (0 once the DAG is over).  When the DAG is
    over, nodes still in PRE, queued or in POST are counted, and shown, as errors."""
    counts = run.counts()
    dag_status, note, mark_errors = _dag_state(run, held, removed)
    shown = run.reported()
    procs = [state for name in shown for state in run.nodes[name].procs.values()]
    procs_held = sum(1 for state in procs if state == "held")
    procs_idle = sum(1 for state in procs if state in ("idle", "held"))
    pre, queued, post, failed = counts[PRE], counts[QUEUED], counts[POST], counts[FAILED]
    if mark_errors:
        failed, pre, queued, post, procs_held, procs_idle = failed + pre + queued + post, 0, 0, 0, 0, 0
    ads = ["[", '  Type = "DagStatus";', "  DagFiles = {", ",\n".join(f"    {_quoted(f)}" for f in dag_files),
           "  };",
           f"  Timestamp = {now}; /* {_when(now)} */",
           f"  DagStatus = {int(dag_status)}; /* {_quoted(f'{STATUS_NAMES[dag_status]} ({note})')} */",
           f"  NodesTotal = {len(shown)};", f"  NodesDone = {counts[DONE]};", f"  NodesPre = {pre};",
           f"  NodesQueued = {queued};", f"  NodesPost = {post};", f"  NodesReady = {counts[READY]};",
           f"  NodesUnready = {counts[WAITING]};", f"  NodesFutile = {counts[FUTILE]};",
           f"  NodesFailed = {failed};", f"  JobProcsHeld = {procs_held};",
           f"  JobProcsIdle = {procs_idle}; /* includes held */", "]"]
    for name in shown:
        node_run = run.nodes[name]
        status = NODE_STATUS[node_run.status]
        queued_procs = sum(1 for state in node_run.procs.values() if state != "done")
        held_procs = sum(1 for state in node_run.procs.values() if state == "held")
        details = ""
        if status == NodeStatus.SUBMITTED:
            if mark_errors:
                status, details, queued_procs, held_procs = NodeStatus.ERROR, "Was STATUS_SUBMITTED", 0, 0
            else:
                details = "idle" if node_run.procs.get(0) == "idle" else "not_idle"
        elif status == NodeStatus.ERROR:
            details = _node_error(run, name)
        elif status in (NodeStatus.PRERUN, NodeStatus.POSTRUN) and mark_errors:
            details, status = f"Was {STATUS_NAMES[status]}", NodeStatus.ERROR
        elif status == NodeStatus.FUTILE:
            details = "Had an ancestor node fail"
        elif status == NodeStatus.DONE and run.dag.nodes[name].done:
            details = "User defined as DONE"
        ads += ["[", '  Type = "NodeStatus";', f"  Node = {_quoted(name)};",
                f"  NodeStatus = {int(status)}; /* {_quoted(STATUS_NAMES[status])} */",
                f"  StatusDetails = {_quoted(details)};", f"  RetryCount = {node_run.retry};",
                f"  JobProcsQueued = {queued_procs};", f"  JobProcsHeld = {held_procs};", "]"]
    over = run.exit_code is not None or removed
    next_update = 0 if over else now + min_update
    ads += ["[", '  Type = "StatusEnd";', f"  EndTime = {now}; /* {_when(now)} */",
            f"  NextUpdate = {next_update}; /* {_quoted('none') if over else _when(next_update)} */", "]"]
    return "\n".join(ads) + "\n"


def dot_text(run: DagRun, include: str = "") -> str:
    """The DOT graph condor_dagman writes for ``DOT file``: nodes (with their state) and edges."""
    lines = ["digraph DAG {", include.rstrip("\n")] if include else ["digraph DAG {"]
    for name, node in run.dag.nodes.items():
        shape = "ellipse" if node.kind in ("JOB", "SUBDAG") else "diamond"
        lines.append(f'    "{name}" [shape={shape} label="{name} ({run.nodes[name].status})"];')
    for name, node in run.dag.nodes.items():
        lines += [f'    "{name}" -> "{child}";' for child in node.children]
    return "\n".join(lines + ["}"]) + "\n"


def jobstate_line(now: int, node: str, event: str, condor_id: str = "-", sequence: int = 0) -> str:
    """One JOBSTATE_LOG line: time, node, event, job id (or code), site, -, submit sequence."""
    if node == "INTERNAL":
        return f"{now} INTERNAL *** {event} {condor_id} ***\n"
    return f"{now} {node} {event} {condor_id} local - {sequence}\n"
