"""jobledger.tracking loads its trackers on first use (PEP 562): a program that only
reads a user log with JobEventLog, which lives in this package, pays for none of them
(the trackers bring the journal reader, SQLite helpers and the job-state fold)."""

from __future__ import annotations

import json
import subprocess
import sys

import jobledger.tracking


def test_every_name_resolves_and_is_listed():
    for name in jobledger.tracking.__all__:
        assert getattr(jobledger.tracking, name) is not None
    assert set(jobledger.tracking.__all__) <= set(dir(jobledger.tracking))


def test_reading_a_user_log_loads_no_tracker(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("")
    script = ("import json, sys, jobledger as htcondor\n"
              f"list(htcondor.JobEventLog({str(log)!r}).events(0))\n"
              "print(json.dumps([m for m in sys.modules if m.startswith(('jobledger.tracking.', 'sqlite_utils'))]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert not loaded & {"jobledger.tracking.userlogs", "jobledger.tracking.journal",
                         "jobledger.tracking.combined", "jobledger.tracking.poll", "sqlite_utils"}
    assert "jobledger.tracking.jobeventlog" in loaded
