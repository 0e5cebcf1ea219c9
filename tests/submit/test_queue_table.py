"""``queue ... from table`` and multi-line inline items in ``setQArgs``/``itemdata(qargs)``,
each case compared with htcondor2 (HTCondor's own test_queue_from_table.py is the first)."""

from __future__ import annotations

import pytest

from jobledger.eventcore.errors import SubmitError
from jobledger import Submit

htcondor2 = pytest.importorskip("htcondor2")

TABLES = {
    "htcondor_case_1": "a,b\n1,2\n3,4\n5,6\n",
    "spaces_kept_in_cells": "a,b\n1 2,3\n4 , 5\n",
    "last_column_takes_the_rest": "a,b,c\n1,2\n3,4,5,6\n",
    "header_blanks_trimmed": "a, b\n1,2\n",
    "one_column": "x\nfirst\nsecond\n",
}
QUEUE_LINES = ["queue FROM TABLE {f}", "queue from table {f}", "queue x,y from table {f}",
               "queue 2 from table [1:] {f}"]


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(TABLES))
@pytest.mark.parametrize("line", QUEUE_LINES)
def test_queue_from_table_file_matches_htcondor2(tmp_path, monkeypatch, name, line):
    (tmp_path / f"{name}.table").write_text(TABLES[name])
    monkeypatch.chdir(tmp_path)
    text = "executable = /bin/echo\narguments = $(a)\n" + line.format(f=f"{name}.table") + "\n"
    theirs = htcondor2.Submit(text)
    ours = Submit(text)
    assert ours.getQArgs() == theirs.getQArgs()
    assert list(ours.itemdata()) == list(theirs.itemdata())


@pytest.mark.oracle
@pytest.mark.parametrize("text", [
    "queue from table (\na,b\n1,2\n)\n",
    "queue from table (\na\n1\n2\n)\n",
    "a = 1\nqueue x from table (a)\n",
])
def test_queue_from_inline_table_matches_htcondor2(text):
    theirs = htcondor2.Submit("executable = /bin/echo\n" + text).itemdata()
    ours = Submit("executable = /bin/echo\n" + text).itemdata()
    assert (ours if ours is None else list(ours)) == (theirs if theirs is None else list(theirs))


@pytest.mark.parametrize("table, message", [
    ("a b c\n1 2 3\n", "names that are not allowed : a b c"),
    ("a,b\n1,2\n\n4,5\n", "empty"),
])
def test_bad_tables_are_errors_naming_the_queue_line(tmp_path, monkeypatch, table, message):
    (tmp_path / "bad.table").write_text(table)
    monkeypatch.chdir(tmp_path)
    text = "executable = /bin/echo\nqueue from table bad.table\n"
    with pytest.raises(ValueError):
        list(htcondor2.Submit(text).itemdata())
    with pytest.raises(SubmitError, match=message) as caught:
        list(Submit(text).itemdata())
    assert caught.value.line == 2


def test_table_rows_make_jobs(tmp_path, monkeypatch):
    (tmp_path / "jobs.table").write_text(TABLES["htcondor_case_1"])
    monkeypatch.chdir(tmp_path)
    sub = Submit("executable = /bin/echo\narguments = $(a) $(b)\nqueue from table jobs.table\n")
    assert [ad["Args"] for ad in sub.jobs()] == ["1 2", "3 4", "5 6"]


QARGS = ["2 x,y from (\n1,2\n3,4\n)", "x from (\n# a comment\na\nb\n)", "x from (\na\nb\n)\nignored",
         "queue x in (\na\nb\n)", "x,y from [1:] (\n1 2\n3 4\n5 6\n)", "x from (a b)", "queue 3"]


@pytest.mark.oracle
@pytest.mark.parametrize("qargs", QARGS)
def test_multi_line_qargs_match_htcondor2(qargs):
    theirs, ours = htcondor2.Submit("executable = /bin/echo\n"), Submit("executable = /bin/echo\n")
    theirs.setQArgs(qargs)
    ours.setQArgs(qargs)
    assert ours.getQArgs() == theirs.getQArgs()
    want = theirs.itemdata()
    assert list(ours.itemdata() or []) == list(want or [])
    fresh_theirs = htcondor2.Submit("executable = /bin/echo\n").itemdata(qargs)
    fresh_ours = Submit("executable = /bin/echo\n").itemdata(qargs)
    assert list(fresh_ours or []) == list(fresh_theirs or [])


@pytest.mark.parametrize("qargs", ["x from (\na\n\nb\n)", "x from (\na\nb"])
def test_broken_multi_line_qargs_are_errors(qargs):
    theirs, ours = htcondor2.Submit("executable = /bin/echo\n"), Submit("executable = /bin/echo\n")
    theirs.setQArgs(qargs)
    ours.setQArgs(qargs)
    with pytest.raises(ValueError):
        list(theirs.itemdata())
    with pytest.raises(SubmitError):
        list(ours.itemdata())
    with pytest.raises(SubmitError):
        Submit("executable = /bin/echo\n").itemdata(qargs)
