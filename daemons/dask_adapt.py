"""A Dask cluster the pool makes and scales by its queue, as HTCondor's glidein and annex
factories grow a pool from its idle jobs.

``DASK_CLUSTER`` names a Dask cluster manager (``distributed.LocalCluster``,
``dask_jobqueue.SLURMCluster``, ``dask_jobqueue.HTCondorCluster``, ...; ``module.Class``
or ``module:Class``) and ``DASK_CLUSTER_OPTIONS`` its keyword arguments as a JSON
object.  The Dask startd makes it on start, uses its scheduler, and closes it (its
workers with it) when it stops.  With ``DASK_ADAPT_MAXIMUM`` set, the cluster scales
through Dask's own ``adapt()`` between ``DASK_ADAPT_MINIMUM`` (default 0) and that
maximum, every ``DASK_ADAPT_INTERVAL`` seconds (default 1), and what it aims at is the
pool's demand rather than Dask's own task backlog (the pool's jobs become Dask tasks
only once matched to a worker, so Dask alone would never ask for a first worker): the
cores the idle jobs of every schedd request plus those the jobs on Dask workers hold,
in workers of the cores one has.  An empty queue gives the workers back; a worker
holding a claim is never the one retired.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import math

from jobledger.eventcore.errors import HTCondorException

IDLE_LIMIT = 10_000   # idle jobs asked of one schedd per look (the maximum's cores bound it sooner)


def cluster_factory(config):
    """(class, options) that ``DASK_CLUSTER`` and ``DASK_CLUSTER_OPTIONS`` name, or
    ``HTCondorException`` naming the macro at fault."""
    name = config("DASK_CLUSTER", "").strip()
    module_name, sep, attr = name.partition(":")
    if not sep:
        module_name, _, attr = name.rpartition(".")
    if not module_name or not attr:
        raise HTCondorException(f"DASK_CLUSTER = {name!r}: expected a class such as distributed.LocalCluster")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise HTCondorException(f"DASK_CLUSTER = {name!r}: cannot import it: {exc}") from None
    text = config("DASK_CLUSTER_OPTIONS", "").strip() or "{}"
    try:
        options = json.loads(text)
    except ValueError as exc:
        raise HTCondorException(f"DASK_CLUSTER_OPTIONS is not JSON: {exc}") from None
    if not isinstance(options, dict):
        raise HTCondorException("DASK_CLUSTER_OPTIONS must be a JSON object of keyword arguments")
    return factory, options


def _number(config, macro: str, default: str) -> tuple[float, str]:
    text = config(macro, default).strip()
    try:
        value = float(text)
    except ValueError:
        raise HTCondorException(f"{macro} = {text!r} is not a number") from None
    return value, text


def _workers(config, macro: str, default: str) -> int:
    value, text = _number(config, macro, default)
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise HTCondorException(f"{macro} = {text!r}: expected a whole number of workers >= 0")
    return int(value)


def _seconds(config, macro: str, default: str) -> float:
    value, text = _number(config, macro, default)
    if not math.isfinite(value) or value <= 0:
        raise HTCondorException(f"{macro} = {text!r}: expected seconds > 0")
    return value


def adapt_bounds(config) -> tuple[int, int, float] | None:
    """(minimum, maximum, interval) of ``DASK_ADAPT_*``; None when no maximum is set."""
    if not config("DASK_ADAPT_MAXIMUM", "").strip():
        return None
    minimum = _workers(config, "DASK_ADAPT_MINIMUM", "0")
    maximum = _workers(config, "DASK_ADAPT_MAXIMUM", "")
    interval = _seconds(config, "DASK_ADAPT_INTERVAL", "1")
    if maximum < max(minimum, 1):
        raise HTCondorException(f"DASK_ADAPT_MAXIMUM = {maximum} is below DASK_ADAPT_MINIMUM = {minimum} or 1")
    return minimum, maximum, interval


def workers_wanted(idle_cores: int, held_cores: int, cores_per_worker: int) -> int:
    """Workers of ``cores_per_worker`` cores that the demand fills."""
    return math.ceil(max(0, idle_cores + held_cores) / max(1, cores_per_worker))


def pool_adaptive(demand, keep):
    """A ``distributed.Adaptive`` whose target is ``demand()`` (workers, called in a
    thread: it asks daemons) and which never retires the workers ``keep()`` names."""
    from distributed.deploy.adaptive import Adaptive

    class PoolDemand(Adaptive):
        async def target(self) -> int:
            return await asyncio.get_running_loop().run_in_executor(None, demand)

        async def workers_to_close(self, target: int) -> list:
            kept = await asyncio.get_running_loop().run_in_executor(None, keep)
            return [name for name in await super().workers_to_close(target) if name not in kept]

    return PoolDemand
