"""What DAGMan writes about a run: the rescue DAG, the metrics, the status table.

Pure text and dicts from a ``DagRun``; the DAGMan process writes them.
"""

from __future__ import annotations

import re

from jobledger.eventcore.dags.nodestatus import NodeStatus

from .model import FINAL, PROVISIONER, SERVICE
from .run import DONE, FAILED, FUTILE, POST, PRE, QUEUED, READY, WAITING, DagRun

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
    lines += [f"DONE {name}" for name, r in run.nodes.items()
              if r.status == DONE and nodes[name].kind not in (SERVICE, PROVISIONER)]
    return "\n".join(lines) + "\n"


def metrics(run: DagRun, *, dagman_id: str, start: float, end: float, rescue_number: int,
            version: str) -> dict:
    """The ``<dag>.metrics`` JSON object (HTCondor's field names)."""
    normal = [n for n, node in run.dag.nodes.items() if node.kind not in (SERVICE, PROVISIONER)]
    subdags = [n for n in normal if run.is_subdag(n)]
    jobs = [n for n in normal if not run.is_subdag(n)]

    def count(names, status):
        return sum(1 for n in names if run.nodes[n].status == status)

    return {
        "client": "condor_dagman", "version": version, "planner": "", "planner_version": "",
        "type": "metrics", "wf_uuid": "", "root_wf_uuid": "",
        "start_time": round(start, 3), "end_time": round(end, 3), "duration": round(end - start, 3),
        "exitcode": run.exit_code, "dagman_id": dagman_id, "parent_dagman_id": "",
        "rescue_dag_number": rescue_number,
        "jobs": len(jobs), "jobs_failed": count(jobs, FAILED), "jobs_succeeded": count(jobs, DONE),
        "dag_jobs": len(subdags), "dag_jobs_failed": count(subdags, FAILED),
        "dag_jobs_succeeded": count(subdags, DONE),
        "total_jobs": len(normal), "total_jobs_run": sum(1 for n in normal if run.nodes[n].cluster is not None),
        "DagStatus": run.status,
    }


def status_table(run: DagRun) -> list[str]:
    """The "Of N nodes total" table condor_dagman prints to dagman.out."""
    counts = run.counts()
    head = " Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile"
    row = (f"{counts[DONE]:>5} {counts[PRE]:>7} {counts[QUEUED]:>8} {counts[POST]:>7} {counts[READY]:>7} "
           f"{counts[WAITING]:>10} {counts[FAILED]:>8} {counts[FUTILE]:>8}")
    return [f"Of {len(run.nodes)} nodes total:", head, " ===     ===      ===     ===     ===        ===      ===      ===",
            row]


# A node's run state as the node status file numbers it (one table: the reader's NodeStatus).
NODE_STATUS = {WAITING: NodeStatus.NOT_READY, READY: NodeStatus.READY, PRE: NodeStatus.PRERUN,
               QUEUED: NodeStatus.SUBMITTED, POST: NodeStatus.POSTRUN, DONE: NodeStatus.DONE,
               FAILED: NodeStatus.ERROR, FUTILE: NodeStatus.FUTILE}


def node_status_text(run: DagRun, now: int) -> str:
    """NODE_STATUS_FILE contents: ClassAds of the DAG and of each node, as HTCondor writes them."""
    counts = run.counts()
    ads = ["[", '  Type = "DagStatus";', f"  Timestamp = {now};", f"  DagStatus = {run.status};",
           f"  NodesTotal = {len(run.nodes)};", f"  NodesDone = {counts[DONE]};", f"  NodesPre = {counts[PRE]};",
           f"  NodesQueued = {counts[QUEUED]};", f"  NodesPost = {counts[POST]};",
           f"  NodesReady = {counts[READY]};", f"  NodesUnready = {counts[WAITING]};",
           f"  NodesFailed = {counts[FAILED]};", f"  NodesFutile = {counts[FUTILE]};", "]"]
    for name, node_run in run.nodes.items():
        ads += ["[", '  Type = "NodeStatus";', f'  Node = "{name}";',
                f'  NodeStatus = {int(NODE_STATUS[node_run.status])};',
                f'  StatusDetails = "STATUS_{NODE_STATUS[node_run.status].name}";',
                f"  RetryCount = {node_run.retry};", f"  IsFinal = {str(run.dag.nodes[name].kind == FINAL).lower()};",
                "]"]
    ads += ["[", '  Type = "StatusEnd";', f"  EndTime = {now};", "]"]
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
