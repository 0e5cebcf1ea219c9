"""Dask workers on another network identity: a network namespace of the test's own,
with its own address and host name, reached over Dask's TLS.

The worker's jobs run under its name: the EXECUTE event names the worker's
address and host, the slot ad its host.  Then the namespace's link is cut (a
partition, the worker alive and running): past the scheduler's lease its jobs
are evicted and run again on a worker here, and when the link comes back its
stale runs -- ended meanwhile -- are never reported: each job terminates once.
Real `dask scheduler` and `dask worker` processes; nothing leaves this machine.
"""

from __future__ import annotations

import collections
import re
import subprocess
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons.audit import audit
from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import stop_and_check, wait_until
from tests.pool.netns import Namespace
from tests.pool.test_dask import events, job_sandboxes, start_scheduler, start_worker, stop_all, worker_names

pytest.importorskip("distributed")

LEASE = "8s"          # the scheduler's worker-ttl: a silent worker is removed after it
FAR_HOST = "far-host"


def certificate(base: Path, *addresses: str) -> tuple[dict, list]:
    """A self-signed certificate for ``addresses``: the PEM files and the Dask TLS flags."""
    pem = {name: base / f"{name}.pem" for name in ("cert", "key")}
    names = ",".join(f"IP:{address}" for address in addresses)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(pem["key"]), "-out", str(pem["cert"]), "-subj", "/CN=jobledger-test",
                    "-addext", f"subjectAltName={names}"], check=True, capture_output=True, timeout=60)
    return pem, ["--tls-ca-file", str(pem["cert"]), "--tls-cert", str(pem["cert"]), "--tls-key", str(pem["key"])]


def test_a_worker_elsewhere_runs_jobs_under_its_own_name_and_survives_a_cut_link(tmp_path: Path):
    with Namespace() as far:
        pem, tls = certificate(tmp_path, far.here, far.there)
        scheduler, address = start_scheduler(tmp_path, tls + ["--protocol", "tls"], host=far.here,
                                             env={"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": LEASE})
        processes = [scheduler]
        try:
            assert address.startswith(f"tls://{far.here}:")
            remote = start_worker(address, tmp_path / "far", "far", nthreads=2, tls=tls, host=far.there,
                                  prefix=far.prefix(FAR_HOST))
            processes.append(remote)
            pool = PersonalPool(local_dir=tmp_path / "pool", config={
                "DASK_SCHEDULER_ADDRESS": address, "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD",
                "DASK_TLS_CA_FILE": str(pem["cert"]), "DASK_TLS_CERT": str(pem["cert"]),
                "DASK_TLS_KEY": str(pem["key"]), "NEGOTIATOR_INTERVAL": "2"})
            pool.start()
            try:
                _far_jobs(pool, far, address, tls, remote, processes, tmp_path)
            finally:
                far.up()
                stop_and_check(pool)
        finally:
            stop_all(processes)


def _far_jobs(pool, far: Namespace, address: str, tls: list, remote, processes: list, tmp_path: Path) -> None:
    wait_until(lambda: any("@dask-far@" in n for n in worker_names(pool)), 60, what="the far worker's slot")
    [slot] = [ad for ad in htcondor.Collector().query(htcondor.AdTypes.Startd, "SlotType == \"Partitionable\"")
              if "@dask-far@" in ad["Name"]]
    assert slot["Machine"] == FAR_HOST and slot["Name"].endswith(f"@{FAR_HOST}")
    assert slot["DaskWorkerAddress"].startswith(f"tls://{far.there}:")

    iwd, gate, runs = tmp_path / "submit", tmp_path / "gate", tmp_path / "runs.txt"
    iwd.mkdir()
    gate.touch()                 # the namespace shares this file system: the gate reaches both sides
    (iwd / "input.txt").write_text("from the submit side\n")
    (iwd / "job.sh").write_text(f'#!/bin/sh\nwhile [ -e "$1" ]; do sleep 0.05; done\necho "$2" >> {runs}\n'
                                f'{{ hostname; cat input.txt; }} > "out$2.txt"\n')
    log = iwd / "jobs.log"
    pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "arguments": f"{gate} $(ProcId)", "initialdir": str(iwd),
        "should_transfer_files": "YES", "transfer_input_files": "input.txt", "log": str(log)}), count=2)
    wait_until(lambda: len(job_sandboxes(tmp_path / "far")) == 2, 60, what="both jobs on the far worker")
    executes = [e for e in events(log) if int(e.type) == 1]
    assert all(re.fullmatch(rf"<{re.escape(far.there)}:\d+\?alias={FAR_HOST}>", e["ExecuteHost"])
               for e in executes), [e["ExecuteHost"] for e in executes]
    assert all(e["SlotName"].endswith(f"@dask-far@{FAR_HOST}") for e in executes)

    spare = start_worker(address, tmp_path / "spare", "spare", nthreads=2, tls=tls, host=far.here)
    processes.append(spare)
    wait_until(lambda: any("@dask-spare@" in n for n in worker_names(pool)), 60, what="the spare worker's slot")
    far.down()                                # a partition: the far worker lives on, unheard
    wait_until(lambda: [int(e.type) for e in events(log)].count(4) == 2, 90,
               what="both jobs evicted once the lease ran out")
    assert not any("@dask-far@" in n for n in worker_names(pool))
    wait_until(lambda: len(job_sandboxes(tmp_path / "spare")) == 2, 60, what="both jobs again on the spare")
    gate.unlink()                             # every run may end now, the cut-off ones too
    wait_until(lambda: [int(e.type) for e in events(log)].count(5) == 2, 60, what="both jobs to end")
    wait_until(lambda: not job_sandboxes(tmp_path / "far"), 30, what="the cut-off runs to end")

    far.up()                                  # back: the scheduler has let the worker go
    wait_until(lambda: remote.poll() is not None, 120, what="the cut-off worker to shut down")
    assert sorted(runs.read_text().split()) == ["0", "0", "1", "1"]     # the stale runs did end
    seen = events(log)
    assert collections.Counter(e.proc for e in seen if int(e.type) == 5) == {0: 1, 1: 1}
    for proc in (0, 1):
        host, text = (iwd / f"out{proc}.txt").read_text().split("\n", 1)
        assert text == "from the submit side\n" and host != FAR_HOST     # the spare's run came back
    wait_until(lambda: not pool.schedd.query("true", ["ProcId"]), 30, what="the queue to empty")
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")
