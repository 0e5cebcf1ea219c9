"""Submit throughput: a 100,000-row ``queue ... from FILE`` submit into job ads.

Rows:
  plan          jobledger: ``plan_cluster`` (cluster ad once + per-proc
                attribute text, what the schedd stores), job ads per second
  plan+ads      the same, then every proc's full ``ClassAd`` built (``jobs()``)
  itemdata      jobledger: ``Submit.itemdata()`` rows per second
  itemdata-h2   htcondor2: ``Submit.itemdata()`` rows per second (partial peer:
                htcondor2 cannot make job ads without a schedd)
  peak RSS      one durable 10^5- and 10^6-job ``queue N`` submission through a
                real pool (MAX_JOBS_PER_SUBMISSION raised), each in a fresh pool
                and client process: jobs/s, client and schedd peak RSS

Target: plan >= 50,000 job ads/s.  Each row is run RUNS times; the table
shows the best run (what the code can do: the machine is shared, so the
slower runs measure the neighbours), the median, and the best rate by this
process's CPU time.  Run with
``python -m bench submit``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

os.environ.setdefault("TZ", "UTC")
time.tzset()

RUNS = 5
ROWS = 100_000
ADS_ROWS = 20_000      # rows for the (slower) full-ClassAd row

SUBMIT_TEXT = """\
executable     = /bin/echo
arguments      = $(name) $(size) --step $(Step)
output         = out/$(name).$(Cluster).$(Process).out
error          = out/$(name).$(Cluster).$(Process).err
log            = jobs.log
request_cpus   = 1
request_memory = 512MB
request_disk   = 1GB
+Sample        = "$(name)"
queue name,size from items.txt
"""


def _items(n: int) -> str:
    return "".join(f"sample{i:06d} {i * 7 % 1000}\n" for i in range(n))


def _rates(fn, n: int) -> tuple[float, float, float]:
    """(best, median, best by CPU time) rate over RUNS runs of ``fn``
    handling ``n`` items.  The CPU-time rate counts only this process's
    own work, so it moves less when neighbours load the machine."""
    times, cpu = [], []
    for _ in range(RUNS):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return n / min(times), n / statistics.median(times), n / max(min(cpu), 1e-9)


def main() -> None:
    from jobledger.daemons.client.submit import OsSubmitEnvironment
    from jobledger.eventcore.submit import Submit, plan_cluster

    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "items.txt"), "w") as fh:
            fh.write(_items(ROWS))
        with open(os.path.join(tmp, "small.txt"), "w") as fh:
            fh.write(_items(ADS_ROWS))
        env = OsSubmitEnvironment(tmp)
        sub = Submit.using(env, SUBMIT_TEXT)
        small = Submit.using(env, SUBMIT_TEXT.replace("items.txt", "small.txt"))

        plan = plan_cluster(sub, env, cluster_id=42, qdate=1700000000, owner="bench")
        assert plan.num_procs == ROWS and plan.proc_attrs[5]["Args"] == '"sample000005 35 --step 0"'
        rows = [
            ("plan", _rates(lambda: plan_cluster(sub, env, cluster_id=42, qdate=1700000000,
                                                       owner="bench"), ROWS), "job ads/s"),
            ("plan+ads", _rates(lambda: sum(1 for _ in small.jobs(clusterid=42, qdate=1700000000)),
                                      ADS_ROWS), "job ads/s"),
            ("itemdata", _rates(lambda: sum(1 for _ in sub.itemdata()), ROWS), "rows/s"),
        ]
        peer = None
        try:
            import htcondor2
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                theirs = htcondor2.Submit(SUBMIT_TEXT)
                peer = _rates(lambda: sum(1 for _ in theirs.itemdata()), ROWS)
            finally:
                os.chdir(cwd)
        except ImportError:
            pass

    print(f"{'row':<10} {'ours best':>11} {'ours median':>12} {'ours cpu':>10} {'theirs best':>12} "
          f"{'ratio':>6}  unit")
    for name, (best, median, cpu), unit in rows:
        if name == "itemdata" and peer:
            print(f"{name:<10} {best:>11,.0f} {median:>12,.0f} {cpu:>10,.0f} {peer[0]:>12,.0f} "
                  f"{best / peer[0]:>6.2f}  {unit} (theirs: htcondor2 itemdata, wall clock)")
        else:
            print(f"{name:<10} {best:>11,.0f} {median:>12,.0f} {cpu:>10,.0f} {'-':>12} {'-':>6}  {unit}")
    best, median, cpu = rows[0][1]
    verdict = {True: "met", False: "NOT met"}
    print(f"target plan >= 50,000 job ads/s: best {verdict[best >= 50_000]}, median "
          f"{verdict[median >= 50_000]}, CPU time {verdict[cpu >= 50_000]}")
    peak_rss()


_PEAK_CHILD = r"""
import os, resource, sys, time
import jobledger as htcondor
n, kind, schedd_pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
text = "executable = /bin/true\nhold = true\n"
if kind == "args":
    text += "arguments = $(ProcId)\n"
if kind == "items":     # n rows of item data, in a file
    with open("items.txt", "w") as fh:
        fh.writelines("sample%07d %d\n" % (i, i * 7 % 1000) for i in range(n))
    text += "arguments = $(name) $(size)\nqueue name,size from items.txt\n"
schedd = htcondor.Schedd()
schedd.submit(htcondor.Submit(text.split("queue")[0]), count=10)  # warm up (imports, connection)
sub = htcondor.Submit(text)
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
def schedd_cpu():
    with open("/proc/%d/stat" % schedd_pid) as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
began, spent, theirs = time.perf_counter(), cpu(), schedd_cpu()
result = schedd.submit(sub, count=0 if kind == "items" else n)
assert result.num_procs() == n
elapsed, theirs = time.perf_counter() - began, schedd_cpu() - theirs
with open("/proc/%d/status" % schedd_pid) as fh:
    peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, cpu() - spent, theirs, peak)
"""


def _peak_kb(pid: int) -> int:
    """VmHWM (peak resident set, KiB) of a live process."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for pid {pid}")


def _schedd_pid(local_dir) -> int:
    marker = str(local_dir).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if b"jobledger.daemons.schedd" in cmdline and marker in environ:
            return int(entry)
    raise RuntimeError("no schedd found")


def peak_rss(cases=((100_000, "plain"), (100_000, "args"), (1_000_000, "args"),
                    (1_000_000, "items"))) -> None:
    """One durable ``queue N`` submission of held jobs (``plain``: as
    bench_pool's submit row; ``args``: a per-proc ``arguments = $(ProcId)``;
    ``items``: ``queue name,size from`` a file of N rows)
    through a real pool (MAX_JOBS_PER_SUBMISSION raised), each in a fresh pool
    and a fresh client process: jobs/s from the client's submit call to its
    reply, the CPU seconds client and schedd spent meanwhile, the client's
    peak RSS and the schedd's (VmHWM) at the reply and once its projector
    has followed the journal past the submission (and before the submit)."""
    import subprocess
    import sys
    from pathlib import Path

    from jobledger.personal import PersonalPool
    print(f"{'jobs':>10} {'kind':>6} {'seconds':>8} {'jobs/s':>8} {'client CPU s':>12} {'schedd CPU s':>12} "
          f"{'client peak RSS MB':>19} {'schedd at reply':>16} {'schedd +logs':>16} "
          f"{'schedd before MB':>17}")
    for n, kind in cases:
        with tempfile.TemporaryDirectory() as tmp, \
                PersonalPool(local_dir=Path(tmp) / "pool",
                             config={"MAX_JOBS_PER_SUBMISSION": str(n)}) as pool:
            pid = _schedd_pid(pool.local_dir)
            idle = _peak_kb(pid)
            out = subprocess.run([sys.executable, "-c", _PEAK_CHILD, str(n), kind, str(pid)], capture_output=True,
                                 text=True, check=False, cwd=tmp,
                                 env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
                                 )
            if out.returncode:
                raise RuntimeError(f"the submitting process failed: {out.stderr.strip()[-2000:]}")
            out = out.stdout.split()
            seconds, client, client_cpu, schedd_cpu, at_reply = (
                float(out[0]), int(out[1]), float(out[2]), float(out[3]), int(out[4]))
            head = pool.schedd._call("head")
            while not pool.schedd._call("wait_logs", position=head):   # 10 s a call
                pass
            print(f"{n:>10,} {kind:>6} {seconds:>8.1f} {n / seconds:>8,.0f} {client_cpu:>12.1f} "
                  f"{schedd_cpu:>12.1f} {client / 1024:>19,.0f} {at_reply / 1024:>16,.0f} "
                  f"{_peak_kb(pid) / 1024:>16,.0f} {idle / 1024:>17,.0f}", flush=True)


if __name__ == "__main__":
    main()
