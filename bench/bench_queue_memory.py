"""The schedd's memory with a big queue, JOB_QUEUE_LOG written.

For each size N: a fresh personal pool (MAX_JOBS_PER_SUBMISSION raised), one
durable ``queue N`` of held jobs (``arguments = $(ProcId)``) through the Python
API, then a wait until the schedd's projector has followed the journal and its
JOB_QUEUE_LOG writer has written past the submission (the log's last ``106
#journal`` position reaches the journal's head).  Reported: the submit's seconds,
the seconds until the log caught up, the CPU of the schedd and of its ``queuelog``
thread from the submit to then, the schedd's RSS once settled and its peak (VmHWM),
and RSS per queued job over the idle schedd; then the CPU of its ``advertise`` thread
(the schedd and Submitter ads, every UPDATE_INTERVAL = 2 s in a personal pool) over
ADS_WINDOW seconds, per round.

    python -m bench.bench_queue_memory [--no-queue-log] [N ...]       (default 100000)

``--no-queue-log``: JOB_QUEUE_LOG empty (not written), for the rest of the schedd's share.

To compare two trees, run this module with each tree's own interpreter in turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import sys
import jobledger as htcondor
n = int(sys.argv[1])
schedd = htcondor.Schedd()
result = schedd.submit(htcondor.Submit("executable = /bin/true\nhold = true\narguments = $(ProcId)\n"), count=n)
assert result.num_procs() == n
"""


def _status_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


def _cpu(path: str) -> float:
    with open(path) as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _thread_cpu(pid: int, name: str) -> float:
    total = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as fh:
                if fh.read().strip() != name:
                    continue
            total += _cpu(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue
    return total


ADS_WINDOW = 20.0


def _log_position(path: Path) -> int:
    """The journal position the log's last whole transaction reaches (0: none)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.seek(max(0, fh.tell() - 65536))
            tail = fh.read()
    except FileNotFoundError:
        return 0
    ends = [line for line in tail.split(b"\n") if line.startswith(b"106 #journal ")]
    return int(ends[-1].split()[-1]) if ends else (0 if size == 0 else -1)


def run(n: int, queue_log: bool = True) -> dict:
    from bench.bench_submit import _schedd_pid
    from jobledger.personal import PersonalPool

    config = {"MAX_JOBS_PER_SUBMISSION": str(n)}
    if not queue_log:
        config["JOB_QUEUE_LOG"] = ""
    with tempfile.TemporaryDirectory() as tmp, \
            PersonalPool(local_dir=Path(tmp) / "pool", config=config) as pool:
        pid = _schedd_pid(pool.local_dir)
        idle = _status_kb(pid, "VmRSS")
        log = pool.local_dir / "spool" / "job_queue.log"
        cpu0, writer0 = _cpu(f"/proc/{pid}/stat"), _thread_cpu(pid, "queuelog")
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", _CHILD, str(n)], check=True, cwd=tmp,
                       env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
        submitted = time.perf_counter() - began
        head = pool.schedd._call("head")
        while not pool.schedd._call("wait_logs", position=head):   # 10 s a call
            pass
        deadline = time.monotonic() + 3600
        while queue_log and _log_position(log) < head:
            if time.monotonic() > deadline:
                raise RuntimeError("JOB_QUEUE_LOG did not catch up in an hour")
            time.sleep(0.5)
        caught_up = time.perf_counter() - began
        rss = _status_kb(pid, "VmRSS")
        ads0 = _thread_cpu(pid, "advertise")
        time.sleep(ADS_WINDOW)
        ads_ms = (_thread_cpu(pid, "advertise") - ads0) * 1000 / (ADS_WINDOW / 2.0)
        return {"ads_ms": ads_ms, "jobs": n, "submit_s": submitted, "caught_up_s": caught_up,
                "schedd_cpu_s": _cpu(f"/proc/{pid}/stat") - cpu0,
                "writer_cpu_s": _thread_cpu(pid, "queuelog") - writer0,
                "idle_mb": idle / 1024, "rss_mb": rss / 1024, "peak_mb": _status_kb(pid, "VmHWM") / 1024,
                "per_job_b": (rss - idle) * 1024 / n, "log_mb": log.stat().st_size / 2**20 if queue_log else 0.0,
                "load": os.getloadavg()[0]}


def main(argv=None) -> None:
    args = list(argv if argv is not None else sys.argv[1:])
    queue_log = "--no-queue-log" not in args
    sizes = [int(a) for a in args if a != "--no-queue-log"] or [100_000]
    print(f"{'jobs':>10} {'submit s':>9} {'log s':>7} {'schedd CPU s':>13} {'writer CPU s':>13} "
          f"{'idle MB':>8} {'RSS MB':>7} {'peak MB':>8} {'B/job':>6} {'log MB':>7} {'ads ms':>7} {'load':>5}")
    for n in sizes:
        r = run(n, queue_log)
        print(f"{r['jobs']:>10,} {r['submit_s']:>9.1f} {r['caught_up_s']:>7.1f} {r['schedd_cpu_s']:>13.1f} "
              f"{r['writer_cpu_s']:>13.1f} {r['idle_mb']:>8.0f} {r['rss_mb']:>7.0f} {r['peak_mb']:>8.0f} "
              f"{r['per_job_b']:>6.0f} {r['log_mb']:>7.0f} {r['ads_ms']:>7.0f} {r['load']:>5.1f}", flush=True)


if __name__ == "__main__":
    main()
