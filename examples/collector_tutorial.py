"""The Collector part of the Python bindings tutorial (advertise, query, locate), import changed."""

import tempfile
from pathlib import Path

import jobledger as htcondor
import jobledger.classad as classad
from jobledger.personal import PersonalPool

with tempfile.TemporaryDirectory() as where, PersonalPool(local_dir=Path(where) / "pool"):
    coll = htcondor.Collector()
    ad = classad.ClassAd({"MyType": "Demo", "foo": 1, "Name": "DemoAd"})
    coll.advertise([ad])
    print(coll.query(htcondor.AdTypes.Any, 'MyType =?= "Demo"'))

    schedd_ad = coll.locate(htcondor.DaemonTypes.Schedd)
    print(schedd_ad["MyAddress"])
    for one in coll.locateAll(htcondor.DaemonTypes.Schedd):
        print(one["Name"])
    ads = coll.query(htcondor.AdTypes.Startd, 'true', ['MyAddress', 'Name', 'Cpus', 'Memory'])
    print(len(ads), ads[0])
    schedd = htcondor.Schedd(schedd_ad)
    print(schedd.query())
