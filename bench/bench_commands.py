"""condor_* command benchmarks: condor_q beside ``jobledger q`` on a real pool.

With 100,000 held jobs queued (five clusters of 20,000, HTCondor's default
MAX_JOBS_PER_SUBMISSION) plus a 10-job cluster, the wall
time of each command run as a fresh process (as a script that shells out to
it would run it), median of a few runs:

- ``condor_q -af ClusterId ProcId JobStatus`` (every queued job) and
  ``jobledger q -af ClusterId ProcId JobStatus``;
- the same for the 10-job cluster (``condor_q CLUSTER -af ...``);
- ``condor_q`` (the batch summary and totals lines) and ``condor_q -totals``.

There is no HTCondor peer: the htcondor wheel ships the bindings, not the tools.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from jobledger.personal import PersonalPool

BIN = Path(sys.executable).parent
AF = ["-af", "ClusterId", "ProcId", "JobStatus"]


def _wall(argv: list[str], env: dict, repeat: int) -> tuple[float, int]:
    """Median wall seconds of running ``argv`` ``repeat`` times, and its output's line count."""
    times, lines = [], 0
    for _ in range(repeat):
        began = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - began)
        lines = done.stdout.count("\n")
    return statistics.median(times), lines


def _row(name: str, seconds: float, lines: int) -> None:
    print(f"| {name:<62} | {seconds * 1000:>10,.0f} ms | {lines:>8,} |", flush=True)


def main() -> None:
    print(f"| {'command (fresh process each run, median)':<62} | {'wall':>13} | {'lines':>8} |")
    print(f"|{'-' * 64}|{'-' * 15}|{'-' * 10}|")
    with tempfile.TemporaryDirectory(prefix="bench-commands-") as where:
        local = Path(where) / "pool"
        with PersonalPool(local_dir=local) as pool:
            held = htcondor.Submit({"executable": "/bin/true", "hold": "true"})
            for _ in range(5):
                pool.schedd.submit(held, count=20_000)
            small = pool.schedd.submit(held, count=10).cluster()
            env = dict(os.environ, CONDOR_CONFIG=str(pool.config_file))
            ours = [str(BIN / "jobledger"), "q", "--local-dir", str(local)]
            for label, argv, repeat in (
                    ("condor_q -af ClusterId ProcId JobStatus (100,010 queued)",
                     [str(BIN / "condor_q"), *AF], 3),
                    ("jobledger q -af ClusterId ProcId JobStatus (100,010 queued)", [*ours, "-af", *AF[1:]], 3),
                    (f"condor_q {small} -af ClusterId ProcId JobStatus (10-job cluster)",
                     [str(BIN / "condor_q"), str(small), *AF], 5),
                    (f"jobledger q {small} -af ClusterId ProcId JobStatus (10-job cluster)",
                     [*ours, "-constraint", f"ClusterId == {small}", "-af", *AF[1:]], 5),
                    ("condor_q (batch summary and totals, 100,010 queued)", [str(BIN / "condor_q")], 3),
                    ("condor_q -totals (100,010 queued)", [str(BIN / "condor_q"), "-totals"], 3),
                    ("condor_version (start-up cost of a command)", [str(BIN / "condor_version")], 5)):
                _row(label, *_wall(argv, env, repeat))


if __name__ == "__main__":
    main()
