"""The schedd's spool: where a job's files live on the access point's side.

``job_spool(SPOOL, job)`` is ``$(SPOOL)/<cluster>/<proc>``.  It holds

- ``in/``: the inputs of a job submitted with ``spool=True``, copied there
  by ``Schedd.spool()`` (``spool_inputs``).  The job's ad then points at
  them: ``Cmd``, ``In`` and ``TransferInput`` name files in ``in/``, ``Iwd``
  is ``out/``, and the submitter's values are kept as ``SUBMIT_Iwd``,
  ``SUBMIT_Cmd``, ``SUBMIT_In``, ``SUBMIT_TransferInput``, ``SUBMIT_Out``,
  ``SUBMIT_Err`` and ``SUBMIT_TransferOutputRemaps``.  The job runs with
  file transfer from there, whatever its ``should_transfer_files``.
- ``out/``: what such a job's run sent back; ``Schedd.retrieve()`` copies
  it into ``SUBMIT_Iwd`` (``retrieve_outputs``: streams to their names,
  other files through the remaps).
- ``evicted/``: the files an ON_EXIT_OR_EVICT job had when it was evicted
  (input of its next run).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from jobledger.eventcore import adwire
from jobledger.daemons import transfer
from jobledger.eventcore import transfer as plan
from jobledger.eventcore.ids import JobId

SAVED = ("Iwd", "Cmd", "In", "TransferInput", "Out", "Err", "TransferOutputRemaps")


def job_spool(spool_dir: Path, job: JobId) -> Path:
    return Path(spool_dir) / str(job.cluster) / str(job.proc)


def remove_job_spool(spool_dir: Path, job: JobId) -> None:
    """Forget a job's spooled files (and its cluster's directory once empty)."""
    where = job_spool(spool_dir, job)
    shutil.rmtree(where, ignore_errors=True)
    try:
        where.parent.rmdir()
    except OSError:
        pass


def sweep(spool_dir: Path, in_queue) -> int:
    """Remove the spool of every job no longer in the queue (``in_queue(JobId)``)."""
    removed = 0
    for cluster in list(Path(spool_dir).iterdir()) if Path(spool_dir).is_dir() else []:
        if not cluster.name.isdigit() or not cluster.is_dir():
            continue
        for proc in list(cluster.iterdir()):
            if proc.name.isdigit() and not in_queue(JobId(int(cluster.name), int(proc.name))):
                remove_job_spool(spool_dir, JobId(int(cluster.name), int(proc.name)))
                removed += 1
    return removed


def spool_inputs(spool_dir: Path, job: JobId, ad: dict, values: dict) -> dict:
    """Copy a spool=True job's inputs into its spool; returns the attributes
    (expression text) that make it run from there.  ``ad`` is the job's ad,
    ``values`` its evaluated starter values.  ``TransferError`` if an input
    cannot be read."""
    inputs = plan.input_plan(values)
    where = job_spool(spool_dir, job)
    shutil.rmtree(where, ignore_errors=True)
    (where / "in").mkdir(parents=True)
    (where / "out").mkdir()
    transfer.stage_input(inputs, str(where / "in"))
    return spooled_changes(where, ad, values, inputs)


def spooled_changes(where: Path, ad: dict, values: dict, inputs: plan.InputPlan) -> dict:
    """The attributes (expression text) that make a job whose inputs are in
    ``where/in`` run from its spool ``where``; the submitter's values kept as SUBMIT_*."""
    special = {s.name for s in inputs.sources if s.executable}
    if isinstance(inputs.stdin, str) and plan.flag(values, "TransferIn", True):
        special.add(inputs.stdin)
    changes = {f"SUBMIT_{name}": ad[name] for name in SAVED if name in ad}
    changes.update(Iwd=adwire.quote(str(where / "out")), ShouldTransferFiles='"YES"',
                   TransferInput=adwire.quote(",".join(
                       str(where / "in" / name) for name in sorted(os.listdir(where / "in"))
                       if name not in special)))
    if inputs.command.startswith("./"):
        changes["Cmd"] = adwire.quote(str(where / "in" / inputs.command[2:]))
    if inputs.stdin in special:
        changes["In"] = adwire.quote(str(where / "in" / inputs.stdin))
    for stream in ("Out", "Err"):
        path = values.get(stream)
        if isinstance(path, str) and path not in ("", "/dev/null"):
            changes[stream] = adwire.quote(os.path.basename(path))
    return changes


def retrieve_outputs(spool_dir: Path, job: JobId, ad: dict) -> list[str]:
    """Copy what a spooled job sent back into its submitter's Iwd; returns the
    destinations written.  ``TransferError(12)`` if one cannot be written."""
    return deliver_outputs(job_spool(spool_dir, job) / "out", job, ad)


def deliver_outputs(out: Path, job: JobId, ad: dict) -> list[str]:
    """The files of ``out`` (a spooled job's returned sandbox, or its copy on a
    remote client) into the submitter's Iwd, by the job's SUBMIT_* attributes."""
    if not out.is_dir():
        return []
    original = {name: adwire.evaluate(ad, f"SUBMIT_{name}") for name in SAVED}
    original = {name: value for name, value in original.items() if value is not None}
    streams = {}
    for stream in ("Out", "Err"):
        path = original.get(stream)
        if isinstance(path, str) and path not in ("", "/dev/null"):
            streams[os.path.basename(path)] = os.path.join(str(original.get("Iwd", "/")), path)
    items = [plan.Output(name, streams.get(name) or plan.remap_for(original, name))
             for name in sorted(os.listdir(out))]
    return transfer.send_output(original, items, str(out), f"{job.cluster}.{job.proc}")
