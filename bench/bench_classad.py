"""ClassAd engine throughput, ours (jobledger.classad) against classad2, side by side.

Rows:
  parse      a 40-attribute job ad in the old (condor_q -long) format, parseOne(text, Parser.Old)
  parse-new  the same ad in new syntax, ClassAd(text)
             (both parse rows cycle through 1,000 distinct ads of one cluster: ProcId, GlobalJobId,
             QDate, EnteredCurrentStatus, ImageSize and DiskUsage differ, as in a real queue, so a
             reader that keeps what it parsed per text gains only what a real queue would give it)
  eval       a machine's Requirements against a job: req.eval(scope=machine, target=job)
  match-1k   one job against 1,000 machine ads: which match both ways, with both Ranks
             (ours: match_many; classad2: symmetricMatch per machine + the two Rank evals)
  match-1k-api  the same loop through the classad2 API on our objects (symmetricMatch + evals)

classad2 is put in HTCondor mode by importing htcondor2 first.  Ours and
theirs run alternately, RUNS times; the table shows the median ops/s of each
and the median of the per-run ratios.  Run with ``python -m bench classad``.
"""

from __future__ import annotations

import itertools
import os
import random
import statistics
import time

os.environ.setdefault("TZ", "UTC")
time.tzset()

RUNS = 5

JOB_AD = """[
  MyType = "Job"; TargetType = "Machine"; ClusterId = 4711; ProcId = 3; JobStatus = 1;
  Owner = "alice"; User = "alice@example.com"; AcctGroup = "physics"; AccountingGroup = "physics.alice";
  Cmd = "/home/alice/bin/analyze"; Arguments = "-n 10 --verbose"; Iwd = "/home/alice/run";
  JobUniverse = 5; RequestCpus = 2; RequestMemory = 2048; RequestDisk = 1048576; RequestGPUs = 0;
  ImageSize = 150000; DiskUsage = 75000; NumJobStarts = 0; JobPrio = 0; QDate = 1700000000;
  EnteredCurrentStatus = 1700000000; JobRunCount = 0; MaxHosts = 1; MinHosts = 1;
  WantRemoteIO = true; ShouldTransferFiles = "YES"; WhenToTransferOutput = "ON_EXIT";
  TransferInput = "data.tgz,config.yaml"; Environment = "FOO=bar BAZ=qux";
  OnExitRemove = true; PeriodicHold = false; PeriodicRemove = false; NiceUser = false;
  LeaveJobInQueue = false; GlobalJobId = "submit.example.com#4711.3#1700000000"; JobBatchName = "run-7";
  Rank = TARGET.Mips / 1000.0 + (TARGET.Memory >= 4096 ? 10 : 0);
  Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk)
      && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus) && (TARGET.HasFileTransfer)
]"""

MACHINE_AD = """[
  MyType = "Machine"; TargetType = "Job"; Name = "slot1@node17.example.com"; Machine = "node17.example.com";
  Arch = "X86_64"; OpSys = "LINUX"; OpSysAndVer = "AlmaLinux9"; Cpus = 8; TotalCpus = 32; Memory = 16384;
  TotalMemory = 65536; Disk = 52428800; Mips = 25000; KFlops = 1500000; LoadAvg = 0.25; KeyboardIdle = 3600;
  State = "Unclaimed"; Activity = "Idle"; HasFileTransfer = true; SlotType = "Partitionable"; SlotID = 1;
  Start = (KeyboardIdle > 15 * 60) || (State =!= "Owner"); IsOwner = false;
  Rank = TARGET.JobPrio + (TARGET.Owner == "alice" ? 100 : 0);
  Requirements = START && (TARGET.RequestMemory <= MY.Memory) && (TARGET.RequestCpus <= Cpus)
]"""


def machine_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` machine ads that differ in the attributes Requirements look at."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        fields = {
            "Arch": rng.choice(['"X86_64"'] * 4 + ['"aarch64"']),
            "OpSys": rng.choice(['"LINUX"'] * 5 + ['"WINDOWS"']),
            "Cpus": str(rng.choice([1, 2, 4, 8, 16])),
            "Memory": str(rng.choice([1024, 2048, 4096, 16384])),
            "Disk": str(rng.choice([100000, 5000000, 50000000])),
            "Mips": str(rng.choice([1000, 5000, 25000])),
            "KeyboardIdle": str(rng.choice([0, 600, 3600])),
            "State": rng.choice(['"Unclaimed"', '"Claimed"', '"Owner"']),
            "HasFileTransfer": rng.choice(["true", "true", "false"]),
            "Name": '"slot1@node%04d.example.com"' % i,
        }
        text = MACHINE_AD
        for k, v in fields.items():
            text = _replace_attr(text, k, v)
        out.append(text)
    return out


def job_texts(mod, n: int = 1000) -> tuple[list[str], list[str]]:
    """(old-format texts, new-syntax texts) of ``n`` distinct procs of one cluster."""
    old, new = [], []
    for i in range(n):
        ad = mod.ClassAd(JOB_AD)
        ad["ProcId"] = i
        ad["GlobalJobId"] = "submit.example.com#4711.%d#%d" % (i, 1700000000 + i)
        ad["QDate"] = ad["EnteredCurrentStatus"] = 1700000000 + i
        ad["ImageSize"] = 150000 + 17 * i
        ad["DiskUsage"] = 75000 + 3 * i
        old.append(ad.printOld())
        new.append(repr(ad))
    return old, new


def _replace_attr(text: str, name: str, value: str) -> str:
    import re
    return re.sub(r"(\b%s = )[^;\]]+" % name, lambda m: m.group(1) + value, text, count=1)


def once(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t0)


def side_by_side(ours, theirs, n: int, runs: int = RUNS):
    """Median ops/s of each and the median of the per-run ratios; the two are
    run alternately so that load from other processes hits both alike."""
    a, b, ratios = [], [], []
    for _ in range(runs):
        x = once(ours, n)
        y = once(theirs, n)
        a.append(x)
        b.append(y)
        ratios.append(x / y)
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


def _cases(mod, match_fn):
    job = mod.ClassAd(JOB_AD)
    machine = mod.ClassAd(MACHINE_AD)
    machines = [mod.ClassAd(t) for t in machine_texts(1000)]
    old_texts, new_texts = job_texts(mod)
    old_next = itertools.cycle(old_texts).__next__
    new_next = itertools.cycle(new_texts).__next__
    req = machine.lookup("Requirements")
    assert req.eval(scope=machine, target=job) is True
    assert len(job) == 40

    def api_match():
        out = []
        for i, m in enumerate(machines):
            if job.symmetricMatch(m):
                out.append((i, job.lookup("Rank").eval(scope=job, target=m),
                            m.lookup("Rank").eval(scope=m, target=job)))
        return out

    return {
        "parse": (lambda: mod.parseOne(old_next(), mod.Parser.Old), 2000),
        "parse-new": (lambda: mod.ClassAd(new_next()), 2000),
        "eval": (lambda: req.eval(scope=machine, target=job), 20000),
        "match-1k": ((lambda: match_fn(job, machines)) if match_fn else api_match, 5),
        "match-1k-api": (api_match, 5),
    }


def main() -> None:
    import htcondor2  # noqa: F401  (HTCondor mode for classad2)
    import classad2

    import jobledger.classad as ours
    from jobledger.eventcore.classad import match_many

    mine = _cases(ours, match_many)
    theirs = _cases(classad2, None)
    n_ours = len(match_many(ours.ClassAd(JOB_AD), [ours.ClassAd(t) for t in machine_texts(1000)]))
    n_theirs = len(theirs["match-1k"][0]())
    assert n_ours == n_theirs, (n_ours, n_theirs)
    print(f"classad2 {classad2.version()}; {n_ours} of 1000 machines match; {RUNS} alternating runs")
    print(f"{'case':<14} {'ours ops/s':>12} {'classad2 ops/s':>15} {'ours/theirs':>12}")
    for name in mine:
        fn, n = mine[name]
        tfn, _ = theirs[name]
        a, b, ratio = side_by_side(fn, tfn, n)
        print(f"{name:<14} {a:>12.0f} {b:>15.0f} {ratio:>11.2f}x", flush=True)


if __name__ == "__main__":
    main()
