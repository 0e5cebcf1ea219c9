"""condor_status agrees with the claims the schedd holds: a dynamic slot is shown while
its claim runs a job, and goes when the claim ends (HTCondor's startd deletes it and
invalidates its ad), not 15 minutes later when the collector would let it expire."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.pool.conftest import wait_until

BIN = Path(sys.executable).parent


def condor(pool, *args) -> str:
    env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
    done = subprocess.run([str(BIN / args[0]), *args[1:]], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def dynamic_slots(pool) -> set[tuple[str, str]]:
    """(slot name, job id) of every dynamic slot condor_status shows."""
    out = condor(pool, "condor_status", "-constraint", "DynamicSlot =?= true", "-af", "Name", "JobId")
    return {tuple(line.split()) for line in out.splitlines() if line.strip()}


def running_jobs(pool, cluster: int) -> set[tuple[str, str]]:
    """(slot name, job id) of the cluster's running jobs, as condor_q has them."""
    out = condor(pool, "condor_q", str(cluster), "-constraint", "JobStatus == 2",
                 "-af", "RemoteSlot", "ClusterId", "ProcId")
    return {(line.split()[0], f"{line.split()[1]}.{line.split()[2]}")
            for line in out.splitlines() if line.strip()}


def submit(pool, tmp_path, seconds: str, count: int) -> int:
    description = tmp_path / f"sleep{seconds}.sub"
    description.write_text(f"executable = /bin/sleep\narguments = {seconds}\nrequest_cpus = 1\n"
                           f"log = {tmp_path}/sleep{seconds}.log\nqueue {count}\n")
    out = condor(pool, "condor_submit", str(description))
    return int(out.strip().rsplit(" ", 1)[1].rstrip("."))


def test_condor_status_shows_the_schedds_claims_and_drops_a_slot_when_its_claim_ends(pool, tmp_path):
    total = int(condor(pool, "condor_status", "-constraint", "PartitionableSlot", "-af", "TotalCpus").split()[0])
    # Running: each running job's slot is a dynamic slot naming that job, and no others.
    long_cluster = submit(pool, tmp_path, "600", total)
    wait_until(lambda: len(running_jobs(pool, long_cluster)) == total, 60, what="every core busy")
    wait_until(lambda: dynamic_slots(pool) == running_jobs(pool, long_cluster), 30,
               what="condor_status to show exactly the schedd's claims")
    condor(pool, "condor_rm", str(long_cluster))
    wait_until(lambda: not dynamic_slots(pool), 30, what="the removed jobs' slots to go")

    # Short jobs through claim reuse: at no moment more CPUs claimed than the machine
    # has, and once they finished no dynamic slot is left, the partitionable slot whole.
    short_cluster = submit(pool, tmp_path, "1", 3 * total)
    claimed = []

    def finished() -> bool:
        out = condor(pool, "condor_status", "-constraint", "DynamicSlot =?= true", "-af", "Cpus")
        claimed.append(sum(int(cpus) for cpus in out.split()))
        return not condor(pool, "condor_q", str(short_cluster), "-af", "ProcId").strip()

    wait_until(finished, 120, interval=0.2, what="the short jobs to finish")
    assert max(claimed) <= total, claimed
    wait_until(lambda: not dynamic_slots(pool), 30, what="the finished jobs' slots to go")
    out = condor(pool, "condor_status", "-constraint", "PartitionableSlot", "-af", "Cpus", "NumDynamicSlots")
    assert out.split() == [str(total), "0"]
    totals = condor(pool, "condor_status", "-total")
    claimed_column = next(line for line in totals.splitlines() if line.strip().startswith("Total"))
    assert claimed_column.split()[1:4] == ["1", "0", "0"], totals   # Machines, Owner, Claimed


def test_a_restarted_startd_takes_its_dead_slots_out_of_the_collector(fresh_pool, tmp_path):
    """The startd killed while jobs run: its starters see the lifeline's EOF and end; the
    new startd's first update removes the dead incarnation's dynamic slots."""
    import signal
    from jobledger.daemons import ipc
    pool = fresh_pool
    cluster = submit(pool, tmp_path, "600", 1)
    wait_until(lambda: len(dynamic_slots(pool)) == 1, 60, what="the job's slot")
    master = ipc.sinful(str(pool.local_dir / "run" / "master.sock"))
    before = ipc.call(master, "status")["startd"]["pid"]
    os.kill(before, signal.SIGKILL)
    wait_until(lambda: ipc.call(master, "status")["startd"]["running"]
               and ipc.call(master, "status")["startd"]["pid"] != before, 60, what="the new startd")
    wait_until(lambda: dynamic_slots(pool) == running_jobs(pool, cluster), 60,
               what="condor_status to agree with the schedd again")
    condor(pool, "condor_rm", str(cluster))
    wait_until(lambda: not dynamic_slots(pool), 30, what="the slot to go")
