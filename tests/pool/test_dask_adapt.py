"""The queue scales a Dask cluster the pool makes (DASK_CLUSTER, DASK_ADAPT_*).

A real ``distributed.LocalCluster`` with no workers: idle jobs make Dask's own
``adapt()`` start workers (never more than the maximum), the jobs run on them, and
an empty queue gives the workers back; the pool's stop closes the cluster and
leaves no process.  Bad settings refuse the start naming the macro.
"""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons.audit import audit
from jobledger.daemons.dask_adapt import adapt_bounds, cluster_factory, workers_wanted
from jobledger.daemons.client.personal import PersonalPool
from jobledger.eventcore.errors import HTCondorException
from tests.pool.conftest import stop_and_check, wait_until
from tests.pool.test_dask import events, job_sandboxes, worker_names

pytest.importorskip("distributed")


def dask_worker_pids(local: Path) -> list[int]:
    """Processes holding a work directory's lock under ``local``: each Dask worker holds
    its own (``<dir>.dirlock``) for its whole life; its jobs hold none."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            names = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for name in names:
            try:
                target = os.readlink(f"/proc/{entry}/fd/{name}")
                if target.startswith(str(local) + "/") and target.endswith(".dirlock"):
                    found.append(int(entry))
                    break
            except OSError:
                continue
    return found


def test_idle_jobs_grow_the_cluster_and_an_empty_queue_shrinks_it(tmp_path: Path):
    local = tmp_path / "dask"
    options = {"n_workers": 0, "threads_per_worker": 1, "processes": True, "host": "127.0.0.1",
               "dashboard_address": None, "local_directory": str(local), "memory_limit": "1GiB"}
    pool = PersonalPool(local_dir=tmp_path / "pool", config={
        "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD", "NEGOTIATOR_INTERVAL": "2",
        "DASK_CLUSTER": "distributed.LocalCluster", "DASK_CLUSTER_OPTIONS": json.dumps(options),
        "DASK_ADAPT_MAXIMUM": "2", "DASK_ADAPT_INTERVAL": "0.5"})
    pool.start()
    try:
        assert worker_names(pool) == set()       # nothing idle, no worker asked for
        iwd, gate = tmp_path / "submit", tmp_path / "gate"
        iwd.mkdir()
        gate.touch()
        (iwd / "job.sh").write_text(f'#!/bin/sh\nwhile [ -e "{gate}" ]; do sleep 0.05; done\necho "$1" > out.txt\n')
        log = iwd / "jobs.log"
        pool.schedd.submit(htcondor.Submit({
            "executable": "job.sh", "arguments": "$(ProcId)", "initialdir": str(iwd),
            "should_transfer_files": "YES", "transfer_output_remaps": '"out.txt=out$(ProcId).txt"',
            "log": str(log)}), count=4)
        wait_until(lambda: len(job_sandboxes(local)) == 2, 120, what="two jobs on two new workers")
        assert len(worker_names(pool)) == 2      # four idle cores asked for, the maximum given
        assert len(dask_worker_pids(local)) == 2
        gate.unlink()
        wait_until(lambda: [int(e.type) for e in events(log)].count(5) == 4, 120, what="every job to end")
        assert collections.Counter(e.proc for e in events(log) if int(e.type) == 5) == {p: 1 for p in range(4)}
        for proc in range(4):
            assert (iwd / f"out{proc}.txt").read_text() == f"{proc}\n"
        wait_until(lambda: not pool.schedd.query("true", ["ProcId"]), 30, what="the queue to empty")
        wait_until(lambda: not worker_names(pool), 120, what="the empty queue to give the workers back")
        wait_until(lambda: not dask_worker_pids(local), 60, what="the retired workers' processes to end")
        wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")
    finally:
        stop_and_check(pool)
    assert not dask_worker_pids(local)


def test_settings_are_checked_naming_the_macro():
    def config(values):
        return lambda name, default="": values.get(name, default)
    assert adapt_bounds(config({})) is None
    assert adapt_bounds(config({"DASK_ADAPT_MAXIMUM": "4"})) == (0, 4, 1.0)
    for values, says in [({"DASK_ADAPT_MAXIMUM": "many"}, "DASK_ADAPT_MAXIMUM = 'many' is not a number"),
                         ({"DASK_ADAPT_MAXIMUM": "2.5"}, "DASK_ADAPT_MAXIMUM = '2.5': expected a whole number"),
                         ({"DASK_ADAPT_MAXIMUM": "2", "DASK_ADAPT_MINIMUM": "3"}, "below DASK_ADAPT_MINIMUM"),
                         ({"DASK_ADAPT_MAXIMUM": "2", "DASK_ADAPT_INTERVAL": "0"}, "expected seconds > 0"),
                         ({"DASK_ADAPT_MAXIMUM": "nan"}, "expected a whole number")]:
        with pytest.raises(HTCondorException, match=says):
            adapt_bounds(config(values))
    factory, options = cluster_factory(config({"DASK_CLUSTER": "distributed:LocalCluster",
                                               "DASK_CLUSTER_OPTIONS": '{"n_workers": 0}'}))
    assert factory.__name__ == "LocalCluster" and options == {"n_workers": 0}
    for values, says in [({"DASK_CLUSTER": "LocalCluster"}, "expected a class such as distributed.LocalCluster"),
                         ({"DASK_CLUSTER": "no_such_module.Cluster"}, "cannot import it"),
                         ({"DASK_CLUSTER": "distributed.NoSuchCluster"}, "cannot import it"),
                         ({"DASK_CLUSTER": "distributed.LocalCluster", "DASK_CLUSTER_OPTIONS": "{n_workers: 0"},
                          "DASK_CLUSTER_OPTIONS is not JSON"),
                         ({"DASK_CLUSTER": "distributed.LocalCluster", "DASK_CLUSTER_OPTIONS": "[1]"},
                          "must be a JSON object")]:
        with pytest.raises(HTCondorException, match=says):
            cluster_factory(config(values))
    assert [workers_wanted(i, h, c) for i, h, c in [(0, 0, 2), (1, 0, 2), (3, 2, 2), (4, 0, 0)]] == [0, 1, 3, 4]


def test_a_pool_with_a_bad_cluster_setting_does_not_start(tmp_path: Path):
    pool = PersonalPool(local_dir=tmp_path / "pool", config={
        "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD", "DASK_CLUSTER": "distributed.LocalCluster",
        "DASK_CLUSTER_OPTIONS": "{not json"})
    with pytest.raises(HTCondorException, match="DASK_CLUSTER_OPTIONS is not JSON"):
        pool.start()
