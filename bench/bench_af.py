"""``condor_q -af`` and ``jobledger q -af`` of three attributes over a big queue, settled.

A personal pool with N held jobs (clusters of 20,000, HTCondor's default
MAX_JOBS_PER_SUBMISSION); the bench waits until the schedd's projector and its
JOB_QUEUE_LOG writer have followed the submits (the schedd idle), then runs
``condor_q -af ClusterId ProcId JobStatus`` and ``jobledger q -af ClusterId ProcId
JobStatus`` as fresh processes, alternately, RUNS times each.  Reported per run: wall
seconds, the command's CPU (``wait4``), the schedd's CPU meanwhile (/proc), lines
printed, and the load.  Target: 2 s at 10^5 (wall).

    python -m bench.bench_af [N]          (default 100000)

To compare two trees, run it with each tree's own interpreter in turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 3
AF = ["-af", "ClusterId", "ProcId", "JobStatus"]


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(argv: list[str], env: dict, schedd: int) -> tuple[float, float, float, int]:
    before = _cpu(schedd)
    began = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines = 0
    assert child.stdout is not None
    for chunk in iter(lambda: child.stdout.read(1 << 16), b""):
        lines += chunk.count(b"\n")
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{argv[0]} failed")
    return wall, usage.ru_utime + usage.ru_stime, _cpu(schedd) - before, lines


def _settle(pool) -> None:
    """Until the projector and the JOB_QUEUE_LOG writer have followed the journal."""
    from bench.bench_queue_memory import _log_position
    head = pool.schedd._call("head")
    while not pool.schedd._call("wait_logs", position=head):
        pass
    log = pool.local_dir / "spool" / "job_queue.log"
    deadline = time.monotonic() + 1800
    while _log_position(log) < head and time.monotonic() < deadline:
        time.sleep(0.5)


def main(argv=None) -> None:
    import jobledger as htcondor
    from bench.bench_submit import _schedd_pid
    from jobledger.personal import PersonalPool

    args = list(argv if argv is not None else sys.argv[1:])
    n = int(args[0]) if args else 100_000
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="bench-af-") as where:
        local = Path(where) / "pool"
        with PersonalPool(local_dir=local) as pool:
            held = htcondor.Submit({"executable": "/bin/true", "hold": "true"})
            left = n
            while left > 0:
                pool.schedd.submit(held, count=min(20_000, left))
                left -= 20_000
            _settle(pool)
            schedd = _schedd_pid(local)
            env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
            commands = {"condor_q -af": [str(bin_dir / "condor_q"), *AF],
                        "jobledger q -af": [str(bin_dir / "jobledger"), "q", "--local-dir", str(local), *AF]}
            print(f"{'command':>16} {'jobs':>9} {'wall s':>7} {'client CPU s':>13} {'schedd CPU s':>13} "
                  f"{'lines':>8} {'load':>5}")
            for _ in range(RUNS):
                for name, command in commands.items():
                    wall, client, served, lines = _timed(command, env, schedd)
                    print(f"{name:>16} {n:>9,} {wall:>7.2f} {client:>13.2f} {served:>13.2f} {lines:>8,} "
                          f"{os.getloadavg()[0]:>5.1f}", flush=True)


if __name__ == "__main__":
    main()
