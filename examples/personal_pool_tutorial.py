"""HTCondor's "Personal Pools" tutorial, with only the import changed.

Run it from any directory: it creates ./personal-condor and
./another-personal-condor there.  (The jobs sleep ProcID seconds, as in the
tutorial; the pool is stopped before most of them finish.)
"""

import jobledger as htcondor
from jobledger.personal import PersonalPool
from pathlib import Path

pool = PersonalPool(local_dir = Path.cwd() / "personal-condor")
print(repr(pool))

pool.start()
print(repr(pool))

print(pool.schedd)
print(pool.collector)

sub = htcondor.Submit(
    executable = "/bin/sleep",
    arguments = "$(ProcID)s",
)

schedd = pool.schedd
submit_result = schedd.submit(sub, count=10)

print(f"ClusterID is {submit_result.cluster()}")

for ad in pool.schedd.query(
    constraint = f"ClusterID == {submit_result.cluster()}",
    projection = ["ClusterID", "ProcID", "JobStatus"]
):
    print(repr(ad))

# get 3 random ads from the daemons in the pool
for ad in pool.collector.query()[:3]:
    print(ad)

pool.stop()
print(repr(pool))

with PersonalPool(local_dir = Path.cwd() / "another-personal-condor") as pool:  # note: no need to call start()
    print(pool.get_config_val("LOCAL_DIR"))
