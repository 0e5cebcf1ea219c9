"""Reading a job_queue.log back (eventcore.projections.queuelog_read): the records
HTCondor's ClassAdLog holds, transactions applied at their end, a torn last transaction
never applied, and bad input a QueueLogError naming the line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.eventcore.projections.queuelog_live import file_header, transaction_text
from jobledger.eventcore.projections.queuelog_read import QueueLogError, read_queue_log


def test_records_and_transactions():
    text = (file_header(1700000000) + "103 0.0 NextClusterNum 8\n"
            + transaction_text(["101 07.-1 Job Machine", '103 07.-1 Cmd "/bin/true"',
                                "101 7.0 Job Machine", "103 7.0 ProcId 0", "103 7.0 JobStatus 1",
                                '103 7.0 Args "a b  c"'], 5)
            + transaction_text(["103 7.0 JobStatus 2", "104 7.0 Args", "101 7.1 Job Machine", "102 7.1"], 6)
            + "105 \n103 7.0 JobStatus 4\n")   # torn: never applied
    ads = read_queue_log(text)
    assert ads[(0, 0)] == {"NextClusterNum": "8"}
    assert ads[(7, -1)] == {"Cmd": '"/bin/true"'}
    assert ads[(7, 0)] == {"ProcId": "0", "JobStatus": "2"}
    assert (7, 1) not in ads


@pytest.mark.parametrize("text,line,why", [
    ("101 x.y Job Machine\n", 1, "is not a job key"),
    ("101\n", 1, "names no key"),
    ("\n103 1.0 A\n", 2, "needs a key, a name and a value"),
    ("104 1.0\n", 1, "needs a key, a name"),
    ("103 1.0 A-B 1\n", 1, "is not an attribute name"),
    ("105 \n105 \n", 2, "inside another"),
    ("106 \n", 1, "never began"),
    ("999 1.0\n", 1, "unknown record"),
    ("103 1.0 A 1\x00\n", 1, "a NUL byte"),
])
def test_bad_input_names_the_line(text, line, why):
    with pytest.raises(QueueLogError, match=why) as caught:
        read_queue_log(text, "exported/job_queue.log")
    assert caught.value.line == line and str(caught.value).startswith(f"exported/job_queue.log, line {line}: ")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789 .-\nAaZ_\"10:;\r")), max_size=300))
def test_any_text_reads_or_is_refused(text):
    try:
        ads = read_queue_log(text)
    except QueueLogError:
        return
    assert isinstance(ads, dict)
