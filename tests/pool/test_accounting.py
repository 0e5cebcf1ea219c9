"""The negotiator's accountant in a real pool: fair share between submitters, the
htcondor.Negotiator commands, condor_userprio, and records that survive a negotiator
killed with SIGKILL.

One OS user submits as two submitters the way HTCondor allows it: jobs with an
``accounting_group`` are charged to ``group.owner@uid_domain``, not to ``owner``.
"""

from __future__ import annotations

import getpass
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import jobledger as htcondor
from jobledger.daemons import ipc
from tests.pool.conftest import running_pool, wait_until

BIN = Path(sys.executable).parent
HOST = socket.gethostname()
ME = getpass.getuser()
A, B = f"physics.{ME}@{HOST}", f"chemistry.{ME}@{HOST}"
CORES = 12


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    yield from running_pool(tmp_path_factory, NUM_CPUS=str(CORES), PERIODIC_EXPR_INTERVAL="1")


def userprio(pool, *args, status: int = 0) -> str:
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    done = subprocess.run([str(BIN / "condor_userprio"), *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == status, (args, done.stdout, done.stderr)
    return done.stdout + done.stderr


def submit(schedd, group: str, count: int, seconds: str, tmp_path, hold: bool = True) -> int:
    description = htcondor.Submit({
        "executable": "/bin/sleep", "arguments": seconds, "request_cpus": "1",
        "request_memory": "1", "accounting_group": group, "hold": "true" if hold else "false",
        "log": str(tmp_path / f"{group}.log"),
    })
    return schedd.submit(description, count=count).cluster()


def by_group(schedd, constraint: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ad in schedd.query(constraint, projection=["AcctGroup"]):
        counts[ad["AcctGroup"]] = counts.get(ad["AcctGroup"], 0) + 1
    return counts


def done_by_group(schedd, clusters) -> dict[str, int]:
    counts: dict[str, int] = {}
    constraint = " || ".join(f"ClusterId == {c}" for c in clusters)
    for ad in schedd.history(constraint, projection=["AcctGroup"], match=-1):
        counts[ad["AcctGroup"]] = counts.get(ad["AcctGroup"], 0) + 1
    return counts


def test_two_submitters_share_the_slots_in_proportion_to_their_priorities(pool, tmp_path):
    """Priority factors 1000 and 2000: effective priorities 500 and 1000, so physics gets
    two cores for every one of chemistry's -- 8 and 4 of 12 -- and keeps that share as
    its jobs end and the next take their claims, over the first 200 jobs to finish."""
    negotiator = htcondor.Negotiator()
    negotiator.setFactor(A, 1000)
    negotiator.setFactor(B, 2000)
    schedd = htcondor.Schedd()
    clusters = [submit(schedd, "physics", 300, "1", tmp_path), submit(schedd, "chemistry", 300, "1", tmp_path)]
    schedd.act(htcondor.JobAction.Release, " || ".join(f"ClusterId == {c}" for c in clusters))
    samples = []

    def sample():
        running = by_group(schedd, "JobStatus == 2")
        if sum(running.values()) == CORES:
            samples.append(running)
        return sum(done_by_group(schedd, clusters).values()) >= 200

    wait_until(sample, 600, interval=0.5, what="200 jobs to finish")
    done = done_by_group(schedd, clusters)
    share = done["physics"] / (done["physics"] + done["chemistry"])
    assert abs(share - 2 / 3) <= 0.1 * 2 / 3, (done, samples)
    assert samples and sum(s.get("physics", 0) for s in samples) / (CORES * len(samples)) == \
        pytest.approx(2 / 3, rel=0.1), samples
    # the accountant saw both: cores in use, usage accrued, priorities risen above 0.5 x factor
    prios = {ad["Name"]: ad for ad in negotiator.getPriorities()}
    assert prios[A]["PriorityFactor"] == 1000 and prios[B]["PriorityFactor"] == 2000
    assert prios[A]["Priority"] > 500 and prios[B]["Priority"] > 1000
    assert prios[A]["WeightedAccumulatedUsage"] > prios[B]["WeightedAccumulatedUsage"] > 0
    assert prios["<none>"]["IsAccountingGroup"] is True
    slots = negotiator.getResourceUsage(A)
    assert slots and all(ad["Name"].startswith("slot1_") and ad["StartTime"] > 0 for ad in slots)
    table = userprio(pool, "-negotiator")
    lines = table.splitlines()
    assert lines[2].startswith("User Name") and lines[-1].startswith("Number of users: 2")
    assert lines[4].startswith(A) and lines[5].startswith(B)     # best priority first
    schedd.act(htcondor.JobAction.Remove, " || ".join(f"ClusterId == {c}" for c in clusters))
    wait_until(lambda: not schedd.query("true", projection=["ClusterId"]), 120, what="the queue to empty")


def test_a_ceiling_caps_the_cores_a_submitter_holds(pool, tmp_path):
    negotiator = htcondor.Negotiator()
    user = f"ceiling.{ME}@{HOST}"
    negotiator.setCeiling(user, 2)
    schedd = htcondor.Schedd()
    cluster = submit(schedd, "ceiling", 6, "600", tmp_path, hold=False)
    wait_until(lambda: by_group(schedd, f"ClusterId == {cluster} && JobStatus == 2").get("ceiling") == 2,
               60, what="two jobs running")
    address = htcondor.Collector().locate(htcondor.DaemonType.Negotiator)["MyAddress"]
    seen = ipc.call(address, "cycles")
    wait_until(lambda: ipc.call(address, "cycles") >= seen + 3, 60, what="three more negotiation cycles")
    assert by_group(schedd, f"ClusterId == {cluster} && JobStatus == 2") == {"ceiling": 2}
    assert "2.00" in userprio(pool, "-negotiator", user).splitlines()[4]
    negotiator.setCeiling(user, 0)     # 0: nothing more; what runs keeps running
    negotiator.setCeiling(user, 4)
    wait_until(lambda: by_group(schedd, f"ClusterId == {cluster} && JobStatus == 2").get("ceiling") == 4,
               60, what="four jobs running under a ceiling of 4")
    schedd.act(htcondor.JobAction.Remove, f"ClusterId == {cluster}")
    wait_until(lambda: not schedd.query(f"ClusterId == {cluster}", projection=["ClusterId"]), 120,
               what="the jobs to leave")


def test_commands_and_their_records_survive_a_negotiator_killed(pool):
    negotiator = htcondor.Negotiator()
    user = f"admin.{ME}@{HOST}"
    negotiator.setPriority(user, 7.5)
    negotiator.setFactor(user, 3000)
    negotiator.setUsage(user, 7200)
    negotiator.setBeginUsage(user, 1_700_000_000)
    negotiator.setLastUsage(user, 1_700_000_100)
    negotiator.setCeiling(user, 5)
    record = next(ad for ad in negotiator.getPriorities() if ad["Name"] == user)
    assert record["Priority"] == pytest.approx(7.5 * 3000, rel=1e-2) and record["PriorityFactor"] == 3000
    assert record["AccumulatedUsage"] == 7200 and record["BeginUsageTime"] == 1_700_000_000
    assert record["LastUsageTime"] == 1_700_000_100 and record["Ceiling"] == 5

    old = _negotiator_pid()
    os.kill(old, signal.SIGKILL)
    wait_until(lambda: _negotiator_pid() not in (None, old), 60,
               what="the master to start a new negotiator")
    record = next(ad for ad in htcondor.Negotiator().getPriorities() if ad["Name"] == user)
    assert record["Priority"] == pytest.approx(7.5 * 3000, rel=1e-2) and record["Ceiling"] == 5
    assert record["AccumulatedUsage"] == 7200 and record["LastUsageTime"] == 1_700_000_100

    # condor_userprio's edits, and the names it refuses
    out = userprio(pool, "-setfactor", user, "1500")
    assert out == f"The priority factor of {user} was set to 1500.000000\n"
    assert "Priority factors must be greater than or equal to 1." in userprio(
        pool, "-setfactor", user, "0.5", status=1)
    assert "You must specify the full name" in userprio(pool, "-setprio", "nobody", "3", status=1)
    assert userprio(pool, "-resetusage", user) == f"The accumulated usage of {user} was reset\n"
    record = next(ad for ad in htcondor.Negotiator().getPriorities() if ad["Name"] == user)
    assert record["AccumulatedUsage"] == 0 and record["PriorityFactor"] == 1500
    shown = userprio(pool, "-allusers", "-negotiator", "-af", "Name", "PriorityFactor")
    assert f"{user} 1500.0" in shown
    # the Accounting ads in the collector, sent again after each change
    wait_until(lambda: f"{user} 1500.0" in userprio(pool, "-allusers", "-collector", "-af", "Name",
                                                     "PriorityFactor"), 30, what="the collector's ad")
    ads = htcondor.Collector().query(htcondor.AdType.Accounting, f'Name == "{user}"')
    assert ads and ads[0]["PriorityFactor"] == 1500 and ads[0]["NegotiatorName"]
    assert userprio(pool, "-delete", user) == f"The accountant record named {user} was deleted\n"
    assert user not in {ad["Name"] for ad in htcondor.Negotiator().getPriorities()}
    assert userprio(pool, "-resetall") == "The accumulated usage was reset for all users\n"
    assert "Number of Resources Used: 0" in userprio(pool, "-getreslist", user)

    with pytest.raises(ValueError):
        negotiator.setFactor(user, 0.5)
    with pytest.raises(ValueError):
        negotiator.setCeiling(user, -1)      # htcondor2 25.x refuses -1 (its check is <= -1)
    with pytest.raises(ValueError):
        negotiator.resetUsage("no-domain")
    with pytest.raises(TypeError):
        negotiator.deleteUser(42)
    with pytest.raises(TypeError):
        htcondor.Negotiator("not an ad")


def _negotiator_pid() -> int | None:
    try:
        ad = htcondor.Collector().locate(htcondor.DaemonType.Negotiator)
        reply = ipc.call(ad["MyAddress"], "ping", timeout=5)
    except htcondor.HTCondorException:
        return None
    return int(reply["pid"]) if reply.get("up") else None
