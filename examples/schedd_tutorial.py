"""The Schedd part of the Python bindings tutorial (edit, act, query), import changed.

The tutorial ran against an existing pool; here a personal pool in a
temporary directory plays that part (htcondor.Schedd() finds it through
CONDOR_CONFIG, which PersonalPool sets).
"""

import tempfile
from pathlib import Path

import jobledger as htcondor
import jobledger.classad as classad
from jobledger.personal import PersonalPool

with tempfile.TemporaryDirectory() as where, PersonalPool(local_dir=Path(where) / "pool"):
    schedd = htcondor.Schedd()
    # A job held at submit, so it stays in the queue for the edits below.
    sub = htcondor.Submit({"executable": "/bin/sh", "arguments": "\"-c 'echo Hello world'\"",
                           "output": f"{where}/test.out", "error": f"{where}/test.err",
                           "hold": "true"})
    cluster = schedd.submit(sub).cluster()

    jobs = schedd.query('true', ['ClusterID', 'foo'])
    print(jobs)
    print(schedd.edit(f'ClusterID =?= {cluster}', "foo", '"bar"'))
    print(schedd.query('true', ['ClusterID', 'foo']))
    print(schedd.edit(f'ClusterID =?= {cluster}', "foo", '42'))
    print(schedd.query('true', ['ClusterID', 'foo']))

    print(schedd.act(htcondor.JobAction.Hold, [f'{cluster}.0']))
    print(schedd.act(htcondor.JobAction.Hold, [f'{cluster}.0']))
    print(schedd.act(htcondor.JobAction.Release, [f'{cluster}.0']))

    # The released job runs; wait for it through the queue and the history.
    import time
    deadline = time.time() + 30
    while schedd.query(f'ClusterID == {cluster}', ['JobStatus']) and time.time() < deadline:
        time.sleep(0.1)
    print(schedd.history(f'ClusterID == {cluster}', ['ClusterID', 'ProcID', 'ExitCode']))
    print(open(f"{where}/test.out").read(), end="")

    # A raw job ClassAd, as the old API allowed, then removed.
    raw = schedd.submit(classad.ClassAd({"Cmd": "/bin/sh", "Arguments": "-c 'sleep 60'",
                                         "Out": f"{where}/raw.out", "Err": f"{where}/raw.err"}))
    print(schedd.query(f'ClusterID =?= {raw}', ["ClusterID", "ProcID"]))
    print(schedd.act(htcondor.JobAction.Remove, [f'{raw}.0']))
