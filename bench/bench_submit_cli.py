"""Big submits from the command line: ``condor_submit FILE`` and ``jobledger submit FILE``.

For each size N and each command: a fresh personal pool (MAX_JOBS_PER_SUBMISSION
raised), a submit file of N held jobs (``arguments = $(ProcId)``, ``queue N``; with
``--items``, ``queue name,size from`` a file of N rows), the command run as a child
process.  Reported: its wall seconds (start-up included), jobs/s, its CPU and its peak
RSS (``wait4``'s ``ru_maxrss``: that process alone), and the load.  Target: the client
at most 150 MB at 10^6 procs.

    python -m bench.bench_submit_cli [--items] [N ...]        (default 100000)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = ("condor_submit", "jobledger submit")


def _submit_file(where: Path, n: int, items: bool) -> Path:
    text = "executable = /bin/true\nhold = true\n"
    if items:
        with open(where / "items.txt", "w") as fh:
            fh.writelines(f"sample{i:07d} {i * 7 % 1000}\n" for i in range(n))
        text += "arguments = $(name) $(size)\nqueue name,size from items.txt\n"
    else:
        text += f"arguments = $(ProcId)\nqueue {n}\n"
    path = where / "big.sub"
    path.write_text(text)
    return path


def run(command: str, n: int, items: bool) -> dict:
    from jobledger.personal import PersonalPool

    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp, \
            PersonalPool(local_dir=Path(tmp) / "pool", config={"MAX_JOBS_PER_SUBMISSION": str(n)}) as pool:
        sub = _submit_file(Path(tmp), n, items)
        if command == "condor_submit":
            argv = [str(bin_dir / "condor_submit"), "-terse", str(sub)]
        else:
            argv = [str(bin_dir / "jobledger"), "submit", str(sub), "--local-dir", str(pool.local_dir)]
        env = dict(os.environ, CONDOR_CONFIG=str(pool.local_dir / "condor_config"))
        began = time.perf_counter()
        child = subprocess.Popen(argv, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = child.stdout.read() if child.stdout else b""
        err = child.stderr.read() if child.stderr else b""
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - began
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise RuntimeError(f"{command} failed: {err.decode(errors='replace')[-2000:]}")
        said = out.decode().split()
        last = int(said[-1].split(".")[1]) + 1 if command == "condor_submit" else int(said[0])
        if last != n:       # "C.0 - C.(N-1)" / "N job(s) submitted to cluster C."
            raise RuntimeError(f"{command}: {out[-200:]!r}, not {n} jobs")
        return {"command": command, "jobs": n, "seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime,
                "rss_mb": usage.ru_maxrss / 1024, "load": os.getloadavg()[0]}


def main(argv=None) -> None:
    args = list(argv if argv is not None else sys.argv[1:])
    items = "--items" in args
    sizes = [int(a) for a in args if a != "--items"] or [100_000]
    print(f"{'command':>17} {'jobs':>10} {'kind':>5} {'seconds':>8} {'jobs/s':>8} {'CPU s':>6} "
          f"{'peak RSS MB':>12} {'load':>5}")
    for n in sizes:
        for command in COMMANDS:
            r = run(command, n, items)
            print(f"{r['command']:>17} {n:>10,} {'items' if items else 'queue':>5} {r['seconds']:>8.1f} "
                  f"{n / r['seconds']:>8,.0f} {r['cpu']:>6.1f} {r['rss_mb']:>12.0f} {r['load']:>5.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
