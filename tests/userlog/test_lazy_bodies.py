"""Termination (005) and image size (006) bodies: read in one match when in HTCondor's own
layout, otherwise checked where they stand and read on first use; the same attributes either way."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from jobledger.eventcore.codecs.userlog import Garbled, Parsed, TextReaderState, scan
from jobledger.eventcore.codecs.userlog_text_bodies import Deferred, parse_body
from jobledger.eventcore.codecs.userlog_text_read import _parse_header
from jobledger.eventcore.errors import UserLogReadError
from jobledger.tracking.jobeventlog import JobEventLog

ORACLE = Path(__file__).resolve().parents[3] / "shared" / "oracle" / "userlog"
GOOD = ("000 (7.000.000) 2024-03-09 16:00:00 Job submitted from host: <10.0.0.2:9618>\n...\n")
BAD_IMAGE = ("006 (7.000.000) 2024-03-09 16:00:01 Image size of job updated: lots\n"
             "\t1  -  MemoryUsage of job (MB)\n...\n")
BAD_TERMINATION = ("005 (7.000.000) 2024-03-09 16:00:02 Job terminated.\n"
                   "\t(1) Normal termination (signal 9)\n"
                   "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n...\n")
BAD_USAGE = ("005 (7.000.000) 2024-03-09 16:00:03 Job terminated.\n"
             "\t(1) Normal termination (return value 0)\n\t\tUsr zero  -  Run Remote Usage\n...\n")


def _eager(item) -> dict:
    nl = item.text.find("\n")
    _, first = _parse_header(item.text, 0, nl, TextReaderState())
    lines = [line.rstrip("\r") for line in item.text[nl + 1:].split("\n")[:-2]]   # no '...'
    return parse_body(item.header.number, first, lines)[0]


@pytest.mark.parametrize("name", sorted(p.name for p in ORACLE.glob("*.log")))
def test_bodies_read_on_first_use_equal_bodies_read_at_once(name):
    items, _ = scan("text", (ORACLE / name).read_bytes(), 0, TextReaderState())
    parsed = [i for i in items if isinstance(i, Parsed)]
    deferred = [p for p in parsed if type(tuple.__getitem__(p, 1)) is Deferred]
    assert {p.header.number for p in deferred} <= {5, 6}
    fast = [p for p in parsed if p.header.number in (5, 6) and p not in deferred]
    assert fast or name != "big_10000.log"
    for p in parsed:
        assert p.attrs == _eager(p) and list(p.attrs) == list(_eager(p))


@pytest.mark.parametrize("bad", [BAD_IMAGE, BAD_TERMINATION, BAD_USAGE])
def test_an_unreadable_body_is_reported_where_it_stands(bad, tmp_path):
    data = (GOOD + bad + GOOD).encode()
    items, end = scan("text", data, 0, TextReaderState())
    assert [type(i) for i in items] == [Parsed, Garbled, Parsed] and end == len(data)
    assert (items[1].offset, items[1].end) == (len(GOOD), len(GOOD) + len(bad))

    log = tmp_path / "job.log"
    log.write_bytes(data)
    jel = JobEventLog(str(log), errors="raise").events(0)
    assert next(jel).offset == 0
    with pytest.raises(UserLogReadError) as caught:
        next(jel)
    assert caught.value.offset == len(GOOD)
    assert next(jel).offset == len(GOOD) + len(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [e.offset for e in JobEventLog(str(log)).events(0)] == [0, len(GOOD) + len(bad)]


TERMINATED = ("005 (7.000.000) 2024-03-09 16:00:02 Job terminated.\n"
              "\t(1) Normal termination (return value 3)\n"
              "\t\tUsr 0 01:20:04, Sys 0 00:00:07  -  Run Remote Usage\n"
              "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n"
              "\t\tUsr 0 01:20:04, Sys 0 00:00:07  -  Total Remote Usage\n"
              "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n"
              "\t27794  -  Run Bytes Sent By Job\n"
              "\t23960  -  Run Bytes Received By Job\n"
              "\t27794  -  Total Bytes Sent By Job\n"
              "\t23960  -  Total Bytes Received By Job\n"
              "\tPartitionable Resources :    Usage  Request Allocated \n"
              "\t   Cpus                 :     0.86        1         1 \n"
              "\t   Disk (KB)            :   508        1000      1024 \n"
              "\t   Memory (MB)          :   291         512       512 \n...\n")
IMAGE = ("006 (7.000.000) 2024-03-09 16:00:01 Image size of job updated: 73771\n"
         "\t17  -  MemoryUsage of job (MB)\n\t46111  -  ResidentSetSize of job (KB)\n"
         "\t8461  -  ProportionalSetSize of job (KB)\n...\n")
VARIANTS = [
    TERMINATED, IMAGE,
    TERMINATED.replace("return value 3", "return value -3"),
    TERMINATED.replace("return value 3", "return value 99999999999"),
    TERMINATED.replace("(1) Normal termination (return value 3)",
                       "(0) Abnormal termination (signal 9)\n\t(0) No core file"),
    TERMINATED.replace("\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local",
                       "\t\tUsr 0 00:00:61, Sys 0 00:00:00  -  Run Local"),
    TERMINATED.replace("\tPartitionable", "\t5  -  Run Bytes Sent By Job\n\tPartitionable"),
    TERMINATED.replace("\tPartitionable Resources", "\tResources"),
    TERMINATED.replace("Allocated \n", "Allocated Assigned\n").replace("1         1 \n",
                                                                      "1         1 slot1\n"),
    TERMINATED.replace("\tPartitionable", "\tJob terminated by a cosmic ray\n\tPartitionable"),
    TERMINATED.replace("\n\t   Disk", "\n\t   Disk (KB)            :   x + 1      {1}  [a=1] \n\t   Disk"),
    TERMINATED.split("\tPartitionable")[0] + "...\n",
    TERMINATED.replace("\n", "\r\n").replace("...\r\n", "...\n"),
    TERMINATED.replace("Job terminated.\n", "Job terminated. trailing words\n"),
    IMAGE.replace("73771", "-5"), IMAGE.replace("73771", "73771 "),
    IMAGE.replace("\t17  -", "\t-17  -"), IMAGE.replace("MemoryUsage of job", "memoryusage of job"),
    IMAGE.replace("\t8461  -  ProportionalSetSize of job (KB)\n", ""),
    IMAGE.replace("(KB)\n...", "(KB)\n\t1  -  Other of job\n..."),
]


@pytest.mark.parametrize("text", VARIANTS)
def test_the_one_match_layout_and_the_general_reader_agree(text):
    """HTCondor's own layout is read in one match; anything else goes the general way:
    the attributes (and their order) are those of the general reader either way."""
    items, _ = scan("text", text.encode(), 0, TextReaderState())
    assert len(items) == 1 and isinstance(items[0], Parsed), items
    if text in (TERMINATED, IMAGE):
        assert type(tuple.__getitem__(items[0], 1)) is dict      # read at once, in one match
    got = items[0].attrs
    assert got == _eager(items[0]) and list(got) == list(_eager(items[0]))
