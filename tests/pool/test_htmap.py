"""HTMap 0.6 (a real HTCondor client, unchanged) maps three functions on a pool.

HTMap's jobs transfer a run script as their executable (it must arrive
executable), the function and its inputs, and bring the outputs back
through a transfer_output_files directory with remaps; HTMap follows them
through the user log's SUBMIT notes (see the MAP_OPTIONS note in the script).  The script runs in a child process
whose ``import htcondor`` / ``import classad`` resolve to jobledger through
a shim directory made for this test only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jobledger.daemons.client.personal import PersonalPool
from tests.pool.conftest import stop_and_check

SHIM = {
    "htcondor.py": "import sys\nimport jobledger\nsys.modules[__name__] = jobledger\n",
    "classad.py": "import sys\nimport jobledger.classad\nsys.modules[__name__] = jobledger.classad\n",
}

SCRIPT = '''
import json, pathlib, sys
import htcondor, htmap
assert htcondor.__name__ == "jobledger", htcondor.__name__
htmap.settings["DELIVERY_METHOD"] = "assume"
# HTMap 0.6 names each map's jobs with JobBatchName; HTCondor 25's schedd then writes the
# SUBMIT event's structured notes ([ JobBatchName = ... ]) in place of the plain notes HTMap
# parses as the component number (int(event["LogNotes"])).  Unset it through HTMap's own
# settings, as a user of HTMap 0.6 on HTCondor 25 must.
htmap.settings["MAP_OPTIONS"] = {"JobBatchName": ""}

def double(x):
    return 2 * x

def power(x, p=2):
    return x ** p

def count_words(path):
    return len(pathlib.Path(path).read_text().split())

words = pathlib.Path(sys.argv[1])
maps = [htmap.map(double, range(3)),
        htmap.starmap(power, args=[(2,), (3,)], kwargs=[{"p": 3}, {}]),
        htmap.map(count_words, [htmap.TransferPath(words)])]
print(json.dumps([list(m.iter(timeout=120)) for m in maps]))
'''


def test_htmap_maps_three_functions(tmp_path, monkeypatch):
    shim = tmp_path / "shim"
    shim.mkdir()
    for name, text in SHIM.items():
        (shim / name).write_text(text)
    # The run script's "#!/usr/bin/env python3" must find a Python with cloudpickle.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    pool = PersonalPool(local_dir=tmp_path / "pool")
    pool.start()
    try:
        words = tmp_path / "words.txt"
        words.write_text("one two three four\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim), os.getcwd()]),
                   CONDOR_CONFIG=str(pool.config_file), HOME=str(tmp_path))  # HTMap keeps its maps in ~/.htmap
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(words)],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [[0, 2, 4], [8, 9], [4]]
    finally:
        stop_and_check(pool)
