"""jobledger's pytest plugin, as another project meets it: installed, found by its entry
point, its fixtures giving a real pool that programs and condor_* commands reach."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from jobledger.pytest_plugin import pool_config

pytest_plugins = ["pytester"]

PROJECT_TESTS = '''
import os
import subprocess

import jobledger as htcondor


def test_a_job_runs(submit_and_wait, tmp_path):
    ads = submit_and_wait({"executable": "/bin/sh", "arguments": "\\"-c 'echo $0 > out.txt' hi\\"",
                           "initialdir": str(tmp_path)}, count=2)
    assert [ad["ProcId"] for ad in ads] == [0, 1] and {ad["ExitCode"] for ad in ads} == {0}
    assert (tmp_path / "out.txt").read_text() == "hi\\n"


def test_the_commands_and_bindings_reach_the_same_pool(personal_pool, schedd, collector):
    assert os.environ["CONDOR_CONFIG"] == str(personal_pool.config_file)
    assert htcondor.Schedd().query("true", ["ClusterId"]) == schedd.query("true", ["ClusterId"])
    assert collector.locate(htcondor.DaemonType.Schedd)["Name"]
    done = subprocess.run(["condor_q", "-totals"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert personal_pool.get_config_val("MY_KNOB") == "42"
'''


def test_the_entry_point_is_installed():
    found = [ep for ep in entry_points(group="pytest11") if ep.name == "jobledger"]
    assert [ep.value for ep in found] == ["jobledger.pytest_plugin"]


def test_a_project_uses_the_fixtures_without_any_conftest(pytester):
    pytester.makeini("[pytest]\njobledger_pool_config =\n    MY_KNOB = 42\n")
    pytester.makepyfile(test_project=PROJECT_TESTS)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=2)


def test_a_bad_config_line_is_named():
    assert pool_config(["A = 1", " B=two words "]) == {"A": "1", "B": "two words"}
    for bad in ("no equals sign", "= 3", "BAD NAME = 1"):
        with pytest.raises(pytest.UsageError, match="jobledger_pool_config"):
            pool_config([bad])
