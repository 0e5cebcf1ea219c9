"""A JOB_QUEUE_LOG writer's start over a big queue: going on from the fold file kept by a
clean stop against folding the whole journal again (the file removed).

For each size N: a store holding one streamed submission of N held procs
(``arguments = $(ProcId)``-like: one attribute per proc), a writer that writes the log
and stops cleanly (keeping its fold), then alternately, ``ROUNDS`` times each, a start
that goes on from the kept fold and one whose fold file was removed first (the log
stays: it folds the journal silently up to where the log ends, as every start did
before the fold was kept).  Reported: CPU seconds of ``open()`` (process time, this
process only; nothing else runs in it), best of the rounds, and the load.

    python -m bench.bench_queuelog_start [N ...]        (default 100000)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 2


def _store(base: Path, n: int):
    from jobledger.daemons.storage.store import Store
    from jobledger.eventcore.ids import JobId
    from jobledger.eventcore.records import ClusterAd, ProcBlock

    store = Store(base / "pool", durability="normal")
    ad = {"Owner": '"alice"', "Cmd": '"/bin/true"', "JobStatus": "5", "QDate": "1700000000"}
    submit = {"type": 0, "timestamp": 1_700_000_000, "SubmitHost": "<127.0.0.1:9618>"}
    from jobledger.eventcore.events import event_to_dict, make_event

    def chunks():
        yield [ClusterAd(1, ad)]
        for first in range(0, n, 10_000):
            procs = list(range(first, min(n, first + 10_000)))
            event = event_to_dict(make_event(0, cluster=1, proc=0, timestamp=submit["timestamp"],
                                             attrs={"SubmitHost": submit["SubmitHost"]}))
            yield [ProcBlock.factored(1, procs, [{"JobStatus": "5", "Args": f'"{p}"'} for p in procs], event)]
    store.append_stream(chunks())
    assert store.job_status(JobId(1, n - 1)) is not None
    return store


def _start(journal: Path, log: Path) -> tuple[float, bool]:
    from jobledger.daemons.queuelog_writer import JobQueueLogWriter

    writer = JobQueueLogWriter(journal, log, fsync=False)
    began = time.process_time()
    writer.open()
    spent = time.process_time() - began
    writer.catch_up()
    writer.close()
    return spent, writer.resumed


def run(n: int) -> dict:
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        base = Path(tmp)
        store = _store(base, n)
        log = base / "spool" / "job_queue.log"
        began = time.process_time()
        _start(store.path, log)
        first = time.process_time() - began
        kept, refold = [], []
        for _ in range(ROUNDS):
            spent, resumed = _start(store.path, log)
            assert resumed
            kept.append(spent)
            os.unlink(log.with_name(f".{log.name}.fold"))
            spent, resumed = _start(store.path, log)
            assert not resumed
            refold.append(spent)
        store.close()
        return {"jobs": n, "first_s": first, "kept_s": min(kept), "refold_s": min(refold),
                "log_mb": log.stat().st_size / 2**20, "load": os.getloadavg()[0]}


def main(argv=None) -> None:
    sizes = [int(a) for a in (argv if argv is not None else sys.argv[1:])] or [100_000]
    print(f"{'jobs':>10} {'first write CPU s':>18} {'start, kept fold CPU s':>23} "
          f"{'start, refold CPU s':>20} {'log MB':>7} {'load':>5}")
    for n in sizes:
        r = run(n)
        print(f"{r['jobs']:>10,} {r['first_s']:>18.2f} {r['kept_s']:>23.3f} {r['refold_s']:>20.2f} "
              f"{r['log_mb']:>7.0f} {r['load']:>5.1f}", flush=True)


if __name__ == "__main__":
    main()
