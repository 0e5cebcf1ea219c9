"""What a run writes to the journal: its event records, the exit policy, the usage attributes.

Pure functions of a job ad and a starter's outcome (schedd.md 5.2): the
schedd's run handling (``daemons.schedd.runs``) appends what they return.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ['HOLD_POLICY', 'HOLD_SPAWN', 'event', 'first_start_attrs', 'usage_text', 'startd_address', 'with_transfer_limits', 'starter_job', 'exit_records', 'hold_reason', 'transfer_events', 'file_transfer_events', 'usage_attrs', 'exit_verdict', 'resource_table', 'RUN_ATTRS', 'STARTER_JOB_ATTRS', 'TRANSFER_FAILURES', 'TRANSFER_LIMITS', 'input_size_hold']

import math

from jobledger.eventcore import adwire
from jobledger.eventcore.events import EventType, event_to_dict, make_event
from jobledger.eventcore.ids import JobId
from jobledger.eventcore.records import EventRecord, LeaveQueue, SetAttributes
from jobledger.eventcore.status import JobStatus

RUN_ATTRS = ("ClaimId", "StarterPid", "StarterStart", "ScratchDir", "RemoteSlot")
# Hold codes of schedd.md 2.1 used here.
HOLD_POLICY, HOLD_SPAWN = 3, 6  # schedd.md 2.1 (the starter names the other start failures)
STARTER_JOB_ATTRS = ("ClusterId", "ProcId", "Cmd", "Arguments", "Args", "Environment", "Env", "Iwd",
                     "In", "Out", "Err", "Owner", "GetEnv", "StreamOut", "JobUniverse",
                     "ShouldTransferFiles", "WhenToTransferOutput", "TransferInput", "TransferOutput",
                     "TransferOutputRemaps", "TransferExecutable", "TransferIn", "TransferOut",
                     "TransferErr", "FileSystemDomain", "RequestDisk", "RequestGPUs",
                     "MaxTransferInputMB", "MaxTransferOutputMB",
                     "AccountingGroup", "User",   # whose the slot is (the accountant charges it)
                     "MaxJobRetirementTime",      # how long a draining startd lets it run
                     "OAuthServicesNeeded", "SendCredential",   # credentials for its sandbox
                     "x509userproxy")                           # its X.509 proxy (X509_USER_PROXY)
TRANSFER_FAILURES = {12: "Transfer output files failure", 13: "Transfer input files failure",
                     32: "Transfer input files failure", 33: "Transfer output files failure"}


def event(number: int, job: JobId, now: float, hidden: dict | None = None, **attrs) -> EventRecord:
    """The journal record of one user-log event of ``job`` (``hidden``: writer-only fields)."""
    made = make_event(number, cluster=job.cluster, proc=job.proc, timestamp=int(now),
                      attrs={k: v for k, v in attrs.items() if v is not None}, hidden=hidden)
    return EventRecord(job, event_to_dict(made))


def first_start_attrs(ad: dict, now: float) -> dict:
    """``InitialWaitDuration`` at a job's first start: seconds since it materialized
    (JobMaterializeDate) or else was queued (QDate), as HTCondor's shadow sets it once."""
    if "InitialWaitDuration" in ad:
        return {}
    for name in ("JobMaterializeDate", "QDate"):
        try:
            since = int(float(ad[name]))
        except (KeyError, TypeError, ValueError):
            continue
        return {"InitialWaitDuration": str(max(0, int(now) - since))}
    return {}


def usage_text(user: float, system: float) -> str:
    """HTCondor's ``Usr d hh:mm:ss, Sys d hh:mm:ss``."""
    def part(seconds: float) -> str:
        s = int(seconds)
        return f"{s // 86400} {s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"Usr {part(user)}, Sys {part(system)}"


def startd_address(ad: dict) -> str | None:
    """The address of the startd that runs (or ran) the job: ``StartdIpAddr``, else
    ``RemoteHost`` (the same for local slots; a Dask worker's job names its worker there)."""
    for name in ("StartdIpAddr", "RemoteHost"):
        value = adwire.evaluate(ad, name) if name in ad else None
        if isinstance(value, str) and value:
            return value
    return None


# HTCondor's limits on a job's transfers (MiB, -1: none), and the job attributes that override them.
TRANSFER_LIMITS = (("MaxTransferInputMB", "MAX_TRANSFER_INPUT_MB"),
                   ("MaxTransferOutputMB", "MAX_TRANSFER_OUTPUT_MB"))


def with_transfer_limits(values: dict, ad: dict, limits: dict) -> dict:
    """``values`` (a ``starter_job``) with the pool's MAX_TRANSFER_INPUT_MB /
    MAX_TRANSFER_OUTPUT_MB (``limits``: param name -> expression text, which may refer
    to the job's attributes) where the job sets no MaxTransferInputMB /
    MaxTransferOutputMB of its own, as HTCondor's shadow chooses them."""
    for attr, param in TRANSFER_LIMITS:
        text = (limits.get(param) or "").strip()
        if attr in values or not text or text == "-1":
            continue
        value = adwire.evaluate_expr(ad, text)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            values[attr] = int(value)
    return values


def input_size_hold(ad: dict, limit: str) -> str | None:
    """The hold reason for a job whose TransferInputSizeMB (condor_submit's size of its
    input sandbox) is over its MaxTransferInputMB, or else the pool's MAX_TRANSFER_INPUT_MB
    (``limit``: expression text, evaluated against the job; negative: no limit), as
    HTCondor's schedd checks each new job when the submit commits; None when it is not."""
    if "MaxTransferInputMB" in ad:
        most = adwire.evaluate(ad, "MaxTransferInputMB")
    else:
        most = adwire.evaluate_expr(ad, limit) if limit.strip() else None
    size = adwire.evaluate(ad, "TransferInputSizeMB") if "TransferInputSizeMB" in ad else None
    if not isinstance(most, (int, float)) or isinstance(most, bool) or most < 0 \
            or not isinstance(size, (int, float)) or isinstance(size, bool) or size <= most:
        return None
    return (f"TransferInputSizeMB ({int(size)}) is greater than MAX_TRANSFER_INPUT_MB ({int(most)}) "
            "at submit time")


def starter_job(ad: dict) -> dict:
    """What the starter needs of a job ad, evaluated to plain values."""
    out = {}
    for name in STARTER_JOB_ATTRS:
        if name in ad:
            value = adwire.evaluate(ad, name)
            if value is not None:
                out[name] = value
    return out


def exit_records(job: JobId, ad: dict, outcome: dict, now: float,
                 periodic: Callable[[JobId, dict, float], list | None] | None = None) -> list:
    """The records that end a run with ``outcome`` (exit policy of schedd.md 5.2).

    ``ad`` is the job's current ad.  Returns the records to append: usage
    attributes, then terminated (+ leave), requeue (evicted, terminated and
    requeued), or hold.  For a job that exited, ``periodic`` (job, ad after the
    exit, now) gives the records of the periodic policy's hold or remove if it
    fires first: as HTCondor's shadow checks a job that exits (PERIODIC_THEN_EXIT),
    PeriodicHold and PeriodicRemove come before OnExitHold and OnExitRemove.
    """
    kind = outcome.get("kind")
    usage = outcome.get("usage") or {}
    clear = tuple(a for a in RUN_ATTRS if a in ad)
    common = usage_attrs(ad, outcome, now)
    transfers = transfer_events(job, ad, outcome)
    if kind in ("spawn_failed", "transfer_failed"):
        setattrs = SetAttributes(job, set=common, delete=clear, by="schedd")
        return [setattrs, *transfers, event(EventType.JOB_HELD, job, now,
                                            HoldReason=hold_reason(ad, outcome),
                                            HoldReasonCode=int(outcome.get("hold_code", HOLD_SPAWN)),
                                            HoldReasonSubCode=int(outcome.get("errno", 0)))]
    if kind != "exit":
        setattrs = SetAttributes(job, set=common, delete=clear, by="schedd")
        return [setattrs, *transfers, event(EventType.JOB_EVICTED, job, now, Checkpointed=False,
                                RunRemoteUsage=usage_text(usage.get("user", 0), usage.get("sys", 0)),
                                Reason=_evict_reason(outcome.get("reason")))]
    by_signal = bool(outcome.get("by_signal"))
    exit_attrs = dict(common, ExitBySignal="true" if by_signal else "false")
    if by_signal:
        exit_attrs["ExitSignal"] = str(int(outcome.get("signal", 0)))
    else:
        exit_attrs["ExitCode"] = str(int(outcome.get("code", 0)))
    exit_attrs["NumJobCompletions"] = str(int(adwire.evaluate(ad, "NumJobCompletions") or 0) + 1)
    after = {**ad, **exit_attrs, "CompletionDate": str(int(now))}
    run_usage = usage_text(usage.get("user", 0), usage.get("sys", 0))
    term: dict[str, Any] = dict(TerminatedNormally=not by_signal, RunRemoteUsage=run_usage,
                TotalRemoteUsage=run_usage)
    if by_signal:
        term.update(TerminatedBySignal=int(outcome.get("signal", 0)), CoreFile=None)
    else:
        term["ReturnValue"] = int(outcome.get("code", 0))
    sets = [SetAttributes(job, set={k: v for k, v in exit_attrs.items() if k != "NumJobCompletions"},
                          delete=clear, by="schedd"), *transfers]
    early = periodic(job, after, now) if periodic is not None else None
    if early is not None:
        return [*sets, *early]
    verdict = exit_verdict(after)
    if verdict[0] == "hold":
        return [*sets, event(EventType.JOB_HELD, job, now, HoldReason=verdict[1],
                            HoldReasonCode=HOLD_POLICY, HoldReasonSubCode=verdict[2])]
    if verdict[0] == "requeue":
        return [*sets, event(EventType.JOB_EVICTED, job, now, TerminatedAndRequeued=True,
                            Checkpointed=False, RunRemoteUsage=run_usage, **{
                                k: v for k, v in term.items()
                                if k in ("TerminatedNormally", "ReturnValue", "TerminatedBySignal")})]
    # The ToE tag HTCondor's starter leaves in the job ad and the shadow writes after the
    # usage table: the job ended by itself, when, with which code or signal.
    toe = {"How": "OF_ITS_OWN_ACCORD", "Who": "itself", "When": int(now), "HowCode": 0}
    if by_signal:
        toe["ExitSignal"] = int(outcome.get("signal", 0))
    else:
        toe["ExitCode"] = int(outcome.get("code", 0))
    toe["ExitBySignal"] = by_signal
    term.update(resource_table(after))
    records = [*sets, event(EventType.JOB_TERMINATED, job, now, hidden={"toe": toe}, **term)]
    if not adwire.evaluate({**after, "JobStatus": str(int(JobStatus.COMPLETED))}, "LeaveJobInQueue"):
        records.append(LeaveQueue(job))
    return records


def resource_table(ad: dict) -> dict:
    """The termination's resources table (``Partitionable Resources : Usage Request``): the
    job's requests and measured usage for Cpus, Disk (KB) and Memory (MB).  The Allocated
    column HTCondor adds from the slot is left out: the job ad does not hold the slot's size."""
    out = {}
    for name in ("RequestCpus", "RequestDisk", "RequestMemory", "DiskUsage", "MemoryUsage"):
        value = adwire.evaluate(ad, name) if name in ad else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[name] = int(value) if float(value).is_integer() else float(value)
    return out


def hold_reason(ad: dict, outcome: dict) -> str:
    """HoldReason of a run that could not start or whose files could not be transferred."""
    message = outcome.get("message", "cannot start the job")
    slot = adwire.evaluate(ad, "RemoteSlot") or "the execution point"
    failure = TRANSFER_FAILURES.get(int(outcome.get("hold_code", 0)))
    if outcome.get("kind") == "transfer_failed" and failure:
        return f"{failure} at execution point {slot}. Details: {message}"
    return f"Error from {slot if outcome.get('kind') == 'transfer_failed' else 'starter'}: {message}"


def transfer_events(job: JobId, ad: dict, outcome: dict) -> list:
    """FILE_TRANSFER events the starter timed (output transfer), in order."""
    return file_transfer_events(job, ad, outcome.get("transfers") or [])


def file_transfer_events(job: JobId, ad: dict, timed: list) -> list:
    """FILE_TRANSFER (040) records of ``[[Type, time], ...]`` as HTCondor writes them:
    the execution point's address, and the queueing delay on output start."""
    host = adwire.evaluate(ad, "RemoteHost")
    host = host if isinstance(host, str) else None
    return [event(EventType.FILE_TRANSFER, job, when, Type=int(kind), Host=host,
                  QueueingDelay=0 if int(kind) == 5 else None)
            for kind, when in timed]


def usage_attrs(ad: dict, outcome: dict, now: float) -> dict:
    """CPU, wall clock and memory attributes a finished run adds to the job ad.

    As HTCondor's shadow does at the end of a run: every run adds to the
    cumulative times (``CumulativeSlotTime`` = wall time x the slot's cores);
    a run that ended with the job's exit is *committed* (``CommittedTime``,
    ``CommittedSlotTime``), an evicted one is not -- goodput is
    CommittedTime / RemoteWallClockTime.
    """
    usage = outcome.get("usage") or {}
    wall = max(0.0, float(outcome.get("end", now)) - float(outcome.get("start", now)))
    cpus = adwire.evaluate(ad, "RequestCpus")
    cpus = cpus if isinstance(cpus, (int, float)) and not isinstance(cpus, bool) and cpus > 0 else 1
    user, system = float(usage.get("user", 0.0)), float(usage.get("sys", 0.0))

    def total(name: str, more: float) -> str:
        before = adwire.evaluate(ad, name)
        before = before if isinstance(before, (int, float)) and not isinstance(before, bool) else 0
        return adwire.literal_text(float(before) + more)

    attrs = {
        "RemoteUserCpu": adwire.literal_text(user),
        "RemoteSysCpu": adwire.literal_text(system),
        "CumulativeRemoteUserCpu": total("CumulativeRemoteUserCpu", user),
        "CumulativeRemoteSysCpu": total("CumulativeRemoteSysCpu", system),
        "RemoteWallClockTime": total("RemoteWallClockTime", wall),
        "LastRemoteWallClockTime": adwire.literal_text(wall),
        "CumulativeSlotTime": total("CumulativeSlotTime", wall * cpus),
    }
    if outcome.get("kind") == "exit":
        attrs["CommittedTime"] = str(round(float(total("CommittedTime", wall))))
        attrs["CommittedSlotTime"] = total("CommittedSlotTime", wall * cpus)
        attrs["CommittedSuspensionTime"] = str(int(adwire.evaluate(ad, "CommittedSuspensionTime") or 0))
    if isinstance(outcome.get("disk_usage_kb"), int):
        attrs["DiskUsage"] = attrs["DiskUsage_RAW"] = str(max(1, outcome["disk_usage_kb"]))
    if usage.get("maxrss_kb"):
        attrs["ResidentSetSize"] = str(int(usage["maxrss_kb"]))
        attrs["ImageSize"] = str(max(int(usage["maxrss_kb"]), int(adwire.evaluate(ad, "ImageSize") or 0)))
    return attrs


def _evict_reason(reason) -> str | None:
    return {"startd_gone": "The startd went away", "vacate": "Job was vacated",
            "kill": "Job was vacated", "shutdown": "The pool is shutting down",
            "worker_lost": "The Dask worker running the job went away"}.get(reason)


def exit_verdict(ad: dict) -> tuple:
    """("hold", reason, subcode) | ("requeue",) | ("done",) for a job that just exited."""
    if _fires(ad, "OnExitHold"):
        reason = adwire.evaluate(ad, "OnExitHoldReason")
        if not isinstance(reason, str):
            reason = f"The job attribute OnExitHold expression '{ad['OnExitHold']}' evaluated to TRUE"
        sub = adwire.evaluate(ad, "OnExitHoldSubCode")
        return ("hold", reason, sub if isinstance(sub, int) else 0)
    if "OnExitRemove" in ad:
        value = adwire.evaluate(ad, "OnExitRemove")
        if value is False or (isinstance(value, (int, float)) and not isinstance(value, bool)
                              and value == 0):
            return ("requeue",)
    return ("done",)


def _fires(ad: dict, name: str) -> bool:
    if name not in ad:
        return False
    value = adwire.evaluate(ad, name)
    return value is True or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and value != 0)
