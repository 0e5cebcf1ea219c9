"""Run every benchmark: ``python -m bench [NAME...]``.

Each ``bench/bench_*.py`` module has ``main()`` which prints its own table
rows (ops/s, and ours/theirs where htcondor2/classad2 is the peer, measured
side by side in this same run).  Results are recorded by hand in
bench/RESULTS.md with the date and the machine.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    wanted = [n for n in names if not argv or any(a in n for a in argv)]
    for name in wanted:
        print(f"## {name}", flush=True)
        importlib.import_module(f"bench.{name}").main()
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
