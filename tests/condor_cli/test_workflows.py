"""Parsl's CondorProvider and dask-jobqueue's HTCondorCluster, unchanged, against a pool.

Both shell out to condor_submit / condor_q / condor_rm; each runs in a child
Python (their threads and event loops stay out of the test process) with the
package's console scripts on PATH and CONDOR_CONFIG naming the pool.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jobledger.condor_cli import history, queue
from tests.condor_cli.conftest import run
from tests.pool.conftest import running_pool

BIN = str(Path(sys.executable).parent)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """A pool of this module's own: jobs other command tests leave running in the shared pool
    would hold the slots that the workflows' two workers need."""
    yield from running_pool(tmp_path_factory, PERIODIC_EXPR_INTERVAL="1")


def run_child(script: str, cwd: Path, timeout: float = 150) -> str:
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_parsl_app_returns_its_value_from_a_condor_block(pool, tmp_path):
    os.environ["CONDOR_CONFIG"] = str(pool.config_file)
    runinfo = tmp_path / "runinfo"
    # the block's script reaches the job by file transfer (transfer_input_files, a relative path)
    out = run_child(f"""
        import parsl
        from parsl.config import Config
        from parsl.executors import HighThroughputExecutor
        from parsl.providers import CondorProvider

        provider = CondorProvider(init_blocks=1, min_blocks=0, max_blocks=1, nodes_per_block=1,
                                  worker_init="export PATH={BIN}:$PATH", walltime="00:05:00")
        config = Config(executors=[HighThroughputExecutor(label="condor", address="127.0.0.1",
                                                          max_workers_per_node=1, provider=provider)],
                        run_dir="{runinfo}", strategy_period=1)
        with parsl.load(config):
            @parsl.python_app
            def add(a, b):
                return a + b
            print("result", add(2, 40).result(timeout=120))
        """, tmp_path)
    assert "result 42" in out
    # the block was a jobledger job; Parsl's cleanup removed it with condor_rm
    parsl_jobs = 'Cmd == "/bin/bash"'
    assert run(queue.main, "-constraint", parsl_jobs, "-af", "ClusterId").out == ""
    assert run(history.main, "-constraint", parsl_jobs, "-af", "JobStatus").out == "3\n"


def test_dask_computation_runs_on_workers_that_are_condor_jobs(pool, tmp_path):
    os.environ["CONDOR_CONFIG"] = str(pool.config_file)
    out = run_child(f"""
        import subprocess, sys
        from dask.distributed import Client
        from dask_jobqueue import HTCondorCluster

        with HTCondorCluster(cores=1, memory="200MB", disk="100MB", processes=1, python=sys.executable,
                             scheduler_options={{"host": "127.0.0.1", "dashboard_address": None}},
                             worker_extra_args=["--host", "127.0.0.1"]) as cluster:
            cluster.scale(jobs=2)
            with Client(cluster) as client:
                client.wait_for_workers(2, timeout=90)
                print("sum", sum(client.gather(client.map(lambda x: x * x, range(100)))))
                workers = sorted(w["name"] for w in client.scheduler_info()["workers"].values())
                print("workers", workers)
                print(subprocess.run(["condor_q", "-af", "JobStatus", "DaskWorkerName"],
                                     capture_output=True, text=True, check=True).stdout, end="")
        """, tmp_path)
    assert "sum 328350" in out
    lines = out.splitlines()
    running = [line for line in lines if line.startswith("2 htcondor--")]
    assert len(running) == 2, out  # both workers were running jobledger jobs
    names = [line.split()[1].strip("-").replace("htcondor--", "") for line in running]
    assert all(name.replace(".", "").isdigit() for name in names)
    # closing the cluster removed its jobs
    assert run(queue.main, "-constraint", "DaskWorkerName =!= undefined", "-af", "ClusterId").out == ""
    assert sorted(run(history.main, "-af", "JobStatus", "-constraint", "DaskWorkerName =!= undefined")
                  .out.split()) == ["3", "3"]
