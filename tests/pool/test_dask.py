"""The pool executing on a real Dask cluster: `dask scheduler` and `dask worker`
processes on 127.0.0.1, each worker with its own working and local directory
(nothing shared with the pool but the loopback network).

The pool here has no local startd (DAEMON_LIST without STARTD), so every job
runs on a Dask worker.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons.audit import audit
from jobledger.daemons.dask_startd import queue_share, scheduler_problem
from jobledger.daemons.dask_task import WIRE_INLINE, runner_call, wire_safe
from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import (pool_processes, python_processes, stop_and_check, thread_ticks, unnamed_threads,
                                 wait_until)
from tests.pool.test_crash import daemon_pid
from jobledger.tracking.jobeventlog import JobEventLog

pytest.importorskip("distributed")   # the [dask] extra; part of [test]

DASK = [str(Path(sys.executable).parent / "dask")]
WORKERS = 3


def start_worker(address: str, where: Path, name: str, nthreads: int = 2, tls: list | None = None,
                 env: dict | None = None, host: str = "127.0.0.1", prefix: list | None = None) -> subprocess.Popen:
    """A `dask worker` listening on ``host`` (``prefix``: a command it runs under, which
    execs it, such as one entering a network namespace)."""
    where.mkdir(parents=True)
    return subprocess.Popen(
        (prefix or []) + DASK + ["worker", address, "--name", name, "--nthreads", str(nthreads), "--no-nanny",
                                 "--host", host, "--no-dashboard", "--memory-limit", "1GiB",
                                 "--local-directory", str(where / "local"), *(tls or [])],
        cwd=where, stdout=open(where / "worker.out", "wb"), stderr=subprocess.STDOUT,
        env=None if env is None else {**os.environ, **env})


def start_scheduler(base: Path, tls: list | None = None, port: int = 0,
                    where: str = "scheduler", env: dict | None = None,
                    host: str = "127.0.0.1") -> tuple[subprocess.Popen, str]:
    """A `dask scheduler` on ``host`` (loopback unless a test's own namespace link) in
    ``base/where`` (``env``: more environment, Dask's configuration), and its address."""
    (base / where).mkdir()
    scheduler_file = base / where / "scheduler.json"
    scheduler = subprocess.Popen(DASK + ["scheduler", "--host", host, "--port", str(port),
                                         "--no-dashboard", "--scheduler-file", str(scheduler_file),
                                         *(tls or [])],
                                 cwd=base / where, stdout=open(base / f"{where}.out", "wb"),
                                 stderr=subprocess.STDOUT, env=None if env is None else {**os.environ, **env})
    try:
        wait_until(lambda: scheduler_file.exists() and scheduler_file.stat().st_size, 60,
                   what="the Dask scheduler")
    except BaseException:
        stop_all([scheduler])
        raise
    return scheduler, json.loads(scheduler_file.read_text())["address"]


def stop_all(processes: list) -> None:
    """The workers first, then the schedulers: a worker closing while its scheduler goes
    away waits out its connect timeout before it exits."""
    schedulers = [process for process in processes if "scheduler" in process.args]
    for batch in ([process for process in processes if process not in schedulers], schedulers):
        for process in batch:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in batch:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def worker_names(pool) -> set[str]:
    ads = htcondor.Collector().query(htcondor.AdTypes.Startd, projection=["Name", "SlotType"])
    return {ad["Name"] for ad in ads if ad.get("SlotType") == "Partitionable"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Dask scheduler and three workers, each in a directory of its own."""
    base = tmp_path_factory.mktemp("dask")
    scheduler, address = start_scheduler(base)
    processes = [scheduler]
    try:
        workers = {f"w{i}": start_worker(address, base / f"w{i}", f"w{i}") for i in range(WORKERS)}
        processes += workers.values()
        yield {"address": address, "base": base, "workers": workers, "processes": processes}
    finally:
        stop_all(processes)


@pytest.fixture(scope="module")
def pool(cluster, tmp_path_factory):
    running = PersonalPool(local_dir=tmp_path_factory.mktemp("pool"),
                           config={"DASK_SCHEDULER_ADDRESS": cluster["address"],
                                   "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"})
    running.start()
    wait_until(lambda: len(worker_names(running)) >= WORKERS, 60, what="the Dask workers' slots")
    yield running
    stop_and_check(running)


def gated(tmp_path: Path, then: str) -> tuple[Path, Path]:
    """A submit directory whose job.sh waits while ``tmp_path/gate`` exists (its path is
    the job's argument), then runs ``then``; (iwd, gate)."""
    iwd, gate = tmp_path / "submit", tmp_path / "gate"
    iwd.mkdir()
    gate.touch()
    (iwd / "job.sh").write_text(f'#!/bin/sh\nwhile [ -e "$1" ]; do sleep 0.05; done\n{then}\n')
    return iwd, gate


def submit_script(pool, tmp_path: Path, script: str, count: int = 1, **more: str) -> tuple[Path, int]:
    """``count`` sandboxed jobs running ``script`` from ``tmp_path/submit``, with ``more``
    submit commands; (user log, cluster)."""
    iwd = tmp_path / "submit"
    iwd.mkdir()
    (iwd / "job.sh").write_text(script)
    log = iwd / "job.log"
    cluster_id = pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "initialdir": str(iwd), "should_transfer_files": "YES",
        "log": str(log), **more}), count=count).cluster()
    return log, cluster_id


def events(log: Path) -> list:
    return list(JobEventLog(str(log)).events(0)) if log.exists() else []


def test_workers_are_machines_with_their_resources(pool, cluster):
    ads = htcondor.Collector().query(htcondor.AdTypes.Startd, "SlotType == \"Partitionable\"")
    mine = {ad["Name"]: ad for ad in ads}
    for name in cluster["workers"]:
        ad = next(ad for slot, ad in mine.items() if slot.startswith(f"slot1@dask-{name}@"))
        assert ad["TotalCpus"] == 2 and ad["TotalMemory"] == 1024
        assert ad["TotalDisk"] > 0 and ad["Machine"] and ad["OpSys"] == "LINUX"
        assert ad["FileSystemDomain"] != htcondor.param.get("FILESYSTEM_DOMAIN", "")
        assert ad["DaskWorkerAddress"].startswith("tcp://127.0.0.1:")


def test_every_thread_of_the_dask_startd_has_a_name(pool):
    """The dask_startd's own threads and the Dask client's in it, as the kernel shows them."""
    names = [name for name, _ in thread_ticks(python_processes(pool.local_dir)).values()]
    assert any(name.startswith("dask_startd[") for name in names)
    assert not unnamed_threads(names), names


def test_jobs_run_on_workers_with_their_files(pool, tmp_path):
    """Twenty jobs with an input and an output file: each runs once on a Dask worker
    in a sandbox of that worker's, and its output comes back to its Iwd."""
    iwd = tmp_path / "submit"
    iwd.mkdir()
    (iwd / "job.sh").write_text('#!/bin/sh\nread word < in$1.txt\necho "$word $1 $(pwd)" > result.txt\n'
                                'echo to-stdout\n')
    for i in range(20):
        (iwd / f"in{i}.txt").write_text(f"input{i}\n")
    log = iwd / "jobs.log"
    cluster_id = pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "arguments": "$(ProcId)", "initialdir": str(iwd),
        "should_transfer_files": "YES", "transfer_input_files": "in$(ProcId).txt",
        "transfer_output_remaps": '"result.txt=result$(ProcId).txt"',
        "output": "out$(ProcId).txt", "error": "err$(ProcId).txt", "log": str(log),
        "request_memory": "64", "request_disk": "1024"}), count=20).cluster()
    wait_until(lambda: len([e for e in events(log) if int(e.type) == 5]) >= 20, 120,
               what="twenty terminated events")
    seen = events(log)
    workers = {ad["DaskWorkerAddress"].split("://")[1] for ad in htcondor.Collector().query(
        htcondor.AdTypes.Startd, "SlotType == \"Partitionable\"", ["DaskWorkerAddress"])}
    for proc in range(20):
        mine = [e for e in seen if e.proc == proc]
        assert [int(e.type) for e in mine].count(1) == 1
        assert [int(e.type) for e in mine].count(5) == 1
        execute = next(e for e in mine if int(e.type) == 1)
        assert "@dask-w" in execute["SlotName"]
        # The execute host is the worker (its address and host name), not the Dask startd.
        assert re.fullmatch(r"<127\.0\.0\.1:\d+\?alias=.+>", execute["ExecuteHost"])
        assert execute["ExecuteHost"][1:].split("?")[0] in workers
        terminated = next(e for e in mine if int(e.type) == 5)
        assert terminated["ReturnValue"] == 0
    for proc in range(20):
        word, arg, where = (iwd / f"result{proc}.txt").read_text().split()
        assert (word, arg) == (f"input{proc}", str(proc))
        assert "/local/" in where and "/jobledger_" in where and not where.startswith(str(iwd))
        assert (iwd / f"out{proc}.txt").read_text() == "to-stdout\n"
    assert not pool.schedd.query(f"ClusterId == {cluster_id}")


def test_the_queue_depth_is_a_share_of_the_queued_jobs():
    """DASK_QUEUE_JOBS shared evenly among the workers, at least one each, at most
    DASK_QUEUE_DEPTH; a depth of 0 is no queue whatever the workers."""
    assert [queue_share(16, 48, n) for n in (0, 1, 3, 8, 48, 100)] == [16, 16, 16, 6, 1, 1]
    assert queue_share(4, 48, 3) == 4 and queue_share(0, 48, 3) == 0


def _starter_with_queue(monkeypatch, states: list[str], spacing=None, round_trip=None):
    """A Dask starter (not started: only its chain gathering is looked at) whose queue
    holds jobs in ``states``, and the ``dask_results`` calls it makes."""
    from jobledger.daemons import dask_starter
    starter = object.__new__(dask_starter.DaskStarter)
    starter.startd, starter.pending, starter.spacing, starter.round_trip = "startd", [], spacing, round_trip
    starter.queued = [{"claim": f"c{n}", "run": {"submitted": True, "reply": {"state": state}}}
                      for n, state in enumerate(states)]
    calls = []

    def call(address, cmd, timeout, claims, wait):
        calls.append((claims, wait))
        return {claim: {"state": "done", "result": {}} for claim in claims}
    monkeypatch.setattr(dask_starter.ipc, "call", call)
    return starter, calls


def test_a_report_waits_for_the_queued_jobs_that_end_while_the_rest_keeps_the_worker_busy(monkeypatch):
    """Before reporting, a Dask starter waits for the jobs queued behind that end before
    the rest of its queue would run out during the report's round trip: all but one when
    a report takes less than the time between two ends, more kept when it takes longer;
    half of the queue (for FIRST_WAIT at most) until both are known; none when the jobs
    are too long to end within CHAIN_WAIT."""
    from jobledger.daemons.dask_starter import CHAIN_WAIT, FIRST_WAIT
    running = ["running"] * 6
    starter, calls = _starter_with_queue(monkeypatch, running)
    starter._gather_chain()
    assert calls == [(["c0", "c1", "c2"], FIRST_WAIT)]
    assert [q["run"]["reply"]["state"] for q in starter.queued] == ["done"] * 3 + ["running"] * 3
    starter, calls = _starter_with_queue(monkeypatch, running, spacing=0.02, round_trip=0.01)
    starter._gather_chain()
    assert calls == [(["c0", "c1", "c2", "c3", "c4"], min(CHAIN_WAIT, 2 * 5 * 0.02))]
    starter, calls = _starter_with_queue(monkeypatch, running, spacing=0.02, round_trip=0.05)
    starter._gather_chain()
    assert calls == [(["c0", "c1", "c2"], 2 * 3 * 0.02)]
    starter, calls = _starter_with_queue(monkeypatch, ["done", "running", "running"], spacing=0.02, round_trip=0.01)
    starter._gather_chain()
    assert calls == [(["c1"], 2 * 0.02)]     # (known over already: not asked about)
    starter, calls = _starter_with_queue(monkeypatch, running, spacing=1.0, round_trip=0.01)
    starter._gather_chain()
    assert calls == []
    starter, calls = _starter_with_queue(monkeypatch, running, spacing=0.02, round_trip=0.01)
    starter.pending = ["vacate"]
    starter._gather_chain()
    assert calls == []


def test_the_time_between_ends_is_learnt_from_a_chain_and_a_reports_round_trip_from_its_answer(monkeypatch):
    """The spacing of ends on the worker comes from a chain's ends (the worker's clock), a
    running average; a report's round trip from sending it to reading its answer."""
    starter, _ = _starter_with_queue(monkeypatch, [])
    starter.chain = []
    starter._learn_spacing({"end": 100.0})
    assert starter.spacing is None
    starter.chain = [{"outcome": {"end": 100.1}}, {"outcome": {"end": 100.2}}]
    starter._learn_spacing({"end": 100.0})
    assert starter.spacing == pytest.approx(0.1)
    starter.chain = [{"outcome": {"end": 101.5}}]
    starter._learn_spacing({"end": 101.0})
    assert starter.spacing == pytest.approx((3 * 0.1 + 0.5) / 4)
    starter.chain = [{"outcome": {"end": 99.0}}]     # (not after the current job's: not learnt from)
    starter._learn_spacing({"end": 101.0})
    assert starter.spacing == pytest.approx((3 * 0.1 + 0.5) / 4)
    monkeypatch.setattr(type(starter), "_send_report", lambda self, outcome, more: (True, {}))
    assert starter._report({}, False) == (True, {})
    assert starter.round_trip is not None and 0 <= starter.round_trip < 5
    monkeypatch.setattr(type(starter), "_send_report", lambda self, outcome, more: (False, None))
    kept = starter.round_trip
    starter._report({}, False)
    assert starter.round_trip == kept


def test_runners_on_several_workers_are_made_at_the_same_time():
    """Making a worker's runner takes a round trip through the scheduler: while one
    worker's is being made, another worker's is made too, not after it; one worker's is
    made once however many jobs ask for it meanwhile."""
    import threading
    from jobledger.daemons.dask_startd import DaskStartd
    release, asked = threading.Event(), threading.Event()
    submitted: list[str] = []

    class Future:
        def __init__(self, address):
            self.address = address

        def result(self, timeout):
            if self.address == "tcp://a":
                asked.set()
                assert release.wait(10)

    class Client:
        def submit(self, function, key, workers, **options):
            submitted.append(workers[0])
            return Future(workers[0])
    startd = object.__new__(DaskStartd)
    startd.client, startd.runners, startd._making = Client(), {}, {}
    startd._runners_lock = threading.Lock()
    made: dict = {}
    threads = [threading.Thread(target=lambda n=n: made.__setitem__(n, startd._runner("tcp://a"))) for n in (1, 2)]
    threads[0].start()
    assert asked.wait(10)
    threads[1].start()
    assert startd._runner("tcp://b").address == "tcp://b"    # while a's is being made
    assert not made
    release.set()
    for thread in threads:
        thread.join(10)
    assert made[1] is made[2] is startd.runners["tcp://a"]
    assert sorted(submitted) == ["tcp://a", "tcp://b"]


def test_a_runner_call_to_a_runner_the_worker_does_not_hold_says_it_is_gone():
    """The worker's handler answers ``gone`` (the Dask startd then makes a new runner) for a
    runner released or made before the worker restarted, and calls nothing but the runner's own."""
    import asyncio
    import types
    from jobledger.daemons.dask_task import JobRunner
    runner = object.__new__(JobRunner)     # (not made on a worker: only its type is looked at)
    worker = types.SimpleNamespace(state=types.SimpleNamespace(actors={"other": object(), "ours": runner}))
    assert asyncio.run(runner_call(worker, "jobledger-runner-x", "run", ())) == {"status": "gone"}
    assert asyncio.run(runner_call(worker, "other", "run", ())) == {"status": "gone"}
    assert asyncio.run(runner_call(worker, "ours", "__init__", ())) == {"status": "gone"}


def test_a_sandbox_larger_than_a_message_reaches_the_worker(pool, tmp_path):
    """A job's spec and sandbox go inside the runner call's message when msgpack carries
    them unchanged; a sandbox over WIRE_INLINE (or text that is not UTF-8, a name with a
    lone surrogate) is serialized apart, and the job runs as any other.  So does a job's
    answer: an output over WIRE_INLINE comes back whole."""
    assert wire_safe({"argv": ["/bin/sh", "x"], "env": {"A": "é"}, "stdin": None, "n": 3}, 0)
    assert wire_safe(b"x" * WIRE_INLINE) and not wire_safe(b"x" * (WIRE_INLINE + 1))
    assert not wire_safe({"argv": ["\udcff"]}) and not wire_safe({1: "a"}) and not wire_safe({"__Pickled__": 0})
    iwd = tmp_path / "submit"
    iwd.mkdir()
    (iwd / "big.bin").write_bytes(os.urandom(WIRE_INLINE + 4096))
    (iwd / "job.sh").write_text('#!/bin/sh\nwc -c < big.bin > size.txt\ncp big.bin back.bin\n')
    log = iwd / "jobs.log"
    pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "initialdir": str(iwd),
        "should_transfer_files": "YES", "transfer_input_files": "big.bin", "log": str(log)}), count=1)
    wait_until(lambda: any(int(e.type) == 5 for e in events(log)), 120, what="the job's end")
    assert next(e for e in events(log) if int(e.type) == 5)["ReturnValue"] == 0
    assert int((iwd / "size.txt").read_text()) == WIRE_INLINE + 4096
    assert (iwd / "back.bin").read_bytes() == (iwd / "big.bin").read_bytes()


def test_worker_joining_and_leaving_shows_in_the_collector(pool, cluster):
    extra = start_worker(cluster["address"], cluster["base"] / "joiner", "joiner", nthreads=1)
    cluster["processes"].append(extra)
    wait_until(lambda: any("@dask-joiner@" in n for n in worker_names(pool)), 60,
               what="the joining worker's slot")
    extra.send_signal(signal.SIGKILL)
    extra.wait()
    wait_until(lambda: not any("@dask-joiner@" in n for n in worker_names(pool)), 30,
               what="the killed worker's slot to go")


def test_worker_killed_mid_job_requeues_it(pool, cluster, tmp_path):
    """A job whose worker is SIGKILLed is evicted, runs again elsewhere, ends once."""
    victim = start_worker(cluster["address"], cluster["base"] / "victim", "victim", nthreads=1)
    cluster["processes"].append(victim)
    wait_until(lambda: any("@dask-victim@" in n for n in worker_names(pool)), 60,
               what="the victim worker's slot")
    log, _ = submit_script(pool, tmp_path, "#!/bin/sh\nsleep 2\necho done > result.txt\n",
                           rank='regexp("@dask-victim@", TARGET.Name) ? 10 : 0')
    wait_until(lambda: any(int(e.type) == 1 for e in events(log)), 60, what="the job to start")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    wait_until(lambda: any(int(e.type) == 5 for e in events(log)), 60, what="the job to end")
    kinds = [int(e.type) for e in events(log)]
    executes = [e for e in events(log) if int(e.type) == 1]
    assert kinds.count(4) == 1 and kinds.count(5) == 1 and len(executes) == 2
    assert "@dask-victim@" in executes[0]["SlotName"] and "@dask-victim@" not in executes[1]["SlotName"]
    assert (log.parent / "result.txt").read_text() == "done\n"


def test_hold_and_remove_stop_the_job_on_its_worker(pool, cluster, tmp_path):
    """hold and remove reach the job's subprocess on the worker: its sandbox there
    goes (the task ended) and the slot's cores come back."""
    log, cluster_id = submit_script(pool, tmp_path, "#!/bin/sh\nsleep 300\n", count=2)
    wait_until(lambda: [int(e.type) for e in events(log)].count(1) == 2, 60, what="both jobs to start")
    sandboxes = lambda: [p for w in cluster["workers"] for p in  # noqa: E731
                         (cluster["base"] / w / "local").rglob("jobledger_*")]
    wait_until(lambda: len(sandboxes()) == 2, 30, what="two sandboxes on the workers")
    pool.schedd.act(htcondor.JobAction.Hold, f"{cluster_id}.0")
    pool.schedd.act(htcondor.JobAction.Remove, f"{cluster_id}.1")
    wait_until(lambda: {int(e.type) for e in events(log)} >= {12, 9}, 30, what="held and aborted events")
    wait_until(lambda: not sandboxes(), 30, what="the jobs' sandboxes on the workers to go")
    assert [int(e.type) for e in events(log)].count(5) == 0
    pool.schedd.act(htcondor.JobAction.Remove, f"{cluster_id}.0")


def test_schedd_sigkill_while_jobs_run_on_workers(pool, tmp_path):
    """The schedd SIGKILLed while jobs run on Dask workers: jobs still running are
    reconnected, jobs that finished meanwhile are collected; each terminates once,
    its output back, and the audit passes."""
    iwd, gate = gated(tmp_path, "cat in.txt > out.txt")
    (iwd / "in.txt").write_text("carried\n")
    log = iwd / "jobs.log"
    cluster_id = pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "arguments": str(gate), "initialdir": str(iwd),
        "should_transfer_files": "YES", "transfer_input_files": "in.txt",
        "transfer_output_remaps": '"out.txt=out$(ProcId).txt"', "log": str(log)}), count=8).cluster()
    wait_until(lambda: [int(e.type) for e in events(log)].count(1) >= 4, 60, what="four jobs running")
    before = daemon_pid(pool, "schedd")
    os.kill(before, signal.SIGKILL)
    gate.unlink()      # the running jobs finish while the schedd is down
    wait_until(lambda: daemon_pid(pool, "schedd") != before, 30, what="the schedd to restart")
    wait_until(lambda: len([e for e in events(log) if int(e.type) == 5]) >= 8, 120,
               what="every job to terminate")
    terminated = collections.Counter(e.proc for e in events(log) if int(e.type) == 5)
    assert terminated == {proc: 1 for proc in range(8)}
    for proc in range(8):
        assert (iwd / f"out{proc}.txt").read_text() == "carried\n"
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster_id}", ["ProcId"]), 30,
               what="the cluster to leave the queue")
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="a clean audit")


def test_tls_connection_when_certificates_are_configured(tmp_path):
    """DASK_TLS_* in the pool's configuration: the pool reaches a TLS-only scheduler
    and a job runs on its worker."""
    pem = {name: tmp_path / f"{name}.pem" for name in ("cert", "key")}
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(pem["key"]), "-out", str(pem["cert"]), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    tls = ["--tls-ca-file", str(pem["cert"]), "--tls-cert", str(pem["cert"]), "--tls-key", str(pem["key"])]
    scheduler, address = start_scheduler(tmp_path, tls + ["--protocol", "tls"])
    processes = [scheduler]
    try:
        assert address.startswith("tls://")
        processes.append(start_worker(address, tmp_path / "w", "secure", nthreads=1, tls=tls))
        with PersonalPool(local_dir=tmp_path / "pool", config={
                "DASK_SCHEDULER_ADDRESS": address, "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD",
                "DASK_TLS_CA_FILE": str(pem["cert"]), "DASK_TLS_CERT": str(pem["cert"]),
                "DASK_TLS_KEY": str(pem["key"])}) as secure:
            wait_until(lambda: any("@dask-secure@" in n for n in worker_names(secure)), 60,
                       what="the TLS worker's slot")
            log, _ = submit_script(secure, tmp_path, "#!/bin/sh\necho over tls > result.txt\n")
            wait_until(lambda: any(int(e.type) == 5 for e in events(log)), 60, what="the job to end")
            assert (log.parent / "result.txt").read_text() == "over tls\n"
        secure._config_setter.unset()
    finally:
        stop_all(processes)


def test_scheduler_restart_requeues_running_jobs(tmp_path):
    """The Dask scheduler SIGKILLed while a job runs: the job is evicted and requeued
    (not held); with a scheduler back on the same address and a worker, it runs
    again and terminates once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scheduler, address = start_scheduler(tmp_path, port=port)
    processes = [scheduler, start_worker(address, tmp_path / "first", "first", nthreads=1)]
    try:
        with PersonalPool(local_dir=tmp_path / "pool", config={
                "DASK_SCHEDULER_ADDRESS": address,
                "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"}) as restarted:
            iwd, gate = gated(tmp_path, "echo finished > result.txt")
            log = iwd / "job.log"
            restarted.schedd.submit(htcondor.Submit({
                "executable": "job.sh", "arguments": str(gate), "initialdir": str(iwd),
                "should_transfer_files": "YES", "log": str(log)}))
            wait_until(lambda: any(int(e.type) == 1 for e in events(log)), 60, what="the job to start")
            scheduler.send_signal(signal.SIGKILL)
            scheduler.wait()
            wait_until(lambda: any(int(e.type) == 4 for e in events(log)), 60, what="the job's eviction")
            gate.unlink()
            again, _ = start_scheduler(tmp_path, port=port, where="again")
            processes += [again, start_worker(address, tmp_path / "second", "second", nthreads=1)]
            wait_until(lambda: any(int(e.type) == 5 for e in events(log)), 90, what="the job to end")
            kinds = [int(e.type) for e in events(log)]
            assert kinds.count(5) == 1 and 12 not in kinds
            assert (iwd / "result.txt").read_text() == "finished\n"
        restarted._config_setter.unset()
    finally:
        stop_all(processes)


def test_cli_pool_start_with_a_dask_scheduler(cluster, tmp_path):
    """`jobledger pool start --dask-scheduler ADDR` runs the Dask startd beside the
    local startd; it finds the cluster's workers."""
    cli = [str(Path(sys.executable).parent / "jobledger"), "pool"]
    where = ["--local-dir", str(tmp_path / "clipool")]
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    try:
        started = subprocess.run(cli + ["start", *where, "--dask-scheduler", cluster["address"]],
                                 env=env, capture_output=True, text=True, timeout=120)
        assert started.returncode == 0 and "Pool started in" in started.stdout, started.stderr
        status = subprocess.run(cli + ["status", *where], env=env, capture_output=True, text=True)
        assert "dask_startd" in status.stdout and "startd" in status.stdout.replace("dask_startd", "")
        log = tmp_path / "clipool" / "log" / "DaskStartLog"
        wait_until(lambda: log.exists() and log.read_text().count(" joined as ") >= WORKERS, 60,
                   what="the CLI pool's Dask startd to find the workers")
    finally:
        subprocess.run(cli + ["stop", *where], env=env, capture_output=True, timeout=120)
    wait_until(lambda: not pool_processes(tmp_path / "clipool"), 15, what="the CLI pool to stop")


class Follower:
    """The events of one user log, read as they come (one reader, never re-read)."""

    def __init__(self, log: Path):
        self.log, self.reader, self.seen = log, None, []

    def poll(self) -> list:
        if self.reader is None and self.log.exists():
            self.reader = JobEventLog(str(self.log))
        if self.reader is not None:
            self.seen += list(self.reader.events(0))
        return self.seen

    def count(self, kind: int) -> int:
        return sum(1 for e in self.poll() if int(e.type) == kind)

    def terminated(self, at_least: int) -> bool:
        """Have ``at_least`` jobs terminated?  A hold fails the test at once, saying why."""
        held = [e for e in self.poll() if int(e.type) == 12]
        assert not held, f"job {held[0].cluster}.{held[0].proc} held: {held[0].get('HoldReason')}"
        return self.count(5) >= at_least


FLEET_JOBS = 500


def test_fleet_of_jobs_survives_a_worker_and_the_schedd_killed(tmp_path):
    """The issue's must-show case: a `dask scheduler` and three `dask worker`s on loopback,
    each in a directory of its own, run 500 jobs with an input and an output file each.
    One worker is SIGKILLed mid-run (a third of the jobs done), then the schedd (two
    thirds done).  Every job terminates exactly once by its user log, with exit code 0
    and its output back; the queue empties and `jobledger audit` passes."""
    scheduler, address = start_scheduler(tmp_path)
    processes = [scheduler]
    try:
        workers = {f"f{i}": start_worker(address, tmp_path / f"f{i}", f"f{i}") for i in range(WORKERS)}
        processes += workers.values()
        pool = PersonalPool(local_dir=tmp_path / "pool", config={
            "DASK_SCHEDULER_ADDRESS": address, "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"})
        pool.start()
        try:
            _run_fleet(pool, workers, tmp_path)
        finally:
            stop_and_check(pool)
    finally:
        stop_all(processes)


def _run_fleet(pool, workers: dict, tmp_path: Path) -> None:
    wait_until(lambda: len(worker_names(pool)) >= WORKERS, 60, what="the three workers' slots")
    iwd = tmp_path / "submit"
    iwd.mkdir()
    (iwd / "job.sh").write_text('#!/bin/sh\nread word < in$1.txt\nsleep 0.1\n'
                                'echo "$word $1" > result.txt\necho "stdout $1"\n')
    for i in range(FLEET_JOBS):
        (iwd / f"in{i}.txt").write_text(f"input{i}\n")
    log = Follower(iwd / "fleet.log")
    cluster_id = pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "arguments": "$(ProcId)", "initialdir": str(iwd),
        "should_transfer_files": "YES", "transfer_input_files": "in$(ProcId).txt",
        "transfer_output_remaps": '"result.txt=result$(ProcId).txt"',
        "output": "out$(ProcId).txt", "log": str(log.log)}), count=FLEET_JOBS).cluster()

    wait_until(lambda: log.terminated(FLEET_JOBS // 3), 120, interval=0.2, what="a third of the jobs")
    wait_until(lambda: any((tmp_path / "f0" / "local").rglob("jobledger_*")), 30, interval=0.01,
               what="a job running on the worker f0")     # so that the kill hits one
    victim = workers["f0"]
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    wait_until(lambda: log.terminated(2 * FLEET_JOBS // 3), 120, interval=0.2, what="two thirds of the jobs")
    before = daemon_pid(pool, "schedd")
    os.kill(before, signal.SIGKILL)
    wait_until(lambda: daemon_pid(pool, "schedd") != before, 30, what="the schedd to restart")
    wait_until(lambda: log.terminated(FLEET_JOBS), 180, interval=0.2, what="every job to terminate")

    seen = log.poll()
    terminated = collections.Counter(e.proc for e in seen if int(e.type) == 5)
    assert terminated == {proc: 1 for proc in range(FLEET_JOBS)}
    assert all(e["ReturnValue"] == 0 for e in seen if int(e.type) == 5)
    lost = [e for e in seen if int(e.type) in (4, 7)]   # evicted, or the shadow's exception
    assert lost, "the killed worker was running jobs: they were evicted and requeued"
    executes = collections.Counter(e.proc for e in seen if int(e.type) == 1)
    assert all(executes[e.proc] >= 2 for e in lost)
    for proc in range(FLEET_JOBS):
        assert (iwd / f"result{proc}.txt").read_text() == f"input{proc} {proc}\n"
        assert (iwd / f"out{proc}.txt").read_text() == f"stdout {proc}\n"
    wait_until(lambda: not pool.schedd.query(f"ClusterId == {cluster_id}", ["ProcId"]), 30,
               what="the cluster to leave the queue")
    wait_until(lambda: audit(pool.local_dir).ok, 30, what="the user log to catch up with the journal")
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    checked = subprocess.run([str(Path(sys.executable).parent / "jobledger"), "audit", "--local-dir",
                              str(pool.local_dir)], env=env, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def job_processes(base: Path) -> list[int]:
    """Pids of processes whose working directory is a job sandbox on a worker under ``base``
    (a job's children, a ``sleep`` its script runs, count too)."""
    return list(_sandbox_cwds(base))


def job_sandboxes(base: Path) -> set[str]:
    """The job sandboxes on workers under ``base`` that some process is working in: one per
    running job, however many processes the job has at the moment."""
    return set(_sandbox_cwds(base).values())


def _sandbox_cwds(base: Path) -> dict[int, str]:
    found = {}
    for entry in os.listdir("/proc"):
        try:
            where = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if where.startswith(str(base)) and "/jobledger_" in where:
            found[int(entry)] = where
    return found


def process_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_suspend_continue_and_vacate_reach_the_job_on_its_worker(pool, cluster, tmp_path):
    """suspend stops the job's process on its worker (SIGSTOP), continue resumes it,
    vacate ends it (SIGTERM) and the job is evicted back to idle."""
    log, cluster_id = submit_script(pool, tmp_path, "#!/bin/sh\nexec sleep 300\n")
    try:
        [pid] = wait_until(lambda: job_processes(cluster["base"]), 60, what="the job on a worker")
        pool.schedd.act(htcondor.JobAction.Suspend, f"{cluster_id}.0")
        wait_until(lambda: process_state(pid) == "T", 30, what="the job to be stopped")
        wait_until(lambda: 10 in {int(e.type) for e in events(log)}, 30, what="the suspended event")
        pool.schedd.act(htcondor.JobAction.Continue, f"{cluster_id}.0")
        wait_until(lambda: process_state(pid) in ("S", "R"), 30, what="the job to run again")
        wait_until(lambda: 11 in {int(e.type) for e in events(log)}, 30, what="the unsuspended event")
        pool.schedd.act(htcondor.JobAction.Vacate, f"{cluster_id}.0")
        wait_until(lambda: 4 in {int(e.type) for e in events(log)}, 30, what="the evicted event")
        wait_until(lambda: process_state(pid) == "gone", 30, what="the vacated job's process to end")
        assert 5 not in {int(e.type) for e in events(log)}
    finally:
        pool.schedd.act(htcondor.JobAction.Remove, f"{cluster_id}.0")
    wait_until(lambda: not job_processes(cluster["base"]), 30, what="no job left on the workers")


def test_cli_pool_start_refuses_an_unreachable_scheduler(tmp_path):
    """`pool start --dask-scheduler` with nobody listening there: exit 1, one line saying
    why, no pool left running.  An address that is not one is named as such."""
    cli = [str(Path(sys.executable).parent / "jobledger"), "pool", "start"]
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))          # bound, not listening: connections are refused
        address = "tcp://127.0.0.1:%d" % closed.getsockname()[1]
        started = subprocess.run(cli + ["--local-dir", str(tmp_path / "pool"), "--dask-scheduler", address],
                                 env=env, capture_output=True, text=True, timeout=60)
    assert started.returncode == 1
    assert started.stderr.strip().splitlines() == [
        f"Error: cannot reach the Dask scheduler at {address}: Connection refused"], started.stderr
    assert not pool_processes(tmp_path / "pool")
    for bad in ("tcp://127.0.0.1:notaport", "tcp://:8786", "tcp://host:70000"):
        assert "is not a Dask scheduler address" in scheduler_problem(bad)
    assert scheduler_problem("ucx://somewhere:1234") is None     # left to Dask


def test_a_worker_declaring_a_gpu_is_a_machine_with_gpus(pool, cluster, tmp_path):
    """`dask worker --resources GPU=1`: its slot advertises one GPU, a job asking for a
    GPU matches only there, and two such jobs take turns on it."""
    gpu = start_worker(cluster["address"], cluster["base"] / "gpu", "gpu", nthreads=2,
                       tls=["--resources", "GPU=1"])
    cluster["processes"].append(gpu)

    def gpu_slot():
        ads = pool.collector.query(htcondor.AdTypes.Startd, "SlotType == \"Partitionable\"")
        return next((ad for ad in ads if "@dask-gpu@" in ad["Name"]), None)
    ad = wait_until(gpu_slot, 60, what="the GPU worker's slot")
    assert ad["TotalGPUs"] == 1 and ad["GPUs"] == 1 and "GPUs" in ad["MachineResources"]
    assert all("TotalGPUs" not in other for other in pool.collector.query(
        htcondor.AdTypes.Startd, "SlotType == \"Partitionable\"") if "@dask-gpu@" not in other["Name"])
    iwd, gate = gated(tmp_path, "echo gpu > result.txt")
    log = iwd / "job.log"
    pool.schedd.submit(htcondor.Submit({
        "executable": "job.sh", "arguments": str(gate), "initialdir": str(iwd), "request_gpus": "1",
        "should_transfer_files": "YES", "transfer_output_remaps": '"result.txt=result$(ProcId).txt"',
        "log": str(log)}), count=2)
    wait_until(lambda: any(int(e.type) == 1 for e in events(log)), 60, what="a GPU job to start")
    wait_until(lambda: gpu_slot()["GPUs"] == 0, 30, what="the GPU to show as taken")
    gate.unlink()
    wait_until(lambda: [int(e.type) for e in events(log)].count(5) == 2, 60, what="both GPU jobs to end")
    kinds = [(int(e.type), e.proc) for e in events(log) if int(e.type) in (1, 5)]
    assert [kind for kind, _ in kinds] == [1, 5, 1, 5], kinds   # one at a time on the one GPU
    assert all("@dask-gpu@" in e["SlotName"] for e in events(log) if int(e.type) == 1)
    gpu.send_signal(signal.SIGTERM)


def test_gpu_jobs_get_their_worker_gpu_ids_in_ad_and_environment(pool, cluster, tmp_path):
    """A worker with two GPUs (`--resources GPU=2`, started with CUDA_VISIBLE_DEVICES=3,5):
    two GPU jobs running at once hold one id each (CUDA3, CUDA5), in their job ad
    (AssignedGPUs) and environment (_CONDOR_AssignedGPUs, CUDA_VISIBLE_DEVICES); a job
    without GPUs on that worker sees none (CUDA_VISIBLE_DEVICES=10000)."""
    worker = start_worker(cluster["address"], cluster["base"] / "gpu2", "gpu2", nthreads=3,
                          tls=["--resources", "GPU=2"], env={"CUDA_VISIBLE_DEVICES": "3,5"})
    cluster["processes"].append(worker)

    def gpu_slot():
        ads = pool.collector.query(htcondor.AdTypes.Startd, "SlotType == \"Partitionable\"")
        return next((ad for ad in ads if "@dask-gpu2@" in ad["Name"]), None)
    ad = wait_until(gpu_slot, 60, what="the GPU worker's slot")
    assert (ad["TotalGPUs"], ad["AssignedGPUs"]) == (2, "CUDA3,CUDA5")
    iwd, gate = gated(tmp_path, "env > result.txt")
    log = iwd / "job.log"
    common = {"executable": "job.sh", "arguments": str(gate), "initialdir": str(iwd), "log": str(log),
              "should_transfer_files": "YES", "request_memory": "64",
              "requirements": 'regexp("@dask-gpu2@", TARGET.Name)'}
    gpu_jobs = pool.schedd.submit(htcondor.Submit(dict(
        common, request_gpus="1", transfer_output_remaps='"result.txt=gpu$(ProcId).txt"')), count=2).cluster()
    plain = pool.schedd.submit(htcondor.Submit(dict(
        common, transfer_output_remaps='"result.txt=plain.txt"'))).cluster()
    wait_until(lambda: [int(e.type) for e in events(log)].count(1) == 3, 60, what="all three jobs to start")
    wait_until(lambda: gpu_slot()["GPUs"] == 0, 30, what="both GPUs to show as taken")
    running = {int(ad["ProcId"]): ad.get("AssignedGPUs") for ad in pool.schedd.query(
        f"ClusterId == {gpu_jobs}", ["ProcId", "AssignedGPUs"])}
    assert sorted(running.values()) == ["CUDA3", "CUDA5"], running
    assert "AssignedGPUs" not in pool.schedd.query(f"ClusterId == {plain}", ["AssignedGPUs"])[0]
    gate.unlink()
    wait_until(lambda: [int(e.type) for e in events(log)].count(5) == 3, 60, what="the three jobs to end")

    def environment(name: str) -> dict:
        return dict(line.split("=", 1) for line in (iwd / name).read_text().splitlines() if "=" in line)
    for proc, assigned in running.items():
        env = environment(f"gpu{proc}.txt")
        assert env["_CONDOR_AssignedGPUs"] == assigned
        assert env["CUDA_VISIBLE_DEVICES"] == env["GPU_DEVICE_ORDINAL"] == assigned.removeprefix("CUDA")
    env = environment("plain.txt")
    assert env["CUDA_VISIBLE_DEVICES"] == env["GPU_DEVICE_ORDINAL"] == "10000"
    assert "_CONDOR_AssignedGPUs" not in env
    worker.send_signal(signal.SIGTERM)


def test_personal_pool_refuses_an_unreachable_scheduler(tmp_path):
    """DASK_SCHEDULER_ADDRESS in a PersonalPool's configuration naming an address where
    nobody listens: start() fails naming the Dask startd and the address, and leaves
    no process behind (not READY with the reason only in dask_startd.stderr)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        address = "tcp://127.0.0.1:%d" % closed.getsockname()[1]
        pool = PersonalPool(local_dir=tmp_path / "pool", config={
            "DASK_SCHEDULER_ADDRESS": address, "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"})
        try:
            with pytest.raises(htcondor.HTCondorException) as refused:
                pool.start()
        finally:
            pool._config_setter.unset()
    assert "dask_startd" in str(refused.value)
    assert f"cannot reach the Dask scheduler at {address}" in str(refused.value)
    wait_until(lambda: not pool_processes(tmp_path / "pool"), 15, what="the pool's processes to exit")


def test_an_argument_that_is_not_utf8_reaches_the_job_on_its_worker(pool, tmp_path):
    """Text that is not UTF-8 (surrogateescape) crosses to the worker pickled (not
    ``wire_safe``) and reaches the job as its bytes."""
    log, _ = submit_script(pool, tmp_path, '#!/bin/sh\nprintf "%s" "$1" > arg.out\n',
                           arguments="caf\udce9", transfer_output_files="arg.out")
    wait_until(lambda: any(int(e.type) == 5 for e in events(log)), 120, what="the job's end")
    assert (tmp_path / "submit" / "arg.out").read_bytes() == b"caf\xe9"
    assert [int(e.type) for e in events(log)].count(5) == 1
