"""Item rows and job ads made as they are read: the same jobs as made at once."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.eventcore.errors import SubmitError
from jobledger.eventcore.submit import StaticEnvironment, Submit
from jobledger.eventcore.submit.jobs import plan_cluster, stream_cluster
from jobledger.eventcore.submit.queue import _Lines

TEXT = "executable = /bin/tool\narguments = $(name) $(size) $(Step)\nqueue 2 name,size from{sl} items.txt\n"


def env(rows: str) -> StaticEnvironment:
    return StaticEnvironment(files={"items.txt": rows})


@pytest.mark.parametrize("sl", ["", " [1:5]", " [::-2]", " [3]", " [-2:]"])
def test_streamed_procs_equal_the_plan_and_can_be_read_again(sl):
    rows = "".join(f"n{i} {i * 3}\r\n" if i % 3 else f"n{i}   {i}\n" for i in range(9))
    e = env(rows)
    sub = Submit.using(e, TEXT.format(sl=sl))
    stream = stream_cluster(sub, e, cluster_id=3, qdate=7, max_jobs=100)
    plan = plan_cluster(sub, e, cluster_id=3, qdate=7)
    first = list(stream.procs())
    assert first == plan.proc_attrs == list(stream.procs())
    assert stream.num_procs == len(first) and stream.cluster_attrs == plan.cluster_attrs


def test_procs_are_made_one_at_a_time():
    e = env("".join(f"r{i}\n" for i in range(50_000)))
    sub = Submit.using(e, "executable = /bin/tool\narguments = $(item)\nqueue item from items.txt\n")
    stream = stream_cluster(sub, e, max_jobs=50_000)
    procs = stream.procs()
    assert [p["Args"] for p in itertools.islice(procs, 3)] == ['"r0"', '"r1"', '"r2"']
    assert stream.num_procs == 50_000


def test_a_bad_row_met_late_fails_the_iteration():
    e = env("".join(f"{i}\n" for i in range(10)) + "lots\n")
    sub = Submit.using(e, "executable = /bin/tool\narguments = $INT(n)\nqueue n from items.txt\n")
    stream = stream_cluster(sub, e)                  # the statement itself is fine
    with pytest.raises(SubmitError, match="lots does not evaluate to an integer"):
        list(stream.procs())


@pytest.mark.parametrize("rows, line", [("a\n\nb\n", 2), ("a\n \t\r\nb", 2), ("\na\n", 1), ("a\nb\n\n", 3)])
def test_an_empty_item_row_is_named_before_any_job(rows, line):
    sub = Submit.using(env(rows), "executable = /bin/tool\nqueue x from items.txt\n")
    with pytest.raises(SubmitError, match=f"item row {line} is empty"):
        stream_cluster(sub, sub.environment)


@given(st.lists(st.text(alphabet="ab \t\r", max_size=4), max_size=6), st.booleans())
@settings(max_examples=200, deadline=None)
def test_lines_equal_a_split(lines, newline_at_end):
    text = "\n".join(lines) + ("\n" if newline_at_end and lines else "")
    want = [line.rstrip("\r") for line in text.split("\n")]
    if text.endswith("\n") or not text:
        want = want[:-1]
    got = _Lines(text)
    assert list(got) == want and len(got) == len(want)
    assert [got[i] for i in range(-len(want), len(want))] == want + want if want else True
