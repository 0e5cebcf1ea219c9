"""The adapter `make upstream-tests` runs HTCondor's own test files through: its import
aliases, its scope list, and the runner's refusal of a folder that is no checkout."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.upstream import run

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(run.ALIAS), str(run.ROOT)]))


def test_the_aliases_import_jobledger_modules_under_htcondors_names():
    code = ("import htcondor2, classad2, htcondor, classad, htcondor2._schedd as s, jobledger, jobledger._schedd;"
            "import jobledger.classad as c, jobledger.v1 as v1, jobledger.v1.classad as c1;"
            "assert htcondor2 is jobledger and htcondor is v1 and classad2 is c and classad is c1;"
            "assert s is jobledger._schedd and jobledger.__spec__.name == 'jobledger';"
            "print(s.job_spec_hack.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "jobledger.daemons.client.api"


def test_a_name_jobledger_lacks_still_fails_to_import():
    done = subprocess.run([sys.executable, "-c", "import htcondor2._no_such_module"], capture_output=True,
                          text=True, env=ENV, timeout=120)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr


def test_the_scope_names_81_distinct_files():
    files = [f for _, f in run.scope()]
    assert len(files) == len(set(files)) == 81
    assert {s for s, _ in run.scope()} == {"no pool", "pool", "DAGMan"}


def test_the_runner_refuses_a_folder_without_the_suite(tmp_path, capsys):
    assert run.main([str(tmp_path)]) == 2
    assert "ornithology" in capsys.readouterr().err


def test_a_pass_list_from_a_run_s_lines_names_files_it_did_not_reach(tmp_path):
    printed = ("pass test_classads.py: 7 passed, 0 failed, 0 errors \n"
               "FAIL test_num_holds.py: 0 passed, 0 failed, 6 errors failed on setup with \"x | y\"\n")
    log = tmp_path / "run.log"
    log.write_text(printed)
    src = tmp_path / "src"
    (src / "src" / "condor_tests" / "ornithology").mkdir(parents=True)
    (src / "COMMIT").write_text("0123abcd\n")
    out = tmp_path / "PASSLIST.md"
    assert run.main([str(src), "--from-log", str(log), "--out", str(out)]) == 0
    text = out.read_text()
    assert "HTCondor commit: 0123abcd" in text and "**1 of 81 in-scope files pass wholly; 7 of 13 tests pass.**" in text
    assert "| test_classads.py | pass | 7 | 0 | 0 |  |" in text
    assert 'failed on setup with "x \\| y"' in text
    assert "| test_run_sleep_job.py | FAIL | 0 | 0 | 0 | not run (the run ended before it) |" in text


def test_a_files_testreq_block_is_read_as_htcondors_driver_reads_it(tmp_path):
    triple = 'x = 1\n"""<<CONDOR_TESTREQ_CONFIG\n\tDAGMAN_DEBUG = D_TEST D_CAT\n    # a note\n"""\n#endtestreq\nA = 2\n'
    assert run.testreq_config(triple, tmp_path) == f"\tDAGMAN_DEBUG = D_TEST D_CAT\n    # a note\n\nTEST_DIR = {tmp_path}\n"
    heredoc = "#testreq: personal\nmy $c = <<'CONDOR_TESTREQ_CONFIG';\nNUM_CPUS = 8\nCONDOR_TESTREQ_CONFIG\nB = 3\n"
    assert run.testreq_config(heredoc, tmp_path) == f"NUM_CPUS = 8\n\nTEST_DIR = {tmp_path}\n"
    assert run.testreq_config("from ornithology import *\n", tmp_path) is None
