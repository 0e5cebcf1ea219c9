"""Run a personal pool's jobs on a Dask cluster (needs `pip install jobledger[dask]`).

A LocalCluster stands in for a real cluster: with `dask scheduler` on one
host and `dask worker tcp://SCHEDULER:8786` on others (or dask-jobqueue's
SLURMCluster), pass that scheduler's address instead.  The pool here runs
no local startd, so every job runs on a Dask worker; inputs go to the worker
and outputs come back through the pool's file transfer.
"""

from pathlib import Path

from distributed import LocalCluster

import jobledger as htcondor
from jobledger.personal import PersonalPool

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        pool = PersonalPool(local_dir=Path("dask-pool"), config={
            "DASK_SCHEDULER_ADDRESS": cluster.scheduler_address,
            "DAEMON_LIST": "MASTER COLLECTOR NEGOTIATOR SCHEDD"})
        with pool:
            for ad in htcondor.Collector().query(htcondor.AdTypes.Startd, 'SlotType == "Partitionable"',
                                                 projection=["Name", "Cpus", "Memory"]):
                print("machine", ad["Name"], ad["Cpus"], "cpus", ad["Memory"], "MB")
            work = Path("work")
            work.mkdir(exist_ok=True)
            (work / "count.sh").write_text("#!/bin/sh\nwc -w < words.txt > count.txt\nhostname\n")
            (work / "words.txt").write_text("the pool runs on dask\n")
            job = htcondor.Submit({"executable": "count.sh", "initialdir": str(work.absolute()),
                                   "should_transfer_files": "YES", "transfer_input_files": "words.txt",
                                   "output": "out.txt", "log": "jobs.log"})
            cluster_id = pool.schedd.submit(job).cluster()
            log = htcondor.JobEventLog(str(work / "jobs.log"))
            for event in log.events(stop_after=60):
                if event.type == htcondor.JobEventType.EXECUTE:
                    print("executing on", event["SlotName"].split("@")[1])
                if event.type == htcondor.JobEventType.JOB_TERMINATED:
                    print("job", cluster_id, "returned", event["ReturnValue"])
                    break
            print("words counted:", (work / "count.txt").read_text().strip())
