"""GPU ids of an execute machine, which of them a claim holds, and what its job sees.

HTCondor names a machine's GPUs by id (``CUDA0``, ``CUDA1``... or ``GPU-<uuid>``),
gives each dynamic slot some of them (``AssignedGPUs``, a comma-separated list,
also copied into the job's ad), and sets the job's environment from them:
``_CONDOR_AssignedGPUs`` holds the list, and each variable named by the
``ENVIRONMENT_FOR_AssignedGPUs`` knob gets the ids, each rewritten by the knob's
``/regex/replacement/`` (the default turns ``CUDA3`` into ``3`` for
``CUDA_VISIBLE_DEVICES``).  A job on a machine with GPUs that holds none gets
``ENVIRONMENT_VALUE_FOR_UnAssignedGPUs`` (``10000``, no such device) in those
variables, so it cannot use a GPU another job holds.

A Dask worker declares how many GPUs it has (``dask worker --resources GPU=n``);
their ids are taken from the worker's own ``CUDA_VISIBLE_DEVICES`` when it is
set (``2,3`` -> ``CUDA2``, ``CUDA3``; UUIDs kept as they are), else they are
``CUDA0`` ... ``CUDA<n-1>``.
"""

from __future__ import annotations

import re

DEFAULT_ENVIRONMENT = "GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//"
DEFAULT_UNASSIGNED = "10000"


def machine_gpu_ids(count: int, visible: str | None) -> list[str]:
    """The ids of a machine's ``count`` GPUs; ``visible``: its ``CUDA_VISIBLE_DEVICES``
    (None when unset).  A list naming fewer devices than ``count`` limits it to those."""
    if count <= 0:
        return []
    if visible is None:
        return [f"CUDA{i}" for i in range(count)]
    named = [part.strip() for part in visible.split(",") if part.strip()]
    return [f"CUDA{part}" if part.isdigit() else part for part in named][:count]


def pick(ids: list[str], taken: set[str], count: int) -> list[str] | None:
    """The first ``count`` of ``ids`` not ``taken``, or None when too few are left."""
    free = [gpu for gpu in ids if gpu not in taken]
    return free[:count] if len(free) >= count else None


def _rules(spec: str) -> list[tuple[str, str | None, str]]:
    """``NAME`` or ``NAME=/regex/replacement/`` entries, separated by spaces or commas."""
    rules = []
    for entry in re.findall(r"[^\s,=]+(?:=/[^/]*/[^/]*/)?", spec or ""):
        name, _, rewrite = entry.partition("=")
        if rewrite:
            _, pattern, replacement, _ = rewrite.split("/")
            rules.append((name, pattern, replacement))
        else:
            rules.append((name, None, ""))
    return rules


def job_environment(assigned: list[str], machine_has_gpus: bool, spec: str = DEFAULT_ENVIRONMENT,
                    unassigned: str = DEFAULT_UNASSIGNED, tag: str = "GPUs") -> dict[str, str]:
    """The variables a job holding ``assigned`` GPU ids gets (none on a machine without GPUs);
    ``tag``: another custom resource's name, whose ids go the same way (``_CONDOR_Assigned<tag>``
    and the variables ``ENVIRONMENT_FOR_Assigned<tag>`` names)."""
    if not machine_has_gpus:
        return {}
    env = {f"_CONDOR_Assigned{tag}": ",".join(assigned)} if assigned else {}
    for name, pattern, replacement in _rules(spec):
        if not assigned:
            env[name] = unassigned
            continue
        try:
            env[name] = ",".join(gpu if pattern is None else re.sub(pattern, replacement, gpu)
                                 for gpu in assigned)
        except re.error:
            env[name] = ",".join(assigned)   # a knob we cannot read passes the ids as they are
    return env
