"""dagman.out's line head under DAGMAN_DEBUG's header flags, and the getenv list's matching."""

from __future__ import annotations

import os
import re

from jobledger.daemons.dagman.files import DagmanOut
from jobledger.eventcore.submit.args import getenv_matches


def lines(tmp_path, flags):
    out = DagmanOut(str(tmp_path / "x.dagman.out"), flags)
    out("one\ntwo")
    out.close()
    return (tmp_path / "x.dagman.out").read_text().splitlines()


def test_default_head_is_the_time_alone(tmp_path):
    assert all(re.fullmatch(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (one|two)", line) for line in lines(tmp_path, ""))


def test_header_flags(tmp_path):
    pid = os.getpid()
    assert all(re.fullmatch(rf"\d\d/\d\d/\d\d \d\d:\d\d:\d\d \(pid:{pid}\) (one|two)", line)
               for line in lines(tmp_path, "D_PID"))
    (tmp_path / "x.dagman.out").unlink()
    assert all(re.fullmatch(rf"\d{{10}}\.\d\d\d \(pid:{pid}\) (one|two)", line)
               for line in lines(tmp_path, "D_TIMESTAMP D_SUB_SECOND,d_pid"))


def test_getenv_list_wildcards_exclusions_and_case():
    source = {"CONDOR_CONFIG": "a", "condor_x": "b", "PATH": "c", "PATHX": "d", "PYTHONPATH": "e",
              "HOME": "f", "BAD": "x\ny", "MY_VAR_END": "g"}
    assert getenv_matches("CONDOR*, PYTHON*;PATH", source) == \
        {"CONDOR_CONFIG": "a", "condor_x": "b", "PATH": "c", "PYTHONPATH": "e"}
    assert getenv_matches("* !home !*x", source) == \
        {"CONDOR_CONFIG": "a", "PATH": "c", "PYTHONPATH": "e", "MY_VAR_END": "g"}
    assert getenv_matches("my_*_end bad", source) == {"MY_VAR_END": "g"}


def test_categories_and_test_lines(tmp_path):
    out = DagmanOut(str(tmp_path / "x.dagman.out"), "D_CAT")
    out("said")
    out.test("not shown without D_TEST")
    out.close()
    out = DagmanOut(str(tmp_path / "x.dagman.out"), "D_TEST")
    out.test("CHECK CATEGORY A 1 -1")
    out.close()
    text = (tmp_path / "x.dagman.out").read_text().splitlines()
    assert [line[18:] for line in text] == ["(D_ALWAYS) said", "CHECK CATEGORY A 1 -1"]
