"""make demo: a personal pool runs the jobs of examples/jobs/ and we watch them through their user log.

1. start a pool in a temporary LOCAL_DIR (real daemons: master, collector,
   schedd, negotiator, startd, one starter per claim);
2. submit every examples/jobs/*.sub (from a scratch directory, where their
   output and the shared user log ``demo.log`` go);
3. follow ``demo.log`` with JobEventLog and print each event as it happens,
   until every job has terminated;
4. show the history and the outputs, check the journal with the audit, stop
   the pool.
"""

import os
import sys
import tempfile
import time
from pathlib import Path

import jobledger as htcondor
from jobledger.personal import PersonalPool

HERE = Path(__file__).resolve().parent
NAMES = {0: "submitted", 1: "executing", 4: "evicted (requeued)", 5: "terminated", 9: "aborted",
         12: "held", 13: "released"}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="jobledger-demo-") as scratch:
        scratch = Path(scratch)
        pool = PersonalPool(local_dir=scratch / "pool")
        print(f"starting {pool!r}")
        with pool:
            print(f"pool ready: {pool!r}")
            os.chdir(scratch)
            schedd = pool.schedd
            expected = {}
            for sub_file in sorted((HERE / "jobs").glob("*.sub")):
                result = schedd.submit(htcondor.Submit(sub_file.read_text()))
                expected[result.cluster()] = (sub_file.name, result.num_procs())
                print(f"{result.num_procs()} job(s) submitted to cluster {result.cluster()} ({sub_file.name})")
            total = sum(n for _, n in expected.values())
            finished = set()
            log = htcondor.JobEventLog("demo.log")
            deadline = time.time() + 120
            while len(finished) < total and time.time() < deadline:
                for event in log.events(stop_after=1):
                    name = NAMES.get(int(event.type), event.type.name)
                    extra = f" (exit code {event['ReturnValue']})" if int(event.type) == 5 else ""
                    print(f"  job {event.cluster}.{event.proc}: {name}{extra}")
                    if int(event.type) in (5, 9):
                        finished.add((event.cluster, event.proc))
            log.close()
            if len(finished) < total:
                print(f"only {len(finished)} of {total} jobs finished in time")
                return 1
            print("\nhistory (newest first):")
            for ad in schedd.history(None, ["ClusterId", "ProcId", "ExitCode", "NumJobStarts"]):
                print(f"  {ad['ClusterId']}.{ad['ProcId']}  exit {ad.get('ExitCode')}  "
                      f"starts {ad.get('NumJobStarts')}")
            print("\noutputs:")
            for out in sorted(scratch.glob("*.out")):
                print(f"  {out.name}: {out.read_text().strip()}")
            from jobledger.daemons.audit import audit
            report = audit(pool.local_dir)
            print(f"\naudit: {'OK' if report.ok else 'FAILED'} {report.counts}")
            os.chdir(HERE)
        print(f"stopped: {pool!r}")
        return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
