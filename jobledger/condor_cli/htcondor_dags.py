"""``htcondor dag status|resources|halt|resume``: a running DAG, as HTCondor's tool
shows and drives it (htcondor_cli/dagman.py).

``status`` reads the DAGMan job's DAG_* attributes (its nodes and jobs by state);
``resources`` lists the DAG's node jobs in the queue, one line each (node, job id,
status, memory used and requested, starts, where it runs); ``halt`` and ``resume``
go to the DAGMan process through ``DAGMan`` (htcondor2's class).
"""

from __future__ import annotations

import datetime
import logging

from jobledger.eventcore.status import STATUS_NAMES

DAG_STATUS = {0: "is running normally.", 1: "had an error occur.", 2: "had at least one node fail.",
              3: "is aborting because it recieved a DAG abort value.", 4: "has recieved a signal to be remove.",
              5: "has detected a cycle.", 6: "has been halted."}


def _dag_ad(dag_id: int, projection: list[str]):
    import jobledger
    ads = jobledger.Schedd().query(f"ClusterId == {int(dag_id)}", projection)
    if not ads:
        raise RuntimeError(f"No DAG found for ID {dag_id}.")
    return ads[0]


def _for(seconds: float) -> str:
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    return f"{days} day{'s' if days != 1 else ''} and {clock}" if days else f" and {clock}"


def _count(number: int, past: bool = False) -> str:
    verb = ("have" if past else "are") if number > 1 else ("has" if past else "is")
    return f"{number:3d} {verb}"


def status(log: logging.Logger, dag_id: int, **_) -> None:
    names = ["JobStartDate", "JobStatus", "EnteredCurrentStatus", "HoldReason", "JobBatchName", "DAG_NodesTotal",
             "DAG_NodesDone", "DAG_NodesFailed", "DAG_NodesPostrun", "DAG_NodesPrerun", "DAG_NodesQueued",
             "DAG_NodesReady", "DAG_NodesUnready", "DAG_NodesFutile", "DAG_JobsSubmitted", "DAG_JobsIdle",
             "DAG_JobsHeld", "DAG_JobsRunning", "DAG_JobsCompleted", "DAG_InRecovery", "DAG_Status"]
    ad = _dag_ad(dag_id, names)
    if "DAG_NodesTotal" not in ad:
        raise RuntimeError(f"Job {dag_id} is not a DAG")
    dag_file = str(ad.get("JobBatchName", "UNKNOWN+1")).rsplit("+", 1)[0]
    now = datetime.datetime.now().timestamp()
    state = ad.get("JobStatus")
    if state == 2:
        if ad.get("DAG_InRecovery") in (1, True):
            log.info(f"DAG {dag_id} [{dag_file}] is in recovery mode and attempting to restore previous progress.")
        else:
            word = "halted" if ad.get("DAG_Status") == 6 else "running"
            log.info(f"DAG {dag_id} [{dag_file}] has been {word} for {_for(now - ad.get('JobStartDate', now))}")
    elif state == 4:
        done = datetime.datetime.fromtimestamp(ad.get("EnteredCurrentStatus", now)).strftime("%Y-%m-%d %H:%M:%S")
        log.info(f"DAG {dag_id} [{dag_file}] completed {done}")
    else:
        log.info(f"DAG {dag_id} [{dag_file}] has been {STATUS_NAMES.get(state, str(state)).lower()} for "
                 f"{_for(now - ad.get('EnteredCurrentStatus', now))}")
        if state == 5:
            log.info(f"Hold Reason: {ad.get('HoldReason', '')}")
    if ad.get("DAG_JobsSubmitted") is not None:
        log.info(f"DAG has submitted {ad['DAG_JobsSubmitted']} job(s), of which:")
        for attr, words, past in (("DAG_JobsIdle", "submitted and waiting for resources.", False),
                                  ("DAG_JobsHeld", "held.", False), ("DAG_JobsRunning", "running.", False),
                                  ("DAG_JobsCompleted", "completed.", True)):
            if ad.get(attr, 0) > 0:
                log.info(f"\t    {_count(ad[attr], past)} {words}")
    total = ad.get("DAG_NodesTotal") or 0
    log.info(f"DAG contains {total} node(s) total, of which:")
    running = sum(ad.get(a, 0) for a in ("DAG_NodesPrerun", "DAG_NodesQueued", "DAG_NodesPostrun"))
    for number, words, past in ((ad.get("DAG_NodesDone", 0), "completed.", True), (running, "running.", False),
                                (ad.get("DAG_NodesReady", 0), "ready to start.", False),
                                (ad.get("DAG_NodesUnready", 0), "waiting on other nodes to finish.", False),
                                (ad.get("DAG_NodesFailed", 0), "failed.", True)):
        if number > 0:
            log.info(f"\t{_count(number, past)} {words}")
    if ad.get("DAG_NodesFutile", 0) > 0:
        log.info(f"\t{ad['DAG_NodesFutile']:3d} will never run.")
    if total:
        done = 100.0 * ad.get("DAG_NodesDone", 0) / total
        log.info(f"DAG {DAG_STATUS.get(ad.get('DAG_Status', 0), 'is in an unknown state.')}")
        log.info(f"DAG is {done:.2f}% complete.")


RESOURCE_COLUMNS = ("NODE_NAME", "JOB_ID", "STATUS", "MEM_USAGE", "REQ_MEM", "STARTS", "REMOTE_HOST")


def resources(log: logging.Logger, dag_id: int, **_) -> None:
    """One line per node job of the DAG in the queue."""
    import jobledger
    _dag_ad(dag_id, ["ClusterId"])
    jobs = jobledger.Schedd().query(
        f"DAGManJobId == {int(dag_id)}",
        ["DAGNodeName", "ClusterId", "ProcId", "JobStatus", "MemoryUsage", "ResidentSetSize", "RequestMemory",
         "NumJobStarts", "RemoteHost"])
    rows = []
    for job in sorted(jobs, key=lambda j: (str(j.get("DAGNodeName", "")), j["ClusterId"], j["ProcId"])):
        used = job.get("MemoryUsage")
        if not isinstance(used, (int, float)) and isinstance(job.get("ResidentSetSize"), (int, float)):
            used = (job["ResidentSetSize"] + 1023) // 1024
        rows.append((str(job.get("DAGNodeName", "-")), f"{job['ClusterId']}.{job['ProcId']}",
                     STATUS_NAMES.get(job.get("JobStatus"), "Unknown"),
                     f"{int(used)}" if isinstance(used, (int, float)) else "-",
                     f"{int(job['RequestMemory'])}" if isinstance(job.get("RequestMemory"), (int, float)) else "-",
                     str(job.get("NumJobStarts", 0)), str(job.get("RemoteHost") or "-")))
    widths = [max(len(RESOURCE_COLUMNS[i]), *(len(row[i]) for row in rows)) for i in range(len(RESOURCE_COLUMNS))]
    for row in [RESOURCE_COLUMNS, *rows]:
        log.info("  ".join(f"{value:<{width}}" for value, width in zip(row, widths)).rstrip())
    if not rows:
        log.info(f"DAG {dag_id} has no node jobs in the queue.")


def halt(log: logging.Logger, dag_id: int, reason: str | None = None, pause: bool = False, **_) -> None:
    from jobledger.daemons.dagman.control import DAGMan
    ok, message = DAGMan(int(dag_id)).halt(reason, pause)
    if not ok:
        raise RuntimeError(message)
    log.info(message)


def resume(log: logging.Logger, dag_id: int, **_) -> None:
    from jobledger.daemons.dagman.control import DAGMan
    ok, message = DAGMan(int(dag_id)).resume()
    if not ok:
        raise RuntimeError(message)
    log.info(message)
