"""A real DAGMan start on a big DAG: from its job starting to its first node submitted.

The DAG is the one bench_dag_parse parses (LAYER nodes a layer, a JOB, a
VARS and a RETRY line per node, one PARENT/CHILD edge to the layer above,
a FINAL node) with a /bin/true node job.  A personal pool runs it from
``Schedd.submit(Submit.from_dag(...))``; the row gives, from the journal,
the seconds from the DAGMan job's EXECUTE event to the SUBMIT event of its
first node job, and the DAGMan process's CPU seconds by then (it parses
the DAG, builds its run, recovers, opens its logs and submits).  The DAG
is removed once its first node is in the queue.

``python -m bench dag_start [N]`` (default 100,000).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from jobledger.daemons.storage.reader import Reader
from jobledger.eventcore.events import EventType
from jobledger.personal import PersonalPool

LAYER = 100
SUB = "executable = /bin/true\narguments = $(index)\nqueue\n"


def dag_text(n: int) -> str:
    lines = []
    for i in range(n):
        lines += [f"JOB n{i} node.sub", f'VARS n{i} index="{i}" name="n{i}"', f"RETRY n{i} 2"]
        if i >= LAYER:
            lines.append(f"PARENT n{i - LAYER} CHILD n{i}")
    lines.append("FINAL cleanup node.sub")
    return "\n".join(lines) + "\n"


def _dagman_pid(out: Path) -> int | None:
    """The PID in the DAGMan start-up banner of its dagman.out (None: not written yet)."""
    try:
        for line in out.read_text(errors="replace").splitlines():
            if "** PID = " in line:
                return int(line.rsplit("=", 1)[1])
    except OSError:
        return None
    return None


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _first_submit(schedd, dagman: int, out: Path, timeout: float) -> float:
    """Poll until the DAG's first node job is queued; the DAGMan process's CPU seconds then."""
    deadline, pid = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        pid = pid or _dagman_pid(out)
        if schedd.query(f"DAGManJobId == {dagman}", ["ClusterId"], limit=1):
            if pid is None:
                raise RuntimeError(f"no PID in {out}")
            return _cpu(pid)
        time.sleep(0.02)
    raise TimeoutError(f"no node of DAG {dagman} submitted within {timeout} s (see {out})")


def measure(n: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-dag-start-") as tmp, PersonalPool(Path(tmp) / "pool") as pool:
        work = Path(tmp) / "work"
        work.mkdir()
        (work / "node.sub").write_text(SUB)
        (work / "big.dag").write_text(dag_text(n))
        schedd, old = pool.schedd, os.getcwd()
        os.chdir(work)
        try:
            dagman = schedd.submit(htcondor.Submit.from_dag("big.dag")).cluster()
        finally:
            os.chdir(old)
        cpu = _first_submit(schedd, dagman, work / "big.dag.dagman.out", 600)
        if os.environ.get("BENCH_KEEP_OUT"):
            Path(os.environ["BENCH_KEEP_OUT"]).write_bytes((work / "big.dag.dagman.out").read_bytes())
        schedd.act(htcondor.JobAction.Remove, f"ClusterId == {dagman}")
        with Reader(pool.local_dir / "journal.sqlite") as reader:
            started = reader.event_times([EventType.EXECUTE], dagman)[0][3]
            firsts = [at for cluster, _, _, at in reader.event_times([EventType.SUBMIT])
                      if cluster > dagman]
        return {"seconds": min(firsts) - started, "cpu": cpu}


def main(argv: list[str] | None = None) -> None:
    sizes = [int(a) for a in (argv or [])] or [100_000]
    print("| nodes | DAGMan EXECUTE -> first node SUBMIT, s | DAGMan CPU s by then | load average |")
    print("|---:|---:|---:|---|")
    for n in sizes:
        row = measure(n)
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"| {n:,} | {row['seconds']:.2f} | {row['cpu']:.2f} | {load} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
