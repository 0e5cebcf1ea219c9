"""File transfer throughput: the starter's copying beside ``cp -r`` of the same data.

- input, 200 MB: four 50 MB files staged into a sandbox (``stage_input``);
- input, 1,000 small files: one directory of 1,000 4 KB files;
- output, 200 MB / 1,000 small files: the same data sent back
  (``send_output``: each file under a temporary name, then renamed);
- pool: one job with the 200 MB input set, from submit until it left the
  queue, and the same job without transfer (should_transfer_files = NO).

Each copy row runs ours and ``cp -r`` alternately, 3 times each, on files
in the page cache; the table gives medians.  There is no htcondor2 peer
(the wheel ships the bindings, not the starter); ``cp -r`` is the floor.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from jobledger.daemons import transfer
from jobledger.eventcore.transfer import InputPlan, Output, Source

ROUNDS = 3
BIG_FILES, BIG_SIZE = 4, 50 << 20
SMALL_FILES, SMALL_SIZE = 1000, 4096


def _make(root: Path) -> tuple[Path, Path]:
    big, small = root / "big", root / "small"
    big.mkdir()
    small.mkdir()
    for i in range(BIG_FILES):
        (big / f"data{i}.bin").write_bytes(os.urandom(BIG_SIZE))
    for i in range(SMALL_FILES):
        (small / f"f{i:04d}.txt").write_bytes(os.urandom(SMALL_SIZE))
    return big, small


def _timed(fn) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _cp(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "-r", str(src), str(dst)], check=True)


def _compare(name: str, megabytes: float, ours, theirs) -> None:
    mine, cps = [], []
    for _ in range(ROUNDS):
        mine.append(ours())
        cps.append(theirs())
    a, b = statistics.median(mine), statistics.median(cps)
    print(f"| {name:<44} | {megabytes / a:>9,.0f} | {megabytes / b:>9,.0f} | {b / a:>6.2f} |", flush=True)


def copy_rows(root: Path) -> None:
    big, small = _make(root)
    work = root / "work"
    big_mb = BIG_FILES * BIG_SIZE / 1e6
    small_mb = SMALL_FILES * SMALL_SIZE / 1e6
    print("| case | ours MB/s | cp -r MB/s | ours/cp |")
    print("|---|---:|---:|---:|")
    plan = InputPlan(tuple(Source(str(p), p.name) for p in sorted(big.iterdir())), "./x", None)
    _compare("input: 200 MB in 4 files", big_mb,
             lambda: _timed(lambda: transfer.stage_input(plan, str(_fresh(work / "sandbox")))),
             lambda: _timed(lambda: _cp(big, _fresh(work / "cp") / "big")))
    plan = InputPlan((Source(str(small), "small"),), "./x", None)
    _compare(f"input: {SMALL_FILES:,} files of 4 KB (a directory)", small_mb,
             lambda: _timed(lambda: transfer.stage_input(plan, str(_fresh(work / "sandbox")))),
             lambda: _timed(lambda: _cp(small, _fresh(work / "cp") / "small")))
    job = {"Iwd": str(work / "iwd")}
    items = [Output(p.name, str(work / "iwd" / p.name)) for p in sorted(big.iterdir())]
    _compare("output: 200 MB in 4 files (temp + rename)", big_mb,
             lambda: (_fresh(work / "iwd"), _timed(lambda: transfer.send_output(job, items, str(big), "1.0")))[1],
             lambda: _timed(lambda: _cp(big, _fresh(work / "cp") / "big")))
    items = [Output("small", str(work / "iwd" / "small"))]
    _compare(f"output: {SMALL_FILES:,} files of 4 KB (temp + rename)", small_mb,
             lambda: (_fresh(work / "iwd"), _timed(lambda: transfer.send_output(job, items, str(root), "1.0")))[1],
             lambda: _timed(lambda: _cp(small, _fresh(work / "cp") / "small")))


def pool_rows(root: Path) -> None:
    import jobledger as htcondor
    from jobledger.personal import PersonalPool

    iwd = root / "big"
    with PersonalPool(local_dir=root / "pool") as pool:
        print()
        print("| pool: one job, submit -> left the queue | seconds |")
        print("|---|---:|")
        for label, extra in (("200 MB input transferred (should_transfer_files = YES)",
                              {"should_transfer_files": "YES",
                               "transfer_input_files": ",".join(sorted(os.listdir(iwd)))}),
                             ("no transfer (should_transfer_files = NO)", {"should_transfer_files": "NO"})):
            times = []
            for _ in range(ROUNDS):
                sub = htcondor.Submit({"executable": "/bin/true", "initialdir": str(iwd), **extra})
                began = time.perf_counter()
                cluster = pool.schedd.submit(sub).cluster()
                deadline = began + 120
                while pool.schedd.query(f"ClusterId == {cluster}", ["ProcId"]):
                    if time.perf_counter() > deadline:
                        raise RuntimeError(f"job {cluster}.0 did not finish in 120 s")
                    time.sleep(0.01)
                times.append(time.perf_counter() - began)
            print(f"| {label} | {statistics.median(times):.2f} |", flush=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp:
        root = Path(tmp)
        copy_rows(root)
        pool_rows(root)


if __name__ == "__main__":
    main()
