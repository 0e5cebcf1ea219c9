"""A client iterating a large queue through ``Schedd.xquery``: does its memory stay flat?

``python -m bench.bench_xquery_memory [N]`` (default 100,000): a personal pool
with N held jobs (full job ads, one cluster); a child process iterates
``xquery`` over them twice (the first pass fills the client's bounded caches
of parsed expressions) and reports its resident memory every N/10 ads of the
second pass, the ads per second, and, for contrast, the memory of
``query()``'s list of the first N/5 ads (a list of all N would take
~12 KiB an ad).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jobledger
from jobledger.daemons.client.personal import PersonalPool

_CHILD = r"""
import sys, time
import jobledger

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096

schedd, cluster, n = jobledger.Schedd(), int(sys.argv[1]), int(sys.argv[2])
for round in range(2):
    seen, samples, started = 0, [], time.monotonic()
    for ad in schedd.xquery(f"ClusterId == {cluster}"):
        seen += 1
        if seen % (n // 10) == 0:
            samples.append(rss())
    rate = seen / (time.monotonic() - started)
before = rss()
kept = schedd.query(f"ClusterId == {cluster} && ProcId < {n // 5}")
print(seen, int(rate), " ".join(str(s) for s in samples), rss() - before, len(kept))
"""


def main(n: int = 100_000) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-xquery-") as tmp:
        pool = PersonalPool(local_dir=Path(tmp) / "pool", config={"MAX_JOBS_PER_SUBMISSION": str(n)})
        pool.start()
        try:
            started = time.monotonic()
            cluster = pool.schedd.submit(jobledger.Submit({"executable": "/bin/true", "hold": "true",
                                                           "initialdir": tmp}), count=n).cluster()
            submitted = time.monotonic() - started
            out = subprocess.run([sys.executable, "-c", _CHILD, str(cluster), str(n)], capture_output=True,
                                 text=True, check=True).stdout.split()
        finally:
            pool.stop()
    seen, rate, samples, listed, kept = int(out[0]), int(out[1]), [int(x) for x in out[2:-2]], int(out[-2]), int(out[-1])
    print(f"| jobs | submit s | xquery ads/s | client RSS over the pass (MiB, every {n // 10:,} ads) | "
          f"growth | list of {kept:,} ads |")
    print("|---:|---:|---:|---|---:|---:|")
    print(f"| {seen:,} | {submitted:.1f} | {rate:,} | " + " / ".join(f"{s / 2**20:.1f}" for s in samples)
          + f" | {(max(samples) - min(samples)) / 2**20:.1f} MiB | +{listed / 2**20:.0f} MiB |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
