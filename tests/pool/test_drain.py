"""Draining a real startd: htcondor.Startd.drainJobs / cancelDrainJobs and condor_drain.

Fast kills the jobs, Quick vacates them (a job that traps SIGTERM sees it), Graceful lets
them run out their retirement time; vacated jobs go back to idle in the schedd; the
drained slot advertises it and takes no new match until the drain is cancelled (or
resumes by itself on completion).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from tests.pool.conftest import running_pool, wait_until

BIN = Path(sys.executable).parent
CORES = 4
# the trap is set before the job says it is ready (ready-<name> beside its TERM file):
# a SIGTERM that comes between the job's start and its trap would end it unrecorded
TRAP = '#!/bin/sh\ntrap "echo TERM > $1; exit 3" TERM\ntouch "${1%/*}/ready-${1##*/}"\nsleep 600 &\nwait\n'


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS=str(CORES), PERIODIC_EXPR_INTERVAL="1",
                            MAXJOBRETIREMENTTIME="3600")


@pytest.fixture(autouse=True)
def undrained(pool):
    """Each test starts on an empty machine in service, whatever the one before left."""
    yield
    try:
        htcondor.Startd().cancelDrainJobs()
    except htcondor.HTCondorException:
        pass     # none in force
    schedd = htcondor.Schedd()
    if schedd.query("true", projection=["ClusterId"]):
        schedd.act(htcondor.JobAction.Remove, "true")
    wait_until(lambda: not schedd.query("true", projection=["ClusterId"]), 120, what="an empty queue")


def pslot() -> htcondor.classad.ClassAd:
    return htcondor.Collector().query(htcondor.AdType.Startd, "PartitionableSlot")[0]


def statuses(schedd, cluster: int) -> list[int]:
    return sorted(ad["JobStatus"] for ad in schedd.query(f"ClusterId == {cluster}", projection=["JobStatus"]))


def submit(schedd, tmp_path, name: str, count: int, executable: str = "/bin/sleep",
           arguments: str = "600") -> tuple[int, Path]:
    log = tmp_path / f"{name}.log"
    result = schedd.submit(htcondor.Submit({
        "executable": executable, "arguments": arguments, "request_cpus": "1", "request_memory": "1",
        "log": str(log), "initialdir": str(tmp_path)}), count=count)
    return result.cluster(), log


def trap_script(tmp_path) -> str:
    """A job that writes TERM to the file it is given when it gets SIGTERM."""
    script = tmp_path / "trap.sh"
    script.write_text(TRAP)
    script.chmod(0o755)
    return str(script)


def events(log: Path) -> list:
    return list(htcondor.JobEventLog(str(log)).events(0))


def cycles_pass(n: int = 3) -> None:
    """Wait for ``n`` more negotiation cycles (each could have matched the jobs)."""
    address = htcondor.Collector().locate(htcondor.DaemonType.Negotiator)["MyAddress"]
    seen = ipc.call(address, "cycles")
    wait_until(lambda: ipc.call(address, "cycles") >= seen + n, 120, what=f"{n} negotiation cycles")


def remove(schedd, cluster: int) -> None:
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    wait_until(lambda: not schedd.query(f"ClusterId == {cluster}", projection=["ClusterId"]), 60,
               what="the jobs to leave")


def test_a_fast_drain_kills_the_jobs_requeues_them_and_takes_no_match_until_cancelled(pool, tmp_path):
    schedd, startd = htcondor.Schedd(), htcondor.Startd()
    cluster, log = submit(schedd, tmp_path, "fast", CORES, trap_script(tmp_path), f"{tmp_path}/fast-$(Process)")
    wait_until(lambda: statuses(schedd, cluster) == [2] * CORES, 120, what="every core busy")
    request = startd.drainJobs(htcondor.DrainType.Fast, reason="disk replacement")
    assert isinstance(request, str) and request
    wait_until(lambda: statuses(schedd, cluster) == [1] * CORES, 120, what="the killed jobs back to idle")
    assert sum(1 for e in events(log) if e.type == htcondor.JobEventType.JOB_EVICTED) == CORES
    assert not list(tmp_path.glob("fast-*"))         # killed: no SIGTERM to trap
    ad = wait_until(lambda: (lambda a: a if a["Draining"] is True and a["Activity"] == "Idle" else None)(
        pslot()), 60, what="the drained slot's ad")
    assert ad["Draining"] is True and ad["State"] == "Drained" and ad["DrainReason"] == "disk replacement"
    assert ad["DrainingRequestId"] == request and ad["Cpus"] == CORES
    with pytest.raises(htcondor.HTCondorException, match="already draining"):
        startd.drainJobs(htcondor.DrainType.Graceful)
    cycles_pass()
    assert statuses(schedd, cluster) == [1] * CORES     # a draining slot takes no new match
    with pytest.raises(htcondor.HTCondorException):
        startd.cancelDrainJobs("not-the-request")
    startd.cancelDrainJobs(request)
    wait_until(lambda: statuses(schedd, cluster) == [2] * CORES, 120, what="the jobs to run again")
    ad = wait_until(lambda: (lambda a: a if a["Draining"] is False else None)(pslot()), 60, what="undrained")
    assert ad["State"] == "Unclaimed" and ad["LastDrainStopTime"] >= ad["LastDrainStartTime"] > 0
    remove(schedd, cluster)


def test_a_quick_drain_vacates_the_jobs_with_sigterm(pool, tmp_path):
    schedd, startd = htcondor.Schedd(), htcondor.Startd()
    cluster, log = submit(schedd, tmp_path, "quick", 2, trap_script(tmp_path), f"{tmp_path}/quick-$(Process)")
    wait_until(lambda: statuses(schedd, cluster) == [2, 2], 120, what="both running")
    wait_until(lambda: len([e for e in events(log) if e.type == htcondor.JobEventType.EXECUTE]) == 2, 30,
               what="both EXECUTE events")
    wait_until(lambda: len(list(tmp_path.glob("ready-quick-*"))) == 2, 60, what="both jobs' traps set")
    request = startd.drainJobs(htcondor.DrainType.Quick)
    wait_until(lambda: statuses(schedd, cluster) == [1, 1], 120, what="the vacated jobs back to idle")
    assert sorted(p.read_text() for p in tmp_path.glob("quick-*")) == ["TERM\n", "TERM\n"]
    cycles_pass()
    assert statuses(schedd, cluster) == [1, 1]
    startd.cancelDrainJobs()                      # no id: whatever drain is in force
    wait_until(lambda: statuses(schedd, cluster) == [2, 2], 120, what="the jobs to run again")
    remove(schedd, cluster)
    assert request


def test_a_graceful_drain_lets_jobs_finish_then_resumes_on_completion(pool, tmp_path):
    """MAXJOBRETIREMENTTIME = 3600: the running jobs end by themselves (no eviction), the
    queued ones are not started on their claims, and once the machine is empty the drain
    ends by itself (-resume-on-completion) and the rest run."""
    schedd = htcondor.Schedd()
    gate = tmp_path / "gate.sh"      # each job runs until the file "go" is there
    gate.write_text(f"#!/bin/sh\nwhile [ ! -e {tmp_path}/go ]; do sleep 0.1; done\n")
    gate.chmod(0o755)
    cluster, log = submit(schedd, tmp_path, "graceful", 2 * CORES, str(gate), "")
    wait_until(lambda: statuses(schedd, cluster).count(2) == CORES, 120, what="every core busy")
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    done = subprocess.run([str(BIN / "condor_drain"), "-graceful", "-resume-on-completion", "-reason",
                           "kernel update", "-verbose", socket.gethostname()], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Sent request to drain the startd <") and "\tRequest id: " in done.stdout
    wait_until(lambda: pslot()["Draining"] is True, 120, what="the slot to say it drains")
    (tmp_path / "go").touch()
    wait_until(lambda: not schedd.query(f"ClusterId == {cluster}", projection=["ClusterId"]), 120,
               what="every job to finish")
    kinds = [(e.type, e.proc) for e in events(log)]
    assert not [k for k in kinds if k[0] == htcondor.JobEventType.JOB_EVICTED]
    ends = [i for i, (t, _) in enumerate(kinds) if t == htcondor.JobEventType.JOB_TERMINATED]
    starts = [i for i, (t, _) in enumerate(kinds) if t == htcondor.JobEventType.EXECUTE]
    # the second half started only after the first half had all ended
    assert len(ends) == len(starts) == 2 * CORES and sorted(starts)[CORES] > sorted(ends)[CORES - 1]
    wait_until(lambda: pslot()["Draining"] is False, 30, what="the drain to end by itself")


def test_a_drain_is_refused_when_its_check_fails_or_its_arguments_are_bad(pool):
    startd = htcondor.Startd()
    with pytest.raises(htcondor.HTCondorException, match="check expression"):
        startd.drainJobs(htcondor.DrainType.Fast, check_expr="Cpus > 1000")
    assert pslot()["Draining"] is False
    with pytest.raises(TypeError):
        startd.drainJobs(htcondor.DrainType.Fast, check_expr=42)
    with pytest.raises(htcondor.HTCondorException):
        startd.drainJobs(htcondor.DrainType.Fast, start_expr="(((")
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    cli = [str(BIN / "condor_drain")]
    done = subprocess.run(cli + ["-cancel", "-reason", "x", socket.gethostname()], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == "ERROR: cannot use -reason with -cancel\n"
    done = subprocess.run(cli + ["-fast"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "must specify one target machine" in done.stderr
    done = subprocess.run(cli + ["-cancel", socket.gethostname()], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and "Attempt to send CANCEL_DRAIN_JOBS to startd" in done.stderr
