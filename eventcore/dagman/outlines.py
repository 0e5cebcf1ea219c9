"""The lines condor_dagman writes to ``<dag>.dagman.out`` that other programs parse.

Pure text, HTCondor's wording (DAGMan's debug output, as in its source and in real
dagman.out files): the start-up banner, one ``Event: ULOG_<TYPE> for HTCondor Node ...``
line per node job event, the per-node submit, the job's result, retries, script
outcomes, the ``DAG status:`` line and the final ``EXITING WITH STATUS``.  Pegasus's
monitord and pegasus-status read a workflow's progress from exactly these lines
(tests/dag/test_dagman_out_lines.py checks them against its expressions).
"""

from __future__ import annotations

from jobledger.eventcore.events import EventType

# HTCondor's DagStatus names (dagman_utils.h), as the "DAG status:" line prints them.
DAG_STATUS_NAMES = {0: "DAG_STATUS_OK", 1: "DAG_STATUS_ERROR", 2: "DAG_STATUS_NODE_FAILED",
                    3: "DAG_STATUS_ABORT", 4: "DAG_STATUS_RM", 5: "DAG_STATUS_CYCLE", 6: "DAG_STATUS_HALTED"}
STARS = "******************************************************"


def banner(dagman_id: str, pid: int, version: str, platform: str, executable: str) -> list[str]:
    """The daemon start-up banner (``** condor_scheduniv_exec.<id> (CONDOR_DAGMAN) STARTING UP``)."""
    return [STARS,
            f"** condor_scheduniv_exec.{dagman_id} (CONDOR_DAGMAN) STARTING UP",
            f"** {executable}",
            "** SubsystemInfo: name=DAGMAN type=DAGMAN(9) class=CLIENT(2)",
            "** Configuration: subsystem:DAGMAN local:<NONE> class:CLIENT",
            f"** {version}",
            f"** {platform}",
            f"** PID = {pid}",
            STARS]


def job_id(cluster: int, proc: int, subproc: int = 0) -> str:
    return f"{cluster}.{proc}.{subproc}"


def event_line(number: int, node: str | None, cluster: int, proc: int, when: str, subproc: int = 0) -> str:
    """``Event: ULOG_EXECUTE for HTCondor Node A (12.0.0) {11/28/26 06:00:00}``; an event of
    a job of no node of this DAG (``node`` None): ``... for unknown Node (...) {...}: ignoring...``."""
    try:
        name = EventType(number).name
    except ValueError:
        name = f"FUTURE_EVENT_{number}"
    if node is None:
        return f"Event: ULOG_{name} for unknown Node ({job_id(cluster, proc, subproc)}) {{{when}}}: ignoring..."
    return f"Event: ULOG_{name} for HTCondor Node {node} ({job_id(cluster, proc, subproc)}) {{{when}}}"


def submit_lines(node: str, cluster: int) -> list[str]:
    """The submit of one node's job, and the id it was given."""
    return [f"Submitting HTCondor Node {node} job(s)...", f"\tassigned HTCondor ID ({job_id(cluster, 0)})"]


def job_result(node: str, cluster: int, proc: int, code: int) -> str:
    """A node job proc's end: ``completed successfully.``, ``failed with status N.`` or
    ``failed with signal N.`` (``code`` as DAGMan's $RETURN: -1000 - signal for a signal)."""
    head = f"Node {node} job proc ({job_id(cluster, proc)})"
    if code == 0:
        return f"{head} completed successfully."
    if code <= -1000:
        return f"{head} failed with signal {-1000 - code}."
    return f"{head} failed with status {code}."


def retry_line(node: str, retry: int, max_retries: int) -> str:
    return f"Retrying node {node} (retry #{retry} of {max_retries})..."


def script_running(kind: str, node: str) -> str:
    return f"Running {kind} script of Node {node}..."


def script_done(kind: str, node: str, code: int) -> str:
    """``POST Script of node A completed successfully.`` / ``... failed with status N``."""
    if code == 0:
        return f"{kind} Script of node {node} completed successfully."
    if code <= -1000:
        return f"{kind} Script of node {node} died on signal {-1000 - code}"
    return f"{kind} Script of node {node} failed with status {code}"


def dag_status_line(status: int) -> str:
    return f"DAG status: {status} ({DAG_STATUS_NAMES.get(status, 'DAG_STATUS_ERROR')})"


def log_files(paths: list[str]) -> list[str]:
    """The node logs DAGMan follows, each on a line of its own."""
    return ["All DAG node user log files:"] + [f"  {path}" for path in paths]


def hold_reason(reason: str) -> str:
    return f"  Hold reason: {reason}"


def exiting(dagman_id: str, pid: int, code: int) -> str:
    return f"**** condor_scheduniv_exec.{dagman_id} (condor_DAGMAN) pid {pid} EXITING WITH STATUS {code}"
